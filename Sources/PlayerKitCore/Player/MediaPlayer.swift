/// What a feature needs of a player: its identity, its read-outs, its commands (waiting and
/// not), its loads, its events and the way to publish its own. ``Player`` is the player over a
/// libmpv core; `FakePlayer` (in the PlayerKitTesting product) is a deterministic one on a test
/// clock, so an app's own orchestration (and every PlayerKit feature) can be tested without mpv.
///
/// PlayerKit's features take `any MediaPlayer`, so they run on either. Write an app's own
/// feature the same way: against this protocol, subscribing to ``eventBus`` by ``id``, driving
/// the player with ``send(_:)`` from event handlers and ``perform(_:timeout:)`` from async code.
///
/// **Conforming.** Conform only with a player that keeps the contract ``Player`` documents: the
/// same checks and errors for each command, events in the core's order on ``eventBus`` with
/// gapless sequence numbers (``PlayerEventEmitter`` numbers them), ``PlayerEvent/shutDown`` last,
/// read-outs that follow their setters. `FakePlayer` does.
///
/// **Threading.** Every member may be called from any thread or task, as on ``Player``. The
/// synchronous commands (``play()``, ``setVolume(_:)``, …) may wait for the player; async code
/// uses ``perform(_:timeout:)``, and code that must never wait (an `.immediate` bus handler, a
/// render loop) uses ``send(_:)``.
public protocol MediaPlayer: AnyObject, Sendable {
    /// The player's ID, fixed for its life and unique among live players.
    var id: PlayerID { get }
    /// The bus the player publishes its events to; subscribe by ``id``.
    var eventBus: PlayerEventBus { get }
    /// Whether the player has been shut down (or is being torn down).
    var isShutDown: Bool { get }

    /// The player's state (see ``PlayerState``).
    var state: PlayerState { get }
    /// Playback position in seconds, nil with nothing loaded.
    var position: Double? { get }
    /// The current item's duration in seconds, nil when unknown.
    var duration: Double? { get }
    /// Whether playback is paused.
    var isPaused: Bool { get }
    /// Playback speed (1 is normal), nil before the player reported it.
    var speed: Double? { get }
    /// Volume, 0...100 (up to mpv's `volume-max`), nil before the player reported it.
    var volume: Double? { get }
    /// Whether audio is muted, nil before the player reported it.
    var isMuted: Bool? { get }
    /// How the current item repeats, nil before the player reported it.
    var loopMode: LoopMode? { get }
    /// Whether the player's video is fullscreen, nil before the player reported it.
    var isFullscreen: Bool? { get }
    /// Whether the current item's first frame has been shown.
    var hasShownFirstFrame: Bool { get }
    /// The current item's video frame rate in frames per second, nil when unknown (see
    /// ``Player/frameRate``). Frame-accurate features (a sync group's frame steps) need it; a
    /// conformer that does not know it keeps the default, nil, and those features refuse it
    /// with a typed error.
    var frameRate: Double? { get }
    /// The current item as its ``PlayerEvent/mediaLoaded(_:)`` described it, nil while no item is
    /// loaded (see ``Player/mediaInfo``).
    var mediaInfo: MediaInfo? { get }
    /// Where the player is in its playlist, nil before it reported it (see ``Player/playlist``).
    /// A conformer without playlists keeps the default, nil.
    var playlist: PlaylistPosition? { get }

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

    /// Starts playback; returns once the player accepted it.
    func play() throws(PlayerError)
    /// Pauses playback; returns once the player accepted it.
    func pause() throws(PlayerError)
    /// Seeks to `seconds`; returns once the player accepted it.
    func seek(to seconds: Double, precision: SeekPrecision) throws(PlayerError)
    /// Sets the playback speed; returns once the player accepted it.
    func setSpeed(_ speed: Double) throws(PlayerError)
    /// Sets the volume; returns once the player accepted it.
    func setVolume(_ volume: Double) throws(PlayerError)
    /// Mutes or unmutes; returns once the player accepted it.
    func setMuted(_ muted: Bool) throws(PlayerError)
    /// Sets how the current item repeats; returns once the player accepted it.
    func setLoop(_ mode: LoopMode) throws(PlayerError)
    /// Puts the video in fullscreen or takes it out, asking the fullscreen arbiter first;
    /// returns once the player accepted it (see ``Player/setFullscreen(_:)``).
    func setFullscreen(_ fullscreen: Bool) throws(PlayerError)

    /// Publishes a feature's event about this player in the player's own order (see
    /// ``Player/publish(_:)``). Never blocks.
    func publish(_ event: some PlayerFeatureEvent)
    /// Asks for a position event with every frame while the observation lives (see
    /// ``Player/observeEveryFrame()``).
    func observeEveryFrame() -> PositionObservation

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

extension MediaPlayer {
    /// Unknown: nil.
    public var frameRate: Double? { nil }

    /// No playlist: nil.
    public var playlist: PlaylistPosition? { nil }

    /// Not known: nil.
    public var mediaInfo: MediaInfo? { nil }

    /// ``perform(_:timeout:)`` with a 10 s timeout.
    public func perform(_ command: PlayerCommand) async throws(PlayerError) {
        try await perform(command, timeout: .seconds(10))
    }

    /// ``load(_:startPaused:)`` playing from the start.
    @discardableResult
    public func load(_ source: MediaSource) async throws(PlayerError) -> MediaInfo {
        try await load(source, startPaused: false)
    }

    /// Loads the local file or URL in `location`, a `String` (a variable as well as a literal):
    /// `scheme://...` is a URL, anything else a path (see ``MediaSource/init(_:)``).
    @discardableResult
    public func load(_ location: String, startPaused: Bool = false) async throws(PlayerError) -> MediaInfo {
        try await load(MediaSource(location), startPaused: startPaused)
    }

    /// ``preload(_:timeout:)`` waiting up to 10 s for the first frame.
    @discardableResult
    public func preload(_ source: MediaSource) async throws(PlayerError) -> MediaInfo {
        try await preload(source, timeout: .seconds(10))
    }

    /// This player's events as an `AsyncSequence`: `eventBus.events(for: id, ...)`, ending after
    /// the player's ``PlayerEvent/shutDown`` (see ``Player/events(kinds:bufferLimit:)``).
    public func events(kinds: Set<PlayerEventKind>? = nil, bufferLimit: Int = 1024) -> PlayerEventStream {
        let stream = eventBus.playerEvents(for: id, kinds: kinds, bufferLimit: bufferLimit)
        if isShutDown { stream.cancel() }
        return stream
    }

}
