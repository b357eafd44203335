import Foundation

// What the API tells the model before the matching mpv command (optimistic read-outs, the
// entries and seeks it waits for), and the polling of position and cache.
extension PlaybackModel {
    // MARK: Intents from the API (called before the matching mpv command)

    /// The app is about to load an item that replaces the current one.
    mutating func noteReplacing() {
        if phase == .loading || phase == .loaded { pendingReplacements += 1 }
    }

    /// A replacement announced with ``noteReplacing()`` did not happen (mpv refused it).
    mutating func noteReplacementFailed() {
        if pendingReplacements > 0 { pendingReplacements -= 1 }
    }

    /// The app is about to stop playback: whatever ends next ended because of a stop.
    mutating func noteStopping() {
        pendingReplacements = 0
    }

    /// The app set `pause`; mpv accepted it, so the model need not wait for the observation.
    mutating func notePause(_ paused: Bool) -> [Output] {
        noteSet("pause", .flag(paused))
    }

    /// A set of property `name` to `value` was handed to mpv (by ``Player/send(_:)``, an awaited
    /// command or ``Player/setProperty(_:to:)``): the read-out shows it from now on, and a change
    /// is reported now. Observations of `name` that mpv made before the set may still be queued;
    /// they are ignored until the set is confirmed. Names without a read-out are ignored.
    ///
    /// What confirms it:
    /// - For the properties only a client changes (``confirmedBySetAnswer``), mpv's answer to
    ///   the set. mpv marks the property changed while it carries out the set, before it
    ///   answers, and reports an observed property only once it has read it again: whatever it
    ///   reports after the answer was read after the set. A refusal is confirmed by a read.
    /// - For the others (`pause`, which mpv changes itself, as at the end with `keep-open`;
    ///   `fullscreen`, which the window system may refuse), a read asked for once the set is
    ///   answered: it says what mpv has then, and is asked again while it differs from mpv's
    ///   last report (mpv may have gone back to that value, and then never reports).
    /// A track selection (`aid`, `vid`, `sid`) shows in ``tracks`` and is confirmed by a read of
    /// `track-list`.
    mutating func noteSet(_ name: String, _ value: MPVValue) -> [Output] {
        var outputs: [Output]
        let confirmed: String
        if let kind = Self.trackSelectionProperties[name] {
            // A number selects that track, "no" none; anything else ("auto") waits for mpv.
            let selection: Int?? = value.intValue.map { Int($0) } ?? (value.stringValue == "no" ? .some(nil) : nil)
            outputs = selection.map { selectTrack(kind, id: $0) } ?? []
            confirmed = "track-list"
        } else {
            if name == Self.timestampOriginProperty {
                if case .flag(let rebased) = value { timestampsRebased = rebased } else { timestampsRebased = value.stringValue != "no" }
                return []
            }
            guard Self.settableProperties.contains(name) else { return [] }
            outputs = applyProperty(name: name, value: value, fromSetter: true)
            confirmed = name
        }
        guard Self.confirmedBySetAnswer.contains(confirmed) else { return outputs + confirm(confirmed) + refreshState() }
        let request = nextRequestID()
        confirmations.confirm(confirmed, request: request, setValue: value)
        return outputs + [.confirmWithSetAnswer([(request, confirmed)])] + refreshState()
    }

    /// A command PlayerKit knows nothing of (``EngineOperation/runCommand(_:)``) was handed to
    /// mpv: it may set a property whose set only mpv's answer was to confirm back to what mpv
    /// last reported, before mpv reads it again, and mpv would then report nothing. Those
    /// properties are confirmed by reads, asked once mpv answered the command.
    mutating func noteUnknownCommand() -> [Output] {
        let names = confirmations.unreported.sorted()
        return names.flatMap { confirm($0) }
    }

    /// The settable properties that only a client changes (mpv keeps the value it was given):
    /// mpv's answer to their set confirms it (``noteSet(_:_:)``), no read is needed.
    static let confirmedBySetAnswer: Set<String> = ["volume", "mute", "speed", "loop-file", "play-dir", "hwdec", "audio-device"]

    /// mpv carried out the sets whose confirmations are `requests`
    /// (``Output/confirmWithSetAnswer(_:)``): what it reports of those properties from now on
    /// is newer than the sets.
    mutating func setAnswered(_ requests: [UInt64]) {
        for request in requests { confirmations.settled(request) }
    }

    /// The track list as read right after the player changed it (an added subtitle file): the
    /// read-out shows it from now on, confirmed as a setter's value is.
    mutating func noteTrackList(_ value: MPVValue) -> [Output] {
        replaceTracks(with: Track.list(from: value)) + confirm("track-list")
    }

    /// Ignores observations of `name` made before now until a read asked for here answers.
    mutating func confirm(_ name: String) -> [Output] {
        let request = nextRequestID()
        confirmations.confirm(name, request: request)
        return [.requestProperties([(request, name)])]
    }

    /// Marks track `id` of `kind` selected (nil: none of that kind) in ``tracks``.
    mutating func selectTrack(_ kind: Track.Kind, id: Int?) -> [Output] {
        var list = tracks
        for index in list.indices where list[index].kind == kind {
            list[index].isSelected = list[index].id == id
        }
        return replaceTracks(with: list)
    }

