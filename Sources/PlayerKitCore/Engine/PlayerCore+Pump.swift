internal import CMPV
import Dispatch
import Foundation
import Logging
import PlayerKitSupport

// The event pump: mpv's queue drained on the pump queue, each event copied, applied to the
// model under the lock and its answers routed (loads, sent operations, reads, observations).
extension PlayerCore {
    // MARK: Event pump

    /// Drains mpv's queue down to `MPV_EVENT_NONE`. Runs only on `pumpQueue`. Never blocks:
    /// `mpv_wait_event` with timeout 0, and only non-blocking async requests.
    func drain() {
        // When mpv signalled the events: they carry that time, not the moment this thread got
        // to them (a pump scheduled late on a busy machine would move every frame change).
        let scheduled = signal.rearm()
        // FFmpeg's lines credited to the player, written before the events below were read.
        takeFFmpegLines()
        // One event at a time: copy it (mpv reuses its memory at the next call), apply it and
        // deliver what it produced, then ask for the next. Delivering before the next
        // mpv_wait_event matters for latency: the call that finds the queue empty can take tens
        // of microseconds, because libmpv refreshes observed properties inside it.
        while let event = nextEvent() {
            let signalled = signal.signalled(since: scheduled)
            switch event {
            case .logMessage(let level, let prefix, let text):
                if LibMPV.isSpuriousAONullError(prefix: prefix, text: text) { continue }
                if forwardedLogLevels.contains(level) { logMPVMessage(level: level, prefix: prefix, text: text) }
                if level == .error || level == .fatal { update { $0.model.apply(event) } }
            case .queueOverflow:
                // Events were lost: re-read the state, and tell every channel (eventsLost).
                mpvLogger.warning("mpv's event queue overflowed and events were lost; re-reading the player's state")
                update { state in
                    state.loads.overflowed()
                    state.sentOperations.overflowed()
                    state.propertyReads.overflowed()
                    return state.model.recoverLostEvents()
                }
            case .commandReply(let replyID, let error, let result):
                update { state in
                    Self.loadReply(&state, replyID: replyID, error: error, result: result)
                        + Self.sentReply(&state, replyID: replyID, error: error, result: result)
                        + state.model.apply(event)
                }
            case .setPropertyReply(let replyID, let error):
                guard replyID != 0 else { continue }
                update { Self.sentReply(&$0, replyID: replyID, error: error, result: .none) }
                handOverHeldSets()
            case .propertyReply(let replyID, let error, let name, let value) where replyID & MPVRequestIDs.readBit != 0:
                let read = state.withLock { $0.propertyReads.take(replyID) }
                read?.reply.resume(error >= 0 ? .success(value) : .failure(MPVHandle.propertyError(name: name, value: nil, status: error)))
            case .propertyChanged(MPVRequestIDs.frameClockObservation, _, let value):
                frameClock.note(value.doubleValue)
            case .propertyChanged(MPVRequestIDs.statisticsFrameObservation, _, let value):
                let time = signalled ?? .now
                // The tracker moves on under the lock; only a frame that raises or clears an
                // alarm goes through the outbox (most frames change nothing).
                let (alarms, needsPositions) = state.withLock { state in
                    state.tally.noteFrame(position: value.doubleValue, at: time)
                    return (state.alarms.note(position: value.doubleValue), state.alarms.needsPositions)
                }
                if !alarms.isEmpty { update(at: signalled) { _ in alarms.map(Self.alarmEvent) } }
                // The fault is over: the alarms stop asking for every frame.
                if !needsPositions, alarmPositionsObserved.withLock({ $0 }) { syncAlarmPositions() }
            case .propertyChanged(let observation, _, let value)
                where observation >= MPVRequestIDs.alarmObservation && observation < MPVRequestIDs.alarmObservation + UInt64(AlarmKind.allCases.count):
                noteAlarmMetadata(index: Int(observation - MPVRequestIDs.alarmObservation), value: value, at: signalled)
            case .propertyChanged(MPVRequestIDs.bufferedMediaObservation, _, let value):
                guard bufferedMediaUsers.withLock({ $0 > 0 }) else { continue }
                update(at: signalled) { _ in [.event(.bufferedMediaChanged(Self.bufferedMedia(from: value)))] }
            case .propertyChanged(let observation, let name, let value) where observation & MPVRequestIDs.appObservationBit != 0:
                guard appObservations.withLock({ $0.live.contains(observation) }) else { continue }
                update(at: signalled) { _ in [.event(.propertyChanged(name: name, value: value))] }
            default:
                if case .fileLoaded = event { noteOpened() }
                if case .endFile(_, let reason, _, _, _) = event, reason == .error || reason == .endOfFile { noteOpened() }
                update(at: signalled) { state in
                    // A seek or the item's end breaks the timeline: alarms raised end before it.
                    var outputs: [PlaybackModel.Output] = []
                    switch event {
                    case .seek, .endFile: outputs = state.alarms.reset().map(Self.alarmEvent)
                    default: break
                    }
                    outputs += state.model.apply(event)
                    if let playlist = state.model.takeRecoveredPlaylist() { outputs += Self.recoverLoads(&state, playlist: playlist, id: id) }
                    return outputs
                }
                switch event {
                case .seek, .endFile: if alarmPositionsObserved.withLock({ $0 }) { syncAlarmPositions() }
                default: break
                }
            }
        }
        // mpv's queue and log are empty, and FFmpeg's lines written meanwhile are in: hooks and
        // failures held for their log lines can go on.
        takeFFmpegLines()
        applyIntent { $0.drained() }
        // Sets held behind ones whose answers were lost in an overflow.
        handOverHeldSets()
    }

