/// The per-player state machine: turns copied mpv events into ``PlayerEvent``s and keeps the
/// latest known values for the read-out properties.
///
/// Pure logic: it never touches mpv. The engine feeds it events in order (under the player's
/// state lock) and carries out the ``Output``s it returns, outside the lock.
///
/// One file per job: this one routes mpv's events and properties and holds the read-outs;
/// `PlaybackModel+Intents.swift` takes what the API says before mpv hears it (and polls),
/// `+EndOfFile.swift` classifies how an item ended, `+Reconnection.swift` drives a lost live
/// item's ``LiveReconnection``, `+Recovery.swift` rebuilds the state after lost events. The
/// sub-machines it routes to keep their own state: ``LoadCorrelation`` (in the core),
/// ``SeekTracking``, ``SetterConfirmation``, ``ItemWatchdog``, ``ErrorAttribution``,
/// ``LiveReconnection``, ``PlayerStateMachine``.
struct PlaybackModel: Sendable {
    /// What the engine must do after an event.
    enum Output: Sendable, Equatable {
        /// Deliver this event.
        case event(PlayerEvent)
        /// Ask mpv for these properties without blocking (`mpv_get_property_async`).
        case requestProperties([(replyID: UInt64, name: String)])
        /// The answer to the set just handed to mpv confirms these setters' values: on success
        /// the engine says so (``setAnswered(_:)``); on a refusal it asks for them as
        /// ``requestProperties(_:)`` does, and their answers confirm what mpv has.
        case confirmWithSetAnswer([(replyID: UInt64, name: String)])
        /// A `load` for this playlist entry finished: resolve its waiter.
        case loadResolved(entryID: Int64, Result<MediaInfo, PlayerError>)
        /// The `load` waiting for entry `from` now waits for entry `to` (a playlist file
        /// expanded into entries, or a playlist entry failed and mpv goes on to the next).
        case loadRedirected(from: Int64, to: Int64)
        /// Stop the current item (without waiting), as `stop()` does.
        case stopItem
        /// Let mpv go on with the hook it waits on (`mpv_hook_continue`), after the requests
        /// that come before this output.
        case continueHook(UInt64)
        /// The awaited seek `ticket` (see ``awaitSeekLanding(ticket:)``) landed: the player shows
        /// `position` (nil when the item ended or was replaced first).
        case seekLanded(ticket: UInt64, position: Double?)
        /// A live item lost its source: call ``reconnectDue(generation:now:)`` with `generation`
        /// after `delay` (on the monotonic clock).
        case scheduleReconnect(after: Duration, generation: UInt64)
        /// Open the lost live item again: play the playlist's item at `index` (the lost one, which
        /// mpv keeps in its playlist, under the same entry ID), with mpv's answer under `replyID`.
        /// `attempt` counts from 1; `cause` is why the source was lost (for the log).
        case reopen(playlistIndex: Int, replyID: UInt64, attempt: Int, cause: NetworkFailure)

        static func == (lhs: Output, rhs: Output) -> Bool {
            switch (lhs, rhs) {
            case (.event(let a), .event(let b)): return a == b
            case (.requestProperties(let a), .requestProperties(let b)), (.confirmWithSetAnswer(let a), .confirmWithSetAnswer(let b)):
                return a.map(\.name) == b.map(\.name) && a.map(\.replyID) == b.map(\.replyID)
            case (.loadResolved(let a, let ra), .loadResolved(let b, let rb)): return a == b && ra == rb
            case (.loadRedirected(let a, let b), .loadRedirected(let c, let d)): return a == c && b == d
            case (.continueHook(let a), .continueHook(let b)): return a == b
            case (.seekLanded(let a, let p), .seekLanded(let b, let q)): return a == b && p == q
            case (.scheduleReconnect(let a, let g), .scheduleReconnect(let b, let h)): return a == b && g == h
            case (.reopen(let a, let r, let n, let c), .reopen(let b, let s, let m, let d)): return a == b && r == s && n == m && c == d
            case (.stopItem, .stopItem): return true
            default: return false
            }
        }
    }

