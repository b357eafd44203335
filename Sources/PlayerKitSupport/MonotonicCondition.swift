#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A condition variable whose timed waits run on the monotonic clock: a pthread mutex and a
/// pthread condition set to `CLOCK_MONOTONIC` (visible to ThreadSanitizer).
///
/// `NSCondition.wait(until:)` takes a `Date`, so its deadline moves when the system clock is
/// stepped (NTP, the user, a virtual machine resumed): a wait could end early or last hours.
/// PlayerKit measures every wait on the monotonic clock instead: deadlines here are
/// `ContinuousClock` instants, and the time left is handed to the kernel as a
/// `CLOCK_MONOTONIC` deadline. There is deliberately no wait without a deadline.
///
/// ```swift
/// let condition = MonotonicCondition()
/// condition.lock()
/// let deadline = ContinuousClock.now + .milliseconds(40)
/// while !ready {
///     if !condition.wait(until: deadline) { break }   // timed out
/// }
/// condition.unlock()
/// ```
///
/// **Threading.** Safe from any thread. The lock is not recursive; ``wait(until:)`` must be
/// called with the lock held (it releases it while waiting and takes it back before returning).
package final class MonotonicCondition: @unchecked Sendable {
    // @unchecked: the mutex and condition are only used through pthread calls, which are thread-safe.
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)

    /// Creates an unlocked condition.
    package init() {
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        condition.initialize(to: pthread_cond_t())
        pthread_cond_init(condition, &attributes)
        pthread_condattr_destroy(&attributes)
    }

    deinit {
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        condition.deallocate()
        mutex.deallocate()
    }

    /// Takes the lock.
    package func lock() { pthread_mutex_lock(mutex) }

    /// Releases the lock.
    package func unlock() { pthread_mutex_unlock(mutex) }

    /// Runs `body` holding the lock.
    package func withLock<Result, Failure: Error>(_ body: () throws(Failure) -> Result) throws(Failure) -> Result {
        lock()
        defer { unlock() }
        return try body()
    }

    /// Wakes one waiter. Call with the lock held, after changing what it waits for.
    package func signal() { pthread_cond_signal(condition) }

    /// Wakes every waiter. Call with the lock held, after changing what they wait for.
    package func broadcast() { pthread_cond_broadcast(condition) }

    /// Waits, with the lock held, until signalled or until `deadline` passes. Like every
    /// condition wait it may also return early without a signal: check what you wait for in a
    /// loop.
    /// - Returns: false when the deadline has passed (the wait timed out), true otherwise.
    @discardableResult
    package func wait(until deadline: ContinuousClock.Instant) -> Bool {
        let left = deadline - ContinuousClock.now
        guard left > .zero else { return false }
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        // At most a day per call (the caller's loop goes on waiting): keeps the sum in range.
        let capped = min(left, .seconds(86_400))
        var nanoseconds = Int(now.tv_nsec) + Int(capped.components.attoseconds / 1_000_000_000)
        var seconds = Int(now.tv_sec) + Int(capped.components.seconds)
        if nanoseconds >= 1_000_000_000 {
            seconds += 1
            nanoseconds -= 1_000_000_000
        }
        var absolute = timespec(tv_sec: seconds, tv_nsec: nanoseconds)
        let status = pthread_cond_timedwait(condition, mutex, &absolute)
        return status != ETIMEDOUT || ContinuousClock.now < deadline
    }

    /// Waits, with the lock held, for at most `timeout`; see ``wait(until:)``.
    @discardableResult
    package func wait(timeout: Duration) -> Bool {
        wait(until: ContinuousClock.now + timeout)
    }
}
