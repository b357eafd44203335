import Dispatch
import Foundation
import Logging

/// One media player over its own libmpv core.
///
/// ```swift
/// let player = try Player(id: "main", configuration: .init(videoOutput: .none))
/// player.delegate = myDelegate
/// let media = try await player.load("Media/clip-a.mp4")
/// try player.seek(to: 2, precision: .exact)
/// await player.shutdown()
/// ```
///
/// **Identity.** ``id`` is random unless the app gives one; IDs are unique among live
/// players in the process (see ``PlayerID``).
///
/// **Threading.** Every method may be called from any thread or task. Control methods are
/// synchronous and return once mpv accepted the request; its effect is reported by events.
/// The read-out properties (``state``, ``position``, ...) are the latest values the event
/// pump saw; they never block on mpv.
///
/// **Lifetime.** Call ``shutdown()`` when done: it returns once the mpv core is destroyed.
/// A player that is simply dropped shuts down in the background; its ID is free at once.
/// After shutdown every call throws ``PlayerError/playerShutDown(_:)``.
public final class Player: Sendable {
    /// The player's ID, fixed for its life.
    public let id: PlayerID
    /// The configuration it was created with.
    public let configuration: PlayerConfiguration

    let core: PlayerCore
    private let catalog: MPVCatalog
    private let registryToken: UInt64
    private let fanOut: EventFanOut
    private static let logger = Logger(label: "PlayerKit")

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
    /// - Throws: ``PlayerError/invalidID(_:)``, ``PlayerError/duplicateID(_:)``,
    ///   ``PlayerError/invalidOption(name:value:_:)`` or ``PlayerError/creationFailed(reason:)``.
    public init(
        id: PlayerID? = nil, configuration: PlayerConfiguration = PlayerConfiguration(),
        delegate: (any PlayerDelegate)? = nil
    ) throws(PlayerError) {
        let id = id ?? .random()
        guard PlayerID.isValid(id.rawValue) else { throw .invalidID(id.rawValue) }
        let token = try PlayerRegistry.reserve(id)
        do throws(PlayerError) {
            let core = try PlayerCore(id: id, configuration: configuration)
            do throws(PlayerError) {
                self.catalog = try MPVCatalog.shared(using: core.handle)
            } catch {
                core.shutdownBlocking()
                throw error
            }
            self.core = core
        } catch {
            PlayerRegistry.release(id, token: token)
            throw error
        }
        self.id = id
        self.configuration = configuration
        self.registryToken = token
        let fanOut = EventFanOut(
            bus: configuration.eventBus,
            delegateQueue: DispatchQueue(label: "PlayerKit.delegate.\(id)", target: configuration.delegateQueue),
            delegate: delegate)
        self.fanOut = fanOut
        fanOut.attach(self)
        core.start(sink: fanOut.deliver)
        Self.logger.debug("player created", metadata: ["player": "\(id)"])
    }

    deinit {
        PlayerRegistry.release(id, token: registryToken)
        // Dropped without shutdown(): tear down in the background; nothing blocks here.
        core.shutdown {}
    }

