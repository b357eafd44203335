import Foundation

// How an item ended: mpv's end-file classified (finished, truncated, stopped, replaced, failed
// with its reasons, a playlist file's redirect, a live source lost), and the load it resolves.
extension PlaybackModel {
    /// The end of an entry. `inserted`: for a playlist file, the entries mpv put in its place.
    mutating func endFile(
        entryID: Int64, reason: MPVEvent.EndFileReason, code: Int32, inserted: ClosedRange<Int64>?
    ) -> [Output] {
        if reconnection.isReconnecting, entryID == currentEntryID { return reconnectAttemptEnded(entryID: entryID, reason: reason, code: code) }
        // Awaited seeks end with the item (a seek past the end ends it): they return at once.
        var outputs: [Output] = landed(seeks.resolve())
        let source = sources[entryID]
        let wasLoaded = loadedEntryID == entryID
        let endReason: ItemEndReason
        switch reason {
        case .endOfFile where isLive && entryID == currentEntryID && reconnection.sourceGaveUp:
            // A live source FFmpeg gave up on was lost, not played to its end.
            if settings.playlist?.hasNext != true,
               case .retry(let delay, let generation)? = reconnection.endOfFile(at: now(), waitingSince: watchdog.bufferingSince) {
                // The item stays, waiting for its source (buffering) while it is opened again.
                reconnectionChanged()
                outputs.append(.scheduleReconnect(after: delay, generation: generation))
                return outputs
            }
            // Another item follows in the playlist, and mpv goes on to it: this one failed.
            let error = PlayerError.networkFailed(source: name(of: entryID), cause: reconnection.lossCause, after: .zero)
            outputs.append(.event(.error(error)))
            endReason = .error(error)
            phase = .failed
        case .endOfFile:
            endReason = truncation() ?? .finished
            phase = .ended
        case .error, .unknown:
            let lines = errors.takeForError(entry: entryID, code: code, sources: sources)
            let mpvError = MPVError(code: code, message: MPVErrorMessages.message(for: code), logMessages: lines)
            let error: PlayerError = wasLoaded
                ? .playbackFailed(source: source, mpvError)
                : .loadFailed(source: name(of: entryID), mpvError)
            outputs.append(.event(.error(error)))
            endReason = .error(error)
            phase = .failed
            // An entry of a playlist file failed: mpv goes on to the next, and so does its load.
            if let origin = playlistOrigins[entryID], entryID < origin.lastEntryID, awaitedEntries.remove(entryID) != nil {
                awaitedEntries.insert(entryID + 1)
                outputs.append(.loadRedirected(from: entryID, to: entryID + 1))
            }
        case .redirect:
            // A playlist file: mpv put its entries in its place and plays the first. Not an
            // item of its own: no itemEnded, the state stays `loading`, the load waits for
            // the first entry.
            if let inserted {
                let playlist = name(of: entryID)
                for (index, insertedID) in inserted.enumerated() {
                    playlistOrigins[insertedID] = PlaylistOrigin(playlist: playlist, index: index + 1, lastEntryID: inserted.upperBound)
                }
                if playlistOrigins.count > 1024 {
                    for old in playlistOrigins.keys where old < inserted.lowerBound - 1024 { playlistOrigins[old] = nil }
                }
                if awaitedEntries.remove(entryID) != nil {
                    awaitedEntries.insert(inserted.lowerBound)
                    outputs.append(.loadRedirected(from: entryID, to: inserted.lowerBound))
                }
                return outputs
            }
            let error = PlayerError.loadFailed(source: name(of: entryID), MPVError(
                code: -13, message: MPVErrorMessages.message(for: -13),
                logMessages: errors.reasons(entry: entryID, code: 0, errors.pendingLines, sources: sources) + ["the playlist has no entries mpv could use"]))
            outputs.append(.event(.error(error)))
            endReason = .error(error)
            phase = .failed
        case .stop where watchdog.givenUp != nil && entryID == currentEntryID:
            // The stop a buffering timeout asked for. A live source that FFmpeg reported trouble
            // with (it timed out, refused, answered an error) says why.
            var error = watchdog.takeGivenUp() ?? .bufferingTimedOut(source: name(of: entryID), position: position, after: .zero)
            if isLive, let trouble = reconnection.trouble, case .bufferingTimedOut(let source, _, let after) = error {
                error = .networkFailed(source: source, cause: trouble, after: after)
            }
            outputs.append(.event(.error(error)))
            endReason = .error(error)
            phase = .failed
        case .stop:
            if pendingReplacements > 0 {
                pendingReplacements -= 1
                endReason = .replaced
            } else {
                endReason = .stopped
                // Stopped, not replaced: the playlist is gone, so a load that moved on to a
                // later entry of a playlist file waits for nothing.
                for waiting in awaitedEntries where waiting > entryID && playlistOrigins[waiting] != nil {
                    awaitedEntries.remove(waiting)
                    outputs.append(.loadResolved(entryID: waiting, .failure(.loadCancelled(source: name(of: waiting)))))
                }
            }
            phase = .idle
            // Nothing is loaded: no position (a replacing load's start resets the rest).
            position = nil
        case .quit:
            return []
        }
        if entryID == currentEntryID {
            _ = seeks.itemEnded()
            infoRequests = [:]
            infoEntryID = nil
        }
        outputs.append(.event(.itemEnded(endReason)))
        if awaitedEntries.remove(entryID) != nil {
            let failure: PlayerError
            if case .error(let error) = endReason { failure = error } else { failure = .loadCancelled(source: name(of: entryID)) }
            outputs.append(.loadResolved(entryID: entryID, .failure(failure)))
        }
        return outputs
    }

    /// ``ItemEndReason/truncated(position:duration:)`` when the current item reached its end
    /// of file well short of its duration: neither the position nor the last packet read got
    /// within a second (and 5 %) of it, plus what one position interval can hide, while playing
    /// forwards with no seek in flight. Nil when it finished (or nothing says otherwise).
    func truncation() -> ItemEndReason? {
        guard playbackDirection != .backward, !seeks.isSettling, loadedEntryID == currentEntryID
        else { return nil }
        return watchdog.truncation(duration: duration, position: position, positionInterval: positionInterval, speed: speed)
    }
}
