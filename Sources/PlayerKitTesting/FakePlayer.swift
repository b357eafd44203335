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
/// - a load: `stateChanged(→ loading)`; after ``Media/loadTime``, `stateChanged(loading → playing`
///   or `ready)`, `durationKnown`, `mediaLoaded`, then `firstFrame` (after
///   ``Media/firstFrameDelay``); a load that replaces an item first ends it with
///   `itemEnded(.replaced)`; a failing item ends with `itemEnded(.error)` and
///   `stateChanged(loading → failed)`, and the load throws the item's ``Media/failure``;
/// - playing: `positionChanged` every `positionInterval` (250 ms by default) of clock time (every frame, at the
///   item's ``Media/frameRate``, while an ``observeEveryFrame()`` observation lives); at the end,
///   `positionChanged(duration)`, `itemEnded(.finished)`, `stateChanged(playing → ended)`, or
///   `seekCompleted(0)` and on when the item loops;
/// - commands: `stateChanged` for play and pause, `seekCompleted` and `positionChanged` for a
///   seek, `speedChanged`, `volumeChanged`, `muteChanged`, `loopModeChanged`,
///   `fullscreenStateChanged`; a stop ends the item with `itemEnded(.stopped)` and
///   `stateChanged(→ idle)`; it plays one item at a time, so `next` and `previous` are refused
///   as mpv refuses them at a playlist's ends (``/PlayerKitCore/PlayerError/commandFailed(command:_:)``);
/// - ``shutdown()``: `shutDown`, last.
///
/// **Frames.** ``makeFrameSource(_:)`` gives it a ``/PlayerKitCore/VideoFrameSource``, as a real
/// player's frame output: a frame (every pixel ``Media/frameColor``) is rendered when the first
/// frame is shown, after each seek, while playing at the item's ``Media/frameRate`` (faster with
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
/// item's audio tracks are ``Media/audioTracks``), and frames are plain colour. IDs are unique among the live fake players on one
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
        public var duration: Double
        /// How long the load takes on the clock (zero: done before ``load(_:startPaused:)`` returns).
        public var loadTime: Duration
        /// How long after the load the first frame is shown (zero: with the load).
        public var firstFrameDelay: Duration
        /// Frames per second: the rate of position events while a frame observation lives.
        /// Zero for an item whose rate is unknown (``frameRate`` then reads nil; position
        /// events come at 1 per second).
        public var frameRate: Double
        /// The picture's size; nil for audio only.
        public var videoSize: VideoSize?
        /// When set, the load fails with this error after ``loadTime``.
        public var failure: PlayerError?
        /// The colour of every frame the item renders into a frame source.
        public var frameColor: RGBColor
        /// The source's own timestamp of the item's start, in seconds (0 by default): once the
        /// player is told ``/PlayerKitCore/PlayerCommand/setTimestampOrigin(_:)`` with
        /// ``/PlayerKitCore/TimestampOrigin/source``, its positions, seek targets and
        /// `seekCompleted` positions are in these timestamps, as a real player's are. A live
        /// angle joined at its edge starts where the stream is; an MPEG-TS angle joined before
        /// its 33-bit clock wrapped reads a wrap (2^33 / 90 kHz, 26.5 hours) below one packaged
        /// as fragmented MP4, as FFmpeg makes them.
        public var sourceStart: Double = 0
        /// How many audio tracks the item has (none by default): IDs 1, 2, ..., the first
        /// selected at load, as mpv selects one. ``/PlayerKitCore/PlayerCommand/selectTrack(_:id:)``
        /// selects another or none, reported with ``/PlayerKitCore/PlayerEvent/tracksChanged(_:)``
        /// and refused with ``/PlayerKitCore/PlayerError/unknownTrack(kind:id:available:)`` for
        /// an ID the item does not have.
        public var audioTracks = 0

        /// Describes an item.
        public init(duration: Double = 10, loadTime: Duration = .zero, firstFrameDelay: Duration = .zero,
                    frameRate: Double = 30, videoSize: VideoSize? = VideoSize(width: 320, height: 240),
                    failure: PlayerError? = nil, frameColor: RGBColor = RGBColor(red: 0, green: 0, blue: 0)) {
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

    private let emitter: PlayerEventEmitter
    private let delegateState = Locked<(delegate: WeakReference<any PlayerDelegate>, subscription: PlayerSubscription?)>(
        (WeakReference(nil), nil))

    /// The delegate, held weakly: it hears this fake's events as a ``/PlayerKitCore/Player``'s
    /// delegate hears a real player's (the same adapter,
    /// ``/PlayerKitCore/PlayerEventBus/subscribe(_:to:queue:)``), one call at a time in the fake's
    /// order, up to its ``/PlayerKitCore/PlayerEvent/shutDown``. Setting another replaces it from
    /// then on; the one before hears nothing more.
    public var delegate: (any PlayerDelegate)? {
        get { delegateState.withLock { $0.delegate.object } }
        set {
            let subscription = newValue.map { eventBus.subscribe($0, to: self) }
            let old = delegateState.withLock { state -> PlayerSubscription? in
                defer { state = (WeakReference(newValue), subscription) }
                return state.subscription
            }
            old?.cancel()
        }
    }
    /// How the fake's events reach its bus (``FakeEventDelivery``).
    public let delivery: FakeEventDelivery
    private let model: Locked<State>

    private typealias Phase = PlayerStateMachine.Phase

    private struct PendingLoad {
        let token: UInt64
        let continuation: CheckedContinuation<Result<MediaInfo, PlayerError>, Never>
    }

    private struct FirstFrameWaiter {
        let id: UInt64
        let continuation: CheckedContinuation<Result<Void, PlayerError>, Never>
    }

    private struct State {
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
    private func releaseID() {
        guard idReleased.exchange(true, ordering: .acquiringAndReleasing) == false else { return }
        let bus = ObjectIdentifier(eventBus)
        Self.liveIDs.withLock { ids in
            ids[bus]?.remove(id)
            if ids[bus]?.isEmpty == true { ids[bus] = nil }
        }
    }

    private let idReleased = Atomic<Bool>(false)

    /// Live fake IDs by bus, for uniqueness: unique among the live fakes on one bus, so tests
    /// with buses of their own may use the same IDs at once.
    private static let liveIDs = Locked([ObjectIdentifier: Set<PlayerID>]())

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
        let timers = model.withLock { $0.timers + $0.playbackTimers }
        for timer in timers { timer.cancel() }
        releaseID()
    }

    // MARK: What a test controls and reads

    /// Adds or replaces an item the fake can load.
    public func setMedia(_ media: Media, for source: String) {
        model.withLock { $0.catalog[source] = media }
    }

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
    /// while an ``observeBufferedMedia()`` observation lives, when it changed.
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
    public var timestampOrigin: TimestampOrigin { model.withLock { $0.timestampOrigin } }
    /// When positions are reported (``/PlayerKitCore/PlayerCommand/setPositionTiming(_:)``; the
    /// fake reports each frame when it is due either way).
    public var positionTiming: PositionTiming { model.withLock { $0.positionTiming } }
    /// The clock the video follows (``/PlayerKitCore/PlayerCommand/setVideoClock(_:)``).
    public var videoClock: VideoClock { model.withLock { $0.videoClock } }
    /// How much media is buffered after a stall before playing again
    /// (``/PlayerKitCore/PlayerCommand/setBufferAfterStall(_:)``).
    public var bufferAfterStall: Duration { model.withLock { $0.bufferAfterStall } }

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

    private func endStall(_ stall: UInt64) {
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
    /// ``Media/frameRate``) and information, and the settings commands made.
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

    private func readOut<T>(_ body: (State) -> T) -> T { model.withLock { body($0) } }

    // MARK: Loading

    /// Loads `source` as ``/PlayerKitCore/Player/load(_:startPaused:)`` does, taking the item's
    /// ``Media/loadTime`` on the clock. Cancelling the task ends the wait with
    /// ``/PlayerKitCore/PlayerError/loadCancelled(source:)`` and stops the item.
    /// - Throws: ``/PlayerKitCore/PlayerError/fileNotFound(path:)`` for a source the fake does not know (with no
    ///   default media), the item's ``Media/failure``, ``/PlayerKitCore/PlayerError/loadCancelled(source:)``
    ///   when another load or a stop replaced it, ``/PlayerKitCore/PlayerError/playerShutDown(_:)``.
    @discardableResult
    public func load(_ source: MediaSource, startPaused: Bool = false) async throws(PlayerError) -> MediaInfo {
        let name = source.description
        let token = model.withLock { state -> UInt64 in
            state.lastLoadToken += 1
            return state.lastLoadToken
        }
        let result = await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Result<MediaInfo, PlayerError>, Never>) in
                change { state, events in
                    guard !state.isShutDown else {
                        return { continuation.resume(returning: .failure(.playerShutDown(self.id))) }
                    }
                    guard let media = state.catalog[name] ?? state.defaultMedia else {
                        return { continuation.resume(returning: .failure(.fileNotFound(path: name))) }
                    }
                    let replaced = self.endItem(&state, &events, reason: .replaced)
                    state.generation += 1
                    state.phase = .loading
                    state.source = name
                    state.media = media
                    state.info = nil
                    state.isPaused = startPaused
                    state.firstFrameShown = false
                    state.anchorPosition = 0
                    state.playsLeft = nil
                    state.pendingLoad = PendingLoad(token: token, continuation: continuation)
                    // The item is loading before it can be loaded, however fast: a real player
                    // hears mpv's start of the file before the file is open.
                    self.refreshState(&state, &events)
                    let current = state.generation
                    if media.loadTime > .zero {
                        state.timers.append(self.clock.schedule(at: self.clock.now.advanced(by: media.loadTime), awaited: true) { [weak self] in
                            self?.finishLoad(current)
                        })
                        return replaced
                    }
                    let finish = self.completeLoad(&state, &events)
                    return { replaced?(); finish?() }
                }
            }
        } onCancel: {
            self.cancelLoad(token, source: name)
        }
        return try result.get()
    }

    /// Loads `source` paused and returns once its first frame is shown, as
    /// ``/PlayerKitCore/Player/preload(_:timeout:)``; `timeout` is clock time after the load.
    /// - Throws: as ``load(_:startPaused:)``, and ``/PlayerKitCore/PlayerError/timedOut(operation:after:)``.
    @discardableResult
    public func preload(_ source: MediaSource, timeout: Duration = .seconds(10)) async throws(PlayerError) -> MediaInfo {
        let info = try await load(source, startPaused: true)
        let result = await withCheckedContinuation { (continuation: CheckedContinuation<Result<Void, PlayerError>, Never>) in
            let waiterID = model.withLock { state -> UInt64? in
                if state.firstFrameShown || state.isShutDown { return nil }
                state.lastWaiterID += 1
                state.firstFrameWaiters.append(FirstFrameWaiter(id: state.lastWaiterID, continuation: continuation))
                return state.lastWaiterID
            }
            guard let waiterID else {
                let down = isShutDown
                continuation.resume(returning: down ? .failure(.playerShutDown(id)) : .success(()))
                return
            }
            let timer = clock.schedule(at: clock.now.advanced(by: timeout), awaited: true) { [weak self] in
                guard let self else { return }
                let waiter = self.model.withLock { state -> FirstFrameWaiter? in
                    guard let index = state.firstFrameWaiters.firstIndex(where: { $0.id == waiterID }) else { return nil }
                    return state.firstFrameWaiters.remove(at: index)
                }
                waiter?.continuation.resume(returning: .failure(
                    .timedOut(operation: "preloading \(source) (waiting for its first frame)", after: timeout)))
            }
            model.withLock { $0.timers.append(timer) }
        }
        try result.get()
        return info
    }

    private func finishLoad(_ generation: UInt64) {
        change { state, events in
            guard state.generation == generation, state.phase == .loading else { return nil }
            return self.completeLoad(&state, &events)
        }
    }

    /// The load of the current item completes now: loaded (or failed).
    private func completeLoad(_ state: inout State, _ events: inout [PlayerEvent]) -> (() -> Void)? {
        guard let media = state.media, let source = state.source else { return nil }
        let load = state.pendingLoad
        state.pendingLoad = nil
        if let failure = media.failure {
            state.phase = .failed
            state.generation += 1
            events.append(.itemEnded(.error(failure)))
            return { load?.continuation.resume(returning: .failure(failure)) }
        }
        state.phase = .loaded
        state.anchorTime = clock.now
        let tracks = media.audioTracks > 0 ? (1...media.audioTracks).map { Track(id: $0, kind: .audio, isSelected: $0 == 1) } : []
        // An infinite duration is a live stream: no duration, and live (``/PlayerKitCore/MediaInfo/isLive``).
        let info = MediaInfo(source: source, duration: media.duration.nonInfinite, videoSize: media.videoSize, title: nil, tracks: tracks,
                             isLive: media.duration == .infinity)
        state.info = info
        state.tracks = tracks
        // The state change comes first, then what was read about the item (the core's order).
        refreshState(&state, &events)
        if let duration = media.duration.nonInfinite { events.append(.durationKnown(duration)) }
        events.append(.mediaLoaded(info))
        if media.firstFrameDelay > .zero {
            let generation = state.generation
            state.timers.append(clock.schedule(at: clock.now.advanced(by: media.firstFrameDelay)) { [weak self] in
                self?.change { state, events in
                    guard state.generation == generation, state.phase == .loaded else { return nil }
                    return self?.showFirstFrame(&state, &events)
                }
            })
            return { load?.continuation.resume(returning: .success(info)) }
        }
        let shown = showFirstFrame(&state, &events)
        return { load?.continuation.resume(returning: .success(info)); shown?() }
    }

    private func showFirstFrame(_ state: inout State, _ events: inout [PlayerEvent]) -> (() -> Void)? {
        guard !state.firstFrameShown else { return nil }
        state.firstFrameShown = true
        events.append(.firstFrame)
        render(&state, videoTime: state.position(at: clock.now) ?? state.anchorPosition)
        let waiters = state.firstFrameWaiters
        state.firstFrameWaiters = []
        return { for waiter in waiters { waiter.continuation.resume(returning: .success(())) } }
    }

    private func cancelLoad(_ token: UInt64, source: String) {
        change { state, events in
            guard let load = state.pendingLoad, load.token == token else { return nil }
            state.pendingLoad = nil
            let ended = self.endItem(&state, &events, reason: .stopped)
            state.phase = .idle
            return { load.continuation.resume(returning: .failure(.loadCancelled(source: source))); ended?() }
        }
    }

    /// Ends the current item (loading or loaded) with `reason`; returns what to run after the lock.
    private func endItem(_ state: inout State, _ events: inout [PlayerEvent], reason: ItemEndReason) -> (() -> Void)? {
        guard state.phase == .loading || state.phase == .loaded else { return nil }
        let load = state.pendingLoad
        let waiters = state.firstFrameWaiters
        let source = state.source ?? ""
        state.pendingLoad = nil
        state.firstFrameWaiters = []
        state.generation += 1
        state.phase = .idle
        state.media = nil
        state.info = nil
        state.firstFrameShown = false
        events.append(.itemEnded(reason))
        return {
            load?.continuation.resume(returning: .failure(.loadCancelled(source: source)))
            for waiter in waiters { waiter.continuation.resume(returning: .failure(.loadCancelled(source: source))) }
        }
    }

    /// Unloads the item (`itemEnded(.stopped)`, idle) and counts the release. Never waits.
    public func releaseMedia() {
        change { state, events in
            guard !state.isShutDown else { return nil }
            state.releaseCount += 1
            return self.endItem(&state, &events, reason: .stopped)
        }
    }

    /// Shuts the fake down: pending loads and waits fail with
    /// ``/PlayerKitCore/PlayerError/playerShutDown(_:)``, ``/PlayerKitCore/PlayerEvent/shutDown`` is published last, and the ID
    /// is free. Safe to call more than once.
    public func shutdown() async {
        let id = id
        // First shuttingDown, while features can still publish about the fake, as a real
        // player's shutdown does.
        let first = model.withLock { state -> Bool in
            defer { state.shuttingDown = true }
            return !state.shuttingDown && !state.isShutDown
        }
        if first { emitNow([.shuttingDown]) }
        change { state, events in
            guard !state.isShutDown else { return nil }
            state.isShutDown = true
            let load = state.pendingLoad
            let waiters = state.firstFrameWaiters
            let replies = state.replyWaiters.values
            state.replyWaiters = [:]
            let timers = state.timers + state.playbackTimers
            state.pendingLoad = nil
            state.firstFrameWaiters = []
            state.timers = []
            state.playbackTimers = []
            state.generation += 1
            events.append(.shutDown)
            return {
                for timer in timers { timer.cancel() }
                load?.continuation.resume(returning: .failure(.playerShutDown(id)))
                for waiter in waiters { waiter.continuation.resume(returning: .failure(.playerShutDown(id))) }
                for reply in replies { reply.resume(returning: false) }
            }
        }
        releaseID()
    }

    // MARK: Commands

    /// Checks `command` as ``/PlayerKitCore/Player/send(_:)`` does and carries it out at once; a refusal set
    /// with ``refuseCommands(_:)`` is published as ``/PlayerKitCore/PlayerEvent/error(_:)``.
    public func send(_ command: PlayerCommand) throws(PlayerError) {
        do throws(PlayerError) {
            try execute(command)
        } catch let error where isRefusal(error, of: command) {
            emitNow([.error(error)])
        }
    }

    /// Checks `command`, waits ``replyDelay`` on the clock, then carries it out and returns, as
    /// ``/PlayerKitCore/Player/perform(_:timeout:)`` does; `timeout` is clock time.
    public func perform(_ command: PlayerCommand, timeout: Duration = .seconds(10)) async throws(PlayerError) {
        guard timeout > .zero else {
            throw .invalidArgument(name: "timeout", value: "\(timeout)", reason: "must be positive")
        }
        try check(command)
        let delay = replyDelay
        if delay > .zero {
            if delay >= timeout {
                try? await clock.sleep(until: clock.now.advanced(by: timeout), tolerance: nil)
                throw .timedOut(operation: "\(command) on player \(id)", after: timeout)
            }
            // Cancelling the task does not withdraw the command (as on a real player).
            let deadline = clock.now.advanced(by: delay)
            let answered = await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
                let id = model.withLock { state -> UInt64? in
                    guard !state.isShutDown else { return nil }
                    state.lastWaiterID += 1
                    state.replyWaiters[state.lastWaiterID] = continuation
                    return state.lastWaiterID
                }
                guard let id else { return continuation.resume(returning: false) }
                let timer = clock.schedule(at: deadline, awaited: true) { [weak self] in
                    self?.model.withLock { $0.replyWaiters.removeValue(forKey: id) }?.resume(returning: true)
                }
                model.withLock { $0.timers.append(timer) }
            }
            guard answered else { throw .playerShutDown(id) }
        }
        try execute(command)
    }

    private func isRefusal(_ error: PlayerError, of command: PlayerCommand) -> Bool {
        guard let refusal = model.withLock({ $0.refusal }) else { return false }
        return refusal(command) == error
    }

    /// The checks a real player makes before mpv sees the command.
    private func check(_ command: PlayerCommand) throws(PlayerError) {
        try command.validate()
        let (down, hasMedia) = model.withLock { ($0.isShutDown || $0.shuttingDown, $0.phase == .loaded) }
        guard !down else { throw .playerShutDown(id) }
        switch command {
        case .seek, .seekBy:
            guard hasMedia else { throw .noMediaLoaded(operation: "seek") }
        case .stepFrame, .stepFrameBack:
            guard hasMedia else { throw .noMediaLoaded(operation: "step a frame") }
        case .selectTrack(let kind, let id):
            guard hasMedia else { throw .noMediaLoaded(operation: "select a track") }
            let available = model.withLock { $0.tracks }.filter { $0.kind == kind }.map(\.id)
            if let id, !available.contains(id) { throw .unknownTrack(kind: kind, id: id, available: available) }
        case .setVolume(let volume):
            guard volume <= 130 else {
                throw .invalidArgument(name: "volume", value: "\(volume)", reason: "must be at most 130 (mpv's volume-max)")
            }
        case .setFullscreen(let fullscreen):
            if let arbiter = fullscreenArbiter, let reason = arbiter.refusal(ofFullscreen: fullscreen, for: self) {
                throw .fullscreenRefused(id, reason: reason)
            }
        default:
            break
        }
    }

    /// Checks and carries out `command` now.
    private func execute(_ command: PlayerCommand) throws(PlayerError) {
        try check(command)
        if command == .next || command == .previous {
            // A fake plays one item at a time, so mpv's refusal of a playlist step without a
            // next or previous entry.
            throw .commandFailed(command: [command.description], MPVError(code: -12, message: "error running command"))
        }
        if let refusal = model.withLock({ $0.refusal }), let error = refusal(command) { throw error }
        let now = clock.now
        change { state, events in
            state.commands.append(command)
            let current = state.position(at: now)
            switch command {
            case .play:
                if state.isPaused, state.phase == .loaded { state.anchorPosition = current ?? 0; state.anchorTime = now }
                state.isPaused = false
            case .pause:
                if !state.isPaused, state.phase == .loaded { state.anchorPosition = current ?? 0; state.anchorTime = now }
                state.isPaused = true
            case .seek(let target, _):
                self.seek(&state, &events, to: state.itemTime(target), now: now)
            case .seekBy(let offset, _):
                self.seek(&state, &events, to: (current ?? 0) + offset, now: now)
            case .setSpeed(let speed):
                state.anchorPosition = current ?? state.anchorPosition
                state.anchorTime = now
                if state.speed != speed { events.append(.speedChanged(speed)) }
                state.speed = speed
                state.speedCorrection = 1
            case .setSpeedCorrection(let factor):
                // Plays faster or slower, as a real player does; no speed event: the speed is still the app's.
                state.anchorPosition = current ?? state.anchorPosition
                state.anchorTime = now
                state.speedCorrection = factor
            case .setVolume(let volume):
                if state.volume != volume { events.append(.volumeChanged(volume)) }
                state.volume = volume
            case .setMuted(let muted):
                if state.isMuted != muted { events.append(.muteChanged(muted)) }
                state.isMuted = muted
            case .setLoop(let mode):
                if state.loopMode != mode { events.append(.loopModeChanged(mode)) }
                state.loopMode = mode
                if case .playCount(let count) = mode { state.playsLeft = count - 1 } else { state.playsLeft = nil }
            case .setPlaybackDirection(let direction):
                state.anchorPosition = current ?? state.anchorPosition
                state.anchorTime = now
                state.direction = direction
            case .setFullscreen(let fullscreen):
                if state.isFullscreen != fullscreen { events.append(.fullscreenStateChanged(fullscreen)) }
                state.isFullscreen = fullscreen
            case .setTimestampOrigin(let origin):
                state.timestampOrigin = origin
            case .setPositionTiming(let timing):
                state.positionTiming = timing
            case .setVideoClock(let clock):
                state.videoClock = clock
            case .setBufferAfterStall(let duration):
                state.bufferAfterStall = duration
            case .selectTrack(let kind, let id):
                let before = state.tracks
                for index in state.tracks.indices where state.tracks[index].kind == kind {
                    state.tracks[index].isSelected = state.tracks[index].id == id
                }
                if state.tracks != before { events.append(.tracksChanged(state.tracks)) }
            case .stop:
                return self.endItem(&state, &events, reason: .stopped)
            case .stepFrame, .stepFrameBack:
                // The next (or previous) frame of the item's frame grid, as mpv's frame-step:
                // from a position between two frames, back is the frame shown there. Paused
                // there, with the frame rendered.
                guard let media = state.media, state.phase == .loaded else { break }
                let rate = max(media.frameRate, 1)
                let shown = ((current ?? 0) * rate + 1e-6).rounded(.down)
                let onFrame = abs((current ?? 0) * rate - shown) < 1e-6
                let target = command == .stepFrame ? shown + 1 : (onFrame ? shown - 1 : shown)
                let lastFrame = max(((media.duration * rate) - 1e-6).rounded(.up) - 1, 0)
                state.anchorPosition = min(max(target, 0), lastFrame) / rate
                state.anchorTime = now
                state.isPaused = true
                events.append(.positionChanged(state.anchorPosition))
                self.render(&state, videoTime: state.anchorPosition)
            default:
                break
            }
            return nil
        }
    }

    private func seek(_ state: inout State, _ events: inout [PlayerEvent], to target: Double, now: ContinuousClock.Instant) {
        guard let media = state.media, state.phase == .loaded else { return }
        let position = min(max(target, 0), media.duration)
        state.anchorPosition = position
        state.anchorTime = now
        events.append(.seekCompleted(position: position))
        events.append(.positionChanged(position))
        if state.firstFrameShown { render(&state, videoTime: position) }
    }

    // MARK: Features' hooks

    /// Publishes a feature's event in the fake's order.
    public func publish(_ event: some PlayerFeatureEvent) {
        emitNow([.feature(event)])
    }

    /// Reports the position with every frame (at the item's ``Media/frameRate``) while the
    /// observation lives.
    public func observeEveryFrame() -> PropertyObservation {
        change { state, _ in
            state.frameObservations += 1
            return nil
        }
        return PropertyObservation { [weak self] in
            self?.change { state, _ in
                state.frameObservations -= 1
                return nil
            }
        }
    }

    /// Reports how far the fake holds its source (``setBufferedMedia(_:)``) while the
    /// observation lives: the current value first, when there is one.
    public func observeBufferedMedia() -> PropertyObservation {
        change { state, events in
            state.bufferedMediaObservations += 1
            if state.bufferedMediaObservations == 1, let media = state.bufferedMedia, !state.isShutDown {
                events.append(.bufferedMediaChanged(media))
            }
            return nil
        }
        return PropertyObservation { [weak self] in
            self?.change { state, _ in
                state.bufferedMediaObservations -= 1
                return nil
            }
        }
    }

    /// Gives the fake a frame source at `format` (see the type's "Frames"); one at a time, as a
    /// real player's frame output.
    /// - Throws: ``/PlayerKitCore/FrameOutputError/alreadyAttached(playerID:)`` while one is open,
    ///   ``/PlayerKitCore/FrameOutputError/playerShutDown(_:)``.
    public func makeFrameSource(_ format: FrameFormat) throws(FrameOutputError) -> any VideoFrameSource {
        let made = model.withLock { state -> Result<FakeFrameSource, FrameOutputError> in
            guard !state.isShutDown else { return .failure(.playerShutDown(id)) }
            if let open = state.frameSource, !open.isClosed { return .failure(.alreadyAttached(playerID: id)) }
            let source = FakeFrameSource(format: format)
            state.frameSourceReference = WeakReference(source)
            state.frameNumber = 0
            return .success(source)
        }
        return try made.get()
    }

    /// The fullscreen arbiter, held weakly.
    public var fullscreenArbiter: (any FullscreenArbiter)? { model.withLock { $0.arbiter.object } }

    /// Replaces the arbiter when the current one is `expected`.
    @discardableResult
    public func setFullscreenArbiter(_ newArbiter: (any FullscreenArbiter)?, replacing expected: (any FullscreenArbiter)?) -> Bool {
        model.withLock { state in
            guard state.arbiter.object === expected else { return false }
            state.arbiter = WeakReference(newArbiter)
            return true
        }
    }

    // MARK: The one way state changes

    /// Runs `body` under the lock with the events it adds; then refreshes the derived state and
    /// the timers, queues the events (numbered in the order of the changes), and, with no lock
    /// held, runs what `body` returned and delivers the events.
    /// Emits `events` now: published at once, or held by an interleaved ``delivery``.
    private func emitNow(_ events: [PlayerEvent]) {
        emitter.enqueue(events, at: clock.now)
        deliver()
    }

    /// Hands the queued events to the bus now, or leaves it to an interleaved ``delivery``.
    private func deliver() {
        let emitter = emitter
        if !delivery.hold({ emitter.deliverQueued() }, of: id) { emitter.deliverQueued() }
    }

    private func change(_ body: (inout State, inout [PlayerEvent]) -> (() -> Void)?) {
        let now = clock.now
        let (after, frames) = model.withLock { state -> ((() -> Void)?, [(FakeFrameSource, VideoFrame)]) in
            defer { state.renderedFrames = [] }
            var events: [PlayerEvent] = []
            let after = body(&state, &events)
            if !state.isShutDown || events.last == .shutDown {
                refreshState(&state, &events)
                rescheduleTimers(&state, now: now)
                // `shutDown` is always last.
                if let index = events.firstIndex(of: .shutDown) {
                    events.remove(at: index)
                    events.append(.shutDown)
                }
                // Held: numbered and held under the fake's lock, so they keep the order of the changes.
                emitter.enqueue(state.reported(events), at: now)
            }
            return (after, state.renderedFrames)
        }
        after?()
        for (source, frame) in frames { source.deliver(frame) }
        deliver()
    }

    private func refreshState(_ state: inout State, _ events: inout [PlayerEvent]) {
        if let change = state.machine.refresh() { events.append(change) }
    }

    /// The next position report and the item's end, from the current state.
    private func rescheduleTimers(_ state: inout State, now: ContinuousClock.Instant) {
        for timer in state.playbackTimers { timer.cancel() }
        state.playbackTimers = []
        guard !state.isShutDown, state.phase == .loaded, !state.isPaused, !state.machine.isWaitingForCache, let media = state.media,
              let position = state.position(at: now) else { return }
        let generation = state.generation
        let interval = state.frameObservations > 0 ? Duration.seconds(1 / max(media.frameRate, 1)) : positionInterval
        let rate = state.speed * state.speedCorrection * (state.direction == .forward ? 1 : -1)
        let remaining = state.direction == .forward ? media.duration - position : position
        // A live stream (an infinite duration) has no end to reach: a Duration of it traps.
        let toEnd: Duration = remaining.isFinite ? .seconds(max(remaining, 0) / abs(rate)) : .seconds(Int64.max / 4)
        if toEnd > interval {
            state.playbackTimers.append(clock.schedule(at: now.advanced(by: interval)) { [weak self] in self?.tick(generation) })
        }
        if remaining.isFinite {
            state.playbackTimers.append(clock.schedule(at: now.advanced(by: toEnd)) { [weak self] in self?.reachEnd(generation) })
        }
        // The next frame, on the grid of frame intervals from the moment playback last changed.
        if state.frameSource != nil, state.firstFrameShown {
            let frameInterval = Duration.seconds(1 / (max(media.frameRate, 1) * abs(rate)))
            let elapsed = now - state.anchorTime
            var next = state.anchorTime.advanced(by: frameInterval * Int(elapsed / frameInterval))
            while next <= now { next = next.advanced(by: frameInterval) }  // strictly later, whatever the rounding
            if next - now < toEnd {
                state.playbackTimers.append(clock.schedule(at: next) { [weak self] in self?.renderTick(generation) })
            }
        }
    }

    private func renderTick(_ generation: UInt64) {
        let now = clock.now
        change { state, _ in
            guard state.generation == generation, !state.isPaused, let position = state.position(at: now) else { return nil }
            self.render(&state, videoTime: position)
            return nil
        }
    }

    /// Renders a frame into the open frame source, if any (handed over after the lock).
    private func render(_ state: inout State, videoTime: Double?) {
        guard let source = state.frameSource, !source.isClosed else { return }
        state.frameNumber += 1
        let info = FrameInfo(playerID: id, format: source.format, videoTime: videoTime,
                             sequenceNumber: state.frameNumber, renderedAt: clock.now)
        state.renderedFrames.append((source, VideoFrame(info: info, filledWith: state.media?.frameColor ?? RGBColor(red: 0, green: 0, blue: 0))))
    }

    private func tick(_ generation: UInt64) {
        let now = clock.now
        change { state, events in
            guard state.generation == generation, let position = state.position(at: now) else { return nil }
            events.append(.positionChanged(position))
            return nil
        }
    }

    private func reachEnd(_ generation: UInt64) {
        let now = clock.now
        change { state, events in
            guard state.generation == generation, state.phase == .loaded, !state.isPaused, let media = state.media else { return nil }
            let forward = state.direction == .forward
            let loops: Bool
            switch state.loopMode {
            case .off: loops = false
            case .forever: loops = true
            case .playCount:
                loops = (state.playsLeft ?? 0) > 0
                if loops { state.playsLeft = (state.playsLeft ?? 1) - 1 }
            }
            if loops {
                state.anchorPosition = forward ? 0 : media.duration
                state.anchorTime = now
                events.append(.seekCompleted(position: state.anchorPosition))
                return nil
            }
            state.anchorPosition = forward ? media.duration : 0
            state.anchorTime = now
            self.render(&state, videoTime: nil)  // mpv gives an item's last frame no position
            events.append(.positionChanged(state.anchorPosition))
            events.append(.itemEnded(.finished))
            state.generation += 1
            state.phase = .ended
            state.media = nil
            state.firstFrameShown = false
            return nil
        }
    }
}

