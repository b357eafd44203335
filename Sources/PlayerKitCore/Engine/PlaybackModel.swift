/// The per-player state machine: turns copied mpv events into ``PlayerEvent``s and keeps the
/// latest known values for the read-out properties.
///
/// Pure logic: it never touches mpv. The engine feeds it events in order (under the player's
/// state lock) and carries out the ``Output``s it returns, outside the lock.
struct PlaybackModel: Sendable {
    /// What the engine must do after an event.
    enum Output: Sendable, Equatable {
        /// Deliver this event.
        case event(PlayerEvent)
        /// Ask mpv for these properties without blocking (`mpv_get_property_async`).
        case requestProperties([(replyID: UInt64, name: String)])
        /// A `load` for this playlist entry finished: resolve its waiter.
        case loadResolved(entryID: Int64, Result<MediaInfo, PlayerError>)

        static func == (lhs: Output, rhs: Output) -> Bool {
            switch (lhs, rhs) {
            case (.event(let a), .event(let b)): return a == b
            case (.requestProperties(let a), .requestProperties(let b)):
                return a.map(\.name) == b.map(\.name) && a.map(\.replyID) == b.map(\.replyID)
            case (.loadResolved(let a, let ra), .loadResolved(let b, let rb)): return a == b && ra == rb
            default: return false
            }
        }
    }

    /// Where the player is in an item's life, before pause and buffering are taken into account.
    enum Phase: Sendable, Equatable {
        case idle, loading, loaded, ended, failed
    }

    /// The properties the engine observes, by observation ID (the index + 1).
    ///
    /// `time-pos` and `demuxer-cache-duration` change with every frame. Observing them would
    /// wake the pump (and make libmpv refresh observed values) about 30 times a second per
    /// player; instead ``poll()`` asks for them once per position interval while playing.
    /// Only a zero interval ("every change") observes them.
    static func observedProperties(positionInterval: Duration) -> [String] {
        let base = [
            "pause", "paused-for-cache", "duration", "volume", "mute", "speed", "cache-buffering-state",
            "width", "height", "media-title", "track-list", "volume-max",
        ]
        return positionInterval == .zero ? base + ["time-pos", "demuxer-cache-duration"] : base
    }

    /// The properties ``poll()`` asks for.
    static let polledProperties = ["time-pos", "demuxer-cache-duration"]

    private(set) var phase: Phase = .idle
    private(set) var state: PlayerState = .idle
    private(set) var isPaused = false
    private(set) var isPausedForCache = false
    private var hasPlayedSinceLoad = false
    private var seekInProgress = false
    /// Set when an item starts; the first playback restart after it is the first frame.
    private var awaitingFirstFrame = false
    /// Whether the current item's first frame was presented.
    private(set) var firstFrameShown = false
    private(set) var position: Double?
    /// The mirroring last set (``Player/setFlip(_:)``).
    var flip: VideoFlip = .none
    private(set) var duration: Double?
    private(set) var volume: Double?
    /// mpv's `volume-max` (130 unless changed), so `setVolume` can refuse above it without a
    /// blocking read.
    private(set) var volumeMaximum: Double?
    private(set) var isMuted: Bool?
    private(set) var speed: Double?
    private(set) var bufferingPercent: Double?
    private(set) var cacheDuration: Double?
    private var width: Int?
    private var height: Int?
    private(set) var mediaTitle: String?
    private(set) var tracks: [Track] = []
    /// Poll requests in flight: reply ID -> property name.
    private var pollRequests: [UInt64: String] = [:]
    /// The request whose `time-pos` answer completes the current seek.
    private var seekPositionRequest: UInt64?
    private var lastReportedDuration: Double?

    /// The entry mpv is playing or opening.
    private(set) var currentEntryID: Int64?
    /// Entries whose file loaded (so an error on them is a playback failure, not a load failure).
    private var loadedEntryID: Int64?
    /// The sources of entries PlayerKit loaded, by mpv playlist entry ID.
    private var sources: [Int64: String] = [:]
    /// Entries a `load()` waits for.
    private var awaitedEntries: Set<Int64> = []
    /// Replacements the app asked for (load, next, previous) that mpv has not yet ended the current item for.
    private var pendingReplacements = 0
    /// Media-info requests in flight: reply ID -> property name, for the entry that loaded.
    private var infoRequests: [UInt64: String] = [:]
    private var infoEntryID: Int64?
    private var infoValues: [String: MPVValue] = [:]
    private var nextReplyID: UInt64

