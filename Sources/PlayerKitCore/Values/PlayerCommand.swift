/// A request for a player: sent with ``MediaPlayer/send(_:)`` (handed over without waiting) or
/// awaited with ``MediaPlayer/perform(_:timeout:)``. Play, pause, stop and seek also have
/// named, awaited methods (``MediaPlayer/play()``, ``MediaPlayer/seek(to:precision:)``, ...),
/// checked the same way; every other command is awaited as
/// `try await player.perform(.setVolume(80))`. An awaited command returns once the player
/// carried it out, its read-out showing the result.
///
/// What a feature's event handler uses: it runs on the feature's own queue and must not wait
/// for mpv there either (see Documentation/Architecture.md, "The pump never blocks").
///
/// **Can grow.** `@nonexhaustive`: a `switch` over it outside PlayerKit needs `@unknown default`.
@nonexhaustive
public enum PlayerCommand: Sendable, Hashable, CustomStringConvertible {
    /// Start or resume playback (``MediaPlayer/play()``).
    case play
    /// Pause playback (``MediaPlayer/pause()``).
    case pause
    /// Seek to an absolute position in seconds (``MediaPlayer/seek(to:precision:)``).
    case seek(to: Double, precision: SeekPrecision)
    /// Seek relative to the current position (negative goes back); an awaited one returns once
    /// the player shows the new position, as ``MediaPlayer/seek(to:precision:)`` does.
    case seekBy(Double, precision: SeekPrecision)
    /// Set the playback speed (1 is normal), within ``PlayerCommand/speedRange``. Reported by
    /// ``PlayerEvent/speedChanged(_:)``; positions keep counting media time. It takes away a
    /// correction (``setSpeedCorrection(_:)``). Refused with
    /// ``PlayerError/invalidArgument(name:value:reason:)`` for NaN, zero and any speed outside
    /// the range.
    case setSpeed(Double)
    /// Corrects the playback speed by `factor`, for keeping players together: the player plays
    /// at its speed (``setSpeed(_:)``) times `factor` (at most four times, at least a quarter of
    /// normal speed), at once. It is no change of the speed for the app: ``PlayerSnapshot/speed``
    /// and ``PlayerEvent/speedChanged(_:)`` keep being the speed the app set, and nothing is
    /// published. A sync group trims its members with it (a few times a second each) without a
    /// `speedChanged` for every trim. It lasts across items, until another correction or a
    /// ``setSpeed(_:)``, which takes it away; 1 takes it away too. Refused with
    /// ``PlayerError/invalidArgument(name:value:reason:)`` outside ``speedCorrectionRange``.
    case setSpeedCorrection(Double)
    /// Set the volume: 100 leaves it unchanged; mpv allows up to `volume-max` (130 by default).
    /// Refused with ``PlayerError/invalidArgument(name:value:reason:)`` for NaN or negative
    /// values and values above mpv's `volume-max`.
    case setVolume(Double)
    /// Mute or unmute audio.
    case setMuted(Bool)
    /// Set how often the current item repeats. Refused with
    /// ``PlayerError/invalidArgument(name:value:reason:)`` for a play count below 1.
    case setLoop(LoopMode)
    /// Play forwards (the default) or backwards. Backwards playback decodes ahead in reverse,
    /// so it costs more memory and CPU; position events then count down, and the item ends at
    /// its start.
    ///
    /// **libmpv 0.35.** Changing the direction while an item is loaded can trip an assertion
    /// inside libmpv 0.35 that ends the process (`loadfile.c:1785`, mpv #10782, #13778;
    /// Documentation/Reliability.md). A direction chosen before loading and kept is safe, so
    /// choose it before ``MediaPlayer/load(_:startPaused:)`` or after
    /// ``MediaPlayer/stop()``, as `ClipSequencer` and `PrefetchWindow` do.
    case setPlaybackDirection(PlaybackDirection)
    /// Put the player's video in fullscreen or take it out. A player with a window (its own or
    /// an embedding one) really goes fullscreen; a headless player keeps the setting. The
    /// player's ``MediaPlayer/fullscreenArbiter`` (a `FullscreenPolicy` that governs it) may
    /// refuse with ``PlayerError/fullscreenRefused(_:reason:)``, and then nothing changes. Every
    /// change of the player's fullscreen state, by this command or any other path, is reported
    /// as ``PlayerEvent/fullscreenStateChanged(_:)``.
    case setFullscreen(Bool)
    /// Mirror the video horizontally, vertically or both (``VideoFlip``): in windows and in
    /// frames the app draws, from now on and for later items. Changing it while playing rebuilds
    /// mpv's filter chain, which can hold the picture for a frame; set it before loading for a
    /// clean start.
    case setFlip(VideoFlip)
    /// Allow hardware decoding (mpv's `auto-safe`: a hardware decoder where one works, software
    /// otherwise) or switch it off. Takes effect at once, also while playing; the
    /// ``Player/videoDecoder`` read-out and ``PlayerEvent/videoDecoderChanged(_:)`` say which
    /// decoder then runs.
    case setHardwareDecoding(Bool)
    /// Select the track of a kind with this ID (``Track/id``), or none of that kind with nil: no
    /// video, no audio, or subtitles off; for a ``Track``, `.selectTrack(track.kind, id: track.id)`.
    /// The track read-out (``Player/tracks``) shows the selection once an awaited one returns,
    /// and ``PlayerEvent/tracksChanged(_:)`` reports it. The selection holds for the current
    /// item; the next item starts with mpv's own choice. Refused with
    /// ``PlayerError/noMediaLoaded(operation:)`` with nothing loaded, and
    /// ``PlayerError/unknownTrack(kind:id:available:)`` when the item has no such track.
    case selectTrack(Track.Kind, id: Int?)
    /// Count positions from the item's start (the default) or in the source's own timestamps
    /// (``TimestampOrigin``). Takes effect with the next load: set it before loading.
    case setTimestampOrigin(TimestampOrigin)
    /// Report a new frame's position when the frame is queued for the video output (the
    /// default) or when it is due on screen (``PositionTiming``). Takes effect at once.
    case setPositionTiming(PositionTiming)
    /// Let the video follow its audio (the default) or the system clock (``VideoClock``).
    /// Takes effect at once.
    case setVideoClock(VideoClock)
    /// How much media a player buffers, after it waited for the network, before it plays again
    /// (default 1 s). Shorter resumes sooner after a stall and risks another one sooner.
    /// Refused with ``PlayerError/invalidArgument(name:value:reason:)`` for a negative duration
    /// or one over an hour.
    case setBufferAfterStall(Duration)
    /// Stop and unload the item (``MediaPlayer/stop()``).
    case stop
    /// Show the next frame and pause there (mpv's `frame-step`).
    case stepFrame
    /// Show the previous frame and pause there (mpv's `frame-back-step`: a seek back to the
    /// keyframe before it and a decode forward, so slower than a step forward).
    case stepFrameBack
    /// Play the next playlist item (mpv's `playlist-next weak`). mpv refuses
    /// it when there is no next item (``PlaylistPosition/hasNext``): thrown by
    /// ``Player/perform(_:timeout:)``, published as an `error` event after ``Player/send(_:)``.
    case next
    /// Play the previous playlist item (mpv's `playlist-prev weak`);
    /// refused when there is none (``PlaylistPosition/hasPrevious``).
    case previous