/// A ``FakePlayer``'s frame source: keeps the newest frame and hands each to the handler.
final class FakeFrameSource: VideoFrameSource {
    let format: FrameFormat
    private struct State {
        var latest: VideoFrame?
        var handler: (@Sendable (VideoFrame) -> Void)?
        var isClosed = false
    }
    private let state = Locked(State())

    init(format: FrameFormat) {
        self.format = format
    }

    var latestFrame: VideoFrame? { state.withLock { $0.latest } }
    var isClosed: Bool { state.withLock { $0.isClosed } }

    func setFrameHandler(_ handler: (@Sendable (VideoFrame) -> Void)?) {
        let old = state.withLock { state in
            defer { state.handler = handler }
            return state.handler
        }
        _ = old  // released after the lock
    }

    func close() {
        state.withLock { state in
            state.isClosed = true
            state.handler = nil
        }
    }

    /// Records `frame` as the newest and calls the handler with it, outside the lock.
    func deliver(_ frame: VideoFrame) {
        let handler = state.withLock { state -> (@Sendable (VideoFrame) -> Void)? in
            guard !state.isClosed else { return nil }
            state.latest = frame
            return state.handler
        }
        handler?(frame)
    }
}

extension Double {
    /// Self, or nil for an infinite value (a live item's duration).
    fileprivate var nonInfinite: Double? { isInfinite ? nil : self }
}
