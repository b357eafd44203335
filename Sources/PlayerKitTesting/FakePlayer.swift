import Foundation
import PlayerKitCore
import PlayerKitSupport
import Synchronization

/// A deterministic ``/PlayerKitCore/MediaPlayer`` on a ``ManualClock``: no mpv, no threads, no
/// wall clock. Loads take the time the test gives them and can fail; playback advances with the
/// clock, at the player's speed, to the item's end (or loops); seeks, pauses, speed, volume and
/// fullscreen behave as they do on ``/PlayerKitCore/Player``, with the same checks and errors, and the events
/// come in the core's order with gapless sequence numbers on ``eventBus``.
///
/// ```swift
/// let clock = ManualClock()
/// let player = try FakePlayer(id: "a", clock: clock, media: ["clip.mp4": .init(duration: 4)])
/// try await player.load("clip.mp4")                  // playing at 0
/// clock.advance(by: .seconds(5))                      // ends at 4 s: itemEnded(.finished)
/// #expect(player.state == .ended)
/// ```
///
/// **What it models.** The event order of a real player, as the core publishes it:
/// - creation: `created`;
/// - a load: `stateChanged(→ loading)`; after `loadTime`, `stateChanged(loading → playing`
///   or `ready)`, `durationKnown`, `mediaLoaded`, then `firstFrame` (after
///   `firstFrameDelay`); a load that replaces an item first ends it with
///   `itemEnded(.replaced)`; a failing item ends with `itemEnded(.error)` and
///   `stateChanged(loading → failed)`, and the load throws the item's `failure`;
/// - playing: `positionChanged` every `positionInterval` (250 ms by default) of clock time (every frame, at the
///   item's `frameRate`, while an ``observeEveryFrame()`` observation lives); at the end,
///   `positionChanged(duration)`, `itemEnded(.finished)`, `stateChanged(playing → ended)`, or
///   `seekCompleted(0)` and on when the item loops;
/// - commands: `stateChanged` for play and pause, `seekCompleted` and `positionChanged` for a
///   seek (none for a seek past its seekable end: ``setBufferedMedia(_:)``), `speedChanged`, `volumeChanged`, `muteChanged`, `loopModeChanged`,
///   `fullscreenStateChanged`; a stop ends the item with `itemEnded(.stopped)` and
///   `stateChanged(→ idle)`; it plays one item at a time, so `next` and `previous` are refused
///   as mpv refuses them at a playlist's ends (``/PlayerKitCore/PlayerError/commandFailed(command:_:)``);
/// - ``shutdown()``: `shutDown`, last.
///
/// **Frames.** ``makeFrameSource(_:)`` gives it a ``/PlayerKitCore/VideoFrameSource``, as a real
/// player's frame output: a frame (every pixel `frameColor`) is rendered when the first
/// frame is shown, after each seek, while playing at the item's `frameRate` (faster with
/// the speed, from the moment playback started or last changed), and one more at the item's end
/// with no video time (mpv gives an item's last frame no position). Each carries the player's
/// position as its video time, a sequence number from 1, and the clock's instant.
///
/// **What a test controls.** The media (``Media``: duration, load time, first-frame delay,
/// failure), how long the player takes to answer ``perform(_:timeout:)`` (``replyDelay``),
/// refusals of commands (``refuseCommands(_:)``, thrown by the waiting forms and published as
/// ``/PlayerKitCore/PlayerEvent/error(_:)`` after ``send(_:)``, as mpv's refusals are), an item that fails
/// while it plays (``failCurrentItem(with:)``). It reads back what the player was told:
/// ``commands``, ``releaseCount``, `frameObservationCount`.
///
/// **Differences from ``/PlayerKitCore/Player``.** ``send(_:)`` carries the command out at once (a real
/// player does it a little later). There are no audio devices, no video or subtitle tracks (an
/// item's audio tracks are `audioTracks`), and frames are plain colour. IDs are unique among the live fake players on one
/// bus (tests with buses of their own may use the same IDs at once); a fake and a real player
/// may share one.
///
/// **Threading.** Safe from any thread and task. Clock-driven changes happen on the thread
/// that advances the clock; `.immediate` bus handlers run there.
public final class FakePlayer: MediaPlayer {
    /// An item a fake player can load: how long it is and how it behaves.
    public struct Media: Sendable, Hashable {
        /// The item's duration in seconds; `.infinity` for a live stream (``duration`` then
        /// reads nil, as mpv gives none, and its ``/PlayerKitCore/MediaInfo/isLive`` is true). A
        /// live source lost and reconnecting is ``FakePlayer/stall(for:)`` (buffering, then
        /// playing again); one that does not come back is ``FakePlayer/failCurrentItem(with:)``
        /// with ``/PlayerKitCore/PlayerError/networkFailed(source:cause:after:)``, as a player ends it.
        var duration: Double
        /// How long the load takes on the clock (zero: done before ``load(_:startPaused:)`` returns).
        var loadTime: Duration
        /// How long after the load the first frame is shown (zero: with the load).
        var firstFrameDelay: Duration
        /// Frames per second: the rate of position events while a frame observation lives.
        /// Zero for an item whose rate is unknown (``frameRate`` then reads nil; position
        /// events come at 1 per second).
        var frameRate: Double
        /// The picture's size; nil for audio only.
        var videoSize: VideoSize?
        /// When set, the load fails with this error after `loadTime`.
        var failure: PlayerError?
        /// The colour of every frame the item renders into a frame source.
        var frameColor: RGBColor
        /// The source's own timestamp of the item's start, in seconds (0 by default): once the
        /// player is told ``/PlayerKitCore/PlayerCommand/setTimestampOrigin(_:)`` with
        /// ``/PlayerKitCore/TimestampOrigin/source``, its positions, seek targets and
        /// `seekCompleted` positions are in these timestamps, as a real player's are. A live
        /// angle joined at its edge starts where the stream is; an MPEG-TS angle joined before
        /// its 33-bit clock wrapped reads a wrap (2^33 / 90 kHz, 26.5 hours) below one packaged
        /// as fragmented MP4, as FFmpeg makes them.
        var sourceStart: Double = 0
        /// How many audio tracks the item has (none by default): IDs 1, 2, ..., the first
        /// selected at load, as mpv selects one. ``/PlayerKitCore/PlayerCommand/selectTrack(_:id:)``
        /// selects another or none, reported with ``/PlayerKitCore/PlayerEvent/tracksChanged(_:)``
        /// and refused with ``/PlayerKitCore/PlayerError/unknownTrack(kind:id:available:)`` for
        /// an ID the item does not have.
        var audioTracks = 0

