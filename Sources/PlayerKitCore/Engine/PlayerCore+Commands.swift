internal import CMPV
import Dispatch
import Foundation
import Logging
import PlayerKitSupport

// Commands and replies: an operation handed to mpv without waiting (``PlayerCore/send(_:reply:)``),
// the settings that coalesce behind one in flight, and how a request is named and refused.
extension PlayerCore {
    // MARK: Operations

    /// Hands `operation` to mpv without waiting (`mpv_set_property_async`,
    /// `mpv_command_async`): safe anywhere, the pump included. mpv runs the async requests of
    /// one core in the order they were made. What the operation sets shows in the read-outs
    /// from the moment it is handed over, and its change events are published then, in order
    /// with the pump's events (numbered under the same lock), with no wait for mpv's answer; a
    /// read asked for when mpv answers the last request confirms them
    /// (``PlaybackModel/noteSet(_:_:)``; observations older than it are ignored meanwhile). A
    /// refusal arrives as an ``PlayerEvent/error(_:)``, and that read then puts the read-out
    /// back to what mpv has, with its change event.
    /// - Throws: ``PlayerError/playerShutDown(_:)``, or an error when mpv cannot even queue it.
    func send(_ operation: EngineOperation, reply: SentReply? = nil) throws(PlayerError) {
        // A player nobody hears has no sound for its video to wait for: its null output keeps
        // the system's time, as its video does on its own clock (EngineOptions).
        if !isHeard, case .command(.setVideoClock(.audio)) = operation {
            return try sendOne(.command(.setVideoClock(.independent)), reply: reply)
        }
        // A muted player's pitch is not heard: its pitch filter runs without its search while
        // muted (set after the mute, put back before the unmute). Never the operation's own
        // failure: the filter is PlayerKit's business.
        if case .append(let argument, _) = operation, let token = ffmpegToken.withLock({ $0 }) {
            FFmpegLog.shared.noteSource(argument, for: token)
        }
        guard hasPitchFilter, case .command(.setMuted(let muted)) = operation else {
            return try sendOne(operation, reply: reply)
        }
        if !muted { try? sendOne(.setPitchFilter(muted: false)) }
        try sendOne(operation, reply: reply)
        if muted { try? sendOne(.setPitchFilter(muted: true)) }
    }

    /// Tests only (`HandOverOrderTests`): run on the sending thread, under the hand-over gate,
    /// after a command's read-outs were handed on and before the command is handed to mpv.
    static let beforeHandOverForTests = Locked<(@Sendable () -> Void)?>(nil)