    /// Forwards and applies FFmpeg's lines credited to the player (``FFmpegLog``), in the order
    /// they were written: to the player's logger at the levels it asked for (as mpv's own lines),
    /// and to the model when they are warnings, errors or request starts (they say why an item
    /// failed, and when a request that failed began).
    func takeFFmpegLines() {
        let lines = ffmpegLines.withLock { lines -> [FFmpegLog.Line] in
            defer { lines = [] }
            return lines
        }
        guard !lines.isEmpty else { return }
        for line in lines where forwardedLogLevels.contains(line.level) {
            logMPVMessage(level: line.level, prefix: line.module, text: line.text)
        }
        let read = lines.filter { $0.isSevere || $0.startsRequest }
        guard !read.isEmpty else { return }
        update { state in
            read.flatMap { state.model.readFFmpegLine(level: $0.level, text: $0.text, at: $0.time) }
        }
    }

    /// The item being opened loaded or failed: FFmpeg's lines naming its server are no longer
    /// taken to be this player's for that reason alone (``FFmpegLineAttribution``).
    func noteOpened() {
        if let token = ffmpegToken.withLock({ $0 }) { FFmpegLog.shared.noteOpened(token) }
    }

    /// After a recovery from lost events: sent operations still unanswered lost their answer
    /// (the state was re-read instead); a load whose `loadfile` answer was lost waits for its
    /// entry, found in the re-read playlist by file name (the newest), or fails.
    static func recoverLoads(_ state: inout State, playlist: MPVValue, id: PlayerID) -> [PlaybackModel.Output] {
        for sent in state.sentOperations.takeLost() {
            if let property = sent.coalescedProperty { setAnswered(&state, property) }
            if let reply = sent.reply { state.answers.append((reply, .failure(.replyLost(id, operation: describe(sent.request))))) }
        }
        for read in state.propertyReads.takeLost() {
            state.answers.append((read.reply, .failure(.replyLost(id, operation: "read \(read.name)"))))
        }
        var outputs: [PlaybackModel.Output] = []
        let entries = playlist.arrayValue ?? []
        let named = entries.compactMap { entry -> (name: String, id: Int64)? in
            guard let name = entry["filename"]?.stringValue, let id = entry["id"]?.intValue else { return nil }
            return (name, id)
        }
        for (waiter, entryID) in state.loads.recover(entries: named, name: \.argument) {
            if let entryID {
                outputs += state.model.awaitEntry(entryID, source: waiter.source)
            } else {
                waiter.completion.resume(.failure(PlaybackModel.lostEventsError(waiter.source)))
            }
        }
        return outputs
    }

    /// The next event, copied; nil at `MPV_EVENT_NONE` or once the handle is destroyed.
    func nextEvent() -> MPVEvent? {
        handle.ifAlive { raw -> MPVEvent? in
            guard let pointer = mpv_wait_event(raw, 0) else { return nil }
            return MPVEvent(copying: pointer.pointee)
        } ?? nil
    }

