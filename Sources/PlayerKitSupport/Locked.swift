#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A value guarded by a pthread mutex.
///
/// PlayerKit uses this rather than `Synchronization.Mutex` because on Linux `Mutex` waits on a
/// raw futex, which ThreadSanitizer cannot see: every access under a `Mutex` is then reported
/// as a data race, and `swift test --sanitize=thread` would be noise. A pthread mutex is
/// intercepted by ThreadSanitizer, so its reports stay meaningful.
///
/// The lock is not recursive. Never call out to app code or libmpv while holding it.
///
/// ```swift
/// let counts = Locked<[String: Int]>([:])
/// counts.withLock { $0["main", default: 0] += 1 }
/// ```
///
/// **Threading.** Safe from any thread; `withLock` blocks while another thread holds the lock.
package final class Locked<Value> {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private var value: Value

    /// Creates a lock around `value`.
    package init(_ value: Value) {
        self.value = value
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    /// Runs `body` with exclusive access to the value.
    package func withLock<Result, Failure: Error>(_ body: (inout Value) throws(Failure) -> Result) throws(Failure) -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }
}

// The value is only reached under the mutex.
extension Locked: @unchecked Sendable where Value: Sendable {}
