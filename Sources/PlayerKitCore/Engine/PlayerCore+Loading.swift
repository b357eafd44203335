internal import CMPV
import Dispatch
import Foundation
import Logging
import PlayerKitSupport

// Loading: `loadfile` handed to mpv, its wait bounded by the load timeout and cut short by a
// cancellation.
extension PlayerCore {
    // MARK: Loading

    /// Loads `argument` (an absolute path or URL; `source` names it in errors), replacing the
    /// current item, and waits until it loaded or failed. `pause` is sent first, without
    /// waiting: mpv runs async requests of a core in order, so `loadfile` sees it, and a fresh
    /// core is busy starting up, so a synchronous set would add milliseconds to the first frame.
    ///
    /// Cancelling the awaiting task resolves the wait at once with
    /// ``PlayerError/loadCancelled(source:)`` and, unless a later load replaced this one,
    /// stops the item (as `stop()`), so mpv gives up opening it too. The wait is bounded by
    /// ``PlayerConfiguration/loadTimeout`` (a timer on the monotonic clock): when it passes, the
    /// wait ends with ``PlayerError/timedOut(operation:after:)`` and the item is stopped the same way.
    func load(argument: String, source: String, startPaused: Bool) async -> Result<MediaInfo, PlayerError> {
        do throws(PlayerError) {
            try handoff.withLock { handOvers throws(PlayerError) in
                handOvers &+= 1
                try handle.setPropertyAsync("pause", .flag(startPaused))
            }
        } catch {
            return .failure(error)
        }
        applyIntent { $0.notePause(startPaused) }
        if let token = ffmpegToken.withLock({ $0 }) { FFmpegLog.shared.noteLoading(argument, for: token) }
        let arguments = ["loadfile", argument, "replace"]
        let completion = LoadCompletion()
        let loadNumber = state.withLock { $0.loads.begin() }
        // mpv has no bound for an item that keeps opening (a trickling server, a stream
        // provider that never returns): the load's own, on the monotonic clock (DispatchTime).
        let timeout = loadTimeout
        let expiry = Expiry()
        expiry.arm(after: timeout) { [weak self] in
            self?.abandonLoad(completion, number: loadNumber, with: .timedOut(operation: "loading \(source)", after: timeout))
        }
        // Withdrawn, and its captures released, once the wait ends.
        defer { expiry.cancel() }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Result<MediaInfo, PlayerError>, Never>) in
                guard completion.start(continuation, cancelled: .failure(.loadCancelled(source: source))) else { return }
                let replyID: UInt64? = state.withLock { state in
                    guard !state.isShutDown else { return nil }
                    let replyID = state.operationIDs.next()
                    state.loads.sent(LoadWaiter(argument: argument, source: source, completion: completion), replyID: replyID)
                    state.model.noteReplacing()
                    return replyID
                }
                guard let replyID else {
                    completion.resume(.failure(.playerShutDown(id)))
                    return
                }
                do throws(PlayerError) {
                    try handoff.withLock { handOvers throws(PlayerError) in
                        handOvers &+= 1
                        try handle.commandAsync(arguments, replyID: replyID)
                    }
                } catch {
                    let waiter = state.withLock { state in
                        state.model.noteReplacementFailed()
                        return state.loads.unsent(replyID: replyID)
                    }
                    waiter?.completion.resume(.failure(error))
                }
            }
        } onCancel: {
            abandonLoad(completion, number: loadNumber, with: .loadCancelled(source: source))
        }
    }

    /// The wait for load number `number` ends before its item did (the task was cancelled, or
    /// the load timed out): end it with `error`, and stop the item unless a later load replaced
    /// it. Runs on the cancelling or timer thread; never blocks (``send(_:)`` does not wait).
    func abandonLoad(_ completion: LoadCompletion, number: UInt64, with error: PlayerError) {
        guard completion.resume(.failure(error)) else { return }
        let isLatest = state.withLock { !$0.isShutDown && $0.loads.isLatest(number) }
        // The waiter stays registered: whatever resolves it later finds it already resolved.
        if isLatest { try? send(.command(.stop)) }
    }
}

/// The one-shot end of a ``PlayerCore/load(argument:source:startPaused:)`` wait: resumed by
/// whichever comes first (the item loads or fails, the task is cancelled, shutdown), once.
final class LoadCompletion: Sendable {
    private enum Stage {
        case notStarted, cancelledEarly, waiting(CheckedContinuation<Result<MediaInfo, PlayerError>, Never>), done
    }
    private let stage = Locked<Stage>(.notStarted)

    /// Starts the wait; false (after resuming with `cancelled`) when the task was cancelled
    /// before the wait began.
    func start(_ continuation: CheckedContinuation<Result<MediaInfo, PlayerError>, Never>, cancelled: Result<MediaInfo, PlayerError>) -> Bool {
        let wasCancelled = stage.withLock { stage -> Bool in
            if case .cancelledEarly = stage {
                stage = .done
                return true
            }
            stage = .waiting(continuation)
            return false
        }
        if wasCancelled { continuation.resume(returning: cancelled) }
        return !wasCancelled
    }

    /// Ends the wait with `result`. Returns false when it had already ended. Before the wait
    /// began, only a cancellation is recorded (and returns true).
    @discardableResult
    func resume(_ result: Result<MediaInfo, PlayerError>) -> Bool {
        let continuation = stage.withLock { stage -> CheckedContinuation<Result<MediaInfo, PlayerError>, Never>?? in
            switch stage {
            case .notStarted:
                stage = .cancelledEarly
                return .some(nil)
            case .waiting(let continuation):
                stage = .done
                return .some(continuation)
            case .cancelledEarly, .done:
                return nil
            }
        }
        guard let continuation else { return false }
        continuation?.resume(returning: result)
        return true
    }
}
