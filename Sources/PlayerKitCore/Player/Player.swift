import Dispatch
import Foundation
import Logging
import PlayerKitSupport

/// One media player over its own libmpv core.
///
/// ```swift
/// let player = try await Player.create(id: "main", configuration: .init(videoOutput: .none))
/// player.delegate = myDelegate
/// let media = try await player.load("Media/clip-a.mp4")
/// try await player.seek(to: 2, precision: .exact)
/// await player.shutdown()
/// ```
///
/// `Player` is a thin, validating facade: each method checks its arguments (throwing a
/// ``PlayerError`` that names the bad value) and hands one typed operation to the engine, which
/// makes the mpv request and updates the player's state in the same step.
///
/// **Identity.** ``id`` is random unless the app gives one; IDs are unique among live
/// players in the process (see ``PlayerID``).
///
/// **Commands: two forms, neither blocks a thread.** Await a command (`try await
/// player.play()`, `try await player.seek(to: 2)`, or ``perform(_:timeout:)`` with a
/// ``PlayerCommand``): it suspends until mpv carried it out or refused it, and no thread waits
/// meanwhile. Or send it (`try player.send(.play)`) where nothing may wait: a handler, the
/// event pump, a render loop, a UI callback. Every method may be called from any thread or
/// task. The read-out properties (``state``, ``position``, ...) are the latest values the event
/// pump saw; they never wait. After an awaited command returns, its read-out already shows the
/// value it set and the matching change event has been published; after ``send(_:)``, a
/// setting's read-out and change event already show it too, and the rest of the state follows
/// once mpv has carried the command out.
///
/// **Lifetime.** Call ``shutdown()`` when done: it returns once the mpv core is destroyed.
/// A player that is simply dropped shuts down in the background; its ID is free at once.
/// After shutdown every call throws ``PlayerError/playerShutDown(_:)``.
public final class Player: MediaPlayer {
    /// The player's ID, fixed for its life.
    public let id: PlayerID
    /// The configuration it was created with.
    let configuration: PlayerConfiguration

    let core: PlayerCore
    private let registryToken: UInt64
    /// The fullscreen arbiter, held weakly.
    let arbiter = Locked(WeakReference<any FullscreenArbiter>(nil))
    /// The bus this player publishes to (``PlayerConfiguration/eventBus``).
    public let eventBus: PlayerEventBus
    /// The delegate, as a subscription to this player on the bus.
    private let delegateAdapter: DelegateAdapter

    /// Creates a player with its own mpv core.
    ///
    /// The player publishes ``PlayerEvent/created`` first (sequence number 1) to its delegate
    /// and its bus, and ``PlayerEvent/shutDown`` last.
    ///
    /// - Parameters:
    ///   - id: a custom ID such as `"main"`, or nil for a random one.
    ///   - configuration: outputs, options and the event bus; the default is headless with
    ///     system audio, on ``PlayerEventBus/shared``.
    ///   - delegate: a delegate that hears every event from ``PlayerEvent/created`` on (held
    ///     weakly). One set later through ``delegate`` hears the events from then on.
    /// Creating the core blocks the calling thread for milliseconds (tens under load): this is
    /// the form for synchronous code (an app's main thread at startup, a command-line tool).
    /// Async code cannot call it (the compiler refuses it there): it uses
    /// ``create(id:configuration:delegate:)``, which creates the player on a thread of
    /// PlayerKit's own and leaves Swift's cooperative pool free.
    ///
    /// - Throws: ``PlayerError/invalidID(_:)``, ``PlayerError/duplicateID(_:)``,
    ///   ``PlayerError/invalidOption(name:value:_:)`` or ``PlayerError/creationFailed(reason:)``.
    @available(*, noasync, message: "creating an mpv core blocks the thread: async code uses Player.create(id:configuration:delegate:)")
    public convenience init(
        id: PlayerID? = nil, configuration: PlayerConfiguration = PlayerConfiguration(),
        delegate: (any PlayerDelegate)? = nil
    ) throws(PlayerError) {
        try self.init(id: id ?? .random(), configuration: configuration, delegate: delegate, core: .pool)
    }