        /// Describes an item: each parameter is the property of the same name above.
        public init(duration: Double = 10, loadTime: Duration = .zero, firstFrameDelay: Duration = .zero,
                    frameRate: Double = 30, videoSize: VideoSize? = VideoSize(width: 320, height: 240),
                    failure: PlayerError? = nil, frameColor: RGBColor = RGBColor(red: 0, green: 0, blue: 0),
                    sourceStart: Double = 0, audioTracks: Int = 0) {
            self.sourceStart = sourceStart
            self.audioTracks = audioTracks
            self.duration = duration
            self.loadTime = loadTime
            self.firstFrameDelay = firstFrameDelay
            self.frameRate = frameRate
            self.videoSize = videoSize
            self.failure = failure
            self.frameColor = frameColor
        }

        /// An item that fails to load after `loadTime`, as mpv fails on a file it cannot read.
        public static func unplayable(loadTime: Duration = .zero, source: String = "fake") -> Media {
            Media(loadTime: loadTime, failure: .loadFailed(
                source: source, MPVError(code: -13, message: "loading failed", logMessages: ["fake: unplayable item"])))
        }
    }

    /// The player's ID.
    public let id: PlayerID
    /// The bus the fake publishes to.
    public let eventBus: PlayerEventBus
    /// The clock the fake plays on.
    let clock: ManualClock
    /// How often a playing fake reports its position (clock time); 250 ms as ``/PlayerKitCore/PlayerConfiguration/positionUpdateInterval``.
    let positionInterval: Duration

    let emitter: PlayerEventEmitter
    /// How the fake's events reach its bus (``FakeEventDelivery``).
    let delivery: FakeEventDelivery
    let model: Locked<State>

