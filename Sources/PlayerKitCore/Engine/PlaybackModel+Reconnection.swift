import Foundation

// A live item whose source was lost: the model's side of ``LiveReconnection`` (the attempts'
// ends, the decisions, the timer's and the app's interruptions).
extension PlaybackModel {
    // MARK: Live reconnection

    /// The end of a reconnection's attempt (the lost live item's entry, opened again).
    mutating func reconnectAttemptEnded(entryID: Int64, reason: MPVEvent.EndFileReason, code: Int32) -> [Output] {
        let outputs: [Output] = landed(seeks.resolve())
        reopenRequest = nil
        switch reason {
        case .quit:
            return []
        case .stop where reconnection.reconnecting?.givingUp != true:
            // The app stopped the player, or loaded another item, while the attempt opened.
            reconnection.cancel()
            reconnectionChanged()
            let endReason: ItemEndReason
            if pendingReplacements > 0 {
                pendingReplacements -= 1
                endReason = .replaced
            } else {
                endReason = .stopped
            }
            phase = .idle
            position = nil
            _ = seeks.itemEnded()
            return outputs + [.event(.itemEnded(endReason))]
        default:
            // The attempt failed (or its source ended at once, or the buffering timeout stopped it).
            let lines = errors.takeForError(entry: entryID, code: code, sources: sources)
            return outputs + reconnectionDecided(reconnection.attemptFailed(at: now(), lines: lines))
        }
    }

    /// Carries out a reconnection's decision.
    mutating func reconnectionDecided(_ decision: LiveReconnection.Decision) -> [Output] {
        switch decision {
        case .retry(let delay, let generation):
            return [.scheduleReconnect(after: delay, generation: generation)]
        case .giveUp(let cause, let after):
            reconnectionChanged()
            _ = watchdog.takeGivenUp()
            let error = PlayerError.networkFailed(source: currentEntryID.map(name(of:)) ?? "?", cause: cause, after: after)
            phase = .failed
            _ = seeks.itemEnded()
            infoRequests = [:]
            infoEntryID = nil
            return [.event(.error(error)), .event(.itemEnded(.error(error)))]
        case .none:
            return []
        }
    }

    /// The timer of a reconnection's attempt `generation` fired: opens the lost live item again,
    /// or gives it up once the reconnection lasted ``PlayerConfiguration/networkTimeout``.
    mutating func reconnectDue(generation: UInt64) -> [Output] {
        let decision = reconnection.attemptDue(generation: generation, at: now())
        guard case .retry = decision, let lost = reconnection.reconnecting else { return reconnectionDecided(decision) + refreshState() }
        // The lost item was the playlist's last (mpv keeps it there, idle): play it again.
        let index = settings.playlist.map { $0.index ?? max($0.count - 1, 0) } ?? 0
        reconnection.attemptSent()
        let request = nextRequestID()
        reopenRequest = request
        return [.reopen(playlistIndex: index, replyID: request, attempt: lost.attempts + 1, cause: lost.cause)]
    }

    /// mpv did not take a reconnection's attempt (its queue was full): it failed.
    mutating func reopenRefused() -> [Output] {
        reopenRequest = nil
        return reconnectionDecided(reconnection.attemptFailed(at: now(), lines: [])) + refreshState()
    }

    /// The app stops the player: a live item that waits between two reconnection attempts
    /// (nothing is opening, so mpv ends nothing) ends now, stopped.
    mutating func stopRequested() -> [Output] {
        guard let lost = reconnection.reconnecting, !lost.inFlight else { return [] }
        reconnection.cancel()
        reconnectionChanged()
        phase = .idle
        position = nil
        _ = seeks.itemEnded()
        return [.event(.itemEnded(.stopped))] + refreshState()
    }
}