    /// Shuts the player down: stops its events, destroys its mpv core, and frees its ID.
    /// Returns only once the core is destroyed. Safe to call more than once, and from a
    /// delegate method. A pending ``load(_:startPaused:)`` fails with ``PlayerError/playerShutDown(_:)``.
    public func shutdown() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            core.shutdown { continuation.resume() }
        }
        PlayerRegistry.release(id, token: registryToken)
    }

    /// Whether ``shutdown()`` has been called (or the player is being torn down).
    public var isShutDown: Bool { core.isShutDown }

    // MARK: Delegate

    /// The delegate, held weakly. Called on ``PlayerConfiguration/delegateQueue``. It hears
    /// the events that happen while it is set.
    public var delegate: (any PlayerDelegate)? {
        get { fanOut.delegate }
        set { fanOut.delegate = newValue }
    }

    /// The bus this player publishes to (``PlayerConfiguration/eventBus``).
    public var eventBus: PlayerEventBus { fanOut.bus }

    /// This player's events as an `AsyncSequence`; same as
    /// `eventBus.events(for: id, kinds: kinds, bufferLimit: bufferLimit)`. Like any bus
    /// subscription by ID, it also hears a later player with the same ID.
    public func events(kinds: Set<PlayerEvent.Kind>? = nil, bufferLimit: Int = 1024) -> PlayerEventStream {
        fanOut.bus.events(for: id, kinds: kinds, bufferLimit: bufferLimit)
    }

    /// Publishes events that happen outside mpv (fullscreen policy changes) through the
    /// player's ordered pipeline, so they reach the delegate and the bus like any other.
    func emit(_ events: [PlayerEvent]) {
        core.applyIntent { _ in events.map { .event($0) } }
    }

    // MARK: Read-out

    private func model<Value>(_ read: (PlaybackModel) -> Value) -> Value {
        core.state.withLock { read($0.model) }
    }

    /// The current state.
    public var state: PlayerState { model(\.state) }
    /// The playback position in seconds; nil when nothing is loaded.
    public var position: Double? { model(\.position) }
    /// The current item's duration in seconds; nil when unknown.
    public var duration: Double? { model(\.duration) }
    /// Whether mpv's `pause` is set (also true while `ready`).
    public var isPaused: Bool { model(\.isPaused) }
    /// Whether playback waits for the network cache.
    public var isBuffering: Bool { model(\.isPausedForCache) }
    /// The cache fill while buffering, 0 to 100, when mpv reports it.
    public var bufferingProgress: Double? { model(\.bufferingPercent) }
    /// Seconds of media in the demuxer cache ahead of the position, when known.
    public var cacheDuration: Double? { model(\.cacheDuration) }
    /// The decoded video size; nil before the first frame or for audio-only media.
    public var videoSize: VideoSize? { model(\.videoSize) }
    /// The media title (metadata title or file name).
    public var mediaTitle: String? { model(\.mediaTitle) }
    /// The current item's tracks.
    public var tracks: [Track] { model(\.tracks) }
    /// The volume (100 is unchanged), once mpv reported it.
    public var volume: Double? { model(\.volume) }
    /// Whether audio is muted, once mpv reported it.
    public var isMuted: Bool? { model(\.isMuted) }
    /// The playback speed (1 is normal), once mpv reported it.
    public var speed: Double? { model(\.speed) }

    // MARK: Loading

    /// Loads an item, replacing the current one, and waits until it has loaded.
    ///
    /// Local files are checked first, so a missing, empty or non-regular file fails at once
    /// with an error naming the path; URLs must use a scheme mpv supports. Formats mpv cannot
    /// read fail with ``PlayerError/loadFailed(source:_:)`` once mpv has tried.
    ///
    /// - Parameters:
    ///   - source: a path, URL or mpv URL such as `av://lavfi:testsrc`.
    ///   - startPaused: stay paused on the first frame (state ``PlayerState/ready``).
    /// - Returns: duration, video size and tracks of the loaded item.
    /// - Throws: ``PlayerError/fileNotFound(path:)``, ``PlayerError/notAFile(path:)``,
    ///   ``PlayerError/emptyFile(path:)``, ``PlayerError/unsupportedScheme(scheme:source:)``,
    ///   ``PlayerError/invalidSource(_:)``, ``PlayerError/loadFailed(source:_:)``,
    ///   ``PlayerError/loadCancelled(source:)`` (another load or stop came first), or
    ///   ``PlayerError/playerShutDown(_:)``.
    @discardableResult
    public func load(_ source: MediaSource, startPaused: Bool = false) async throws(PlayerError) -> MediaInfo {
        let argument = try validate(source)
        // Not waited for: mpv applies it before the loadfile that follows (requests on one core
        // run in order), and a fresh core is busy starting up, so a synchronous set would add
        // milliseconds to the time to first frame.
        try core.handle.setPropertyAsync("pause", .flag(startPaused))
        core.applyIntent { $0.notePause(startPaused) }
        return try await core.load(arguments: ["loadfile", argument, "replace"], source: source.description).get()
    }

    /// Prepares an item: loads it paused and returns once its first frame is decoded and
    /// presented (``PlayerEvent/firstFrame``), so ``play()`` continues from a frame that is
    /// already on screen instead of starting a decoder. State ``PlayerState/ready``.
    /// - Parameter timeout: how long to wait for the first frame after loading.
    /// - Returns: the loaded item's information.
    /// - Throws: the errors of ``load(_:startPaused:)``,
    ///   ``PlayerError/timedOut(operation:after:)`` when no frame came in time, and
    ///   ``PlayerError/loadCancelled(source:)`` when the item ended (another load or a stop)
    ///   before its first frame.
    @discardableResult
    public func preload(_ source: MediaSource, timeout: Duration = .seconds(10)) async throws(PlayerError) -> MediaInfo {
        // Subscribed before loading, so a first frame that comes before `load` returns is kept.
        let frames = events(kinds: [.firstFrame, .itemEnded], bufferLimit: 16)
        defer { frames.cancel() }
        let info = try await load(source, startPaused: true)
        enum Outcome { case frame, ended, timedOut }
        // The stream may still hold the previous item's events; the model says whether the
        // item now current has shown its first frame (its first frame may even come before
        // `load` returns, while the item's details are read).
        let outcome: Outcome = model(\.firstFrameShown) ? .frame : await withTaskGroup(of: Outcome.self) { group in
            group.addTask {
                for await record in frames {
                    switch record.event {
                    case .firstFrame where self.model(\.firstFrameShown): return .frame
                    case .itemEnded where [.idle, .ended, .failed].contains(self.state): return .ended
                    default: break
                    }
                }
                return .ended
            }
            group.addTask {
                try? await Task.sleep(for: timeout)
                return .timedOut
            }
            let first = await group.next() ?? .timedOut
            group.cancelAll()
            return first
        }
        switch outcome {
        case .frame: break
        case .ended: throw .loadCancelled(source: source.description)
        case .timedOut: throw .timedOut(operation: "preloading \(source) (waiting for its first frame)", after: timeout)
        }
        return info
    }

    /// Appends an item to the playlist without interrupting playback. When nothing is
    /// playing, mpv starts it.
    /// - Throws: the same validation errors as ``load(_:startPaused:)``.
    public func append(_ source: MediaSource) throws(PlayerError) {
        let argument = try validate(source)
        let result = try core.handle.command(["loadfile", argument, "append-play"])
        if let entryID = result["playlist_entry_id"]?.intValue {
            core.applyIntent { model in
                model.noteSource(source.description, forEntry: entryID)
                return []
            }
        }
    }

    /// Plays the next playlist item.
    /// - Throws: ``PlayerError/commandFailed(command:_:)`` when there is no next item.
    public func next() throws(PlayerError) {
        try replacing { () throws(PlayerError) in _ = try core.handle.command(["playlist-next", "weak"]) }
    }

    /// Plays the previous playlist item.
    /// - Throws: ``PlayerError/commandFailed(command:_:)`` when there is no previous item.
    public func previous() throws(PlayerError) {
        try replacing { () throws(PlayerError) in _ = try core.handle.command(["playlist-prev", "weak"]) }
    }

    /// Runs a command that replaces the current item, so its end is reported as `replaced`.
    private func replacing(_ command: () throws(PlayerError) -> Void) throws(PlayerError) {
        core.applyIntent { $0.noteReplacing(); return [] }
        do throws(PlayerError) {
            try command()
        } catch {
            core.applyIntent { $0.noteReplacementFailed(); return [] }
            throw error
        }
    }

    /// Removes every playlist item except the one playing.
    public func clearPlaylist() throws(PlayerError) {
        _ = try core.handle.command(["playlist-clear"])
    }

    /// The number of playlist items, including the current one.
    public func playlistCount() throws(PlayerError) -> Int {
        Int(try core.handle.property("playlist-count").intValue ?? 0)
    }

    private func validate(_ source: MediaSource) throws(PlayerError) -> String {
        let argument = source.mpvArgument
        switch source.location {
        case .file(let path):
            guard !path.isEmpty else { throw .invalidSource(path) }
            var info = stat()
            guard stat(argument, &info) == 0 else { throw .fileNotFound(path: path) }
            guard (info.st_mode & S_IFMT) == S_IFREG else { throw .notAFile(path: path) }
            guard info.st_size > 0 else { throw .emptyFile(path: path) }
        case .url(let url):
            guard let scheme = source.scheme else { throw .invalidSource(url) }
            guard catalog.protocols.contains(scheme) else {
                throw .unsupportedScheme(scheme: scheme, source: url)
            }
        }
        return argument
    }

    // MARK: Transport

    /// Starts or resumes playback.
    public func play() throws(PlayerError) { try setPause(false) }

    /// Pauses playback.
    public func pause() throws(PlayerError) { try setPause(true) }

    /// Pauses when playing, plays when paused.
    public func togglePause() throws(PlayerError) { try setPause(!isPaused) }

    private func setPause(_ paused: Bool) throws(PlayerError) {
        try core.handle.setProperty("pause", .flag(paused))
        core.applyIntent { $0.notePause(paused) }
    }

    /// Stops playback and unloads the item (state ``PlayerState/idle``); the playlist is cleared.
    public func stop() throws(PlayerError) {
        core.applyIntent { $0.noteStopping(); return [] }
        _ = try core.handle.command(["stop"])
    }

    /// Seeks to an absolute position in seconds. Completion is reported by
    /// ``PlayerEvent/seekCompleted(position:)``.
    /// - Throws: ``PlayerError/invalidArgument(name:value:reason:)`` for NaN, infinite or
    ///   negative positions; ``PlayerError/noMediaLoaded(operation:)`` when nothing is loaded.
    public func seek(to seconds: Double, precision: SeekPrecision = .exact) throws(PlayerError) {
        guard seconds.isFinite, seconds >= 0 else {
            throw .invalidArgument(name: "seek position", value: "\(seconds)", reason: "must be a finite number of seconds, 0 or more")
        }
        try seek(["seek", String(seconds), precision == .exact ? "absolute+exact" : "absolute+keyframes"])
    }

    /// Seeks relative to the current position (negative goes back).
    /// - Throws: ``PlayerError/invalidArgument(name:value:reason:)`` for NaN or infinite offsets;
    ///   ``PlayerError/noMediaLoaded(operation:)`` when nothing is loaded.
    public func seek(by seconds: Double, precision: SeekPrecision = .keyframe) throws(PlayerError) {
        guard seconds.isFinite else {
            throw .invalidArgument(name: "seek offset", value: "\(seconds)", reason: "must be a finite number of seconds")
        }
        try seek(["seek", String(seconds), precision == .exact ? "relative+exact" : "relative+keyframes"])
    }

    private func seek(_ arguments: [String]) throws(PlayerError) {
        guard state.hasMedia else { throw .noMediaLoaded(operation: "seek") }
        _ = try core.handle.command(arguments)
    }

    // MARK: Audio, speed, loop, decoding

    /// Sets the volume: 100 leaves it unchanged; mpv allows up to `volume-max` (130 by default).
    /// - Throws: ``PlayerError/invalidArgument(name:value:reason:)`` for NaN or negative
    ///   values and values above mpv's `volume-max`.
    public func setVolume(_ volume: Double) throws(PlayerError) {
        guard volume.isFinite, volume >= 0 else {
            throw .invalidArgument(name: "volume", value: "\(volume)", reason: "must be a finite number, 0 or more")
        }
        // mpv clamps silently above its maximum; say so instead.
        let maximum = model(\.volumeMaximum) ?? 130
        guard volume <= maximum else {
            throw .invalidArgument(name: "volume", value: "\(volume)", reason: "must be at most \(maximum) (mpv's volume-max)")
        }
        try core.handle.setProperty("volume", .double(volume))
    }

    /// Mutes or unmutes audio.
    public func setMuted(_ muted: Bool) throws(PlayerError) {
        try core.handle.setProperty("mute", .flag(muted))
    }

    /// The speeds ``setSpeed(_:)`` accepts: a quarter to four times normal speed, where mpv
    /// keeps audio pitch-corrected and audio and video in sync.
    public static let speedRange: ClosedRange<Double> = 0.25...4

    /// Sets the playback speed (1 is normal), within ``speedRange``. Reported by
    /// ``PlayerEvent/speedChanged(_:)``; positions keep counting media time.
    /// - Throws: ``PlayerError/invalidArgument(name:value:reason:)`` for NaN, zero and any
    ///   speed outside ``speedRange``.
    public func setSpeed(_ speed: Double) throws(PlayerError) {
        guard speed.isFinite, Self.speedRange.contains(speed) else {
            throw .invalidArgument(name: "speed", value: "\(speed)", reason: "must be between 0.25 and 4")
        }
        try core.handle.setProperty("speed", .double(speed))
    }

    /// Plays forwards (the default) or backwards (mpv's `play-dir`). Backwards playback
    /// decodes ahead in reverse, so it costs more memory and CPU; position events then count
    /// down, and the item ends at its start.
    ///
    /// Going backwards also makes the demuxer's cache seekable (`demuxer-seekable-cache`):
    /// without it, libmpv 0.35 stays stuck "seeking" when the direction changes after the
    /// demuxer has read a local file to its end. Going forwards again restores the default.
    public func setPlaybackDirection(_ direction: PlaybackDirection) throws(PlayerError) {
        try core.handle.setProperty("demuxer-seekable-cache", .string(direction == .forward ? "auto" : "yes"))
        try core.handle.setProperty("play-dir", .string(direction == .forward ? "forward" : "backward"))
    }

    /// Sets how often the current item repeats (mpv's `loop-file`).
    /// - Throws: ``PlayerError/invalidArgument(name:value:reason:)`` for a play count below 1.
    public func setLoop(_ mode: LoopMode) throws(PlayerError) {
        let value: MPVValue
        switch mode {
        case .off: value = "no"
        case .forever: value = "inf"
        case .playCount(let count):
            guard count >= 1 else {
                throw .invalidArgument(name: "loop play count", value: "\(count)", reason: "must be 1 or more")
            }
            value = count == 1 ? "no" : .int(Int64(count - 1))
        }
        try core.handle.setProperty("loop-file", value)
    }

    /// Switches hardware decoding on (`auto-safe`) or off. Takes effect at once.
    public func setHardwareDecoding(_ enabled: Bool) throws(PlayerError) {
        try core.handle.setProperty("hwdec", .string(enabled ? "auto-safe" : "no"))
    }

    // MARK: Escape hatches

    /// Sets any mpv property. The name and value are passed to mpv as data, never parsed
    /// as a command.
    /// - Throws: ``PlayerError/propertyNotFound(name:)``,
    ///   ``PlayerError/invalidPropertyValue(name:value:_:)`` or
    ///   ``PlayerError/propertyUnavailable(name:)``.
    public func setProperty(_ name: String, to value: MPVValue) throws(PlayerError) {
        try core.handle.setProperty(name, value)
        if name == "pause", let paused = value.boolValue { core.applyIntent { $0.notePause(paused) } }
    }

    /// Reads any mpv property. Blocks while mpv's core is busy; prefer the read-out
    /// properties and events where they exist.
    /// - Throws: ``PlayerError/propertyNotFound(name:)`` or ``PlayerError/propertyUnavailable(name:)``.
    public func property(_ name: String) throws(PlayerError) -> MPVValue {
        try core.handle.property(name)
    }

    /// Runs any mpv command from an argument array, e.g. `["screenshot-to-file", path, "video"]`.
    /// Each argument is passed to mpv as one word, so no file name or title can inject a command.
    /// - Returns: the command's result (``MPVValue/none`` for most commands).
    /// - Throws: ``PlayerError/unknownCommand(name:)`` for a name mpv does not have,
    ///   ``PlayerError/commandFailed(command:_:)`` when mpv refuses or fails it.
    @discardableResult
    public func command(_ arguments: [String]) throws(PlayerError) -> MPVValue {
        guard let name = arguments.first(where: { !MPVCatalog.commandPrefixes.contains($0) }) else {
            throw .invalidArgument(name: "command", value: "\(arguments)", reason: "has no command name")
        }
        guard catalog.commands.contains(name) else { throw .unknownCommand(name: name) }
        if name == "stop" { core.applyIntent { $0.noteStopping(); return [] } }
        return try core.handle.command(arguments)
    }
}