    typealias Phase = PlayerStateMachine.Phase

    struct PendingLoad {
        let token: UInt64
        let continuation: CheckedContinuation<Result<MediaInfo, PlayerError>, Never>
    }

    struct FirstFrameWaiter {
        let id: UInt64
        let continuation: CheckedContinuation<Result<Void, PlayerError>, Never>
    }

    struct State {
        var catalog: [String: Media]
        var defaultMedia: Media?
        /// The state derivation a real player uses: the fake's state means what a player's means.
        var machine = PlayerStateMachine()
        var phase: Phase {
            get { machine.phase }
            set { machine.phase = newValue }
        }
        var isPaused: Bool {
            get { machine.isPaused }
            set { machine.isPaused = newValue }
        }
        var published: PlayerState { machine.state }
        var isShutDown = false
        var source: String?
        var media: Media?
        var info: MediaInfo?
        /// The loaded item's tracks, with the selection as it is now (``info`` keeps the load's).
        var tracks: [Track] = []
        /// Counts items: a timer or load of an older item finds a newer generation and does nothing.
        var generation: UInt64 = 0
        var firstFrameShown = false
        var anchorPosition = 0.0
        var anchorTime: ContinuousClock.Instant
        var speed = 1.0
        /// ``/PlayerKitCore/PlayerCommand/setSpeedCorrection(_:)``: the fake plays at `speed` times this.
        var speedCorrection = 1.0
        var volume = 100.0
        var isMuted = false
        var loopMode = LoopMode.off
        var playsLeft: Int?
        var direction = PlaybackDirection.forward
        var isFullscreen = false
        var pendingLoad: PendingLoad?
        var firstFrameWaiters: [FirstFrameWaiter] = []
        var lastWaiterID: UInt64 = 0
        /// The next position report and the item's end: replaced on every change.
        var playbackTimers: [ManualClock.ScheduledAction] = []
        /// Loads, first frames, preload timeouts, replies: cancelled at shutdown.
        var timers: [ManualClock.ScheduledAction] = []
        var lastLoadToken: UInt64 = 0
        var frameObservations = 0
        var bufferedMediaObservations = 0
        /// What ``statistics(timeout:)`` reads (``setStatistics(_:)``).
        var statistics = PlaybackStatistics()
        /// The live statistics observations' intervals, by token, and the sampling's alarm.
        var statisticsObservations: [UInt64: Duration] = [:]
        var lastStatisticsToken: UInt64 = 0
        var statisticsTimer: ManualClock.ScheduledAction?
        /// The live alarm watches, in order (the latest one's thresholds apply), and the alarms
        /// raised, by kind: their starts (FakePlayer+Alarms.swift).
        var alarmWatches: [(token: UInt64, thresholds: AlarmThresholds)] = []
        var raisedAlarms: [AlarmKind: Double] = [:]
        /// What ``/PlayerKitCore/PlayerEvent/loudnessUpdated(_:)`` carries (``setLoudness(_:)``),
        /// the live loudness observations' intervals, and the sampling's alarm.
        var loudness: Loudness?
        var loudnessObservations: [UInt64: Duration] = [:]
        var loudnessTimer: ManualClock.ScheduledAction?
        /// The latest ``stall(for:)``: an earlier one's end does nothing.
        var stallGeneration: UInt64 = 0
        /// Whether ``shutdown()`` announced ``/PlayerKitCore/PlayerEvent/shuttingDown``.
        var shuttingDown = false
        var bufferedMedia: BufferedMedia?
        var timestampOrigin = TimestampOrigin.itemStart
        var positionTiming = PositionTiming.whenQueued
        var videoClock = VideoClock.audio
        var bufferAfterStall: Duration = .seconds(1)
        var commands: [PlayerCommand] = []
        /// ``perform(_:timeout:)`` calls waiting for their reply delay.
        var replyWaiters: [UInt64: CheckedContinuation<Bool, Never>] = [:]
        var releaseCount = 0
        var replyDelay = Duration.zero
        var refusal: (@Sendable (PlayerCommand) -> PlayerError?)?
        var arbiter = WeakReference<any FullscreenArbiter>(nil)
        /// The open frame source, its last frame number, and frames rendered but not yet handed
        /// to it (delivered with no lock held).
        /// Held weakly: dropped by its user, it is gone (a ``/PlayerKitCore/FrameOutput`` closes when released).
        var frameSourceReference = WeakReference<FakeFrameSource>(nil)
        var frameSource: FakeFrameSource? { frameSourceReference.object }
        var frameNumber: UInt64 = 0
        var renderedFrames: [(FakeFrameSource, VideoFrame)] = []

