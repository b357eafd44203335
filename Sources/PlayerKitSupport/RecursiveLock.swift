#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A recursive pthread mutex (visible to ThreadSanitizer). Used where a lock is held while app
/// code runs and that code may come back to the same lock on the same thread (a subscription
/// handler that cancels its own subscription).
///
/// **Threading.** Safe from any thread.
package final class RecursiveLock: @unchecked Sendable {
    // @unchecked: the mutex is only used through pthread calls, which are thread-safe.
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)

    /// Creates an unlocked recursive mutex.
    package init() {
        var attributes = pthread_mutexattr_t()
        pthread_mutexattr_init(&attributes)
        pthread_mutexattr_settype(&attributes, Int32(PTHREAD_MUTEX_RECURSIVE))
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, &attributes)
        pthread_mutexattr_destroy(&attributes)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    /// Runs `body` holding the lock; the same thread may take it again inside `body`.
    package func withLock<Result, Failure: Error>(_ body: () throws(Failure) -> Result) throws(Failure) -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body()
    }
}