    /// The speeds ``setSpeed(_:)`` accepts: a quarter to four times normal speed, where mpv
    /// keeps audio pitch-corrected and audio and video in sync.
    public static let speedRange: ClosedRange<Double> = 0.25...4

    /// The factors ``setSpeedCorrection(_:)`` accepts: half to twice the speed the app set.
    public static let speedCorrectionRange: ClosedRange<Double> = 0.5...2

    /// Checks the command's arguments as the player's methods do, without a player: NaN,
    /// infinite or negative positions, speeds outside ``speedRange``, negative volumes, loop
    /// counts below 1. (A player also checks a volume against its own `volume-max`.)
    /// - Throws: ``PlayerError/invalidArgument(name:value:reason:)`` naming the value.
    public func validate() throws(PlayerError) {
        switch self {
        case .seek(let seconds, _):
            guard seconds.isFinite, seconds >= 0 else {
                throw .invalidArgument(name: "seek position", value: "\(seconds)", reason: "must be a finite number of seconds, 0 or more")
            }
        case .seekBy(let seconds, _):
            guard seconds.isFinite else {
                throw .invalidArgument(name: "seek offset", value: "\(seconds)", reason: "must be a finite number of seconds")
            }
        case .setSpeed(let speed):
            guard speed.isFinite, Self.speedRange.contains(speed) else {
                throw .invalidArgument(
                    name: "speed", value: "\(speed)",
                    reason: "must be between \(Self.speedRange.lowerBound) and \(Self.speedRange.upperBound.formatted)")
            }
        case .setSpeedCorrection(let factor):
            guard factor.isFinite, Self.speedCorrectionRange.contains(factor) else {
                throw .invalidArgument(
                    name: "speed correction", value: "\(factor)",
                    reason: "must be between \(Self.speedCorrectionRange.lowerBound) and \(Self.speedCorrectionRange.upperBound.formatted)")
            }
        case .setVolume(let volume):
            guard volume.isFinite, volume >= 0 else {
                throw .invalidArgument(name: "volume", value: "\(volume)", reason: "must be a finite number, 0 or more")
            }
        case .setLoop(.playCount(let count)):
            guard count >= 1 else {
                throw .invalidArgument(name: "loop play count", value: "\(count)", reason: "must be 1 or more")
            }
        case .selectTrack(let kind, let id):
            guard kind != .unknown else {
                throw .invalidArgument(name: "track kind", value: kind.rawValue, reason: "must be video, audio or subtitle")
            }
            if let id, id < 1 {
                throw .invalidArgument(name: "track ID", value: "\(id)", reason: "must be 1 or more (mpv numbers tracks from 1), or nil for none")
            }
        case .setBufferAfterStall(let duration):
            guard duration >= .zero, duration <= .seconds(3600) else {
                throw .invalidArgument(name: "buffer after stall", value: "\(duration)", reason: "must be between 0 and 1 hour")
            }
        case .play, .pause, .setMuted, .setLoop, .setPlaybackDirection, .setFullscreen, .setFlip, .setHardwareDecoding, .stop, .stepFrame, .stepFrameBack, .next, .previous,
             .setTimestampOrigin, .setPositionTiming, .setVideoClock:
            break
        }
    }