    /// Creates a player whose core comes from `source`. A claimed core that the player does
    /// not get to use (its ID is taken) goes back to the pool.
    private init(
        id: PlayerID, configuration: PlayerConfiguration, delegate: (any PlayerDelegate)?, core source: PlayerCore.CoreSource
    ) throws(PlayerError) {
        guard PlayerID.isValid(id.rawValue) else { throw .invalidID(id.rawValue) }
        let token: UInt64
        do throws(PlayerError) {
            token = try PlayerRegistry.reserve(id)
        } catch {
            if case .claimed(let core?) = source {
                CorePool.shared.putBack(core, key: CorePool.key(configuration.mpvOptions(for: id)))
            }
            throw error
        }
        do throws(PlayerError) {
            self.core = try PlayerCore(id: id, configuration: configuration, core: source)
        } catch {
            PlayerRegistry.release(id, token: token)
            throw error
        }
        self.id = id
        self.configuration = configuration
        self.registryToken = token
        self.eventBus = configuration.eventBus
        let adapter = DelegateAdapter(
            queue: DispatchQueue(label: "PlayerKit.delegate.\(id)", target: configuration.delegateQueue))
        self.delegateAdapter = adapter
        adapter.attach(self)
        // Subscribed before the first event, `created`.
        adapter.delegate = delegate
        let bus = configuration.eventBus
        core.start(sink: { bus.publish($0, phase: $1) })
        PlayerRegistry.register(self, token: token)
        core.logger.debug("player created")
    }

