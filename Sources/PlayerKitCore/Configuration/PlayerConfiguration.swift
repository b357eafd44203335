import Dispatch
import Foundation
import Logging

/// How a ``Player`` is set up. Fixed at creation.
///
/// The defaults are safe for embedding: mpv reads no config files, runs no scripts, has no
/// youtube-dl hook, no default key bindings, no on-screen controller and no terminal output,
/// whatever the machine's mpv setup is. Those cannot be switched back on except through
/// ``extraOptions``.
public struct PlayerConfiguration: Sendable {
    /// Where video goes. PlayerKit draws no UI of its own.
    ///
    /// `@nonexhaustive`: outputs will be added (frames the app draws); a `switch` over it
    /// outside PlayerKit needs `@unknown default`.
    @nonexhaustive
    public enum VideoOutput: Sendable, Hashable {
        /// No video output (headless). Video is still decoded, so screenshots and frame
        /// timing work; nothing is shown. mpv's `vo=null`.
        case none
        /// mpv opens a window of its own (X11 or Wayland, whichever mpv finds).
        case window
        /// mpv draws into an existing X11 window of the app, given by its window ID
        /// (mpv's `wid`). X11 only.
        case embedded(x11WindowID: UInt64)
        /// Frames the app draws: video goes to the one renderer the app attaches, either
        /// software frames (``Player/makeFrameOutput(_:delivery:)``) or OpenGL drawing into the
        /// app's own context (``Player/makeOpenGLRenderer(getProcAddress:onFrameReady:)``).
        /// Works with any toolkit and under Wayland. Attach the renderer before loading media:
        /// an item loaded while none is attached plays without video. mpv's `vo=libmpv`.
        case frames
    }

    /// Where audio goes. `@nonexhaustive`, like ``VideoOutput``.
    @nonexhaustive
    public enum AudioOutput: Sendable, Hashable {
        /// The system's default audio output (mpv's `ao` auto-selection).
        case system
        /// No audio output; audio is decoded and timed but not played (`ao=null`). The video
        /// keeps its own clock (``VideoClock/independent``) and the pitch is not kept, unless
        /// ``extraOptions`` names an `ao` of the app's choosing.
        case none
    }

    /// libmpv's log levels, from quietest to most verbose.
    public enum MPVLogLevel: Sendable, Hashable, CaseIterable {
        /// Nothing.
        case none
        /// Fatal errors only.
        case fatal
        /// Errors.
        case error
        /// Warnings and errors.
        case warn
        /// Informational messages.
        case info
        /// Verbose messages.
        case verbose
        /// Debug messages.
        case debug
        /// Everything.
        case trace
    }

