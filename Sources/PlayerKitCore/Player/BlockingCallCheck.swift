/// A debug-build check that async code never blocks a thread of Swift's cooperative pool on mpv.
///
/// The pool has as many threads as the machine has cores (two on a small machine). A task that
/// calls one of ``Player``'s waiting methods (``Player/play()``, ``Player/seek(to:precision:)``,
/// ``Player/setVolume(_:)``, ``Player/property(_:)``, ``Player/command(_:)``, …) or its
/// initializer holds a pool thread until mpv answers, and every other task waits meanwhile. Async
/// code should suspend instead: ``Player/perform(_:timeout:)`` for commands,
/// ``Player/create(id:configuration:delegate:)`` for players.
///
/// Inside ``enforcing(_:)``, in debug builds, a blocking mpv call made by a task stops the
/// process with a message naming the call, as the event pump's rule does for handlers on the pump.
/// The check covers tasks started inside (task-local values are inherited, except by detached
/// tasks); code that runs on a dispatch queue or a thread of its own is not a task and may block.
/// Release builds run the body unchanged.
///
/// PlayerKit's features run their async work under the check, so `make test` proves they do not
/// block the pool. Wrap an app's own async orchestration to check it the same way:
///
/// ```swift
/// try await BlockingCallCheck.enforcing { () async throws(PlayerError) in
///     try await player.perform(.play)        // suspends: fine
///     // try player.play()                   // blocks a pool thread: stops a debug build
/// }
/// ```
public enum BlockingCallCheck {
    /// Runs `body` with the check on for the calling task and the tasks it starts.
    public static func enforcing<Result, Failure: Error>(
        _ body: () async throws(Failure) -> Result
    ) async throws(Failure) -> Result {
        let outcome: Swift.Result<Result, Failure> = await PoolRule.$isEnforced.withValue(true) {
            do throws(Failure) {
                return .success(try await body())
            } catch {
                return .failure(error)
            }
        }
        return try outcome.get()
    }

    /// Whether the calling task runs under the check.
    public static var isEnforced: Bool { PoolRule.isEnforced }
}
