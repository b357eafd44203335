import Dispatch
import PlayerKitSupport
import Synchronization

/// A repeating timer on a dispatch queue.
///
/// `DispatchSourceTimer` is thread-safe (libdispatch documents its calls as safe from any
/// thread) but is not marked `Sendable`; this wrapper makes that explicit in one place.
final class RepeatingTimer: @unchecked Sendable {
    private let source: DispatchSourceTimer
    private let started = Atomic<Bool>(false)

    /// A suspended timer firing every `interval` on `queue`; ``start(_:)`` runs it.
    init(interval: Duration, queue: DispatchQueue) {
        let period = DispatchTimeInterval.nanoseconds(Int(min(interval.inSeconds * 1e9, Double(Int.max))))
        source = DispatchSource.makeTimerSource(queue: queue)
        source.schedule(deadline: .now() + period, repeating: period, leeway: .milliseconds(5))
    }

    /// Starts calling `handler` on the queue. Call once.
    func start(_ handler: @escaping @Sendable () -> Void) {
        source.setEventHandler(handler: handler)
        if !started.exchange(true, ordering: .acquiringAndReleasing) { source.resume() }
    }

    /// Stops the timer; a handler already running finishes. Idempotent.
    func cancel() {
        source.cancel()
    }

    deinit {
        // libdispatch traps when a suspended source is released: cancel, then resume it.
        source.cancel()
        if !started.exchange(true, ordering: .acquiringAndReleasing) { source.resume() }
    }
}