        /// `position` (on the item's own time, from 0) as the player reports it: in the
        /// source's timestamps once told so.
        func reported(_ position: Double) -> Double {
            guard timestampOrigin == .source, let media else { return position }
            return media.sourceStart + position
        }

        /// A position the player was given (a seek target) on the item's own time.
        func itemTime(_ reported: Double) -> Double {
            guard timestampOrigin == .source, let media else { return reported }
            return reported - media.sourceStart
        }

        /// The events as the player reports them: positions in its timestamp origin.
        func reported(_ events: [PlayerEvent]) -> [PlayerEvent] {
            guard timestampOrigin == .source, media?.sourceStart ?? 0 != 0 else { return events }
            return events.map { event in
                switch event {
                case .positionChanged(let position): .positionChanged(reported(position))
                case .seekCompleted(let position): .seekCompleted(position: position.map(reported))
                default: event
                }
            }
        }

        func position(at now: ContinuousClock.Instant) -> Double? {
            guard phase == .loaded, let media else { return nil }
            guard !isPaused, !machine.isWaitingForCache else { return anchorPosition }
            let moved = (now - anchorTime).inSeconds * speed * speedCorrection * (direction == .forward ? 1 : -1)
            return min(max(anchorPosition + moved, 0), media.duration)
        }
    }

    /// Frees the ID on its bus, once (shutdown, then deinit).
    func releaseID() {
        guard idReleased.exchange(true, ordering: .acquiringAndReleasing) == false else { return }
        let bus = ObjectIdentifier(eventBus)
        Self.liveIDs.withLock { ids in
            ids[bus]?.remove(id)
            if ids[bus]?.isEmpty == true { ids[bus] = nil }
        }
    }

    let idReleased = Atomic<Bool>(false)

    /// Live fake IDs by bus, for uniqueness: unique among the live fakes on one bus, so tests
    /// with buses of their own may use the same IDs at once.
    static let liveIDs = Locked([ObjectIdentifier: Set<PlayerID>]())

    /// Creates a fake player and publishes ``/PlayerKitCore/PlayerEvent/created``.
    /// - Parameters:
    ///   - id: a custom ID, or nil for a random one.
    ///   - clock: the clock it plays on.
    ///   - bus: the bus it publishes to (default ``/PlayerKitCore/PlayerEventBus/shared``, as for ``/PlayerKitCore/Player``).
    ///   - media: the items it can load, by source (a path or URL as written).
    ///   - defaultMedia: what any other source is; nil makes other sources fail at once with
    ///     ``/PlayerKitCore/PlayerError/fileNotFound(path:)``.
    ///   - positionInterval: how often it reports its position while playing.
    ///   - delivery: how its events reach the bus: at once (the default), or held and
    ///     interleaved with other fakes' by a seed (``FakeEventDelivery/interleaved(seed:)``).
    /// - Throws: ``/PlayerKitCore/PlayerError/invalidID(_:)``, or ``/PlayerKitCore/PlayerError/duplicateID(_:)`` when a live
    ///   fake has the ID.
    public init(id: PlayerID? = nil, clock: ManualClock, bus: PlayerEventBus = .shared,
                media: [String: Media] = [:], defaultMedia: Media? = Media(),
                positionInterval: Duration = .milliseconds(250), delivery: FakeEventDelivery = .immediate) throws(PlayerError) {
        let id = id ?? PlayerID(stringLiteral: UUID().uuidString.lowercased())
        _ = try PlayerID(validating: id.rawValue)
        guard Self.liveIDs.withLock({ $0[ObjectIdentifier(bus), default: []].insert(id).inserted }) else { throw .duplicateID(id) }
        self.id = id
        self.clock = clock
        self.eventBus = bus
        self.positionInterval = max(positionInterval, .milliseconds(1))
        self.emitter = PlayerEventEmitter(playerID: id, bus: bus)
        self.delivery = delivery
        self.model = Locked(State(catalog: media, defaultMedia: defaultMedia, anchorTime: clock.now))
        emitNow([.created])
    }

