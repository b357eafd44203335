internal import CMPV
import Dispatch
import Foundation
import Logging
import PlayerKitSupport

// The one outbox: events numbered under the state lock, delivered in order by one thread at a
// time with no lock held; and what a model's other outputs become, outside the lock.
extension PlayerCore {
    /// Numbers the events of `outputs` into the outbox (``EventOutbox``: gapless numbers, times
    /// that never go back, only the last words once shutdown began). Called under the lock.
    /// Returns true when the caller must become the deliverer (nobody is delivering and there is
    /// work).
    ///
    /// Numbering under the lock and delivering from one thread at a time, in outbox order, is
    /// what keeps every player's events in order when the pump and an API call (an optimistic
    /// pause, say) produce events at the same time, while no lock is held during delivery.
    /// Each record gets the monotonic time (for measuring; `signalled`, when mpv signalled the
    /// events, or now) and the wall-clock time (for display).
    func emit(_ state: inout State, _ outputs: [PlaybackModel.Output], timestamp: Date,
              at signalled: ContinuousClock.Instant? = nil) -> Bool {
        let events = outputs.compactMap { output -> PlayerEvent? in
            if case .event(let event) = output { return event } else { return nil }
        }
        let records = state.outbox.append(events, at: signalled, timestamp: timestamp)
        state.tally.note(records)
        if state.poolRefill != nil, records.contains(where: { $0.event == .firstFrame }) { Self.poolRefillDue(&state) }
        return state.outbox.claimDelivery()
    }

    /// The player's first frame is out: the pool's refill is due, run by the thread that
    /// delivers it (outside the lock), once.
    private static func poolRefillDue(_ state: inout State) {
        state.poolRefillDue = state.poolRefill
        state.poolRefill = nil
    }

    /// Empties the outbox into the sink, batch by batch, until it stays empty. Only the thread
    /// that ``emit(_:_:)`` chose runs this; events produced meanwhile (also by a handler
    /// that calls back into the player) join the outbox and are delivered next, in order.
    func deliverOutbox() {
        while let batch = takeOutboxBatch() {
            batch.poolRefill?()
            batch.sink?(batch.records, .all)
        }
    }

    /// A batch of the outbox, taken for delivery: its records, the sink, and a pool refill due.
    typealias OutboxBatch = (
        records: [PlayerEventRecord], sink: (@Sendable ([PlayerEventRecord], DeliveryPhase) -> Void)?,
        poolRefill: (@Sendable () -> Void)?
    )

    /// The outbox's next batch, the sink and a pool refill due, for the thread that delivers;
    /// nil (and the delivering role given up) once the outbox is empty.
    func takeOutboxBatch() -> OutboxBatch? {
        state.withLock { state in
            guard let batch = state.outbox.takeBatch() else { return nil }
            defer { state.poolRefillDue = nil }
            return (batch, state.sink, state.poolRefillDue)
        }
    }

    /// Carries out the rest of a model's outputs outside the lock: mpv requests and waiters.
    func finish(_ outputs: [PlaybackModel.Output]) {
        for output in outputs {
            switch output {
            case .requestProperties(let requests), .confirmWithSetAnswer(let requests):
                // (A confirmation by an answer reaches here only when no set carries it: read.)
                let refused = requests.filter { !handle.requestProperty($0.name, replyID: $0.replyID) }
                // A request mpv refused (queue full) is answered as failed, so nothing waits for it.
                if !refused.isEmpty, !isShutDown {
                    applyIntent { model in
                        refused.flatMap { model.apply(.propertyReply(replyID: $0.replyID, error: -1, name: $0.name, value: .none)) }
                    }
                }
            case .loadResolved(let entryID, let result):
                let waiter = state.withLock { $0.loads.resolved(entry: entryID) }
                waiter?.completion.resume(result)
            case .loadRedirected(let from, let to):
                state.withLock { $0.loads.redirected(from: from, to: to) }
            case .stopItem:
                try? send(.command(.stop))
            case .continueHook(let hookID):
                _ = handle.ifAlive { mpv_hook_continue($0, hookID) }
            case .seekLanded(let ticket, let position):
                let reply = state.withLock { $0.seekReplies.take(ticket) }
                reply?.resume(.success(position.map(MPVValue.double) ?? .none))
            case .scheduleReconnect(let delay, let generation):
                // On the pump's queue, after `delay` on the monotonic clock (DispatchTime).
                pumpQueue.asyncAfter(deadline: .now() + delay.inSeconds) { [weak self] in
                    guard let self, !self.isShutDown else { return }
                    self.applyIntent { $0.reconnectDue(generation: generation) }
                }
            case .reopen(let index, let replyID, let attempt, let cause):
                logger.notice("the live source was lost (\(cause)); opening it again, attempt \(attempt)")
                if let token = ffmpegToken.withLock({ $0 }), let source = state.withLock({ $0.model.snapshot.source }) {
                    FFmpegLog.shared.noteLoading(source, for: token)
                }
                do throws(PlayerError) {
                    try handle.commandAsync(["playlist-play-index", String(index)], replyID: replyID)
                } catch {
                    if !isShutDown { applyIntent { $0.reopenRefused() } }
                }
            case .event:
                break
            }
        }
    }

    /// Runs a model intent under the lock and delivers what it produces.
    func applyIntent(_ intent: (inout PlaybackModel) -> [PlaybackModel.Output]) {
        update { intent(&$0.model) }
    }

    /// Changes the state under the lock, numbers the events produced, then (outside the lock)
    /// delivers them and carries out the other outputs.
    /// `signalled`: when mpv signalled the event being applied (``WakeupSignal/signalled(since:)``),
    /// the time its events carry; nil: now.
    func update(at signalled: ContinuousClock.Instant? = nil, _ change: (inout State) -> [PlaybackModel.Output]) {
        // The app's wall clock (``PlayerConfiguration/wallClock``) is read before the lock: no
        // app code runs under it.
        let wall = wallClock()
        let (outputs, deliver, answers) = state.withLock { state in
            let outputs = change(&state)
            let answers = state.answers
            state.answers = []
            return (outputs, emit(&state, outputs, timestamp: wall, at: signalled), answers)
        }
        if deliver { deliverOutbox() }
        for answer in answers { answer.reply.resume(answer.result) }
        finish(outputs)
    }
}
