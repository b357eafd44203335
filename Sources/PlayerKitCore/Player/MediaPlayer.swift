/// What a feature needs of a player: its identity, its read-outs, its commands (waiting and
/// not), its loads, its events and the way to publish its own. ``Player`` is the player over a
/// libmpv core; `FakePlayer` (in the PlayerKitTesting product) is a deterministic one on a test
/// clock, so an app's own orchestration (and every PlayerKit feature) can be tested without mpv.
///
/// PlayerKit's features take `any MediaPlayer`, so they run on either. Write an app's own
/// feature the same way: against this protocol, subscribing to ``eventBus`` by ``id``, driving
/// the player with ``send(_:)`` from event handlers and the awaited commands (``play()``,
/// ``seek(to:precision:)``, …, or ``perform(_:timeout:)``) from async code.
///
/// **Conforming.** Conform only with a player that keeps the contract ``Player`` documents: the
/// same checks and errors for each command, events in the core's order on ``eventBus`` with
/// gapless sequence numbers (the test kit's fake numbers them as the core does), ``PlayerEvent/shutDown`` last,
/// read-outs that follow their setters. `FakePlayer` does.
///
/// **Commands: two forms, neither blocks a thread.** Every command is awaited (``play()``,
/// `perform(.setVolume(80))`, …: each ``perform(_:timeout:)`` with its ``PlayerCommand``: it suspends
/// until the player carried it out or refused it) or sent (``send(_:)``: handed over at once,
/// for code that must never wait, such as an `.immediate` bus handler or a render loop). Every
/// member may be called from any thread or task, as on ``Player``.
public protocol MediaPlayer: AnyObject, Sendable {
    /// The player's ID, fixed for its life and unique among live players.
    var id: PlayerID { get }
    /// The bus the player publishes its events to; subscribe by ``id``.
    var eventBus: PlayerEventBus { get }
    /// Whether the player has been shut down (or is being torn down).
    var isShutDown: Bool { get }

    /// Every read-out at once, read together (so they agree with each other): state, position,
    /// duration, pause, volume, mute, speed, loop, fullscreen, first frame, frame rate, the
    /// loaded item and the playlist. The single read-outs (``state``, ``position``, …) read it.
    /// Never waits for the player's engine.
    var snapshot: PlayerSnapshot { get }

    /// Checks `command` and hands it to the player without waiting (see ``Player/send(_:)``).
    func send(_ command: PlayerCommand) throws(PlayerError)
    /// Runs `command` and suspends until the player carried it out or refused it, at most
    /// `timeout` (see ``Player/perform(_:timeout:)``).
    func perform(_ command: PlayerCommand, timeout: Duration) async throws(PlayerError)
    /// Loads `source` and returns once it is loaded (see ``Player/load(_:startPaused:)``).
    @discardableResult
    func load(_ source: MediaSource, startPaused: Bool) async throws(PlayerError) -> MediaInfo
    /// Loads `source` paused and returns once its first frame is shown (see
    /// ``Player/preload(_:timeout:)``).
    @discardableResult
    func preload(_ source: MediaSource, timeout: Duration) async throws(PlayerError) -> MediaInfo
    /// Unloads the current item and frees what it held, without waiting (see
    /// ``Player/releaseMedia()``).
    func releaseMedia()
    /// Shuts the player down; returns once it is down (see ``Player/shutdown()``).
    func shutdown() async

    /// Publishes a feature's event about this player in the player's own order (see
    /// ``Player/publish(_:)``). Never blocks.
    func publish(_ event: some PlayerFeatureEvent)
    /// Asks for a position event with every frame while the observation lives (see
    /// ``Player/observeEveryFrame()``).
    func observeEveryFrame() -> PropertyObservation
    /// Asks for ``PlayerEvent/bufferedMediaChanged(_:)`` (how far the player holds its source,
    /// and can seek in it) while the observation lives (see ``Player/observeBufferedMedia()``).
    /// A player that cannot tell (the default implementation) reports nothing.
    func observeBufferedMedia() -> PropertyObservation

    /// The player's playback statistics now (see ``Player/statistics(timeout:)``). A player
    /// that cannot tell (the default implementation) reports none: ``PlaybackStatistics/init()``.
    func statistics(timeout: Duration) async throws(PlayerError) -> PlaybackStatistics
    /// Asks for ``PlayerEvent/statisticsUpdated(_:)`` every `interval` while the observation
    /// lives (see ``Player/observeStatistics(every:)``). A player that cannot tell (the default
    /// implementation) checks `interval` and reports nothing.
    func observeStatistics(every interval: Duration) throws(PlayerError) -> PropertyObservation
    /// Watches the picture and sound for freezes, black and silence with `thresholds`, as
    /// ``PlayerEvent/alarmRaised(_:)`` and ``PlayerEvent/alarmCleared(_:)``, while the watch
    /// lives (see ``Player/watchAlarms(_:)``). A player that cannot tell (the default
    /// implementation) checks `thresholds` and reports nothing.
    func watchAlarms(_ thresholds: AlarmThresholds) async throws(PlayerError) -> PropertyObservation
    /// Asks for ``PlayerEvent/loudnessUpdated(_:)`` every `interval` while the observation
    /// lives (see ``Player/observeLoudness(every:)``). A player that cannot tell (the default
    /// implementation) checks `interval` and reports nothing.
    func observeLoudness(every interval: Duration) async throws(PlayerError) -> PropertyObservation

    /// Gives the player a software frame source at `format` (see
    /// ``Player/makeFrameSource(_:)``); one per player at a time.
    func makeFrameSource(_ format: FrameFormat) throws(FrameOutputError) -> any VideoFrameSource

