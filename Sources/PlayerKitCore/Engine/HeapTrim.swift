import PlayerKitSupport
internal import CMPV
import Dispatch

/// Hands freed heap memory back to the system after players release their media.
///
/// glibc keeps memory that libmpv frees (decoded frames, packet buffers) in its arenas for
/// reuse, so a released player's memory stays resident though nothing uses it. Measured on
/// 720p30 H.264 (Documentation/Performance.md): about 30 MB per playing player stays resident
/// after `stop` until `malloc_trim(0)`, then drops to the idle core's 10-12 MB.
///
/// Requests are coalesced: one trim runs on a utility queue a moment after the last request,
/// once mpv's own threads have freed what the unload released.
enum HeapTrim {
    private static let queue = DispatchQueue(label: "PlayerKit.heap-trim", qos: .utility)
    private static let pending = Locked(false)
    /// Time for mpv to finish tearing the item down after `stop` returns.
    static let delay: DispatchTimeInterval = .milliseconds(300)

    /// Schedules one trim (if none is scheduled yet).
    static func request() {
        let schedule = pending.withLock { pending -> Bool in
            defer { pending = true }
            return !pending
        }
        guard schedule else { return }
        queue.asyncAfter(deadline: .now() + delay) {
            pending.withLock { $0 = false }
            _ = malloc_trim(0)
        }
    }
}