    /// Where the player is in an item's life, before pause and buffering are taken into account.
    typealias Phase = PlayerStateMachine.Phase

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
            "loop-file", "play-dir", "fullscreen", "hwdec", "video-codec", "hwdec-current", "audio-device",
            "playlist-pos", "playlist-count",
        ]
        return positionInterval == .zero ? base + polledProperties : base
    }

    /// The properties ``poll()`` asks for. `demuxer-cache-time` (the time of the last packet
    /// read) tells a stream cut short from one that played to its end (``endFile``).
    static let polledProperties = ["time-pos", "demuxer-cache-duration", "demuxer-cache-time"]

    /// The properties the player's setters change and that have a read-out: after a setter, the
    /// read-out shows the set value at once (``noteSet(_:_:)``).
    static let settableProperties: Set<String> = [
        "pause", "volume", "mute", "speed", "loop-file", "play-dir", "fullscreen", "hwdec", "audio-device",
    ]

    /// mpv's switch between positions from the item's start and the source's own timestamps.
    static let timestampOriginProperty = "rebase-start-time"

    /// The properties that select a track of a kind; their read-out is ``tracks`` (from
    /// `track-list`).
    static let trackSelectionProperties: [String: Track.Kind] = ["aid": .audio, "vid": .video, "sid": .subtitle]

    /// The name of mpv's hook run when an item fails to open; while mpv waits on it, the
    /// item's `path` is still readable, so an entry of a playlist file can be named.
    static let loadFailHook = "on_load_fail"

    /// mpv's line for an entry that ended with `MPV_ERROR_UNKNOWN_FORMAT` (``ErrorAttribution``).
    static var unknownFormatLine: String { ErrorAttribution.unknownFormatLine }

    /// The reason an item's error gives when mpv logged no line about it.
    static func noReasonLine(code: Int32) -> String { ErrorAttribution.noReasonLine(code: code) }

    /// The state derivation, shared with every other `MediaPlayer` (a test's fake too).
    var machine = PlayerStateMachine()
    var phase: Phase {
        get { machine.phase }
        set { machine.phase = newValue }
    }
    var state: PlayerState { machine.state }
    var isPaused: Bool {
        get { machine.isPaused }
        set { machine.isPaused = newValue }
    }
    /// Whether playback waits for the network: mpv's `paused-for-cache`, or a live item that
    /// lost its source and is opening it again (``LiveReconnection``).
    var isPausedForCache: Bool {
        get { machine.isWaitingForCache }
        set { mpvWaitingForCache = newValue; machine.isWaitingForCache = newValue || reconnection.isReconnecting }
    }

    /// Puts the reconnection into the state's inputs (after it started or ended).
    mutating func reconnectionChanged() {
        machine.isWaitingForCache = mpvWaitingForCache || reconnection.isReconnecting
    }
    /// Set when an item starts; the first playback restart after it is the first frame.
    var awaitingFirstFrame = false
    /// The read of `time-pos` asked for at the first frame. With the source's own timestamps
    /// (``timestampsRebased`` false) ``PlayerEvent/firstFrame`` goes out with its answer, so the
    /// position read-out is the first frame's when a preload returns: an item does not start at
    /// 0 then, and the read made when it loaded still said 0. With rebased timestamps (the
    /// default) the item starts where that read said (0, or the position it was loaded at), and
    /// `firstFrame` goes out at mpv's restart, 1-2 ms sooner on a busy core (mpv answers a read
    /// between decoding frames); the answer then moves the read-out if the frame was elsewhere.
    var firstFrameRead: UInt64?
    /// Whether ``PlayerEvent/firstFrame`` went out before ``firstFrameRead``'s answer.
    var firstFrameAnnounced = false
    /// Whether mpv counts positions from the item's start (`rebase-start-time`, the default)
    /// rather than in the source's own timestamps (``PlayerCommand/setTimestampOrigin(_:)``).
    var timestampsRebased = true
    /// Whether the current item's first frame was presented.
    var firstFrameShown = false
    var position: Double?
    /// The settings' read-outs, and the picture's size and title (a sub-machine of its own).
    var settings = SettingsMirror()
    /// The mirroring last set (``PlayerCommand/setFlip(_:)``).
    var flip: VideoFlip {
        get { settings.flip }
        set { settings.flip = newValue }
    }
    var volume: Double? { settings.volume }
    /// mpv's `volume-max` (130 unless changed), so a volume above it is refused without a
    /// blocking read.
    var volumeMaximum: Double? { settings.volumeMaximum }
    var isMuted: Bool? { settings.isMuted }
    var speed: Double? { settings.speed }
    var loopMode: LoopMode? { settings.loopMode }
    var playlist: PlaylistPosition? { settings.playlist }
    var playbackDirection: PlaybackDirection? { settings.playbackDirection }
    var isFullscreen: Bool? { settings.isFullscreen }
    var isHardwareDecodingEnabled: Bool? { settings.isHardwareDecodingEnabled }
    /// mpv's `audio-device`.
    var audioDevice: String? { settings.audioDevice }
    var mediaTitle: String? { settings.mediaTitle }
    var duration: Double?
    var bufferingPercent: Double?
    var cacheDuration: Double?
    var tracks: [Track] = []
    /// mpv's `video-codec` (the decoder's description), nil without video.
    var videoCodec: String?
    /// mpv's `hwdec-current`, nil when decoding in software or not at all.
    var hardwareDecoderAPI: String?
    /// The decoder last reported with ``PlayerEvent/videoDecoderChanged(_:)`` for this item.
    var reportedDecoder: VideoDecoder?
    /// The position interval in seconds (for telling a truncated item from a finished one).
    let positionInterval: Double
    /// Setters' values mpv has not confirmed yet (a sub-machine of its own).
    var confirmations = SetterConfirmation()
    /// Which error lines say why an item failed (a sub-machine of its own).
    var errors = ErrorAttribution()
    /// An entry's error END_FILE and every event after it, held until the pump has drained
    /// mpv's queue and log (``drained()``). mpv hands out log lines only once its event queue is
    /// empty, so the lines saying why an item failed while it played (a video output that could
    /// not open, a decoder that gave up) can trail its END_FILE when the pump is behind. The
    /// events keep their order; log lines are taken as they come, and are the held failure's.
    /// Not for an entry whose load-fail hook ran: the hook waited for its lines already.
    var heldEvents: [MPVEvent]?
    /// Load-fail hooks mpv waits on, to continue once the pump drained mpv's queue and log.
    var pendingHooks: [(id: UInt64, entryID: Int64)] = []
    /// Reads of `path` made while mpv waits in the load-fail hook: reply ID -> entry.
    var failedPathRequests: [UInt64: Int64] = [:]
    /// Entries inserted by a playlist file: where they came from.
    var playlistOrigins: [Int64: PlaylistOrigin] = [:]
    /// The buffering timeout and the truncation check (a sub-machine of its own).
    var watchdog: ItemWatchdog
    /// The current item's information, once ``PlayerEvent/mediaLoaded(_:)`` was emitted for it.
    var loadedInfo: MediaInfo?
    /// Whether the current item is a live stream (``MediaInfo/isLive``).
    var isLive = false
    /// Whether mpv can seek the current item's source (mpv's `seekable`), once it loaded.
    var itemSeekable: Bool?
    /// The current item's container format (mpv's `file-format`: "hls", "mp4", ...), once it loaded.
    var fileFormat: String?
    /// A live item's connection: its loss and reconnection (a sub-machine of its own).
    var reconnection: LiveReconnection
    /// mpv's `paused-for-cache`.
    var mpvWaitingForCache = false
    /// The read of `track-list` asked for when a reconnection's attempt opened the live item.
    var reopenedTracksRead: UInt64?
    /// The reply ID of the reconnection's attempt in flight (its `playlist-play-index`).
    var reopenRequest: UInt64?
    /// The correction of the speed a sync feature set (``PlayerCommand/setSpeedCorrection(_:)``):
    /// mpv plays at the app's speed times this; the read-out and its events are the app's speed.
    var speedCorrection: Double = 1

    /// mpv's speed for the app's `speed` corrected by `correction`, within the speeds a player
    /// plays at (``PlayerCommand/speedRange``).
    static func mpvSpeed(_ speed: Double, correction: Double) -> Double {
        min(max(speed * correction, PlayerCommand.speedRange.lowerBound), PlayerCommand.speedRange.upperBound)
    }

    /// The app's speed for mpv's `speed` under the current correction (to 1e-9, so a speed and
    /// its correction multiplied and divided read back as the speed set).
    func appSpeed(_ mpvSpeed: Double) -> Double {
        guard speedCorrection != 1 else { return mpvSpeed }
        return ((mpvSpeed / speedCorrection) * 1e9).rounded() / 1e9
    }

    /// The monotonic clock the reconnection reads (a test's own in model tests).
    var now: @Sendable () -> ContinuousClock.Instant = { .now }

    /// The properties of the item itself, which a live item keeps while it reconnects
    /// (``LiveReconnection/holdsItemProperties``).
    static let itemProperties: Set<String> = [
        "duration", "track-list", "video-codec", "hwdec-current", "width", "height", "media-title", "playlist-pos",
        "playlist-count",
    ]

    /// The URL schemes of sources that are live by nature (when mpv cannot seek them).
    static let liveSchemes: Set<String> = ["rtsp", "rtsps", "rtmp", "rtmps", "srt", "udp", "rtp", "mms", "mmsh", "mmst"]

    /// Whether an item that loaded with these properties is live: mpv cannot seek it, and it is an
    /// HLS playlist (FFmpeg seeks a playlist that has its end, so one it cannot seek has none), a
    /// source of a live protocol, or one with no duration when it loaded.
    static func isLive(seekable: Bool?, format: String?, duration: Double?, source: String) -> Bool {
        guard seekable == false else { return false }
        let scheme = source.range(of: "://").map { source[..<$0.lowerBound].lowercased() } ?? ""
        return format == "hls" || format == "dash" || liveSchemes.contains(scheme) || duration == nil
    }

    /// The current item is found live after it loaded (``MediaInfo/isLive``): it has no duration.
    mutating func becameLive() -> [Output] {
        isLive = true
        duration = nil
        lastReportedDuration = nil
        loadedInfo?.isLive = true
        loadedInfo?.duration = nil
        return []
    }
    /// A rebuild after mpv's event queue overflowed, while its reads are in flight.
    var recovery: Recovery?
    /// The playlist as re-read by a finished recovery, for the engine (``takeRecoveredPlaylist()``).
    var recoveredPlaylist: MPVValue?

    /// A rebuild after lost events: the reads in flight, their answers, and the requests made
    /// before the overflow whose answers may have been lost with it.
    struct Recovery: Sendable {
        var pending: [UInt64: String] = [:]
        var values: [String: MPVValue] = [:]
        var poll: Set<UInt64> = []
        var info: Set<UInt64> = []
        var confirm: Set<UInt64> = []
        var failedPath: Set<UInt64> = []
        var seek: UInt64?
        /// mpv refused one of the reads: start over at the next poll tick.
        var refused = false
    }

    /// What a recovery reads: every observed property, the position and cache, and what says
    /// which item is current (`playlist`, `idle-active`, `path`).
    static let recoveryProperties = observedProperties(positionInterval: .zero) + ["playlist", "idle-active", "path"]

    /// An entry that a playlist file put into the playlist.
    struct PlaylistOrigin: Sendable {
        /// The playlist's own name (its source, or its origin's name when nested).
        let playlist: String
        /// 1-based position in the playlist.
        let index: Int
        /// The last entry the same playlist inserted.
        let lastEntryID: Int64
    }
    /// Poll requests in flight: reply ID -> property name.
    var pollRequests: [UInt64: String] = [:]
    /// Where the seeks are on their way to the screen (a sub-machine of its own).
    var seeks = SeekTracking()
    /// The position read with the item's info, not yet announced by a `positionChanged`.
    var positionUnannounced = false
    var lastReportedDuration: Double?

    /// The entry mpv is playing or opening.
    var currentEntryID: Int64?
    /// Entries whose file loaded (so an error on them is a playback failure, not a load failure).
    var loadedEntryID: Int64?
    /// The sources of entries PlayerKit loaded, by mpv playlist entry ID.
    var sources: [Int64: String] = [:]
    /// Entries a `load()` waits for.
    var awaitedEntries: Set<Int64> = []
    /// Replacements the app asked for (load, next, previous) that mpv has not yet ended the current item for.
    var pendingReplacements = 0
    /// Media-info requests in flight: reply ID -> property name, for the entry that loaded.
    var infoRequests: [UInt64: String] = [:]
    var infoEntryID: Int64?
    var infoValues: [String: MPVValue] = [:]
    /// The model's own reply numbers (``MPVRequestIDs``: from 2^48).
    var replyIDs: MPVRequestIDs.Counter

    /// - Parameters:
    ///   - firstReplyID: the first reply ID the model may use for its own requests.
    ///   - positionInterval: the player's position interval (``PlayerConfiguration/positionUpdateInterval``).
    ///   - networkTimeout: how long a live item that lost its source is reconnected
    ///     (``PlayerConfiguration/networkTimeout``).
    init(firstReplyID: UInt64 = MPVRequestIDs.firstModelReply, positionInterval: Duration = .milliseconds(250), bufferingTimeout: Duration? = nil,
         networkTimeout: Duration = .seconds(60)) {
        self.replyIDs = MPVRequestIDs.Counter(first: firstReplyID + 1)
        self.watchdog = ItemWatchdog(bufferingTimeout: bufferingTimeout)
        self.reconnection = LiveReconnection(networkTimeout: networkTimeout)
        self.positionInterval = Double(positionInterval.components.seconds) + Double(positionInterval.components.attoseconds) / 1e18
    }

    /// The read-outs as one value.
    var snapshot: PlayerSnapshot {
        PlayerSnapshot(
            state: state, source: currentEntryID.flatMap { sources[$0] }, position: position, duration: duration,
            isPaused: isPaused, volume: volume, isMuted: isMuted, speed: speed, loopMode: loopMode,
            isFullscreen: isFullscreen, hasShownFirstFrame: firstFrameShown,
            frameRate: tracks.first { $0.kind == .video && $0.isSelected }?.frameRate,
            mediaInfo: mediaInfo, playlist: playlist)
    }

    /// The current item's information as its ``PlayerEvent/mediaLoaded(_:)`` reported it; nil
    /// while no item is loaded.
    var mediaInfo: MediaInfo? { state.hasMedia ? loadedInfo : nil }

    /// The video decoder in use, once video is being decoded.
    var videoDecoder: VideoDecoder? {
        videoCodec.map { VideoDecoder(codec: $0, hardwareAPI: hardwareDecoderAPI) }
    }

    /// The video size, once a frame was decoded.
    var videoSize: VideoSize? { settings.videoSize }

    // MARK: Events

    /// Applies one mpv event.
    mutating func apply(_ event: MPVEvent) -> [Output] {
        if case .logMessage = event {
        } else if heldEvents != nil {
            heldEvents?.append(event)
            return []
        } else if case .endFile(let entryID, let reason, _, _, _) = event, Self.isFailure(reason), !errors.hasHookLines(for: entryID) {
            // (An entry whose load-fail hook ran has its lines already.)
            heldEvents = [event]
            return []
        }
        return process(event)
    }

    /// One of FFmpeg's lines credited to this player (``FFmpegLog``), written at `time`: an error
    /// line is a failing item's reason, as mpv's own are; for a live item, warnings and errors say
    /// whether its source was lost and why, and request starts time a request that failed with
    /// no reason (``LiveReconnection``).
    mutating func readFFmpegLine(level: MPVEvent.LogLevel, text: String, at time: ContinuousClock.Instant) -> [Output] {
        let line = text.trimmingCharacters(in: .whitespacesAndNewlines)
        if isLive || reconnection.isReconnecting {
            reconnection.read(line, isPlaylist: fileFormat == "hls", at: time, starving: mpvWaitingForCache)
        }
        guard level == .error || level == .fatal else { return [] }
        return apply(.logMessage(level: level, prefix: "ffmpeg", text: line))
    }

    /// Whether a log line is FFmpeg's report of a hardware device it could not open (CUDA,
    /// VAAPI, ...). FFmpeg logs it with no context, so libmpv hands it to whichever core
    /// registered FFmpeg's log callback: it may come from any player's hardware-decoding probe in
    /// the process. And it never fails an item (mpv falls back to software decoding), so it is
    /// never an item's reason.
    static func isHardwareDeviceProbe(prefix: String, line: String) -> Bool {
        prefix == "ffmpeg" && line.hasPrefix("AVHWDeviceContext:")
    }

    /// Whether an entry that ended for `reason` failed.
    static func isFailure(_ reason: MPVEvent.EndFileReason) -> Bool {
        switch reason {
        case .error, .unknown: true
        default: false
        }
    }

    /// Whether `event` ends an entry as an unrecognized format (`MPV_ERROR_UNKNOWN_FORMAT`).
    static func endsUnrecognized(_ event: MPVEvent) -> Bool {
        if case .endFile(_, .error, -17, _, _) = event { return true } else { return false }
    }

    /// Applies one mpv event, now.
    mutating func process(_ event: MPVEvent) -> [Output] {
        var outputs: [Output] = []
        switch event {
        case .propertyChanged(_, let name, let value):
            confirmations.reported(name, value)
            outputs += applyProperty(name: name, value: value, observed: true)
        case .startFile(let entryID) where reconnection.isReconnecting && entryID == currentEntryID:
            // The lost live item, opened again (``LiveReconnection``): the same item for the app.
            outputs += landed(seeks.itemStarted())
            errors.entryStarted()
            pollRequests = [:]
        case .startFile(let entryID):
            if reconnection.isReconnecting {
                // Another item replaces the live item while it waited to reconnect (nothing was
                // opening, so mpv ends nothing): it ends here, replaced.
                reconnection.cancel()
                reconnectionChanged()
                if pendingReplacements > 0 { pendingReplacements -= 1 }
                outputs.append(.event(.itemEnded(.replaced)))
            }
            outputs += landed(seeks.itemStarted())
            positionUnannounced = false
            errors.entryStarted()
            currentEntryID = entryID
            phase = .loading  // a new item: it has not played yet
            awaitingFirstFrame = true
            firstFrameRead = nil
            firstFrameAnnounced = false
            firstFrameShown = false
            pollRequests = [:]
            position = nil
            duration = nil
            lastReportedDuration = nil
            settings.itemStarted()
            tracks = []
            reportedDecoder = nil
            loadedInfo = nil
            isLive = false
            itemSeekable = nil
            fileFormat = nil
            reconnection.itemStarted()
            reconnectionChanged()
            watchdog.itemStarted()
            for waiting in awaitedEntries where waiting < entryID {
                awaitedEntries.remove(waiting)
                outputs.append(.loadResolved(entryID: waiting, .failure(.loadCancelled(source: name(of: waiting)))))
            }
        case .fileLoaded where reconnection.isReconnecting:
            // An attempt opened the lost live item: from now on mpv's reports are of it again.
            // Its tracks are read again (a change is reported); its first frame ends the wait.
            reconnection.attemptLoaded()
            errors.entryLoaded()
            loadedEntryID = currentEntryID
            let request = nextRequestID()
            reopenedTracksRead = request
            outputs.append(.requestProperties([(request, "track-list")]))
        case .fileLoaded:
            phase = .loaded
            // Lines read since the entry started are its own (a video output that failed as it
            // opened): mpv hands out log lines ahead of queued events.
            errors.entryLoaded()
            loadedEntryID = currentEntryID
            infoEntryID = currentEntryID
            infoValues = [:]
            infoRequests = [:]
            var requests: [(replyID: UInt64, name: String)] = []
            // `time-pos` too: where the item starts (0, or its start time), so the position
            // read-out is set when a load returns, before the first frame's read.
            for name in ["duration", "track-list", "media-title", "path", "time-pos", "seekable", "file-format"] {
                let request = nextRequestID()
                infoRequests[request] = name
                requests.append((request, name))
            }
            outputs.append(.requestProperties(requests))
        case .propertyReply(let replyID, let error, let name, let value):
            if let property = recovery?.pending.removeValue(forKey: replyID) {
                recovery?.values[property] = error < 0 ? MPVValue.none : value
                // A read mpv refused (its queue full again): the next poll tick starts over.
                if error == -1 { recovery?.refused = true }
                if recovery?.pending.isEmpty == true, recovery?.refused == false { outputs += finishRecovery() }
                break
            }
            if replyID == reopenedTracksRead {
                reopenedTracksRead = nil
                if error >= 0 { outputs += replaceTracks(with: Track.list(from: value)) }
                break
            }
            if replyID == firstFrameRead {
                firstFrameRead = nil
                // Both in one step: the read-outs show the position when firstFrame arrives
                // (unless it went out at the restart, with rebased timestamps).
                if !firstFrameAnnounced {
                    firstFrameShown = true
                    outputs.append(.event(.firstFrame))
                }
                if error >= 0, let start = value.doubleValue, start != position || positionUnannounced {
                    position = start
                    positionUnannounced = false
                    outputs.append(.event(.positionChanged(start)))
                }
                break
            }
            if let landedTickets = seeks.answered(replyID) {
                position = error < 0 ? position : value.doubleValue
                positionUnannounced = false
                outputs.append(.event(.seekCompleted(position: position)))
                if let position { outputs.append(.event(.positionChanged(position))) }
                outputs += landed(landedTickets)
                break
            }
            if pollRequests.removeValue(forKey: replyID) != nil {
                outputs += applyPolled(name: name, value: error < 0 ? .none : value)
                break
            }
            if let (confirmed, readAgain) = confirmations.answered(replyID, value: value, succeeded: error >= 0) {
                if error >= 0 {
                    outputs += applyProperty(name: confirmed, value: value)
                    // Not what mpv last reported: mpv reports it later if it stays, and never if
                    // it went back to that value first. Read again (observations meanwhile are
                    // ignored as before; the next answer is newer than they are).
                    if readAgain { outputs += confirm(confirmed) }
                }
                break
            }
            if let entryID = failedPathRequests.removeValue(forKey: replyID) {
                if error >= 0, let path = value.stringValue, sources[entryID] == nil {
                    remember(label(path, entry: entryID), forEntry: entryID)
                }
                break
            }
            guard let name = infoRequests.removeValue(forKey: replyID) else { break }
            infoValues[name] = error < 0 ? MPVValue.none : value
            if infoRequests.isEmpty, let entryID = infoEntryID, entryID == currentEntryID {
                outputs += mediaLoaded(entryID: entryID)
            }
        case .seek:
            seeks.seekExecuted()
        case .playbackRestart:
            if reconnection.isReconnecting, reconnection.reconnecting?.loaded == true {
                // The lost live item shows frames again.
                reconnection.reconnected()
                reconnectionChanged()
                if pollRequests.isEmpty { outputs.append(requestPolledProperties()) }
            }
            if awaitingFirstFrame {
                awaitingFirstFrame = false
                // The first frame's position (one asynchronous read); with the source's own
                // timestamps the event waits for it, else it goes out now (``firstFrameRead``).
                let request = nextRequestID()
                firstFrameRead = request
                firstFrameAnnounced = timestampsRebased
                if firstFrameAnnounced {
                    firstFrameShown = true
                    outputs.append(.event(.firstFrame))
                }
                outputs.append(.requestProperties([(request, "time-pos")]))
                if pollRequests.isEmpty { outputs.append(requestPolledProperties()) }
            }
            if seeks.isExecuting {
                // Completed once the landing position is known (one async read).
                let request = nextRequestID()
                _ = seeks.restarted(readWith: request)
                outputs.append(.requestProperties([(request, "time-pos")]))
            }
        case .endFile(let entryID, let reason, let code, let insertedEntryID, let insertedCount):
            outputs += endFile(
                entryID: entryID, reason: reason, code: code, inserted: insertedCount > 0
                    ? insertedEntryID...(insertedEntryID + Int64(insertedCount) - 1) : nil)
        case .hook(let name, let id):
            // mpv waits in the hook until continued: read the failing item's path first (mpv
            // answers in order, so the answer comes before the item's end).
            // mpv hands out log lines only once its queue is empty, so the lines about this
            // failure may still be on their way: the hook is continued when the pump has drained
            // everything (``drained()``), and the lines are taken then.
            if name == Self.loadFailHook, let entryID = currentEntryID {
                let request = nextRequestID()
                failedPathRequests[request] = entryID
                outputs.append(.requestProperties([(request, "path")]))
                pendingHooks.append((id, entryID))
            } else {
                outputs.append(.continueHook(id))
            }
        case .logMessage(let level, let prefix, let text):
            let line = text.trimmingCharacters(in: .whitespacesAndNewlines)
            errors.read(level: level, prefix: prefix, line: line,
                        unrecognizedEndHeld: heldEvents?.contains(where: Self.endsUnrecognized) == true)
        case .commandReply(let replyID, let error, _) where replyID == reopenRequest && reopenRequest != nil:
            reopenRequest = nil
            // mpv refused the attempt: nothing opens, so no end will come for it.
            if error < 0 { outputs += reconnectionDecided(reconnection.attemptFailed(at: now(), lines: [])) }
        case .commandReply, .setPropertyReply, .queueOverflow, .shutdown, .other:
            break
        }
        return outputs + refreshState()
    }

    /// An observed (or confirmed, or set) value. While a setter's confirming read is in flight,
    /// observations of that property are stale and ignored.
    mutating func applyProperty(name: String, value mpvValue: MPVValue, fromSetter: Bool = false, observed: Bool = false) -> [Output] {
        if observed, confirmations.isConfirming(name) { return [] }
        // mpv's speed is the app's corrected (``speedCorrection``): the read-out is the app's.
        var value = mpvValue
        if name == "speed", let speed = mpvValue.doubleValue { value = .double(appSpeed(speed)) }
        // Between a live item's loss and the attempt that opens it again, mpv has nothing
        // loaded: the item keeps its tracks, decoder, size, title and place in the playlist.
        if reconnection.holdsItemProperties, Self.itemProperties.contains(name) { return [] }
        if let events = settings.apply(name, value, fromSetter: fromSetter) { return events.map(Output.event) }
        switch name {
        case "pause":
            isPaused = value.boolValue ?? isPaused
        case "paused-for-cache":
            isPausedForCache = value.boolValue ?? false
        case "time-pos", "demuxer-cache-duration", "demuxer-cache-time":
            return applyPolled(name: name, value: value)
        case "duration":
            // A live stream has none: mpv's is how much of it the player has read so far.
            if isLive { return [] }
            if let grown = value.doubleValue, let known = duration, grown > known, itemSeekable == false,
               phase == .loaded, loadedInfo != nil {
                // A source mpv cannot seek whose length grows as it plays: a live stream of
                // unknown length, found live now (its first reported duration was mpv's guess).
                return becameLive()
            }
            duration = value.doubleValue
            // Reported once the item's info is in (``mediaLoaded(entryID:)`` reports the first,
            // just before `mediaLoaded`): until then the item may turn out to be live, and mpv's
            // duration of a live stream is how much it has read.
            if let duration, duration != lastReportedDuration, phase == .loaded, loadedInfo != nil {
                lastReportedDuration = duration
                return [.event(.durationKnown(duration))]
            }
        case "cache-buffering-state":
            let percent = value.doubleValue
            let before = bufferingPercent
            bufferingPercent = percent
            if let percent, percent != before, isPausedForCache || percent < 100, phase == .loaded {
                return [.event(.bufferingProgress(percent: percent))]
            }
        case "track-list":
            return replaceTracks(with: Track.list(from: value))
        case "video-codec":
            videoCodec = value.stringValue.flatMap { $0.isEmpty ? nil : $0 }
            return decoderChanged()
        case "hwdec-current":
            hardwareDecoderAPI = value.stringValue.flatMap { $0.isEmpty || $0 == "no" ? nil : $0 }
            return decoderChanged()
        default:
            break
        }
        return []
    }

    /// How errors and events name an entry: the source the app gave, or for an entry of a
    /// playlist file what mpv knows of it.
    func name(of entryID: Int64) -> String {
        if let source = sources[entryID] { return source }
        if let origin = playlistOrigins[entryID] { return "entry \(origin.index) of \(origin.playlist)" }
        return "?"
    }

    /// "path (entry 2 of list.m3u)" for an entry of a playlist file, else `path`.
    func label(_ path: String, entry entryID: Int64) -> String {
        guard let origin = playlistOrigins[entryID] else { return path }
        return "\(path) (entry \(origin.index) of \(origin.playlist))"
    }

    mutating func mediaLoaded(entryID: Int64) -> [Output] {
        let trackList = infoValues["track-list"].map(Track.list(from:)) ?? tracks
        tracks = trackList
        let loadedDuration = infoValues["duration"]?.doubleValue ?? duration
        let title = infoValues["media-title"]?.stringValue ?? mediaTitle
        let size = videoSize ?? trackList.first { $0.kind == .video && $0.isSelected }?.videoSize
        if position == nil, let start = infoValues["time-pos"]?.doubleValue {
            position = start
            positionUnannounced = true
        }
        let source = sources[entryID] ?? infoValues["path"]?.stringValue ?? ""
        itemSeekable = infoValues["seekable"]?.boolValue
        fileFormat = infoValues["file-format"]?.stringValue
        isLive = Self.isLive(seekable: itemSeekable, format: fileFormat, duration: loadedDuration, source: source)
        // A live stream has no duration: mpv's is how much of it the player has read so far.
        let itemDuration = isLive ? nil : loadedDuration
        if isLive { duration = nil }
        let info = MediaInfo(source: source, duration: itemDuration, videoSize: size, title: title, tracks: trackList, isLive: isLive)
        infoEntryID = nil
        if sources[entryID] == nil, let path = infoValues["path"]?.stringValue {
            remember(label(path, entry: entryID), forEntry: entryID)
        }
        var outputs: [Output] = []
        if let itemDuration, itemDuration != lastReportedDuration {
            duration = itemDuration
            lastReportedDuration = itemDuration
            outputs.append(.event(.durationKnown(itemDuration)))
        }
        loadedInfo = info
        outputs.append(.event(.mediaLoaded(info)))
        outputs += decoderChanged()  // when the decoder was known before the item's info
        if awaitedEntries.remove(entryID) != nil {
            outputs.append(.loadResolved(entryID: entryID, .success(info)))
        }
        return outputs
    }

    /// The pump drained mpv's queue down to nothing, log lines included: every line mpv logged
    /// before a pending load-fail hook is in. Takes them for the failing entry and continues the
    /// hook, so mpv goes on to end the entry.
    mutating func drained() -> [Output] {
        var outputs: [Output] = []
        if let held = heldEvents {
            heldEvents = nil
            for event in held { outputs += process(event) }
        }
        guard !pendingHooks.isEmpty else { return outputs }
        for hook in pendingHooks {
            errors.takeForHook(entry: hook.entryID)
            outputs.append(.continueHook(hook.id))
        }
        pendingHooks = []
        return outputs
    }

    /// Records the source of an entry. Entries stay known while they may be replayed
    /// (`previous()`); only the most recent 1024 are kept.
    mutating func remember(_ source: String, forEntry entryID: Int64) {
        sources[entryID] = source
        if sources.count > 1024 {
            for old in sources.keys where old < entryID - 1024 { sources[old] = nil }
        }
    }

    /// Recomputes the public state; reports a change.
    mutating func refreshState() -> [Output] {
        guard let change = machine.refresh() else { return [] }
        var outputs: [Output] = [.event(change)]
        // Paused: read where playback stopped, since polling rests while paused.
        if state == .paused, pollRequests.isEmpty { outputs.append(requestPolledProperties()) }
        return outputs
    }
}