    /// Turns a `loadfile` reply into an entry waiter (or a failure).
    static func loadReply(_ state: inout State, replyID: UInt64, error: Int32, result: MPVValue)
        -> [PlaybackModel.Output]
    {
        let entryID = error >= 0 ? result["playlist_entry_id"]?.intValue : nil
        guard let waiter = state.loads.answered(replyID: replyID, entry: entryID) else { return [] }
        guard let entryID else {
            state.model.noteReplacementFailed()
            // mpv refused the `loadfile` itself: no item was opened, so no line is about it.
            let mpvError = MPVError(
                code: error, message: MPVErrorMessages.message(for: error),
                logMessages: ["mpv refused the loadfile command (\(MPVErrorMessages.message(for: error))); nothing was opened"])
            waiter.completion.resume(.failure(.loadFailed(source: waiter.source, mpvError)))
            return []
        }
        return state.model.awaitEntry(entryID, source: waiter.source)
    }

    /// The reply to one request of an operation sent with ``send(_:)``: a refusal becomes an
    /// ``PlayerEvent/error(_:)`` naming the request; the last request's success applies the
    /// operation to the model.
    static func sentReply(_ state: inout State, replyID: UInt64, error: Int32, result: MPVValue)
        -> [PlaybackModel.Output]
    {
        guard let sent = state.sentOperations.take(replyID) else { return [] }
        if let property = sent.coalescedProperty { Self.setAnswered(&state, property) }
        // The reads confirming the sets: after a refusal too, to put the read-outs back (then
        // the confirmations the answer would have given are read as well).
        let confirming: [PlaybackModel.Output] = sent.confirmingReads.isEmpty ? [] : [.requestProperties(sent.confirmingReads)]
        guard error >= 0 else {
            let refused = sent.confirmingReads + sent.confirmedByAnswer
            let confirming: [PlaybackModel.Output] = refused.isEmpty ? [] : [.requestProperties(refused)]
            sent.operation.revert(&state.model)
            // A caller waiting for the answer hears the refusal; nobody else needs to.
            if let reply = sent.reply {
                state.answers.append((reply, .failure(Self.error(of: sent.request, status: error))))
                return confirming
            }
            return [.event(.error(Self.error(of: sent.request, status: error)))] + confirming
        }
        guard sent.isLast else { return [] }
        if !sent.confirmedByAnswer.isEmpty { state.model.setAnswered(sent.confirmedByAnswer.map(\.replyID)) }
        var outputs = confirming + sent.operation.applied(to: &state.model, result: result)
        if let reply = sent.reply, sent.operation.landsOnRestart {
            // Accepted, not yet shown: the caller waits until the seek lands.
            state.seekReplies.add(reply, replyID: replyID)
            outputs += state.model.awaitSeekLanding(ticket: replyID)
            return outputs
        }
        if let reply = sent.reply { state.answers.append((reply, .success(result))) }
        return outputs
    }

    /// The set of `property` in flight was answered (or lost): the set held behind it, if any,
    /// is due (it stays in flight), else the property has none in flight.
    static func setAnswered(_ state: inout State, _ property: String) {
        if let held = state.setsInFlight[property], let held {
            state.setsInFlight[property] = .some(nil)
            state.heldSetsDue.append(held)
        } else {
            state.setsInFlight[property] = nil
        }
    }

    func logMPVMessage(level: MPVEvent.LogLevel, prefix: String, text: String) {
        let message = "[\(prefix)] \(text.hasSuffix("\n") ? String(text.dropLast()) : text)"
        let metadata: Logger.Metadata = ["module": "\(prefix)"]
        switch level {
        case .fatal: mpvLogger.critical("\(message)", metadata: metadata)
        case .error: mpvLogger.error("\(message)", metadata: metadata)
        case .warn: mpvLogger.warning("\(message)", metadata: metadata)
        case .info: mpvLogger.info("\(message)", metadata: metadata)
        case .verbose, .debug: mpvLogger.debug("\(message)", metadata: metadata)
        case .trace: mpvLogger.trace("\(message)", metadata: metadata)
        }
    }
}