    /// Where video goes. Default: ``VideoOutput/none`` (headless).
    public var videoOutput: VideoOutput = .none
    /// mpv's video driver (`vo`) for ``VideoOutput/window`` and ``VideoOutput/embedded(x11WindowID:)``,
    /// e.g. "x11" or "gpu". Default nil: mpv's own choice. Ignored when headless.
    ///
    /// Under software GL (for example Xvfb), mpv's automatic probing of GPU drivers by several
    /// cores in one process has crashed inside the probed drivers (seen with libmpv 0.35.1);
    /// set "x11" there. "x11" scales on the CPU, so prefer "gpu" on machines with a GPU.
    public var videoDriver: String?
    /// Where audio goes. Default: ``AudioOutput/system``.
    public var audioOutput: AudioOutput = .system
    /// The output device for ``AudioOutput/system``, by mpv's name for it (``AudioDevice/name``,
    /// e.g. `pulse/alsa_output.usb-headset`, `alsa/hdmi:CARD=PCH,DEV=0`); list them with
    /// ``Player/audioDevices()``. Each player has its own, so two players can play on two
    /// devices. Default nil: the system's default device (mpv's `auto`). A device that does not
    /// exist makes the item play without sound (mpv reports it in its log); choose at run time
    /// with ``Player/setAudioDevice(_:)``, which checks the name.
    ///
    /// Whatever the device, the player's stream carries its ID as the application name, so a
    /// sound server (PulseAudio, PipeWire) and its mixers show the players apart.
    public var audioDevice: String?
    /// Whether the pitch stays the same when the speed is not 1 (mpv's `audio-pitch-correction`).
    /// Default: true. When false, the pitch follows the speed, as a tape's does.
    ///
    /// mpv keeps the pitch with its `scaletempo2` filter, which on libmpv before 0.37 writes past
    /// its buffer at some speed changes and seeks (Documentation/Reliability.md, reproduced with
    /// a plain C client). On such a libmpv PlayerKit keeps the pitch with mpv's older
    /// `scaletempo` instead, in the player's audio filter chain (`af`) from its creation, so
    /// `scaletempo2` is never used; an `af` in ``extraOptions`` replaces it.
    ///
    /// A player without an audio output (``AudioOutput/none``, and no `ao` in
    /// ``extraOptions``) keeps no pitch, whatever this says: nobody hears it, and mpv changes its
    /// speed by resampling, which costs far less than keeping the pitch (about half a percent of
    /// a core per player). A player with an output that is muted (``PlayerCommand/setMuted(_:)``)
    /// keeps its filter, but without its search for the best overlap, which costs as little; the
    /// whole filter is back before it is unmuted (its audio chain restarts at each change).
    public var pitchCorrection = true
    /// The kinds of track the player selects when an item loads. Default: video, audio and
    /// subtitles. Without ``Track/Kind/audio`` no audio is decoded at all, and without
    /// ``Track/Kind/subtitle`` no subtitle is read: a player for pictures only (posters,
    /// thumbnails) decodes nothing else. ``PlayerCommand/selectTrack(_:id:)`` still selects a
    /// track of any kind.
    public var selectedTrackKinds: Set<Track.Kind> = [.video, .audio, .subtitle]
    /// Whether to use hardware decoding (`hwdec=auto-safe`) at start. Default: false.
    public var hardwareDecoding = false
    /// How often the position (and cache fill) is read while playing, and so the time between
    /// two ``PlayerEvent/positionChanged(_:)`` events. Default: 0.25 seconds. It is also read at
    /// the first frame, at pause and after each seek. Zero observes the position instead and
    /// reports every change mpv makes (about once a frame), at a higher CPU cost.
    public var positionUpdateInterval: Duration = .milliseconds(250)
    /// How long mpv waits on a network connection that has gone silent (connecting or reading)
    /// before it gives up on it (mpv's `network-timeout`); mpv then tries to reconnect, a few
    /// times, before it ends the item. Default: 60 seconds, mpv's own. Must be positive and at most
    /// a day: creation fails with ``PlayerError/invalidArgument(name:value:reason:)`` otherwise.
    public var networkTimeout: Duration = .seconds(60)
    /// How long the player may wait for the network while it plays nothing (state
    /// ``PlayerState/buffering``) before it gives up on the item: it then stops it and reports
    /// ``PlayerError/bufferingTimedOut(source:position:after:)``, as an ``PlayerEvent/error(_:)``
    /// and as the item's end (``ItemEndReason/error(_:)``). Checked once per
    /// ``positionUpdateInterval`` (not at all with a zero interval). Default nil: as long as mpv
    /// waits (its reconnection attempts, each bounded by ``networkTimeout``).
    public var bufferingTimeout: Duration?
    /// How long ``Player/load(_:startPaused:)`` waits for the item to load or fail. When it
    /// passes, the load throws ``PlayerError/timedOut(operation:after:)`` and the item is stopped
    /// (as when the loading task is cancelled), unless a later load replaced it; the player stays
    /// usable. mpv has no bound of its own for an item that keeps opening: a server that trickles,
    /// a ``MediaStreamProvider`` whose `open` or `read` never returns. Default: 120 seconds, above
    /// mpv's own ``networkTimeout``, so mpv's more precise error comes first when the network
    /// fails. Measured on the monotonic clock. Must be positive and at most a day: creation
    /// fails with ``PlayerError/invalidArgument(name:value:reason:)`` otherwise.
    public var loadTimeout: Duration = .seconds(120)
    /// How long ``Player/shutdown()`` waits for mpv to destroy the core. mpv destroys it once its
    /// threads have stopped, usually within milliseconds (it cancels network reads itself); a
    /// ``MediaStreamProvider`` whose `open` or `read` does not return holds it for as long. When
    /// the time passes, `shutdown()` logs an error and returns anyway: the player is shut down
    /// for the app (every call throws ``PlayerError/playerShutDown(_:)``, its ID is free), and
    /// the core is destroyed in the background when mpv lets go, which the player's last event,
    /// ``PlayerEvent/shutDown``, then reports. Default: 10 seconds. Measured on the monotonic
    /// clock. Must be positive and at most a day: creation fails with
    /// ``PlayerError/invalidArgument(name:value:reason:)`` otherwise.
    public var shutdownTimeout: Duration = .seconds(10)
    /// How many mpv cores PlayerKit keeps created and ready for the next players made with the
    /// same settings for mpv (outputs, tracks, pitch, decoding, ``extraOptions``; not the
    /// player's ID, events, logging or timeouts), so that ``Player/create(id:configuration:delegate:)``
    /// takes one at once instead of creating one, which takes milliseconds (tens under load).
    /// A ready core is one nothing has run on: the player that takes it gets the core it would
    /// have created. Once a player is created, the pool makes this many ready again in the
    /// background, one at a time, on a thread of its own: when the player shows its
    /// first frame, or 0.2 s after it was created if that comes first. A player created (with
    /// ``Player/create(id:configuration:delegate:)``) while none is ready but one is being made
    /// waits for that one, at most 0.5 s. The first player with given settings creates its core
    /// as before. Each ready core costs what an mpv core that
    /// plays nothing costs: a few megabytes and a few idle threads (Performance.md). 0 keeps
    /// none, and lets the ready ones go the next time a player with these settings is created.
    /// Default: 1. Must be from 0 to 16: creation fails with
    /// ``PlayerError/invalidArgument(name:value:reason:)`` otherwise.
    public var readyCores = 1
    /// The queue on which the delegate is called. PlayerKit wraps it in a serial queue that
    /// targets it, so per-player order holds even on a concurrent queue. Default nil: a
    /// serial queue of the player's own, labelled `PlayerKit.delegate.<id>` (not the main
    /// queue, which a command-line program may never run).
    public var delegateQueue: DispatchQueue?
    /// The bus the player publishes its events to. Default: ``PlayerEventBus/shared``.
    public var eventBus: PlayerEventBus = .shared
    /// How much of mpv's own log is forwarded to swift-log (logger label `PlayerKit.mpv`, or
    /// ``logger``). Per player: one player can log at ``MPVLogLevel/debug`` while the others stay
    /// quiet. The logger's own level filters again. Default: ``MPVLogLevel/warn``.
    ///
    /// Whatever the level, mpv's error lines about a failing item are kept for its error
    /// (``MPVError/logMessages``, ``MPVError/reason``).
    public var mpvLogLevel: MPVLogLevel = .warn
    /// The logger for this player's messages: PlayerKit's own and mpv's (at ``mpvLogLevel``),
    /// each with the metadata `player` (the player's ID) and `source` (`PlayerKit`,
    /// `PlayerKit.mpv`, `PlayerKit.frames` or `PlayerKit.streams`); mpv's lines also carry
    /// `module` (mpv's module, e.g. `ffmpeg/demuxer` or `vo/gpu`).
    ///
    /// Default nil: loggers with those labels, made through swift-log's `LoggingSystem`. To
    /// choose the handler and level for the whole process, bootstrap it once at start
    /// (`LoggingSystem.bootstrap(...)`); to send one player somewhere else, give it a logger here.
    public var logger: Logger?
    /// The logger for `id`'s messages from `label` (``logger`` with metadata, or a logger
    /// labelled `label`).
    func logger(for id: PlayerID, label: String) -> Logger {
        var logger = self.logger ?? Logger(label: label)
        logger[metadataKey: "player"] = "\(id)"
        if self.logger != nil { logger[metadataKey: "source"] = "\(label)" }
        return logger
    }

