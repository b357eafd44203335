internal import CMPV
import Foundation

/// Bounds glibc's malloc arenas to two for the process, once, before its first mpv core, unless
/// the process chose its own bound.
///
/// glibc gives threads that allocate at the same time arenas of their own (up to 8 per core),
/// and an arena keeps the top of what was freed into it, up to twice the largest block it handed
/// back to the system (a 720p decoder's frame pool: 6-14 MB an arena). Every mpv core runs a
/// dozen threads, and PlayerKit's queues add a few more, so a process that creates and destroys
/// players spreads their memory over ever more arenas: 15 after 30 churn cycles, resident memory
/// rising for hundreds of cycles before it levels off 20-30 MB higher (Documentation/Performance.md).
/// With two arenas it levels off within ten cycles, 50-70 MB lower, at the same CPU per frame
/// and time to the first frame (four 720p decoders at once, measured side by side).
///
/// The process chose when `MALLOC_ARENA_MAX` is in its environment, or `GLIBC_TUNABLES` sets
/// `glibc.malloc.arena_max`: then PlayerKit leaves glibc alone. (An app that calls
/// `mallopt(M_ARENA_MAX, …)` itself does so after creating its first player.)
enum ArenaBound {
    /// The bound PlayerKit sets.
    static let count: Int32 = 2

    /// Whether PlayerKit bounded the arenas: false when the process chose its own bound (or
    /// glibc refused). Evaluated once, by the first core's creation.
    static let applied: Bool = {
        let environment = ProcessInfo.processInfo.environment
        guard !chosenByProcess(environment) else { return false }
        return mallopt(M_ARENA_MAX, count) == 1
    }()

    /// Whether `environment` sets glibc's arena bound.
    static func chosenByProcess(_ environment: [String: String]) -> Bool {
        environment["MALLOC_ARENA_MAX"] != nil
            || (environment["GLIBC_TUNABLES"]?.contains("glibc.malloc.arena_max") ?? false)
    }
}
