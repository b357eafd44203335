/// A first-in, first-out gate for async callers: one caller is inside at a time, the others
/// wait their turn without blocking a thread.
///
/// ```swift
/// let gate = AsyncSerialGate()
/// try await gate.run { try await player.preload(next) }   // one preload at a time, in call order
/// ```
///
/// **Threading.** Safe from any task. Waiting is not cancellable: a cancelled task still gets
/// its turn (and should then check for cancellation itself), so the order never breaks.
package final class AsyncSerialGate: Sendable {
    private struct State {
        var busy = false
        var waiting: [CheckedContinuation<Void, Never>] = []
    }
    private let state = Locked(State())

    /// Creates an open gate.
    package init() {}

    /// Waits until the caller is the one inside. Pair every `enter()` with one ``leave()``.
    package func enter() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let now = state.withLock { state -> Bool in
                if !state.busy {
                    state.busy = true
                    return true
                }
                state.waiting.append(continuation)
                return false
            }
            if now { continuation.resume() }
        }
    }

    /// Lets the next waiter in (or opens the gate when nobody waits).
    package func leave() {
        let next = state.withLock { state -> CheckedContinuation<Void, Never>? in
            if state.waiting.isEmpty {
                state.busy = false
                return nil
            }
            return state.waiting.removeFirst()
        }
        next?.resume()
    }

    /// Runs `body` inside the gate: after every earlier caller has left it, and before any later one.
    package func run<Result: Sendable, Failure: Error>(
        _ body: () async throws(Failure) -> Result
    ) async throws(Failure) -> Result {
        await enter()
        defer { leave() }
        return try await body()
    }
}
