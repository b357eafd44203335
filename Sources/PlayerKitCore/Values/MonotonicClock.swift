import Dispatch

/// A clock on `ContinuousClock`'s instants, which features measure and wait with: the real
/// `ContinuousClock` in an app, a test clock that moves only when told (`ManualClock` in the
/// PlayerKitTesting product) in a test.
///
/// Its instants are `ContinuousClock.Instant`, the type of ``PlayerEventRecord/time``, so a
/// feature can compare an event's time with its clock's `now`. PlayerKit's features that
/// measure or wait take one (`clock: any MonotonicClock = ContinuousClock()`).
///
/// **Conforming.** `now` never goes backwards, and `sleep(until:tolerance:)` returns at the
/// latest once `now` has reached the deadline, and throws `CancellationError` when the task
/// is cancelled. `runOnce(at:_:)` runs its action once `now` has reached the deadline (a clock
/// of the app's own may start a `Task` that sleeps on it until then and runs the action).
public protocol MonotonicClock: Clock, Sendable where Instant == ContinuousClock.Instant {
    /// Runs `action` once, as soon as `now` has reached `deadline`: a one-shot timer for work
    /// that must happen at an instant, not whenever a busy cooperative pool gets to it.
    /// `ContinuousClock` fires it from a Dispatch timer (no task, not Swift's cooperative pool);
    /// a test clock when it is moved past `deadline`. There is no cancelling: an action that may
    /// be stale checks so itself when it runs.
    func runOnce(at deadline: Instant, _ action: @escaping @Sendable () -> Void)
}

extension ContinuousClock: MonotonicClock {
    /// Runs `action` from a Dispatch timer on a global queue of user-interactive quality once
    /// `deadline` has passed (at once when it has already).
    public func runOnce(at deadline: Instant, _ action: @escaping @Sendable () -> Void) {
        let delay = max(.zero, deadline - now)
        let nanoseconds = delay.components.seconds * 1_000_000_000 + delay.components.attoseconds / 1_000_000_000
        DispatchQueue.global(qos: .userInteractive).asyncAfter(deadline: .now() + .nanoseconds(Int(nanoseconds)), execute: action)
    }
}