    /// The command and its arguments, e.g. "setSpeed(1.5)".
    public var description: String {
        switch self {
        case .play: return "play"
        case .pause: return "pause"
        case .seek(let seconds, let precision): return "seek(to: \(seconds), \(precision))"
        case .seekBy(let seconds, let precision): return "seekBy(\(seconds), \(precision))"
        case .setSpeed(let speed): return "setSpeed(\(speed))"
        case .setSpeedCorrection(let factor): return "setSpeedCorrection(\(factor))"
        case .setVolume(let volume): return "setVolume(\(volume))"
        case .setMuted(let muted): return "setMuted(\(muted))"
        case .setLoop(let mode): return "setLoop(\(mode))"
        case .setPlaybackDirection(let direction): return "setPlaybackDirection(\(direction))"
        case .setFullscreen(let fullscreen): return "setFullscreen(\(fullscreen))"
        case .setFlip(let flip): return "setFlip(\(flip))"
        case .setHardwareDecoding(let enabled): return "setHardwareDecoding(\(enabled))"
        case .selectTrack(let kind, let id): return "selectTrack(\(kind.rawValue), \(id.map(String.init) ?? "none"))"
        case .setTimestampOrigin(let origin): return "setTimestampOrigin(\(origin))"
        case .setPositionTiming(let timing): return "setPositionTiming(\(timing))"
        case .setVideoClock(let clock): return "setVideoClock(\(clock))"
        case .setBufferAfterStall(let duration): return "setBufferAfterStall(\(duration))"
        case .stop: return "stop"
        case .stepFrame: return "stepFrame"
        case .stepFrameBack: return "stepFrameBack"
        case .next: return "next"
        case .previous: return "previous"
        }
    }
}

private extension Double {
    /// "4" for 4.0, "0.25" for 0.25: how the range reads in messages.
    var formatted: String { self == rounded() ? String(Int(self)) : String(self) }
}

/// How ``Player/perform(each:timeout:pacing:)`` hands commands to several players.
public enum CommandPacing: Sendable, Hashable {
    /// Every command is handed to its player at once, one right after another, and then every
    /// answer is awaited: the players move microseconds apart, their cores starting together.
    case together
    /// Each command is handed to its player once the player before answered, by the thread that
    /// read that answer (no task or thread waits in between): the players move one after
    /// another, each as soon as the one before has. On two cores, starting several players this
    /// way keeps their starts closer together than handing them all over at once, where the
    /// woken cores compete for the CPUs (`playerkit-bench sync-load`, Performance.md).
    case inTurn
}