    deinit {
        let timers = model.withLock { $0.timers + $0.playbackTimers + [$0.statisticsTimer, $0.loudnessTimer].compactMap { $0 } }
        for timer in timers { timer.cancel() }
        releaseID()
    }

    // MARK: What a test controls and reads

    /// How long ``perform(_:timeout:)`` takes, on the clock, before the command is carried out
    /// and answered (default zero: at once); every awaited command (``/PlayerKitCore/MediaPlayer/play()`` and the rest go through ``perform(_:timeout:)``) waits it. ``send(_:)`` never waits.
    public var replyDelay: Duration {
        get { model.withLock { $0.replyDelay } }
        set { model.withLock { $0.replyDelay = newValue } }
    }

    /// Makes the fake refuse the commands for which `refusal` returns an error, as mpv refuses
    /// one: thrown by ``perform(_:timeout:)`` (and the named commands over it), published as
    /// ``/PlayerKitCore/PlayerEvent/error(_:)`` after ``send(_:)``. Nil accepts everything again.
    public func refuseCommands(_ refusal: (@Sendable (PlayerCommand) -> PlayerError?)?) {
        // The old closure is released after the lock: what it captured may run a deinit.
        let old = model.withLock { state in
            defer { state.refusal = refusal }
            return state.refusal
        }
        _ = old
    }

    /// Every command the fake carried out, in order (sent, performed or called).
    public var commands: [PlayerCommand] { model.withLock { $0.commands } }

    /// How many ``perform(_:timeout:)`` calls wait for their ``replyDelay`` now.
    var commandsInFlight: Int { model.withLock { $0.replyWaiters.count } }

    /// How many times ``releaseMedia()`` was called.
    public var releaseCount: Int { model.withLock { $0.releaseCount } }

    /// Sets how far the fake holds its source (nil: unknown, nothing reported), as a real
    /// player's demuxer cache moves: reported as ``/PlayerKitCore/PlayerEvent/bufferedMediaChanged(_:)``
    /// while an ``observeBufferedMedia()`` observation lives, when it changed. While its
    /// `seekableUntil` is set, a seek past it is refused without an error, as mpv refuses one
    /// past a live stream's seekable ranges.
    public func setBufferedMedia(_ media: BufferedMedia?) {
        change { state, events in
            guard !state.isShutDown, state.bufferedMedia != media else { return nil }
            state.bufferedMedia = media
            if let media, state.bufferedMediaObservations > 0 { events.append(.bufferedMediaChanged(media)) }
            return nil
        }
    }

    /// The timestamps positions count in (``/PlayerKitCore/PlayerCommand/setTimestampOrigin(_:)``;
    /// the fake's positions count from its item's start either way).
    var timestampOrigin: TimestampOrigin { model.withLock { $0.timestampOrigin } }
    /// When positions are reported (``/PlayerKitCore/PlayerCommand/setPositionTiming(_:)``; the
    /// fake reports each frame when it is due either way).
    var positionTiming: PositionTiming { model.withLock { $0.positionTiming } }
    /// The clock the video follows (``/PlayerKitCore/PlayerCommand/setVideoClock(_:)``).
    var videoClock: VideoClock { model.withLock { $0.videoClock } }
    /// How much media is buffered after a stall before playing again
    /// (``/PlayerKitCore/PlayerCommand/setBufferAfterStall(_:)``).
    var bufferAfterStall: Duration { model.withLock { $0.bufferAfterStall } }

    /// How many ``observeBufferedMedia()`` observations are active.
    var bufferedMediaObservationCount: Int { model.withLock { $0.bufferedMediaObservations } }

    /// How many ``observeEveryFrame()`` observations are active.
    var frameObservationCount: Int { model.withLock { $0.frameObservations } }

