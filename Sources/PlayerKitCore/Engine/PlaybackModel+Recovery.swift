import Foundation

// Lost events: after mpv's event queue overflowed, every followed property re-read and the
// state rebuilt from the answers.
extension PlaybackModel {
    // MARK: Lost events

    /// mpv's event queue overflowed: some events are lost. Re-reads every property the model
    /// follows and what says which item is current; once every answer is in (mpv answers in
    /// order, after whatever it queued before), ``finishRecovery()`` rebuilds the state. The
    /// model's own requests still unanswered then lost their answers with the overflow.
    mutating func recoverLostEvents() -> [Output] {
        if firstFrameRead != nil {
            // Its answer may be lost: the recovery announces the first frame instead (unless it
            // went out already).
            firstFrameRead = nil
            if !firstFrameAnnounced { awaitingFirstFrame = true }
        }
        var next = Recovery()
        next.poll = Set(pollRequests.keys).union(recovery?.poll ?? [])
        next.info = Set(infoRequests.keys).union(recovery?.info ?? [])
        next.confirm = confirmations.pendingRequests.union(recovery?.confirm ?? [])
        next.failedPath = Set(failedPathRequests.keys).union(recovery?.failedPath ?? [])
        next.seek = seeks.landingRead ?? recovery?.seek
        var requests: [(replyID: UInt64, name: String)] = []
        for name in Self.recoveryProperties {
            let request = nextRequestID()
            next.pending[request] = name
            requests.append((request, name))
        }
        recovery = next
        return [.requestProperties(requests)]
    }

    /// The playlist a finished recovery read (once), so the engine can find the entries of
    /// loads whose `loadfile` answer was lost.
    mutating func takeRecoveredPlaylist() -> MPVValue? {
        defer { recoveredPlaylist = nil }
        return recoveredPlaylist
    }

    /// The error of a load whose item's events were lost.
    static func lostEventsError(_ source: String) -> PlayerError {
        .loadFailed(source: source, MPVError(
            code: -1, message: MPVErrorMessages.message(for: -1),
            logMessages: ["mpv's event queue overflowed and this item's events were lost"]))
    }

    /// Every answer of a recovery is in: rebuild the state from them, then say so.
    mutating func finishRecovery() -> [Output] {
        guard let done = recovery else { return [] }
        recovery = nil
        var outputs: [Output] = []
        // 1. The model's requests from before the overflow still unanswered lost their answers:
        //    forget them, or polling, confirmations and the like would wait forever.
        for request in done.poll { pollRequests[request] = nil }
        confirmations.forget(done.confirm)
        for request in done.failedPath { failedPathRequests[request] = nil }
        let infoLost = done.info.contains { infoRequests[$0] != nil }
        if infoLost { infoRequests = [:] }
        let seekLost = done.seek != nil && done.seek == seeks.landingRead
        seeks.forgetLost(done.seek)
        pendingReplacements = 0
        // 2. Every followed property, as mpv now has it (a setter's confirmation pending is
        //    newer than these answers only if made after them; its own answer follows).
        for name in Self.observedProperties(positionInterval: .milliseconds(1)) where !confirmations.isConfirming(name) {
            outputs += applyProperty(name: name, value: done.values[name] ?? .none)
        }
        if let time = done.values["time-pos"]?.doubleValue { position = time }
        // Whether a seek awaited landed, its events lost with the rest, nobody can say now:
        // the seeks return at the position mpv has now.
        outputs += landed(seeks.resolve())
        cacheDuration = done.values["demuxer-cache-duration"]?.doubleValue ?? cacheDuration
        // 3. The item: which entry mpv plays, and whether it loaded.
        let entries = done.values["playlist"]?.arrayValue ?? []
        let playing = entries.first { $0["playing"]?.boolValue == true } ?? entries.first { $0["current"]?.boolValue == true }
        let idle = done.values["idle-active"]?.boolValue ?? false
        if idle || playing == nil {
            // The item ended unseen (how, nobody can say now): no itemEnded, and loads waiting for
            // it fail.
            if phase == .loading || phase == .loaded { phase = .ended }
            for waiting in awaitedEntries.sorted() {
                outputs.append(.loadResolved(entryID: waiting, .failure(Self.lostEventsError(name(of: waiting)))))
            }
            awaitedEntries.removeAll()
        } else if let entryID = playing?["id"]?.intValue {
            if entryID != currentEntryID {
                outputs += apply(.startFile(entryID: entryID))
                if sources[entryID] == nil, let path = done.values["path"]?.stringValue {
                    remember(label(path, entry: entryID), forEntry: entryID)
                }
            }
            let loaded = done.values["time-pos"]?.doubleValue != nil
            if loaded, phase != .loaded || loadedEntryID != entryID || infoLost {
                outputs += apply(.fileLoaded)  // reads the item's details: mediaLoaded follows
            }
            if loaded, awaitingFirstFrame {
                awaitingFirstFrame = false
                firstFrameShown = true
                outputs.append(.event(.firstFrame))
            }
        }
        if seekLost { outputs.append(.event(.seekCompleted(position: position))) }
        recoveredPlaylist = .array(entries)
        outputs += refreshState()
        outputs.append(.event(.eventsLost(snapshot)))
        return outputs
    }
}
