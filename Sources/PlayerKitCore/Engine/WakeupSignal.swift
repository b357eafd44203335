internal import CMPV
import Dispatch
import Foundation
import PlayerKitSupport
import Synchronization

/// The wakeup callback handed to mpv. Runs on mpv's threads: it only schedules a drain and
/// calls no mpv function.
func playerKitWakeup(_ context: UnsafeMutableRawPointer?) {
    guard let context else { return }
    Unmanaged<WakeupSignal>.fromOpaque(context).takeUnretainedValue().fire()
}

/// Coalesces mpv's wakeups into at most one scheduled drain at a time.
///
/// The drain is a user-data source on the pump's queue, not a block sent to it: a block sent from
/// mpv's threads takes a continuation from the heap of the mpv thread that sends it, and
/// libdispatch keeps it in its caches after the core is gone, in memory that mpv's decoders
/// freed, so that memory could never go back to the system (RSS crept 5-18 MB over 450
/// create-play-shutdown cycles, from the 50th; heaptrack found 8 continuations a cycle).
/// Merging data into a source allocates nothing.
final class WakeupSignal: Sendable {
    private let scheduled = Atomic<Bool>(false)
    /// When mpv last called the wakeup callback, and when the callback scheduled the drain now
    /// running or due: nanoseconds on the monotonic clock since ``origin``.
    private let latest = Atomic<Int64>(0)
    private let scheduling = Atomic<Int64>(0)
    private let origin = ContinuousClock.now
    /// Runs the drain on the pump's queue; `or(data:)` wakes it, from any thread, without
    /// allocating. Its calls are thread-safe; created, activated and cancelled by this object.
    private nonisolated(unsafe) let source: DispatchSourceUserDataOr
    /// The drain, in a class of its own: a closure kept in a `Locked` directly comes out of
    /// `withLock { $0 }` wrapped in two more reabstraction thunks each time (the inout write-back
    /// stores the wrapped one), and every drain ran through a chain that grew by two thunks per
    /// wakeup (WakeupSignalTests).
    private final class Drain: Sendable {
        let run: @Sendable () -> Void
        init(_ run: @escaping @Sendable () -> Void) { self.run = run }
    }
    private let drain = Locked<Drain?>(nil)

    init(queue: DispatchQueue) {
        source = DispatchSource.makeUserDataOrSource(queue: queue)
        source.setEventHandler { [weak self] in
            guard let self else { return }
            let body = self.drain.withLock { $0 }
            body?.run()
        }
        source.activate()
    }

    deinit {
        source.cancel()
    }

    func setDrain(_ body: @escaping @Sendable () -> Void) {
        let box = Drain(body)
        drain.withLock { $0 = box }
    }

    /// Schedules a drain unless one is already scheduled. Fast and lock-free on the hot path.
    func fire() {
        let now = Self.nanoseconds(ContinuousClock.now - origin)
        latest.store(now, ordering: .releasing)
        guard !scheduled.exchange(true, ordering: .acquiringAndReleasing) else { return }
        scheduling.store(now, ordering: .releasing)
        source.or(data: 1)
    }

    /// Called by the drain before it reads events, so a wakeup during the drain schedules another.
    /// Returns when the wakeup that scheduled this drain came (nanoseconds since ``origin``).
    @discardableResult
    func rearm() -> Int64 {
        let since = scheduling.load(ordering: .acquiring)
        scheduled.store(false, ordering: .releasing)
        return since
    }

    /// When mpv signalled the event the drain just read: its latest wakeup, which mpv calls as
    /// it queues an event or notes a property change, so at or after that moment and at or
    /// before now. Never before `since`, the wakeup that scheduled the drain (an event read
    /// before its own wakeup came gets that, not an older one). Nil when no wakeup came yet.
    func signalled(since: Int64) -> ContinuousClock.Instant? {
        let nanoseconds = max(latest.load(ordering: .acquiring), since)
        guard nanoseconds > 0 else { return nil }
        let instant = origin + .nanoseconds(nanoseconds)
        let now = ContinuousClock.now
        return instant < now ? instant : now
    }

    private static func nanoseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }
}