    /// Creates a player as ``init(id:configuration:delegate:)`` does, on a thread of PlayerKit's
    /// own, and suspends until it exists: the form for async code. Creating an mpv core takes
    /// milliseconds (tens under load) and one core is created at a time in a process; async code
    /// that called the initializer would block a thread of Swift's cooperative pool meanwhile.
    ///
    /// When no core is ready (``PlayerConfiguration/readyCores``) but the pool is making one, the
    /// player waits for that core, without a thread, rather than create one beside it: mpv
    /// creates one core at a time in a process, so the second would wait for the first anyway.
    /// The wait is bounded (0.5 s: a machine that stalled), then the player creates its own.
    ///
    /// Players are created one at a time, in the order asked. Cancelling the calling task does
    /// not stop a creation under way.
    /// - Throws: as ``init(id:configuration:delegate:)``.
    public static func create(
        id: PlayerID? = nil, configuration: PlayerConfiguration = PlayerConfiguration(),
        delegate: (any PlayerDelegate)? = nil
    ) async throws(PlayerError) -> Player {
        let id = id ?? .random()
        // Checked before a core is claimed for it.
        guard PlayerID.isValid(id.rawValue) else { throw .invalidID(id.rawValue) }
        try PlayerCore.validate(configuration)
        let options = configuration.mpvOptions(for: id)
        // The player is handed over through a lock as well as the continuation: a continuation
        // resumed before its task suspended is picked up without the runtime telling
        // ThreadSanitizer, which then saw the initializer's writes race the first load's reads.
        let made = Locked<Result<Player, PlayerError>?>(nil)
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            creationLine.enqueue(options: options, keep: configuration.readyCores) { core in
                let result: Result<Player, PlayerError>
                do throws(PlayerError) {
                    result = .success(try Player(id: id, configuration: configuration, delegate: delegate, core: .claimed(core)))
                } catch {
                    result = .failure(error)
                }
                made.withLock { $0 = result }
                continuation.resume()
            }
        }
        guard let result = made.withLock({ $0 }) else { throw .creationFailed(reason: "the creation line resumed without a player") }
        return try result.get()
    }

    /// Lets go every mpv core kept ready for new players (``PlayerConfiguration/readyCores``),
    /// and returns once they are destroyed: for an app about to stay idle for long, or short of
    /// memory. The next player creates its core, as the first one did, and the cores are made
    /// ready again after it. Players that exist are not touched. The cores are destroyed on a
    /// thread of PlayerKit's own (mpv takes milliseconds to stop each one's threads); nothing
    /// else waits for it.
    public static func releaseReadyCores() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            CorePool.shared.drain { continuation.resume() }
        }
    }

    /// Makes `configuration`'s ``PlayerConfiguration/readyCores`` mpv cores ready for the
    /// players that will be created with its settings, and returns once they are: for an app's
    /// launch, so that its first player, too, takes a ready core. Without it the first player
    /// with given settings creates its own core (milliseconds, tens under load), and the pool
    /// fills behind it. Cores ready already count, and ready ones beyond the number are let go (0
    /// keeps none).
    ///
    /// The first call in a process also makes the process's first load warm, so that the first
    /// player's first frame comes as soon as later ones do: a throwaway core that shows nothing
    /// and plays nothing aloud plays a built-in clip of 3 frames (H.264 and AAC) to its first
    /// frame, and is destroyed (about 20 ms of CPU, once; at most 2 s). The process's first load
    /// otherwise reads FFmpeg's and mpv's playback code in from disk and computes their tables:
    /// 5-10 ms more on a 2-core machine. No player's core plays anything before its player.
    ///
    /// The cores are created one at a time on a thread of PlayerKit's own; the caller
    /// suspends, and cancelling it does not stop a creation under way. A player created
    /// meanwhile takes a core that is ready by then, or creates its own.
    /// - Throws: ``PlayerError/invalidArgument(name:value:reason:)`` for a `readyCores` outside
    ///   0...16; ``PlayerError/invalidOption(name:value:_:)`` or
    ///   ``PlayerError/creationFailed(reason:)`` when mpv refuses the settings, as creating a
    ///   player with them would. Cores made before the failure stay ready.
    public static func prepareReadyCores(for configuration: PlayerConfiguration = PlayerConfiguration()) async throws(PlayerError) {
        guard (0...CorePool.largestCount).contains(configuration.readyCores) else {
            throw .invalidArgument(
                name: "readyCores", value: "\(configuration.readyCores)", reason: "must be from 0 to \(CorePool.largestCount)")
        }
        let options = configuration.mpvOptions(for: .random())
        let failure = await withCheckedContinuation { (continuation: CheckedContinuation<PlayerError?, Never>) in
            CorePool.shared.prepare(options: options, count: configuration.readyCores) { continuation.resume(returning: $0) }
        }
        if let failure { throw failure }
    }

    /// Where ``create(id:configuration:delegate:)`` creates players: not the cooperative pool.
    private static let creationLine = CreationLine()

    deinit {
        delegateAdapter.detach()
        PlayerRegistry.release(id, token: registryToken)
        // Dropped without shutdown(): tear down in the background; nothing blocks here.
        core.shutdown {}
    }

    /// Shuts the player down: stops its events, destroys its mpv core, and frees its ID.
    /// Returns once the core is destroyed, or after ``PlayerConfiguration/shutdownTimeout`` at
    /// the latest: when mpv cannot let go of the core by then (a ``MediaStreamProvider`` whose
    /// `open` or `read` does not return holds it), an error is logged and the core is destroyed
    /// in the background, which the player's last event, ``PlayerEvent/shutDown``, reports.
    /// Either way, once it returns every call throws ``PlayerError/playerShutDown(_:)`` and the
    /// ID is free. Safe to call more than once, and from a delegate method. A pending
    /// ``load(_:startPaused:)`` fails with ``PlayerError/playerShutDown(_:)``.
    public func shutdown() async {
        _ = await core.shutdown(timeout: configuration.shutdownTimeout)
        PlayerRegistry.release(id, token: registryToken)
    }

    /// The live player with the ID `id` in this process, or nil when none has it (never made,
    /// shut down, or released by the app). Held weakly: this lookup never keeps a player alive.
    /// For features that learn only an ID (a ``MediaStreamProvider`` opening a stream, a bus
    /// subscriber) and want to ``publish(_:)`` about that player. Safe from any thread.
    public static func live(_ id: PlayerID) -> Player? {
        PlayerRegistry.player(id)
    }

    /// The IDs of every live player in this process, sorted: made and neither shut down nor
    /// deallocated. An app can check at its end that it left no player behind (an empty list),
    /// or list what it runs. Safe from any thread.
    static var liveIDs: [PlayerID] { PlayerRegistry.liveIDs }

    /// Whether ``shutdown()`` has been called (or the player is being torn down).
    public var isShutDown: Bool { core.isShutDown }

    // MARK: Events

    /// The delegate, held weakly. Called on ``PlayerConfiguration/delegateQueue``, one event at a
    /// time in the player's order. It hears the events that happen while it is set, up to the
    /// player's ``PlayerEvent/shutDown``. An adapter over the bus: the delegate is this player's
    /// subscription on ``eventBus``, as every other listener is.
    public var delegate: (any PlayerDelegate)? {
        get { delegateAdapter.delegate }
        set { delegateAdapter.delegate = newValue }
    }

    /// Publishes a feature's event about this player through the player's own ordered
    /// pipeline: it gets the player's next sequence number and reaches the delegate
    /// (``PlayerDelegate/player(_:didEmit:)``), every bus subscriber of this player's ID, async sequences, and
    /// NotificationCenter when the event names a notification. The extension point for
    /// features: PlayerKit's (fullscreen policy, clip loops, sync groups) and an app's own.
    ///
    /// Never blocks and never calls mpv; safe from any thread, the event pump and delegate
    /// methods included. Taken until the player's ``PlayerEvent/shutDown`` (always its last
    /// event) and ignored after: a feature that hears ``PlayerEvent/shuttingDown`` publishes its
    /// last events about the player then.
    public func publish(_ event: some PlayerFeatureEvent) {
        core.applyIntent { _ in [.event(.feature(event))] }
    }

    /// Asks for ``PlayerEvent/positionChanged(_:)`` with every frame (instead of once per
    /// ``PlayerConfiguration/positionUpdateInterval``) for as long as the returned observation
    /// lives: until ``PropertyObservation/cancel()`` or until it is released. With each frame's
    /// record time (``PlayerEventRecord/time``) a feature can time frames: seams, drift.
    /// Observations from several users add up; the last one to go ends per-frame reports.
    /// Never blocks; safe from any thread.
    public func observeEveryFrame() -> PropertyObservation {
        PropertyObservation(core: core)
    }

    /// Asks for ``PlayerEvent/bufferedMediaChanged(_:)`` for as long as the returned observation
    /// lives: how far the player holds its source in memory, and how far it can seek in it (mpv's
    /// demuxer cache), the current value first, then each change. What a feature needs that
    /// seeks a live stream (it can seek only within what it has) or judges a stream's live edge.
    /// Observations from several users add up; the last one to go ends the reports. Never
    /// blocks; safe from any thread.
    public func observeBufferedMedia() -> PropertyObservation {
        core.observeBufferedMedia(true)
        return PropertyObservation { [core] in core.observeBufferedMedia(false) }
    }

    /// The player's playback statistics now (``PlaybackStatistics``: frames, drops, bitrates,
    /// buffer, stalls, start-up, latency, decoder). Reads mpv's figures all at once without
    /// blocking a thread, and returns when mpv answered them all; the frame counts are there
    /// while an ``observeStatistics(every:)`` observation lives (frames are counted only then).
    /// Safe from any thread or task.
    /// - Throws: ``PlayerError/playerShutDown(_:)``; ``PlayerError/timedOut(operation:after:)``
    ///   when mpv did not answer within `timeout` (on the monotonic clock).
    public func statistics(timeout: Duration) async throws(PlayerError) -> PlaybackStatistics {
        try await core.statistics(timeout: timeout)
    }

    /// Asks for ``PlayerEvent/statisticsUpdated(_:)`` every `interval` for as long as the
    /// returned observation lives, and counts the frames shown meanwhile
    /// (``PlaybackStatistics/framesRendered``). Several observations share one sampling, at the
    /// shortest of their intervals; the last one to go ends it. Until then the player pays
    /// nothing for statistics. A sample is read as ``statistics(timeout:)`` reads one, on the
    /// player's own queue; none starts while the one before is still out. Never blocks; safe
    /// from any thread.
    /// - Throws: ``PlayerError/invalidArgument(name:value:reason:)`` for an interval under
    ///   50 ms or over a day; ``PlayerError/playerShutDown(_:)``.
    public func observeStatistics(every interval: Duration) throws(PlayerError) -> PropertyObservation {
        try PlaybackStatistics.checkInterval(interval)
        guard !core.isShutDown else { throw .playerShutDown(id) }
        let token = core.observeStatistics(every: interval)
        return PropertyObservation { [weak core] in core?.endStatisticsObservation(token) }
    }

    /// Watches the player's picture and sound for faults, as a broadcast multiviewer does, for
    /// as long as the returned watch lives: a freeze (the picture stopped changing), black, or
    /// silence that lasts its threshold raises ``PlayerEvent/alarmRaised(_:)``, and its end
    /// ``PlayerEvent/alarmCleared(_:)`` (see ``Alarm`` for the times).
    ///
    /// The detectors are libavfilter's `freezedetect`, `blackdetect` and `silencedetect`, put
    /// in the player's own filter chains under labels of their own (the app's filters and
    /// ``PlayerCommand/setFlip(_:)`` stay): they look at the frames and samples the player
    /// decodes anyway, with no second decode. Until a watch starts, the player pays nothing.
    /// The picture's detectors need frames in memory: with hardware decoding, mpv copies each
    /// frame back for them. Several watches share the detectors, with the latest one's
    /// thresholds; the last one to go takes them out, and clears the alarms still raised.
    ///
    /// Returns once mpv has the detectors. Safe from any thread or task.
    /// - Throws: ``PlayerError/invalidArgument(name:value:reason:)`` naming a threshold or
    ///   level out of its range; ``PlayerError/playerShutDown(_:)``; mpv's refusal of a
    ///   detector, naming its command.
    public func watchAlarms(_ thresholds: AlarmThresholds) async throws(PlayerError) -> PropertyObservation {
        try thresholds.check()
        let token = try await core.watchAlarms(thresholds)
        return PropertyObservation { [weak core] in core?.endAlarmWatch(token) }
    }

    /// Measures the player's loudness by EBU R128 (``Loudness``: momentary, short-term,
    /// integrated, true peak) and publishes ``PlayerEvent/loudnessUpdated(_:)`` every `interval`
    /// for as long as the returned observation lives. The meter is libavfilter's `ebur128` in
    /// the player's own audio chain, on the samples it decodes anyway (before volume and mute);
    /// it runs from the first observation to the last, and its integrated figure and peak count
    /// from the start of each item it measured. Several observations share one sampling, at the
    /// shortest of their intervals. Returns once mpv has the meter. Safe from any thread or task.
    /// - Throws: ``PlayerError/invalidArgument(name:value:reason:)`` for an interval under
    ///   100 ms or over a day; ``PlayerError/playerShutDown(_:)``; mpv's refusal of the meter.
    public func observeLoudness(every interval: Duration) async throws(PlayerError) -> PropertyObservation {
        try Loudness.checkInterval(interval)
        let token = try await core.observeLoudness(every: interval)
        return PropertyObservation { [weak core] in core?.endLoudnessObservation(token) }
    }

    /// Asks for every change of any mpv property, as ``PlayerEvent/propertyChanged(name:value:)``
    /// events on this player's ID, for as long as the returned observation lives: the current
    /// value first, then each change (mpv may merge quick changes into the latest). The form of
    /// mpv's own `mpv_observe_property`, for what no read-out or event covers, e.g.
    /// `core-idle` (whether playback is running) or `estimated-vf-fps`. Several observations of
    /// one name each report it. Never blocks; safe from any thread.
    ///
    /// ```swift
    /// let running = player.events(kinds: [.propertyChanged])
    /// let observation = try player.observeProperty("core-idle")
    /// try await player.play()
    /// for await record in running {
    ///     if case .propertyChanged("core-idle", .flag(false)) = record.event { break }
    /// }
    /// observation.cancel()
    /// ```
    /// - Parameter name: a property name, as in mpv's manual ("Property List"), or a
    ///   sub-property such as `metadata/by-key/title`.
    /// - Throws: ``PlayerError/propertyNotFound(name:)`` when mpv has no such property;
    ///   ``PlayerError/playerShutDown(_:)``.
    public func observeProperty(_ name: String) throws(PlayerError) -> PropertyObservation {
        let core = self.core
        let observation = try core.observeProperty(name)
        return PropertyObservation { core.endPropertyObservation(observation) }
    }

    // MARK: Frames the app draws

    /// Gives the player a software frame output: mpv renders each frame at `format`'s size
    /// and pixel layout into memory PlayerKit reuses, and the app reads frames as values it
    /// owns (see ``FrameOutput``). Make it before loading media; one output or renderer per
    /// player at a time.
    /// - Throws: ``FrameOutputError/notConfiguredForFrames(playerID:videoOutput:)`` unless the
    ///   player was created with ``PlayerConfiguration/VideoOutput/frames``,
    ///   ``FrameOutputError/alreadyAttached(playerID:)``, ``FrameOutputError/playerShutDown(_:)``,
    ///   ``FrameOutputError/rendererUnavailable(playerID:_:)``.
    public func makeFrameOutput(_ format: FrameFormat, delivery: FrameDelivery = .stream) throws(FrameOutputError) -> FrameOutput {
        try checkFramesConfigured()
        return try FrameOutput(core: core, format: format, delivery: delivery)
    }

    /// ``makeFrameOutput(_:delivery:)`` with stream delivery, as a ``VideoFrameSource``: the
    /// ``MediaPlayer`` requirement features that draw frames use.
    /// - Throws: the errors of ``makeFrameOutput(_:delivery:)``.
    public func makeFrameSource(_ format: FrameFormat) throws(FrameOutputError) -> any VideoFrameSource {
        try makeFrameOutput(format, delivery: .stream)
    }

    /// Gives the player an OpenGL renderer drawing into the app's GL context, which must be
    /// current on the calling thread (see ``OpenGLRenderer``).
    /// - Parameters:
    ///   - getProcAddress: looks up a GL function by name in the app's GL library
    ///     (`SDL_GL_GetProcAddress`, `eglGetProcAddress`, `glXGetProcAddressARB`, Qt's
    ///     `QOpenGLContext::getProcAddress`). Called during this call.
    ///   - onFrameReady: called on one of mpv's threads when a frame wants drawing; only
    ///     schedule a redraw there.
    /// - Throws: the errors of ``makeFrameOutput(_:delivery:)``;
    ///   ``FrameOutputError/rendererUnavailable(playerID:_:)`` when no usable GL context is current.
    public func makeOpenGLRenderer(
        getProcAddress: @escaping @Sendable (String) -> UnsafeMutableRawPointer?,
        onFrameReady: @escaping @Sendable () -> Void
    ) throws(FrameOutputError) -> OpenGLRenderer {
        try checkFramesConfigured()
        return try OpenGLRenderer(core: core, getProcAddress: getProcAddress, onFrameReady: onFrameReady)
    }

    private func checkFramesConfigured() throws(FrameOutputError) {
        guard !isShutDown else { throw .playerShutDown(id) }
        guard configuration.videoOutput == .frames else {
            throw .notConfiguredForFrames(playerID: id, videoOutput: configuration.videoOutput)
        }
    }

    // MARK: Read-out

    func model<Value>(_ read: (PlaybackModel) -> Value) -> Value {
        core.state.withLock { read($0.model) }
    }

    /// The cache fill while buffering, 0 to 100, when mpv reports it.
    var bufferingProgress: Double? { model(\.bufferingPercent) }
    /// Seconds of media in the demuxer cache ahead of the position, when known.
    var cacheDuration: Double? { model(\.cacheDuration) }
    /// The decoded video size; nil before the first frame or for audio-only media.
    public var videoSize: VideoSize? { model(\.videoSize) }
    /// The current item's tracks.
    public var tracks: [Track] { model(\.tracks) }
    /// Every read-out of ``MediaPlayer`` at once, read under one lock (so they agree with each
    /// other); ``MediaPlayer/state``, ``MediaPlayer/position`` and the others read it.
    public var snapshot: PlayerSnapshot { model(\.snapshot) }
    /// Which way playback runs (``PlayerCommand/setPlaybackDirection(_:)``), once mpv reported it.
    var playbackDirection: PlaybackDirection? { model(\.playbackDirection) }
    /// Whether hardware decoding is allowed (``PlayerCommand/setHardwareDecoding(_:)``), once mpv reported it.
    var isHardwareDecodingEnabled: Bool? { model(\.isHardwareDecodingEnabled) }
    /// The audio output device in use, by mpv's name (``AudioDevice/name``; `auto` for the
    /// system's default). Shows a device set with ``setAudioDevice(_:)`` when that returns.
    var audioDevice: String? { model(\.audioDevice) }
    /// The video decoder in use (codec and hardware API, or software), nil until video is being
    /// decoded and with no video. Changes are reported by ``PlayerEvent/videoDecoderChanged(_:)``.
    public var videoDecoder: VideoDecoder? { model(\.videoDecoder) }

    // MARK: Loading

    /// Loads an item, replacing the current one, and waits until it has loaded.
    ///
    /// Local files are checked first, so a missing, empty or non-regular file fails at once
    /// with an error naming the path; URLs must use a scheme mpv supports. Formats mpv cannot
    /// read fail with ``PlayerError/loadFailed(source:_:)`` once mpv has tried; its
    /// ``MPVError/reason`` is the line mpv logged about this item's cause (never another
    /// item's), or, when mpv logged none, a line that says so.
    ///
    /// **Playlist files** (`.m3u`, `.pls`, ...): mpv expands them in place, and the load
    /// returns the first entry that loads (its ``MediaInfo/source`` is that entry's path). An
    /// entry that fails is reported by an ``PlayerEvent/error(_:)`` naming the entry
    /// ("missing.mp4 (entry 1 of list.m3u)") and mpv's reason; the load fails only when no
    /// entry loads, with the last entry's error.
    ///
    /// **Cancellation.** Cancelling the task that awaits the load ends the wait at once with
    /// ``PlayerError/loadCancelled(source:)`` and stops the item's loading (as ``stop()``
    /// would) unless another load has replaced it meanwhile; the player stays usable.
    ///
    /// **Bound.** The load waits at most ``PlayerConfiguration/loadTimeout`` (default 120 s, on
    /// the monotonic clock), then throws ``PlayerError/timedOut(operation:after:)`` and stops the
    /// item the same way.
    ///
    /// - Parameters:
    ///   - source: a path, URL or mpv URL such as `av://lavfi:testsrc`.
    ///   - startPaused: stay paused on the first frame (state ``PlayerState/ready``).
    /// - Returns: duration, video size and tracks of the loaded item.
    /// - Throws: ``PlayerError/fileNotFound(path:)``, ``PlayerError/notAFile(path:)``,
    ///   ``PlayerError/emptyFile(path:)``, ``PlayerError/pathTooLong(path:)``,
    ///   ``PlayerError/permissionDenied(path:)``, ``PlayerError/unsupportedScheme(scheme:source:)``,
    ///   ``PlayerError/invalidSource(_:)``, ``PlayerError/loadFailed(source:_:)``,
    ///   ``PlayerError/loadCancelled(source:)`` (another load or stop came first, or the task
    ///   was cancelled), ``PlayerError/timedOut(operation:after:)`` (``PlayerConfiguration/loadTimeout``
    ///   passed), or ``PlayerError/playerShutDown(_:)``.
    @discardableResult
    public func load(_ source: MediaSource, startPaused: Bool = false) async throws(PlayerError) -> MediaInfo {
        let argument = try validate(source)
        return try await core.load(argument: argument, source: source.description, startPaused: startPaused).get()
    }

    /// Prepares an item: loads it paused and returns once its first frame is decoded and
    /// presented (``PlayerEvent/firstFrame``), so ``play()`` continues from a frame that is
    /// already on screen instead of starting a decoder. State ``PlayerState/ready``.
    /// - Parameters:
    ///   - source: the item, as for ``load(_:startPaused:)``.
    ///   - timeout: how long to wait for the first frame after loading.
    /// - Returns: the loaded item's information.
    /// - Throws: the errors of ``load(_:startPaused:)``,
    ///   ``PlayerError/timedOut(operation:after:)`` when no frame came in time, and
    ///   ``PlayerError/loadCancelled(source:)`` when the item ended (another load or a stop)
    ///   before its first frame, or the waiting task was cancelled.
    @discardableResult
    public func preload(_ source: MediaSource, timeout: Duration = .seconds(10)) async throws(PlayerError) -> MediaInfo {
        // Subscribed before loading, so a first frame that comes before `load` returns is kept.
        let frames = events(kinds: [.firstFrame, .itemEnded], bufferLimit: 16)
        defer { frames.cancel() }
        let info = try await load(source, startPaused: true)
        // The stream may still hold the previous item's events; the model says whether the
        // item now current has shown its first frame (its first frame may even come before
        // `load` returns, while the item's details are read).
        if snapshot.hasShownFirstFrame { return info }
        let outcome = await frames.first(timeout: timeout) { record in
            switch record.event {
            case .firstFrame: return self.snapshot.hasShownFirstFrame
            case .itemEnded: return [.idle, .ended, .failed].contains(self.state)
            default: return false
            }
        }
        switch outcome?.event {
        case .firstFrame?: return info
        case .itemEnded?: throw .loadCancelled(source: source.description)
        default:
            if snapshot.hasShownFirstFrame { return info }
            // The waiting task was cancelled (which ends the wait at once), or time ran out.
            if Task.isCancelled { throw .loadCancelled(source: source.description) }
            throw .timedOut(operation: "preloading \(source) (waiting for its first frame)", after: timeout)
        }
    }

    /// Appends an item to the playlist without interrupting playback, and returns once mpv
    /// took it. When nothing is playing, mpv starts it. Play the next or previous entry with
    /// ``PlayerCommand/next`` and ``PlayerCommand/previous``.
    /// - Throws: the same validation errors as ``load(_:startPaused:)``; what
    ///   ``perform(_:timeout:)`` throws while waiting for mpv's answer.
    public func append(_ source: MediaSource) async throws(PlayerError) {
        try await core.request(.append(argument: validate(source), source: source.description), timeout: Self.answerTimeout)
    }

    /// Removes every playlist item except the one playing (an app sends mpv's `playlist-clear`
    /// with ``command(_:)``).
    /// - Throws: what ``perform(_:timeout:)`` throws while waiting for mpv's answer.
    func clearPlaylist() async throws(PlayerError) {
        try await core.request(.clearPlaylist, timeout: Self.answerTimeout)
    }

    /// How long the methods without a `timeout` parameter wait for mpv's answer, on the
    /// monotonic clock (``PlayerError/timedOut(operation:after:)`` after it).
    static let answerTimeout: Duration = .seconds(10)

    /// Unloads the current item so that its decoder, frame buffers and demuxer cache are freed,
    /// not merely paused, and hands the freed memory back to the system soon after
    /// (`malloc_trim`), so the process's resident memory really falls. The player stays usable
    /// (state ``PlayerState/idle`` once mpv has stopped; the item ends with
    /// ``ItemEndReason/stopped``). What `DecoderBudget` and the feed's autoplay use.
    ///
    /// Never blocks (the stop is sent as ``send(_:)`` sends it); safe from any thread, the
    /// event pump included. Does nothing once the player shut down.
    public func releaseMedia() {
        core.releaseMedia()
    }

    /// Saves the frame on screen (the video only, at its own size) as an image file, and returns
    /// once the file is written; the format follows the extension (.png, .jpg, .webp). A poster
    /// for an item that is not playing.
    /// - Throws: ``PlayerError/noMediaLoaded(operation:)`` with nothing loaded, or
    ///   ``PlayerError/commandFailed(command:_:)`` when mpv cannot write the file.
    public func saveFrame(to path: String) async throws(PlayerError) {
        guard state.hasMedia else { throw .noMediaLoaded(operation: "save a frame") }
        try await core.request(.saveFrame(path: path), timeout: Self.answerTimeout)
    }

    func validate(_ source: MediaSource) throws(PlayerError) -> String {
        let argument = source.mpvArgument
        switch source.location {
        case .file(let path):
            guard !path.isEmpty else { throw .invalidSource(path) }
            var info = stat()
            guard stat(argument, &info) == 0 else {
                switch errno {
                case ENAMETOOLONG: throw .pathTooLong(path: path)
                case EACCES: throw .permissionDenied(path: path)
                default: throw .fileNotFound(path: path)
                }
            }
            guard (info.st_mode & S_IFMT) == S_IFREG else { throw .notAFile(path: path) }
            guard info.st_size > 0 else { throw .emptyFile(path: path) }
            guard access(argument, R_OK) == 0 else { throw .permissionDenied(path: path) }
        case .url(let url):
            guard let scheme = source.scheme else { throw .invalidSource(url) }
            guard core.catalog.protocols.contains(scheme) || core.streamProtocols.schemes.contains(scheme) else {
                throw .unsupportedScheme(scheme: scheme, source: url)
            }
        }
        return argument
    }
}

