import Foundation
import Logging

/// The process's heap as glibc's allocator keeps it, and the one knob that bounds its growth
/// with many players: how many malloc arenas may exist.
///
/// **Why.** glibc gives threads that allocate at the same time separate arenas (up to 8 per
/// core by default), and memory freed into an arena stays with it. Every mpv core runs a dozen
/// threads (demuxer, decoders, audio, video output), so a process that creates and destroys
/// players keeps arenas whose free memory it cannot use elsewhere: resident memory grows by
/// megabytes to tens of megabytes over hundreds of players, then levels off. A plain C client
/// of libmpv grows the same way (Documentation/Reliability.md has the figures). Fewer arenas
/// mean less of that, at the price of threads waiting on each other's allocations more often.
///
/// PlayerKit never changes the allocator by itself. An app bounds the arenas with
/// `MALLOC_ARENA_MAX=2` in its environment (what ``limitMallocArenas(to:)`` does from inside,
/// for the package's own probes and benchmarks). Not public since issue 41: the process's
/// allocator is not a media concept.
package enum ProcessMemory {
    private static let logger = Logger(label: "PlayerKit")

    /// Limits how many malloc arenas glibc creates in this process (`mallopt(M_ARENA_MAX)`),
    /// which bounds how much freed memory the process keeps after many players came and went.
    /// 2 is a good value for an app with several players; glibc's default is 8 per core.
    ///
    /// Call it once at startup, before the first ``Player`` (and before other threads
    /// allocate): arenas that already exist stay. It affects the whole process, not only
    /// PlayerKit. Safe from any thread.
    /// - Throws: ``PlayerError/invalidArgument(name:value:reason:)`` for a count below 1 or one
    ///   glibc refuses.
    package static func limitMallocArenas(to count: Int) throws(PlayerError) {
        guard count >= 1 else {
            throw .invalidArgument(name: "malloc arena count", value: "\(count)", reason: "must be 1 or more")
        }
        guard HeapControl.setArenaLimit(count) else {
            throw .invalidArgument(name: "malloc arena count", value: "\(count)", reason: "glibc's mallopt(M_ARENA_MAX) refused it")
        }
        logger.debug("malloc arenas limited", metadata: ["count": "\(count)"])
    }

    /// Hands the heap memory that is free back to the system now (`malloc_trim(0)`), as
    /// ``Player/releaseMedia()`` does a moment after each release. Costs a few milliseconds
    /// with a large heap; safe from any thread.
    package static func releaseFreedMemory() {
        HeapControl.trimNow()
    }

    /// The process's resident memory in bytes (`/proc/self/statm`), or nil when unreadable.
    package static var residentBytes: Int? {
        guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return nil }
        let fields = text.split(separator: " ")
        guard fields.count > 1, let pages = Int(fields[1]) else { return nil }
        return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
    }
}
