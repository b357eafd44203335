import Dispatch
import Foundation
import PlayerKit

/// SIGINT (Ctrl-C) and SIGTERM as something an example awaits, so it can shut its players down
/// cleanly instead of dying with them running.
///
/// `Interruption.shared.wait(upTo:)` returns when either signal arrives, or when the time is up.
/// Once installed, the signals no longer end the process by themselves: the program ends when
/// its `run()` returns. A second signal while the program is already shutting down ends it at
/// once (exit status 130), as command-line programs do.
public final class Interruption: Sendable {
    /// The process's one instance; the first use installs the handlers.
    public static let shared = Interruption()

    private struct State {
        var signal: Int32?
        var waiters: [Int: CheckedContinuation<Void, Never>] = [:]
        var expired: Set<Int> = []
        var nextWaiter = 0
    }

    private let state = Guarded(State())

    private init() {
        let queue = DispatchQueue(label: "ExampleSupport.interruption")
        for number in [SIGINT, SIGTERM] {
            signal(number, SIG_IGN)  // the dispatch source takes it from here
            let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
            // The handler holds its source: both live as long as the process (the one instance
            // is a static).
            source.setEventHandler { [weak self] in
                withExtendedLifetime(source) { self?.received(number) }
            }
            source.resume()
        }
    }

    /// The signal received, if one was.
    public var receivedSignal: Int32? { state.withLock { $0.signal } }

    private func received(_ number: Int32) {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>]? in
            if state.signal != nil { return nil }
            state.signal = number
            defer { state.waiters.removeAll() }
            return Array(state.waiters.values)
        }
        guard let waiters else {
            // Interrupted again while shutting down: the user means it.
            FileHandle.standardError.write(Data("interrupted again: exiting now\n".utf8))
            exit(130)
        }
        let name = number == SIGINT ? "SIGINT" : "SIGTERM"
        FileHandle.standardError.write(Data("\(name): shutting the players down (again to exit at once)\n".utf8))
        waiters.forEach { $0.resume() }
    }

    /// Waits until SIGINT or SIGTERM arrives, or `limit` passes (nil: no limit), or `done`
    /// returns (nil: nothing else ends the wait). `done` runs in a task of its own, cancelled
    /// when the wait ends otherwise.
    /// - Returns: true when a signal ended the wait, false when the time was up or `done` returned.
    @discardableResult
    public func wait(upTo limit: Duration? = nil, orUntil done: (@Sendable () async -> Void)? = nil) async -> Bool {
        let id = state.withLock { state -> Int in
            state.nextWaiter += 1
            return state.nextWaiter
        }
        let timer = limit.map { limit in
            Task { [weak self] in
                try? await Task.sleep(for: limit)
                self?.wake(id)
            }
        }
        let watcher = done.map { done in
            Task { [weak self] in
                await done()
                self?.wake(id)
            }
        }
        defer {
            timer?.cancel()
            watcher?.cancel()
            state.withLock { _ = $0.expired.remove(id) }
        }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let now = state.withLock { state -> Bool in
                if state.signal != nil || state.expired.remove(id) != nil { return true }
                state.waiters[id] = continuation
                return false
            }
            if now { continuation.resume() }
        }
        return receivedSignal != nil
    }

    /// Runs `body` in a task of its own until it returns, or until SIGINT or SIGTERM arrives:
    /// then the task is cancelled and given up to `grace` to notice (a body blocked in
    /// `readLine()` cannot), and the caller goes on to shut its players down.
    /// - Returns: true when a signal cut the body short.
    /// - Throws: what `body` threw, unless a signal cut it short.
    @discardableResult
    public func run(grace: Duration = .seconds(2), _ body: @escaping @Sendable () async throws -> Void) async throws -> Bool {
        let finished = Guarded(false)
        let task = Task {
            defer { finished.withLock { $0 = true } }
            try await body()
        }
        guard await wait(orUntil: { _ = await task.result }) else {
            try await task.value
            return false
        }
        task.cancel()
        let deadline = ContinuousClock.now + grace
        while !finished.withLock({ $0 }), ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(20))
        }
        return true
    }

    /// Ends the wait of `id` without a signal (its time is up).
    private func wake(_ id: Int) {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard let waiter = state.waiters.removeValue(forKey: id) else {
                state.expired.insert(id)  // up before the wait began: it returns at once
                return nil
            }
            return waiter
        }
        waiter?.resume()
    }
}