    /// A new track list: reported with ``PlayerEvent/tracksChanged(_:)`` when it differs and the
    /// item's ``PlayerEvent/mediaLoaded(_:)`` is out (which carries the first list).
    mutating func replaceTracks(with list: [Track]) -> [Output] {
        guard list != tracks else { return [] }
        tracks = list
        return loadedInfo != nil ? [.event(.tracksChanged(list))] : []
    }

    /// Reports the decoder when it changed for a loaded item.
    mutating func decoderChanged() -> [Output] {
        let decoder = videoDecoder
        guard loadedInfo != nil, decoder != reportedDecoder else { return [] }
        reportedDecoder = decoder
        return [.event(.videoDecoderChanged(decoder))]
    }

    /// A `load()` waits for `entryID`, a source string the engine knows.
    mutating func awaitEntry(_ entryID: Int64, source: String) -> [Output] {
        remember(source, forEntry: entryID)
        // Already loaded (possible when the answer to `loadfile` was lost with mpv's events).
        if entryID == currentEntryID, let loadedInfo { return [.loadResolved(entryID: entryID, .success(loadedInfo))] }
        // The entry may already have been passed over (replaced before it started).
        if let current = currentEntryID, entryID < current {
            return [.loadResolved(entryID: entryID, .failure(.loadCancelled(source: source)))]
        }
        awaitedEntries.insert(entryID)
        return []
    }

    /// Remembers the source of an appended playlist entry, for error messages.
    mutating func noteSource(_ source: String, forEntry entryID: Int64) {
        remember(source, forEntry: entryID)
    }

    /// The load waiting for `entryID` gave up (its task was cancelled): forget the entry.
    mutating func forgetAwaited(_ entryID: Int64) {
        awaitedEntries.remove(entryID)
    }

    /// Every waiter that is still open, failed with `error` (used at shutdown).
    mutating func cancelAllWaiters(with error: PlayerError) -> [Output] {
        let outputs = awaitedEntries.sorted().map { Output.loadResolved(entryID: $0, .failure(error)) }
        awaitedEntries.removeAll()
        return outputs + landed(seeks.resolve())
    }

    /// mpv accepted a seek whose caller waits until it lands: `ticket` completes with
    /// ``Output/seekLanded(ticket:position:)`` once the player shows the new position (the
    /// restart after the seek, then one read of `time-pos`), or when the item ends first.
    mutating func awaitSeekLanding(ticket: UInt64) -> [Output] {
        guard phase == .loading || phase == .loaded else { return [.seekLanded(ticket: ticket, position: position)] }
        seeks.await(ticket: ticket)
        return []
    }

    /// The awaited seeks `tickets`, completed at the current position.
    func landed(_ tickets: [UInt64]) -> [Output] {
        tickets.map { .seekLanded(ticket: $0, position: position) }
    }

    // MARK: Polling

    /// Called once per position interval: while an item plays (or buffers), asks mpv for the
    /// position and cache without blocking. Nothing when paused, idle, or an answer is pending.
    mutating func poll(now: ContinuousClock.Instant = .now) -> [Output] {
        if let recovery, recovery.refused, recovery.pending.isEmpty { return recoverLostEvents() }
        if let stalled = checkBuffering(now: now) { return stalled }
        guard phase == .loaded, !isPaused || isPausedForCache, pollRequests.isEmpty else { return [] }
        return [requestPolledProperties()]
    }

    /// Gives the item up when it has been buffering longer than the buffering timeout: asks
    /// for a stop, whose end then reports ``PlayerError/bufferingTimedOut(source:position:after:)``.
    mutating func checkBuffering(now: ContinuousClock.Instant) -> [Output]? {
        let source = currentEntryID.map(name(of:)) ?? "?"
        guard watchdog.tick(now: now, state: state, source: source, position: position) != nil else { return nil }
        if reconnection.isReconnecting {
            // A live item reconnecting: given up now when nothing is opening, else once the
            // attempt opening is stopped (its end gives up).
            guard let decision = reconnection.bufferingTimedOut(at: self.now()) else { return [.stopItem] }
            return reconnectionDecided(decision) + refreshState()
        }
        return [.stopItem]
    }

    mutating func requestPolledProperties() -> Output {
        var requests: [(replyID: UInt64, name: String)] = []
        for name in Self.polledProperties {
            let request = nextRequestID()
            pollRequests[request] = name
            requests.append((request, name))
        }
        return .requestProperties(requests)
    }

    mutating func nextRequestID() -> UInt64 {
        replyIDs.next()
    }

    /// A polled (or, with a zero interval, observed) position or cache value.
    mutating func applyPolled(name: String, value: MPVValue) -> [Output] {
        switch name {
        case "time-pos":
            // Briefly unavailable (during a loop's wrap or a seek): keep the last known position.
            // A report that arrives after the item was unloaded (a per-frame observation or a
            // poll in flight at the stop) is about an item that is gone.
            guard let new = value.doubleValue, phase != .idle, phase != .failed else { return [] }
            let old = position
            position = new
            guard new != old || positionUnannounced, phase == .loaded, !seeks.isSettling else { return [] }
            positionUnannounced = false
            return [.event(.positionChanged(new))]
        case "demuxer-cache-duration":
            cacheDuration = value.doubleValue
        case "demuxer-cache-time":
            if let time = value.doubleValue { watchdog.noteDemuxed(until: time) }
        default:
            break
        }
        return []
    }
}