    /// Further mpv options, set before the core initializes (for example `["cache": "yes"]`).
    /// They are applied after PlayerKit's own, so they can override them. An option mpv
    /// rejects makes creation fail with ``PlayerError/invalidOption(name:value:_:)``.
    public var extraOptions: [String: String] = [:]
    /// URL schemes the player reads through code of the app's (or a feature's) instead of
    /// mpv's own protocols: each provider's ``MediaStreamProvider/scheme`` is registered on the
    /// player's core at creation, and `scheme://...` sources load through it. A scheme that is
    /// malformed, taken twice or already one of mpv's makes creation fail with
    /// ``PlayerError/invalidArgument(name:value:reason:)``.
    public var streamProviders: [any MediaStreamProvider] = []
    /// Where the display timestamps of the player's event records come from
    /// (``PlayerEventRecord/timestamp``). Default: the system clock. Nothing in PlayerKit
    /// measures time with it (durations, drift and seams use ``PlayerEventRecord/time``, on the
    /// monotonic `ContinuousClock`), so a system clock that is stepped changes only these
    /// timestamps; a test or a replay tool can give a clock of its own. Called with no PlayerKit
    /// lock held, once per batch of events, just before the batch is numbered: records made on
    /// two threads at once may carry timestamps a few microseconds out of order (their
    /// ``PlayerEventRecord/sequenceNumber`` and ``PlayerEventRecord/time`` are in order).
    public var wallClock: @Sendable () -> Date = { Date() }

    /// The default configuration: headless, system audio, software decoding.
    public init() {}

    /// A configuration with the given outputs.
    public init(videoOutput: VideoOutput, audioOutput: AudioOutput = .system) {
        self.videoOutput = videoOutput
        self.audioOutput = audioOutput
    }
}
