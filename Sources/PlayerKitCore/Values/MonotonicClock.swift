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
/// is cancelled.
public protocol MonotonicClock: Clock, Sendable where Instant == ContinuousClock.Instant {}

extension ContinuousClock: MonotonicClock {}