/// The players ``Player/create(id:configuration:delegate:)`` makes, one at a time in the order
/// asked: each claims its core from the pool (``CorePool/claim(options:keep:wait:_:)``, which may
/// wait, without a thread, for the core a refill is making), then is initialized on the serial
/// queue `PlayerKit.player-creation`, never on Swift's cooperative pool.
///
/// **Threading.** One lock around the line; the next player's claim starts once the one before
/// it is made. No lock is held while a core is claimed or a player initialized.
private final class CreationLine: Sendable {
    private struct Job: Sendable {
        let options: [(String, String)]
        let keep: Int
        let make: @Sendable (PreparedCore?) -> Void
    }

    private struct Line: Sendable {
        var jobs: [Job] = []
        var busy = false
    }

    private let line = Locked(Line())
    private let queue = DispatchQueue(label: "PlayerKit.player-creation")

    /// Queues a player to make: `make` runs on the creation queue with its claimed core (nil:
    /// it creates its own).
    func enqueue(options: [(String, String)], keep: Int, _ make: @escaping @Sendable (PreparedCore?) -> Void) {
        let start = line.withLock { line -> Bool in
            line.jobs.append(Job(options: options, keep: keep, make: make))
            defer { line.busy = true }
            return !line.busy
        }
        if start { next() }
    }

    private func next() {
        let job = line.withLock { line -> Job? in
            guard !line.jobs.isEmpty else {
                line.busy = false
                return nil
            }
            return line.jobs.removeFirst()
        }
        guard let job else { return }
        CorePool.shared.claim(options: job.options, keep: job.keep) { [self] core in
            queue.async {
                job.make(core)
                self.next()
            }
        }
    }
}
