#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Marks the threads that are running an app's code for PlayerKit: a subscription's handler,
/// a delegate method, a feature's callback.
///
/// A wait that PlayerKit makes for an app's code to return (``cancel()`` of a subscription
/// waiting for a handler call in progress on another thread) must not run on such a thread:
/// two handlers that cancel each other's subscriptions would each wait for the other, for
/// ever. Code that would wait asks ``isRunningAppCode`` first and, when it is true, returns
/// without waiting.
///
/// The mark is per thread (a pthread key), set for the duration of ``calling(_:)`` and restored
/// after it, so calls nest.
///
/// **Threading.** Safe from any thread; each thread sees only its own mark.
package enum AppCodeMark {
    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        pthread_key_create(&key, nil)
        return key
    }()

    /// Whether the calling thread is inside ``calling(_:)``.
    package static var isRunningAppCode: Bool { pthread_getspecific(key) != nil }

    /// Runs `body` (an app's code) with the calling thread marked.
    package static func calling<Result>(_ body: () throws -> Result) rethrows -> Result {
        let previous = pthread_getspecific(key)
        pthread_setspecific(key, UnsafeRawPointer(bitPattern: 1))
        defer { pthread_setspecific(key, previous) }
        return try body()
    }
}