    /// The player's fullscreen arbiter, held weakly (see ``Player/fullscreenArbiter``).
    var fullscreenArbiter: (any FullscreenArbiter)? { get }
    /// Replaces the arbiter when the current one is `expected`; returns whether it did (see
    /// ``Player/setFullscreenArbiter(_:replacing:)``).
    @discardableResult
    func setFullscreenArbiter(_ newArbiter: (any FullscreenArbiter)?, replacing expected: (any FullscreenArbiter)?) -> Bool
}

// MARK: Read-outs

/// The three read-outs of ``MediaPlayer/snapshot`` that code checks most, on their own. Every
/// other read-out (duration, volume, speed, loop mode, ...) is read from the snapshot:
/// `player.snapshot.volume` (see ``PlayerSnapshot`` for when each is nil). Read several at once
/// from one snapshot when they must agree with each other.
extension MediaPlayer {
    /// The player's state (see ``PlayerState``).
    public var state: PlayerState { snapshot.state }
    /// The playback position in seconds; nil when nothing is loaded.
    public var position: Double? { snapshot.position }
    /// Whether playback is paused (also true while ``PlayerState/ready``).
    public var isPaused: Bool { snapshot.isPaused }
}

extension MediaPlayer {
    /// ``perform(_:timeout:)`` with a 10 s timeout.
    public func perform(_ command: PlayerCommand) async throws(PlayerError) {
        try await perform(command, timeout: .seconds(10))
    }

    /// ``load(_:startPaused:)`` playing from the start.
    @discardableResult
    public func load(_ source: MediaSource) async throws(PlayerError) -> MediaInfo {
        try await load(source, startPaused: false)
    }

    /// For players that cannot tell how far they hold their source: an observation that reports
    /// nothing.
    public func observeBufferedMedia() -> PropertyObservation {
        PropertyObservation {}
    }

    /// For players that cannot tell their statistics: none known.
    public func statistics(timeout: Duration) async throws(PlayerError) -> PlaybackStatistics {
        PlaybackStatistics()
    }

    /// ``statistics(timeout:)`` waiting up to 2 s for the player's answer.
    public func statistics() async throws(PlayerError) -> PlaybackStatistics {
        try await statistics(timeout: .seconds(2))
    }

    /// For players that cannot tell their statistics: checks `interval`, then an observation
    /// that reports nothing.
    public func observeStatistics(every interval: Duration) throws(PlayerError) -> PropertyObservation {
        try PlaybackStatistics.checkInterval(interval)
        return PropertyObservation {}
    }

    /// For players that cannot tell their picture's and sound's faults: checks `thresholds`,
    /// then a watch that reports nothing.
    public func watchAlarms(_ thresholds: AlarmThresholds) async throws(PlayerError) -> PropertyObservation {
        try thresholds.check()
        return PropertyObservation {}
    }

    /// For players that cannot tell their loudness: checks `interval`, then an observation that
    /// reports nothing.
    public func observeLoudness(every interval: Duration) async throws(PlayerError) -> PropertyObservation {
        try Loudness.checkInterval(interval)
        return PropertyObservation {}
    }

    /// ``preload(_:timeout:)`` waiting up to 10 s for the first frame.
    @discardableResult
    public func preload(_ source: MediaSource) async throws(PlayerError) -> MediaInfo {
        try await preload(source, timeout: .seconds(10))
    }

    /// This player's events as an `AsyncSequence`, as
    /// `eventBus.events(for: id, kinds: kinds, bufferLimit: bufferLimit)` gives them, except that
    /// the sequence ends after this player's ``PlayerEvent/shutDown`` (delivered if `kinds`
    /// includes it), so a `for await` loop over it finishes; made once the player is shut down,
    /// it ends at once. (A bus subscription by ID goes on, and hears a later player with the ID.)
    public func events(
        kinds: Set<PlayerEventKind>? = nil, bufferLimit: Int = EventStream<PlayerEventRecord>.defaultBufferLimit
    ) -> EventStream<PlayerEventRecord> {
        let stream = eventBus.playerEvents(for: id, kinds: kinds, bufferLimit: bufferLimit)
        if isShutDown { stream.cancel() }
        return stream
    }
}

// MARK: Commands, awaited by name

/// Play, pause, stop and seek by name, awaited: each is ``MediaPlayer/perform(_:timeout:)`` with
/// its command (10 s at most), and returns once the player carried it out, its read-out showing
/// the result; the same on ``Player`` and on a test's `FakePlayer`. Every other command is
/// awaited as `try await player.perform(.setVolume(80))`. Code that must not wait sends the
/// command instead: `try player.send(.play)`.
extension MediaPlayer {
    /// Starts or resumes playback; returns once ``isPaused`` is false.
    public func play() async throws(PlayerError) { try await perform(.play) }

    /// Pauses playback; returns once ``isPaused`` is true.
    public func pause() async throws(PlayerError) { try await perform(.pause) }

    /// Stops playback and unloads the item (state ``PlayerState/idle``); the playlist is
    /// cleared. (``releaseMedia()`` also hands the freed memory back to the system.)
    public func stop() async throws(PlayerError) { try await perform(.stop) }

    /// Seeks to an absolute position in seconds and returns once the player shows it: then
    /// ``position`` reads where it landed (the target itself for an exact seek to a frame's
    /// time), and ``PlayerEvent/seekCompleted(position:)`` has been published. A seek past the
    /// end returns when the item ends.
    /// - Throws: ``PlayerError/invalidArgument(name:value:reason:)`` for NaN, infinite or
    ///   negative positions; ``PlayerError/noMediaLoaded(operation:)`` when nothing is loaded;
    ///   what ``perform(_:timeout:)`` throws while waiting.
    public func seek(to seconds: Double, precision: SeekPrecision = .exact) async throws(PlayerError) {
        try await perform(.seek(to: seconds, precision: precision))
    }
}
