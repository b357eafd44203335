internal import CMPV
import Dispatch
import Foundation
import Logging
import PlayerKitSupport

// Teardown: the pump stopped, the core destroyed on the teardown queue, every waiter failed,
// and the last event.
extension PlayerCore {
    // MARK: Teardown

    /// Stops the pump and destroys the core on the teardown queue, and calls `completion` when
    /// done. Idempotent. Pending loads fail with ``PlayerError/playerShutDown(_:)``.
    func shutdown(completion: @escaping @Sendable () -> Void) {
        teardownQueue.async {
            self.teardown()
            completion()
        }
    }

    /// Shuts down as ``shutdown(completion:)`` and waits for it, at most `timeout` (on the
    /// monotonic clock). Returns false when the time passed first: the teardown goes on in the
    /// background (mpv is still stopping its threads), and an error is logged.
    func shutdown(timeout: Duration) async -> Bool {
        let finished = await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            let once = Locked<CheckedContinuation<Bool, Never>?>(continuation)
            let expiry = Expiry()
            let resume = { @Sendable (finished: Bool) in
                expiry.cancel()
                once.withLock { $0.take() }?.resume(returning: finished)
            }
            expiry.arm(after: timeout) { resume(false) }
            shutdown { resume(true) }
        }
        if !finished {
            logger.error("""
                shutdown: mpv has not destroyed the core after \(timeout) (a stream provider's open or read that \
                does not return?); the player is shut down, and the core is destroyed in the background when mpv lets go
                """)
        }
        return finished
    }

    func teardown() {
        let firstTime = state.withLock { state -> Bool in
            defer {
                state.isShutDown = true
                state.outbox.beginShutdown()
            }
            return !state.isShutDown
        }
        guard firstTime else { return }
        // 0. Say so while features can still publish about the player (until shutDown below).
        let announced = wallClock()
        if state.withLock({ emit(&$0, [.event(.shuttingDown)], timestamp: announced) }) { deliverOutbox() }
        // 1. No more wakeups: returns only once no callback is running.
        _ = handle.ifAlive { mpv_set_wakeup_callback($0, nil, nil) }
        signalContext.withLock { context in
            context?.release()
            context = nil
        }
        // 2. Stop polling, and wait for a drain or poll in progress; none is scheduled after this.
        pollTimer?.cancel()
        retimeStatistics()
        retimeLoudness()
        pumpQueue.sync {}
        // A load-fail hook held for its log lines (``PlaybackModel/drained()``) is let go before
        // the core is destroyed, so mpv never tears down a client it still waits on.
        let heldHooks = state.withLock { $0.model.drained() }
        for case .continueHook(let hookID) in heldHooks {
            _ = handle.ifAlive { mpv_hook_continue($0, hookID) }
        }
        // 3. Destroy the core (waits for API calls in flight; later calls throw). mpv has closed
        //    every custom stream by then, so the stream providers can go.
        handle.destroy()
        streamProtocols.releaseAfterCoreDestroyed()
        if let token = ffmpegToken.withLock({ $0.take() }) { FFmpegLog.shared.unregister(token) }
        // 4. Fail whatever still waits, and say the player is gone.
        let wall = wallClock()
        let (waiters, replies, deliver) = state.withLock { state -> ([LoadWaiter], [SentReply], Bool) in
            _ = state.model.cancelAllWaiters(with: .playerShutDown(id))
            let all = state.loads.takeAll()
            let replies = state.sentOperations.takeAll().compactMap(\.reply) + state.seekReplies.takeAll()
                + state.propertyReads.takeAll().map(\.reply)
            // The last event; the pump is stopped, and the outbox takes nothing after it.
            return (all, replies, emit(&state, [.event(.shutDown)], timestamp: wall))
        }
        if deliver { deliverOutbox() }
        for waiter in waiters { waiter.completion.resume(.failure(.playerShutDown(id))) }
        for reply in replies { reply.resume(.failure(.playerShutDown(id))) }
    }
}