    /// The last sequence number the fake published.
    var lastSequenceNumber: UInt64 { emitter.lastSequenceNumber }

    /// Makes the fake wait for the network for `duration` of clock time, as a player whose
    /// source stalls does: `stateChanged(→ buffering)` at once, no frame and no position move
    /// meanwhile, then `stateChanged(→ playing)` (or `paused`) and frames again from where it
    /// stopped. Nothing happens without a loaded item; a stall during a stall extends it.
    public func stall(for duration: Duration) {
        let now = clock.now
        change { state, _ in
            guard !state.isShutDown, state.phase == .loaded else { return nil }
            if !state.machine.isWaitingForCache {
                state.anchorPosition = state.position(at: now) ?? state.anchorPosition
                state.anchorTime = now
                state.machine.isWaitingForCache = true
            }
            state.stallGeneration += 1
            let stall = state.stallGeneration
            let timer = clock.schedule(at: now.advanced(by: duration)) { [weak self] in self?.endStall(stall) }
            state.timers.append(timer)
            return nil
        }
    }

    func endStall(_ stall: UInt64) {
        let now = clock.now
        change { state, _ in
            guard state.stallGeneration == stall, state.machine.isWaitingForCache else { return nil }
            state.machine.isWaitingForCache = false
            state.anchorTime = now
            return nil
        }
    }

    /// Moves the fake's media `seconds` ahead without a seek, as a live source with a missing
    /// segment does: its next frame shows the later media (no `seekCompleted`).
    public func skipMedia(by seconds: Double) {
        let now = clock.now
        change { state, _ in
            guard !state.isShutDown, state.phase == .loaded, let media = state.media else { return nil }
            state.anchorPosition = min((state.position(at: now) ?? state.anchorPosition) + seconds, media.duration)
            state.anchorTime = now
            return nil
        }
    }

    /// Ends the current item with `error` as a failure during playback does:
    /// `itemEnded(.error(error))`, `stateChanged(→ failed)`. A waiting load throws `error`.
    public func failCurrentItem(with error: PlayerError) {
        change { state, events in
            guard state.phase == .loading || state.phase == .loaded else { return nil }
            let load = state.pendingLoad
            state.pendingLoad = nil
            state.phase = .failed
            state.generation += 1
            events.append(.itemEnded(.error(error)))
            return { load?.continuation.resume(returning: .failure(error)) }
        }
    }

    /// Changes fullscreen as a path the player's API cannot refuse would (a key pressed in mpv's
    /// own window, the window manager): no arbiter is asked; the change is reported as
    /// ``/PlayerKitCore/PlayerEvent/fullscreenStateChanged(_:)`` as mpv reports it.
    public func changeFullscreenExternally(_ fullscreen: Bool) {
        change { state, events in
            guard !state.isShutDown else { return nil }
            if state.isFullscreen != fullscreen { events.append(.fullscreenStateChanged(fullscreen)) }
            state.isFullscreen = fullscreen
            return nil
        }
    }

    // MARK: Read-outs

    /// Whether ``shutdown()`` was called.
    public var isShutDown: Bool { model.withLock { $0.isShutDown || $0.shuttingDown } }
    /// Every read-out at once, as ``/PlayerKitCore/Player/snapshot``: the derived state, the
    /// position at the clock's now, the loaded item's duration, frame rate (its
    /// `frameRate`) and information, and the settings commands made.
    public var snapshot: PlayerSnapshot {
        let now = clock.now
        return readOut { state in
            let loaded = state.phase == .loaded
            return PlayerSnapshot(
                state: state.published, source: state.source, position: state.position(at: now).map(state.reported),
                duration: loaded ? state.media?.duration.nonInfinite : nil, isPaused: state.isPaused,
                volume: state.volume, isMuted: state.isMuted, speed: state.speed, loopMode: state.loopMode,
                isFullscreen: state.isFullscreen, hasShownFirstFrame: state.firstFrameShown,
                frameRate: loaded ? state.media.flatMap { $0.frameRate > 0 ? $0.frameRate : nil } : nil,
                mediaInfo: loaded ? state.info : nil)
        }
    }

    func readOut<T>(_ body: (State) -> T) -> T { model.withLock { body($0) } }
}
