import Foundation
import PlayerKit
#if canImport(Glibc)
import Glibc
#endif

/// The process's heap as glibc's allocator keeps it, for the package's probes, soak and
/// benchmarks (not a PlayerKit product: PlayerKit bounds glibc's arenas to 2 by itself before
/// its first player unless the process chose a bound, and `Player.releaseMedia()` hands freed
/// memory back by itself).
///
/// glibc gives threads that allocate at the same time separate arenas (up to 8 per core by
/// default), and memory freed into an arena stays with it; every mpv core runs a dozen threads,
/// so a process that creates and destroys players with glibc's default would keep arenas whose
/// free memory it cannot use elsewhere (Documentation/Reliability.md has the figures).
public enum ProcessMemory {
    /// Limits how many malloc arenas glibc creates in this process (`mallopt(M_ARENA_MAX)`), as
    /// `MALLOC_ARENA_MAX` does, and sets that variable, so PlayerKit (which bounds them to 2 when
    /// the process has not chosen) keeps this bound. Call it once at startup, before the first
    /// player.
    /// - Throws: ``PlayerError/invalidArgument(name:value:reason:)`` for a count below 1 or one
    ///   glibc refuses.
    public static func limitMallocArenas(to count: Int) throws(PlayerError) {
        guard count >= 1 else {
            throw .invalidArgument(name: "malloc arena count", value: "\(count)", reason: "must be 1 or more")
        }
        guard let mallopt = Self.symbol("mallopt", as: (@convention(c) (Int32, Int32) -> Int32).self),
              mallopt(Self.arenaMaxParameter, Int32(clamping: count)) == 1 else {
            throw .invalidArgument(name: "malloc arena count", value: "\(count)", reason: "glibc's mallopt(M_ARENA_MAX) refused it")
        }
        setenv("MALLOC_ARENA_MAX", "\(count)", 1)
    }

    /// Hands the heap memory that is free back to the system now (`malloc_trim(0)`).
    public static func releaseFreedMemory() {
        _ = symbol("malloc_trim", as: (@convention(c) (Int) -> Int32).self)?(0)
    }

    /// How many malloc arenas glibc has made in this process (the main one included), from
    /// `malloc_info`; nil when it cannot tell (another allocator).
    public static var arenaCount: Int? {
        guard let info = symbol("malloc_info", as: (@convention(c) (Int32, UnsafeMutablePointer<FILE>) -> Int32).self) else { return nil }
        var buffer: UnsafeMutablePointer<CChar>?
        var size = 0
        guard let stream = open_memstream(&buffer, &size) else { return nil }
        let status = info(0, stream)
        fclose(stream)
        defer { free(buffer) }
        guard status == 0, let buffer else { return nil }
        return String(cString: buffer).components(separatedBy: "<heap nr=").count - 1
    }

    /// glibc's `M_ARENA_MAX` (malloc.h), for `mallopt`.
    private static let arenaMaxParameter: Int32 = -8

    /// A glibc function of this process by name (malloc.h is not among the modules Swift imports).
    private static func symbol<Function>(_ name: String, as type: Function.Type) -> Function? {
        // The program's handle: its lookups search every library loaded globally, glibc's too.
        guard let address = dlsym(dlopen(nil, RTLD_NOW), name) else { return nil }
        return unsafeBitCast(address, to: type)
    }

    /// The process's resident memory in bytes (`/proc/self/statm`), or nil when unreadable.
    public static var residentBytes: Int? {
        guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return nil }
        let fields = text.split(separator: " ")
        guard fields.count > 1, let pages = Int(fields[1]) else { return nil }
        return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
    }
}