    /// - Parameter firstReplyID: the first reply ID the model may use for its own requests.
    init(firstReplyID: UInt64 = 1 << 48) {
        self.nextReplyID = firstReplyID
    }

    /// The video size, once a frame was decoded.
    var videoSize: VideoSize? {
        guard let width, let height, width > 0, height > 0 else { return nil }
        return VideoSize(width: width, height: height)
    }

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
        isPaused = paused
        return refreshState()
    }

    /// A `load()` waits for `entryID`, a source string the engine knows.
    mutating func awaitEntry(_ entryID: Int64, source: String) -> [Output] {
        remember(source, forEntry: entryID)
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

    /// Every waiter that is still open, failed with `error` (used at shutdown).
    mutating func cancelAllWaiters(with error: PlayerError) -> [Output] {
        let outputs = awaitedEntries.sorted().map { Output.loadResolved(entryID: $0, .failure(error)) }
        awaitedEntries.removeAll()
        return outputs
    }

    // MARK: Polling

    /// Called once per position interval: while an item plays (or buffers), asks mpv for the
    /// position and cache without blocking. Nothing when paused, idle, or an answer is pending.
    mutating func poll() -> [Output] {
        guard phase == .loaded, !isPaused || isPausedForCache, pollRequests.isEmpty else { return [] }
        return [requestPolledProperties()]
    }

    private mutating func requestPolledProperties() -> Output {
        var requests: [(replyID: UInt64, name: String)] = []
        for name in Self.polledProperties {
            let request = nextRequestID()
            pollRequests[request] = name
            requests.append((request, name))
        }
        return .requestProperties(requests)
    }

    private mutating func nextRequestID() -> UInt64 {
        nextReplyID += 1
        return nextReplyID
    }

    /// A polled (or, with a zero interval, observed) position or cache value.
    private mutating func applyPolled(name: String, value: MPVValue) -> [Output] {
        switch name {
        case "time-pos":
            // Briefly unavailable (during a loop's wrap or a seek): keep the last known position.
            guard let new = value.doubleValue else { return [] }
            let old = position
            position = new
            guard new != old, phase == .loaded, !seekInProgress, seekPositionRequest == nil else { return [] }
            return [.event(.positionChanged(new))]
        case "demuxer-cache-duration":
            cacheDuration = value.doubleValue
        default:
            break
        }
        return []
    }

    // MARK: Events

    /// Applies one mpv event.
    mutating func apply(_ event: MPVEvent) -> [Output] {
        var outputs: [Output] = []
        switch event {
        case .propertyChanged(_, let name, let value):
            outputs += applyProperty(name: name, value: value)
        case .startFile(let entryID):
            currentEntryID = entryID
            phase = .loading
            hasPlayedSinceLoad = false
            seekInProgress = false
            awaitingFirstFrame = true
            firstFrameShown = false
            pollRequests = [:]
            seekPositionRequest = nil
            position = nil
            duration = nil
            lastReportedDuration = nil
            width = nil
            height = nil
            tracks = []
            for waiting in awaitedEntries where waiting < entryID {
                awaitedEntries.remove(waiting)
                outputs.append(.loadResolved(
                    entryID: waiting, .failure(.loadCancelled(source: sources[waiting] ?? "?"))))
            }
        case .fileLoaded:
            phase = .loaded
            loadedEntryID = currentEntryID
            infoEntryID = currentEntryID
            infoValues = [:]
            infoRequests = [:]
            var requests: [(replyID: UInt64, name: String)] = []
            for name in ["duration", "track-list", "media-title", "path"] {
                let request = nextRequestID()
                infoRequests[request] = name
                requests.append((request, name))
            }
            outputs.append(.requestProperties(requests))
        case .propertyReply(let replyID, let error, let name, let value):
            if replyID == seekPositionRequest {
                seekPositionRequest = nil
                position = error < 0 ? position : value.doubleValue
                outputs.append(.event(.seekCompleted(position: position)))
                if let position { outputs.append(.event(.positionChanged(position))) }
                break
            }
            if pollRequests.removeValue(forKey: replyID) != nil {
                outputs += applyPolled(name: name, value: error < 0 ? .none : value)
                break
            }
            guard let name = infoRequests.removeValue(forKey: replyID) else { break }
            infoValues[name] = error < 0 ? MPVValue.none : value
            if infoRequests.isEmpty, let entryID = infoEntryID, entryID == currentEntryID {
                outputs += mediaLoaded(entryID: entryID)
            }
        case .seek:
            seekInProgress = true
        case .playbackRestart:
            if awaitingFirstFrame {
                awaitingFirstFrame = false
                firstFrameShown = true
                outputs.append(.event(.firstFrame))
                if pollRequests.isEmpty { outputs.append(requestPolledProperties()) }  // the starting position
            }
            if seekInProgress {
                // Completed once the landing position is known (one async read).
                seekInProgress = false
                let request = nextRequestID()
                seekPositionRequest = request
                outputs.append(.requestProperties([(request, "time-pos")]))
            }
        case .endFile(let entryID, let reason, let code):
            outputs += endFile(entryID: entryID, reason: reason, code: code)
        case .commandReply, .setPropertyReply, .logMessage, .queueOverflow, .shutdown, .other:
            break
        }
        return outputs + refreshState()
    }

    private mutating func applyProperty(name: String, value: MPVValue) -> [Output] {
        switch name {
        case "pause":
            isPaused = value.boolValue ?? isPaused
        case "paused-for-cache":
            isPausedForCache = value.boolValue ?? false
        case "time-pos", "demuxer-cache-duration":
            return applyPolled(name: name, value: value)
        case "duration":
            duration = value.doubleValue
            if let duration, duration != lastReportedDuration, phase == .loaded {
                lastReportedDuration = duration
                return [.event(.durationKnown(duration))]
            }
        case "volume":
            return changed(&volume, to: value.doubleValue) { .volumeChanged($0) }
        case "mute":
            return changed(&isMuted, to: value.boolValue) { .muteChanged($0) }
        case "speed":
            return changed(&speed, to: value.doubleValue) { .speedChanged($0) }
        case "cache-buffering-state":
            let percent = value.doubleValue
            let before = bufferingPercent
            bufferingPercent = percent
            if let percent, percent != before, isPausedForCache || percent < 100, phase == .loaded {
                return [.event(.bufferingProgress(percent: percent))]
            }
        case "volume-max":
            volumeMaximum = value.doubleValue
        case "width":
            width = value.intValue.map(Int.init)
        case "height":
            height = value.intValue.map(Int.init)
        case "media-title":
            mediaTitle = value.stringValue
        case "track-list":
            tracks = Track.list(from: value)
        default:
            break
        }
        return []
    }

    /// Stores a new value; reports it when it differs from a known earlier value (the first
    /// observation only sets the baseline: mpv always sends an initial value).
    private func changed<Value: Equatable>(
        _ stored: inout Value?, to newValue: Value?, _ event: (Value) -> PlayerEvent
    ) -> [Output] {
        defer { if newValue != nil { stored = newValue } }
        guard let newValue, let old = stored, old != newValue else { return [] }
        return [.event(event(newValue))]
    }

    private mutating func mediaLoaded(entryID: Int64) -> [Output] {
        let trackList = infoValues["track-list"].map(Track.list(from:)) ?? tracks
        tracks = trackList
        let loadedDuration = infoValues["duration"]?.doubleValue ?? duration
        let title = infoValues["media-title"]?.stringValue ?? mediaTitle
        let size = videoSize ?? trackList.first { $0.kind == .video && $0.isSelected }?.videoSize
        let info = MediaInfo(
            source: sources[entryID] ?? infoValues["path"]?.stringValue ?? "", duration: loadedDuration, videoSize: size, title: title,
            tracks: trackList)
        infoEntryID = nil
        var outputs: [Output] = []
        if let loadedDuration, loadedDuration != lastReportedDuration {
            duration = loadedDuration
            lastReportedDuration = loadedDuration
            outputs.append(.event(.durationKnown(loadedDuration)))
        }
        outputs.append(.event(.mediaLoaded(info)))
        if awaitedEntries.remove(entryID) != nil {
            outputs.append(.loadResolved(entryID: entryID, .success(info)))
        }
        return outputs
    }

    private mutating func endFile(entryID: Int64, reason: MPVEvent.EndFileReason, code: Int32) -> [Output] {
        var outputs: [Output] = []
        let source = sources[entryID]
        let wasLoaded = loadedEntryID == entryID
        let endReason: ItemEndReason
        switch reason {
        case .endOfFile:
            endReason = .finished
            phase = .ended
        case .error, .unknown:
            let mpvError = MPVError(code: code, message: MPVErrorMessages.message(for: code))
            let error: PlayerError = wasLoaded
                ? .playbackFailed(source: source, mpvError)
                : .loadFailed(source: source ?? "?", mpvError)
            outputs.append(.event(.error(error)))
            endReason = .error(error)
            phase = .failed
        case .redirect:
            endReason = .replaced
            phase = .idle
        case .stop:
            if pendingReplacements > 0 {
                pendingReplacements -= 1
                endReason = .replaced
            } else {
                endReason = .stopped
            }
            phase = .idle
        case .quit:
            return []
        }
        if entryID == currentEntryID {
            seekInProgress = false
            infoRequests = [:]
            infoEntryID = nil
        }
        outputs.append(.event(.itemEnded(endReason)))
        if awaitedEntries.remove(entryID) != nil {
            let failure: PlayerError
            if case .error(let error) = endReason { failure = error } else { failure = .loadCancelled(source: source ?? "?") }
            outputs.append(.loadResolved(entryID: entryID, .failure(failure)))
        }
        return outputs
    }

    /// Records the source of an entry. Entries stay known while they may be replayed
    /// (`previous()`); only the most recent 1024 are kept.
    private mutating func remember(_ source: String, forEntry entryID: Int64) {
        sources[entryID] = source
        if sources.count > 1024 {
            for old in sources.keys where old < entryID - 1024 { sources[old] = nil }
        }
    }

    /// Recomputes the public state; reports a change.
    private mutating func refreshState() -> [Output] {
        let derived: PlayerState
        switch phase {
        case .idle: derived = .idle
        case .loading: derived = .loading
        case .ended: derived = .ended
        case .failed: derived = .failed
        case .loaded:
            if !isPaused { hasPlayedSinceLoad = true }
            if isPausedForCache {
                derived = .buffering
            } else if isPaused {
                derived = hasPlayedSinceLoad ? .paused : .ready
            } else {
                derived = .playing
            }
        }
        guard derived != state else { return [] }
        let old = state
        state = derived
        var outputs: [Output] = [.event(.stateChanged(from: old, to: derived))]
        // Paused: read where playback stopped, since polling rests while paused.
        if derived == .paused, pollRequests.isEmpty { outputs.append(requestPolledProperties()) }
        return outputs
    }
}

/// mpv's error strings, without calling into libmpv (the model is pure logic).
enum MPVErrorMessages {
    static func message(for code: Int32) -> String {
        switch code {
        case 0: return "success"
        case -1: return "event queue full"
        case -2: return "memory allocation failed"
        case -3: return "core not uninitialized"
        case -4: return "invalid parameter"
        case -5: return "option not found"
        case -6: return "unsupported format for accessing option"
        case -7: return "error setting option"
        case -8: return "property not found"
        case -9: return "unsupported format for accessing property"
        case -10: return "property unavailable"
        case -11: return "error accessing property"
        case -12: return "error running command"
        case -13: return "loading failed"
        case -14: return "audio output initialization failed"
        case -15: return "video output initialization failed"
        case -16: return "no audio or video data played"
        case -17: return "unrecognized file format"
        case -18: return "not supported"
        case -19: return "operation not implemented"
        case -20: return "something happened"
        default: return "unknown error"
        }
    }
}