    func sendOne(_ operation: EngineOperation, reply: SentReply? = nil) throws(PlayerError) {
        // The requests' names now (for coalescing); their values under the lock below, as the
        // model has them when they are handed over (``EngineOperation/requests(for:)``).
        var requests = operation.requests
        // The app's wall clock is read before the lock: no app code runs under it.
        let wall = wallClock()
        let coalesced = reply == nil ? Self.coalescedProperty(of: operation) : nil
        // The read-outs go to the subscribers that only hand them on (queued handlers,
        // streams) before mpv has the command, so their threads are woken before mpv's and do
        // not wait for a CPU behind them (issue 53: the queued handler heard a setter 60-80 us
        // later on an idle 2-CPU machine, 11-14 us now); immediate handlers hear them after.
        // The hand-over gate keeps a command sent in reaction behind this one.
        let (prepared, failure, firstBatch): (
            (replyIDs: [UInt64], reads: [PlaybackModel.Output], deliver: Bool)?, PlayerError?,
            OutboxBatch?
        ) = handoff.withLock { handOvers in
            handOvers &+= 1
            let prepared: (replyIDs: [UInt64], reads: [PlaybackModel.Output], deliver: Bool)? = state.withLock { state in
                guard !state.isShutDown else { return nil }
                operation.prepare(&state.model)
                requests = operation.requests(for: state.model)
                let outputs = operation.handedOver(to: &state.model)
                var reads: [(replyID: UInt64, name: String)] = []
                var confirmedByAnswer: [(replyID: UInt64, name: String)] = []
                for output in outputs {
                    switch output {
                    case .requestProperties(let requested): reads += requested
                    case .confirmWithSetAnswer(let confirmed): confirmedByAnswer += confirmed
                    default: break
                    }
                }
                if let coalesced {
                    if state.setsInFlight[coalesced] != nil {
                        // One in flight: this one waits behind it, replacing any waiting already.
                        state.setsInFlight[coalesced] = .some(HeldSet(operation: operation, reads: reads, confirmedByAnswer: confirmedByAnswer))
                        return ([], [], emit(&state, outputs, timestamp: wall))
                    }
                    state.setsInFlight[coalesced] = .some(nil)
                } else {
                    // Any other set of a property supersedes a held one (it is newer).
                    for case .set(let name, _) in requests where state.setsInFlight[name] != nil {
                        state.setsInFlight[name] = .some(nil)
                    }
                }
                let replyIDs = requests.indices.map { index in
                    let replyID = state.operationIDs.next()
                    let isLast = index == requests.count - 1
                    state.sentOperations.add(SentRequest(
                        operation: operation, request: requests[index], isLast: isLast, reply: reply,
                        confirmingReads: isLast ? reads : [], confirmedByAnswer: isLast ? confirmedByAnswer : [],
                        coalescedProperty: coalesced), replyID: replyID)
                    return replyID
                }
                // What to read if mpv does not take the requests: every confirmation.
                let readsIfRefused = reads + confirmedByAnswer
                return (replyIDs, readsIfRefused.isEmpty ? [] : [.requestProperties(readsIfRefused)], emit(&state, outputs, timestamp: wall))
            }
            guard let prepared else { return (nil, nil, nil) }
            let firstBatch = prepared.deliver ? takeOutboxBatch() : nil
            if let first = firstBatch { first.sink?(first.records, .handingOn) }
            Self.beforeHandOverForTests.withLock { $0 }?()
            var failure: PlayerError?
            for (request, replyID) in zip(requests, prepared.replyIDs) {
                do throws(PlayerError) {
                    switch request {
                    case .set(let name, let value): try handle.setPropertyAsync(name, value, replyID: replyID)
                    case .command(let arguments): try handle.commandAsync(arguments, replyID: replyID)
                    }
                } catch {
                    state.withLock { state in
                        for pending in prepared.replyIDs { _ = state.sentOperations.take(pending) }
                        if let coalesced { Self.setAnswered(&state, coalesced) }
                        operation.revert(&state.model)
                    }
                    failure = error
                    break
                }
            }
            return (prepared, failure, firstBatch)
        }
        guard let prepared else { throw .playerShutDown(id) }
        // Outside the gate: the immediate handlers (the app's code) hear the first batch, and
        // the outbox is emptied as ever (this thread still has the delivering role).
        if let first = firstBatch {
            first.poolRefill?()
            first.sink?(first.records, .runningAppCode)
            deliverOutbox()
        }
        if let failure {
            // Not queued: read now what mpv has, which puts the read-outs back.
            finish(prepared.reads)
            handOverHeldSets()
            throw failure
        }
    }

    /// Hands the held sets whose turn came to mpv (outside the lock; safe on the pump).
    func handOverHeldSets() {
        let due = state.withLock { state -> [(HeldSet, UInt64, EngineOperation.Request)] in
            let due = state.heldSetsDue
            state.heldSetsDue = []
            guard !state.isShutDown else { return [] }
            return due.map { held in
                let replyID = state.operationIDs.next()
                // The values as the model has them now (a speed under the latest correction).
                let request = held.operation.requests(for: state.model)[0]
                state.sentOperations.add(SentRequest(
                    operation: held.operation, request: request, isLast: true, reply: nil,
                    confirmingReads: held.reads, confirmedByAnswer: held.confirmedByAnswer,
                    coalescedProperty: Self.coalescedProperty(of: held.operation)), replyID: replyID)
                return (held, replyID, request)
            }
        }
        for (held, replyID, request) in due {
            guard case .set(let name, let value) = request else { continue }
            do throws(PlayerError) {
                try handle.setPropertyAsync(name, value, replyID: replyID)
            } catch {
                // Not queued: nothing will answer it; read what mpv has (it puts the read-out
                // back), and report the refusal as a sent command's refusal is.
                state.withLock { state in
                    _ = state.sentOperations.take(replyID)
                    Self.setAnswered(&state, name)
                }
                finish(held.readsIfRefused)
                applyIntent { _ in [.event(.error(error))] }
                handOverHeldSets()
            }
        }
    }

    /// The property a sent operation sets when it is one setting that coalesces: a single set of
    /// a property with a read-out (``PlaybackModel/settableProperties``).
    static func coalescedProperty(of operation: EngineOperation) -> String? {
        let requests = operation.requests
        guard requests.count == 1, case .set(let name, _) = requests[0], PlaybackModel.settableProperties.contains(name) else { return nil }
        return name
    }

    /// A request as a log or an error names it: `set speed to 1.5`, `seek 10 absolute+exact`.
    static func describe(_ request: EngineOperation.Request) -> String {
        switch request {
        case .set(let name, let value): "set \(name) to \(MPVHandle.plain(value))"
        case .command(let arguments): arguments.joined(separator: " ")
        }
    }

    /// The typed error of a refused request.
    static func error(of request: EngineOperation.Request, status: Int32) -> PlayerError {
        switch request {
        case .set(let name, let value): return MPVHandle.propertyError(name: name, value: value, status: status)
        case .command(let arguments): return MPVHandle.commandError(arguments, status: status)
        }
    }
}
