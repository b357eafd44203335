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
    private var machine = PlayerStateMachine()
    private(set) var phase: Phase {
        get { machine.phase }
        set { machine.phase = newValue }
    }
    var state: PlayerState { machine.state }
    private(set) var isPaused: Bool {
        get { machine.isPaused }
        set { machine.isPaused = newValue }
    }
    /// Whether playback waits for the network: mpv's `paused-for-cache`, or a live item that
    /// lost its source and is opening it again (``LiveReconnection``).
    private(set) var isPausedForCache: Bool {
        get { machine.isWaitingForCache }
        set { mpvWaitingForCache = newValue; machine.isWaitingForCache = newValue || reconnection.isReconnecting }
    }

    /// Puts the reconnection into the state's inputs (after it started or ended).
    private mutating func reconnectionChanged() {
        machine.isWaitingForCache = mpvWaitingForCache || reconnection.isReconnecting
    }
    /// Set when an item starts; the first playback restart after it is the first frame.
    private var awaitingFirstFrame = false
    /// The read of `time-pos` asked for at the first frame. With the source's own timestamps
    /// (``timestampsRebased`` false) ``PlayerEvent/firstFrame`` goes out with its answer, so the
    /// position read-out is the first frame's when a preload returns: an item does not start at
    /// 0 then, and the read made when it loaded still said 0. With rebased timestamps (the
    /// default) the item starts where that read said (0, or the position it was loaded at), and
    /// `firstFrame` goes out at mpv's restart, 1-2 ms sooner on a busy core (mpv answers a read
    /// between decoding frames); the answer then moves the read-out if the frame was elsewhere.
    private var firstFrameRead: UInt64?
    /// Whether ``PlayerEvent/firstFrame`` went out before ``firstFrameRead``'s answer.
    private var firstFrameAnnounced = false
    /// Whether mpv counts positions from the item's start (`rebase-start-time`, the default)
    /// rather than in the source's own timestamps (``PlayerCommand/setTimestampOrigin(_:)``).
    var timestampsRebased = true
    /// Whether the current item's first frame was presented.
    private(set) var firstFrameShown = false
    private(set) var position: Double?
    /// The settings' read-outs, and the picture's size and title (a sub-machine of its own).
    private var settings = SettingsMirror()
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
    private(set) var duration: Double?
    private(set) var bufferingPercent: Double?
    private(set) var cacheDuration: Double?
    private(set) var tracks: [Track] = []
    /// mpv's `video-codec` (the decoder's description), nil without video.
    private var videoCodec: String?
    /// mpv's `hwdec-current`, nil when decoding in software or not at all.
    private var hardwareDecoderAPI: String?
    /// The decoder last reported with ``PlayerEvent/videoDecoderChanged(_:)`` for this item.
    private var reportedDecoder: VideoDecoder?
    /// The position interval in seconds (for telling a truncated item from a finished one).
    private let positionInterval: Double
    /// Setters' values mpv has not confirmed yet (a sub-machine of its own).
    private var confirmations = SetterConfirmation()
    /// Which error lines say why an item failed (a sub-machine of its own).
    private var errors = ErrorAttribution()
    /// An entry's error END_FILE and every event after it, held until the pump has drained
    /// mpv's queue and log (``drained()``). mpv hands out log lines only once its event queue is
    /// empty, so the lines saying why an item failed while it played (a video output that could
    /// not open, a decoder that gave up) can trail its END_FILE when the pump is behind. The
    /// events keep their order; log lines are taken as they come, and are the held failure's.
    /// Not for an entry whose load-fail hook ran: the hook waited for its lines already.
    private var heldEvents: [MPVEvent]?
    /// Load-fail hooks mpv waits on, to continue once the pump drained mpv's queue and log.
    private var pendingHooks: [(id: UInt64, entryID: Int64)] = []
    /// Reads of `path` made while mpv waits in the load-fail hook: reply ID -> entry.
    private var failedPathRequests: [UInt64: Int64] = [:]
    /// Entries inserted by a playlist file: where they came from.
    private var playlistOrigins: [Int64: PlaylistOrigin] = [:]
    /// The buffering timeout and the truncation check (a sub-machine of its own).
    private var watchdog: ItemWatchdog
    /// The current item's information, once ``PlayerEvent/mediaLoaded(_:)`` was emitted for it.
    private var loadedInfo: MediaInfo?
    /// Whether the current item is a live stream (``MediaInfo/isLive``).
    private(set) var isLive = false
    /// Whether mpv can seek the current item's source (mpv's `seekable`), once it loaded.
    private var itemSeekable: Bool?
    /// The current item's container format (mpv's `file-format`: "hls", "mp4", ...), once it loaded.
    private var fileFormat: String?
    /// A live item's connection: its loss and reconnection (a sub-machine of its own).
    private var reconnection: LiveReconnection
    /// mpv's `paused-for-cache`.
    private var mpvWaitingForCache = false
    /// The read of `track-list` asked for when a reconnection's attempt opened the live item.
    private var reopenedTracksRead: UInt64?
    /// The reply ID of the reconnection's attempt in flight (its `playlist-play-index`).
    private var reopenRequest: UInt64?
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
    private func appSpeed(_ mpvSpeed: Double) -> Double {
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
    private mutating func becameLive() -> [Output] {
        isLive = true
        duration = nil
        lastReportedDuration = nil
        loadedInfo?.isLive = true
        loadedInfo?.duration = nil
        return []
    }
    /// A rebuild after mpv's event queue overflowed, while its reads are in flight.
    private var recovery: Recovery?
    /// The playlist as re-read by a finished recovery, for the engine (``takeRecoveredPlaylist()``).
    private var recoveredPlaylist: MPVValue?

    /// A rebuild after lost events: the reads in flight, their answers, and the requests made
    /// before the overflow whose answers may have been lost with it.
    private struct Recovery: Sendable {
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
    private struct PlaylistOrigin: Sendable {
        /// The playlist's own name (its source, or its origin's name when nested).
        let playlist: String
        /// 1-based position in the playlist.
        let index: Int
        /// The last entry the same playlist inserted.
        let lastEntryID: Int64
    }
    /// Poll requests in flight: reply ID -> property name.
    private var pollRequests: [UInt64: String] = [:]
    /// Where the seeks are on their way to the screen (a sub-machine of its own).
    private var seeks = SeekTracking()
    /// The position read with the item's info, not yet announced by a `positionChanged`.
    private var positionUnannounced = false
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

    /// - Parameters:
    ///   - firstReplyID: the first reply ID the model may use for its own requests.
    ///   - positionInterval: the player's position interval (``PlayerConfiguration/positionUpdateInterval``).
    ///   - networkTimeout: how long a live item that lost its source is reconnected
    ///     (``PlayerConfiguration/networkTimeout``).
    init(firstReplyID: UInt64 = 1 << 48, positionInterval: Duration = .milliseconds(250), bufferingTimeout: Duration? = nil,
         networkTimeout: Duration = .seconds(60)) {
        self.nextReplyID = firstReplyID
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
    private mutating func confirm(_ name: String) -> [Output] {
        let request = nextRequestID()
        confirmations.confirm(name, request: request)
        return [.requestProperties([(request, name)])]
    }

    /// Marks track `id` of `kind` selected (nil: none of that kind) in ``tracks``.
    private mutating func selectTrack(_ kind: Track.Kind, id: Int?) -> [Output] {
        var list = tracks
        for index in list.indices where list[index].kind == kind {
            list[index].isSelected = list[index].id == id
        }
        return replaceTracks(with: list)
    }

    /// A new track list: reported with ``PlayerEvent/tracksChanged(_:)`` when it differs and the
    /// item's ``PlayerEvent/mediaLoaded(_:)`` is out (which carries the first list).
    private mutating func replaceTracks(with list: [Track]) -> [Output] {
        guard list != tracks else { return [] }
        tracks = list
        return loadedInfo != nil ? [.event(.tracksChanged(list))] : []
    }

    /// Reports the decoder when it changed for a loaded item.
    private mutating func decoderChanged() -> [Output] {
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
    private func landed(_ tickets: [UInt64]) -> [Output] {
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
    private mutating func checkBuffering(now: ContinuousClock.Instant) -> [Output]? {
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
    private static func isFailure(_ reason: MPVEvent.EndFileReason) -> Bool {
        switch reason {
        case .error, .unknown: true
        default: false
        }
    }

    /// Whether `event` ends an entry as an unrecognized format (`MPV_ERROR_UNKNOWN_FORMAT`).
    private static func endsUnrecognized(_ event: MPVEvent) -> Bool {
        if case .endFile(_, .error, -17, _, _) = event { return true } else { return false }
    }

    /// Applies one mpv event, now.
    private mutating func process(_ event: MPVEvent) -> [Output] {
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
    private mutating func applyProperty(name: String, value mpvValue: MPVValue, fromSetter: Bool = false, observed: Bool = false) -> [Output] {
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
    private func name(of entryID: Int64) -> String {
        if let source = sources[entryID] { return source }
        if let origin = playlistOrigins[entryID] { return "entry \(origin.index) of \(origin.playlist)" }
        return "?"
    }

    /// "path (entry 2 of list.m3u)" for an entry of a playlist file, else `path`.
    private func label(_ path: String, entry entryID: Int64) -> String {
        guard let origin = playlistOrigins[entryID] else { return path }
        return "\(path) (entry \(origin.index) of \(origin.playlist))"
    }

    private mutating func mediaLoaded(entryID: Int64) -> [Output] {
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

    /// The end of an entry. `inserted`: for a playlist file, the entries mpv put in its place.
    private mutating func endFile(
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

    // MARK: Live reconnection

    /// The end of a reconnection's attempt (the lost live item's entry, opened again).
    private mutating func reconnectAttemptEnded(entryID: Int64, reason: MPVEvent.EndFileReason, code: Int32) -> [Output] {
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
    private mutating func reconnectionDecided(_ decision: LiveReconnection.Decision) -> [Output] {
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

    /// ``ItemEndReason/truncated(position:duration:)`` when the current item reached its end
    /// of file well short of its duration: neither the position nor the last packet read got
    /// within a second (and 5 %) of it, plus what one position interval can hide, while playing
    /// forwards with no seek in flight. Nil when it finished (or nothing says otherwise).
    private func truncation() -> ItemEndReason? {
        guard playbackDirection != .backward, !seeks.isSettling, loadedEntryID == currentEntryID
        else { return nil }
        return watchdog.truncation(duration: duration, position: position, positionInterval: positionInterval, speed: speed)
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
    private mutating func finishRecovery() -> [Output] {
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
        guard let change = machine.refresh() else { return [] }
        var outputs: [Output] = [.event(change)]
        // Paused: read where playback stopped, since polling rests while paused.
        if state == .paused, pollRequests.isEmpty { outputs.append(requestPolledProperties()) }
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
