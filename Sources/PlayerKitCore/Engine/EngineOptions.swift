internal import CMPV
import Foundation
import PlayerKitSupport

/// How a ``PlayerConfiguration`` becomes mpv options: the only place their names are spelled.
extension PlayerConfiguration {
    /// The options PlayerKit gives mpv before `mpv_initialize` for player `id`, in order.
    /// `scaletempo2IsUnsafe`: whether this libmpv's `scaletempo2` filter writes past its buffer
    /// (libmpv before 0.37; ``LibMPV/scaletempo2IsUnsafe``).
    func mpvOptions(for id: PlayerID, scaletempo2IsUnsafe: Bool = LibMPV.scaletempo2IsUnsafe) -> [(String, String)] {
        var options: [(String, String)] = [
            ("config", "no"),
            ("load-scripts", "no"),
            ("ytdl", "no"),
            ("input-default-bindings", "no"),
            ("input-vo-keyboard", "no"),
            ("input-terminal", "no"),
            ("osc", "no"),
            // mpv's other built-in Lua scripts (the stats overlay, the OSD console, conditional
            // profiles) each run a Lua interpreter on a thread and client of their own in every
            // core: a headless SDK player without key bindings can use none of them.
            ("load-stats-overlay", "no"),
            ("load-osd-console", "no"),
            ("load-auto-profiles", "no"),
            ("terminal", "no"),
            ("idle", "yes"),
            ("keep-open", "no"),
            ("hwdec", hardwareDecoding ? "auto-safe" : "no"),
            ("network-timeout", String(format: "%.3f", networkTimeout.inSeconds)),
        ]
        switch videoOutput {
        case .none:
            options.append(("vo", "null"))
        case .window:
            if let videoDriver { options.append(("vo", videoDriver)) }
            options.append(("force-window", "no"))
        case .frames:
            // mpv's render API: video goes to the render context the app attaches.
            options.append(("vo", "libmpv"))
            // mpv hands a frame to the renderer up to `video-timing-offset` (50 ms by default)
            // before its display time, and moves `time-pos` to it then: at 30 fps that is the
            // frame after the one being shown, so a frame's `videoTime` named its successor.
            // At 0 a frame is handed over at its display time, and `time-pos` is the shown one's.
            options.append(("video-timing-offset", "0"))
            // Without hardware decoding no GPU interop is needed; probing for it only prints
            // loader noise (libcuda) to standard error.
            if !hardwareDecoding { options.append(("gpu-hwdec-interop", "no")) }
        case .embedded(let windowID):
            if let videoDriver { options.append(("vo", videoDriver)) }
            options.append(("wid", String(windowID)))
        }
        if audioOutput == .none { options.append(("ao", "null")) }
        for (name, kind) in PlaybackModel.trackSelectionProperties.sorted(by: { $0.key < $1.key }) where !selectedTrackKinds.contains(kind) {
            options.append((name, "no"))
        }
        // The sound server shows each player's stream under its ID (PulseAudio's and
        // PipeWire's application name).
        options.append(("audio-client-name", id.rawValue))
        if let audioDevice { options.append(("audio-device", audioDevice)) }
        if !isHeard {
            // Nobody hears it: its video keeps its own clock (``VideoClock/independent``). mpv's
            // null output plays the sound on the system's time anyway, and video that waited for
            // it came up to a millisecond off its due time, now and then (Performance.md).
            options.append(("video-sync", "desync"))
        }
        if !pitchCorrection || !isHeard {
            // Without pitch correction mpv resamples to change the speed. So does a player
            // nobody hears (no audio output): its pitch does not matter, and keeping it cost
            // 0.5% of a core per player (scaletempo's search, measured on 360p live angles).
            options.append(("audio-pitch-correction", "no"))
        } else if scaletempo2IsUnsafe {
            // mpv keeps the pitch at speeds other than 1 by inserting `scaletempo2`, which on
            // libmpv before 0.37 writes past its buffer (Documentation/Reliability.md). A filter
            // in the chain that takes the speed keeps mpv from inserting it: mpv's older
            // `scaletempo`, in place for the player's life (it has no pass-through at speed 1,
            // and adding it only while the speed is not 1 would restart the audio chain at every
            // change, such as a sync group's small nudges).
            options.append(("af", Self.pitchFilter))
        }
        for name in extraOptions.keys.sorted() {
            options.append((name, extraOptions[name] ?? ""))
        }
        return options
    }
}

extension PlayerConfiguration {
    /// Whether the player's sound goes to an output: not with ``AudioOutput/none``, unless the
    /// app chose mpv's output itself (`ao` in ``extraOptions``, such as a PCM file).
    var isHeard: Bool { audioOutput != .none || extraOptions["ao"] != nil }

    /// The audio filter that keeps the pitch on a libmpv whose `scaletempo2` is unsafe.
    static let pitchFilter = "@playerkit-pitch:scaletempo"
    /// The same filter while the player is muted: no overlap, so no search for the best one.
    static let mutedPitchFilter = "@playerkit-pitch:scaletempo=overlap=0"
}

/// Facts about the libmpv this process runs with.
enum LibMPV {
    /// The client API version (`mpv_client_api_version`): major in the high 16 bits.
    static let clientAPIVersion = UInt(mpv_client_api_version())

    /// Whether `scaletempo2` writes past its buffer: libmpv before 0.37 (client API 2.2), which
    /// fixed its handling of a stream's final packet and of format changes (mpv PR #12052).
    static let scaletempo2IsUnsafe = clientAPIVersion < (2 << 16 | 2)

    /// Whether mpv's null audio output keeps its pause flag through a reset: libmpv before 0.38
    /// (client API 2.3; mpv commit 431b420, issue #13267). Resuming after a seek or a load while
    /// paused then logs a harmless "illegal state: start() while paused" error and plays on.
    static let aoNullLogsSpuriousStart = clientAPIVersion < (2 << 16 | 3)

    /// Whether a log line is that harmless error of the null audio output (see
    /// ``aoNullLogsSpuriousStart``): PlayerKit drops it, so a run with `audioOutput: .none` logs
    /// no error that is not one.
    static func isSpuriousAONullError(prefix: String, text: String) -> Bool {
        aoNullLogsSpuriousStart && prefix == "ao/null" && text.hasPrefix("illegal state: start() while paused")
    }
}

extension PlayerConfiguration.MPVLogLevel {
    /// mpv's name for the level (`mpv_request_log_messages`).
    var mpvName: String {
        switch self {
        case .none: return "no"
        case .fatal: return "fatal"
        case .error: return "error"
        case .warn: return "warn"
        case .info: return "info"
        case .verbose: return "v"
        case .debug: return "debug"
        case .trace: return "trace"
        }
    }
}

extension MPVEvent.LogLevel {
    /// The levels a configured ``PlayerConfiguration/MPVLogLevel`` lets through, most severe first.
    static func levels(upTo configured: PlayerConfiguration.MPVLogLevel) -> Set<MPVEvent.LogLevel> {
        let ordered: [MPVEvent.LogLevel] = [.fatal, .error, .warn, .info, .verbose, .debug, .trace]
        let count: Int
        switch configured {
        case .none: count = 0
        case .fatal: count = 1
        case .error: count = 2
        case .warn: count = 3
        case .info: count = 4
        case .verbose: count = 5
        case .debug: count = 6
        case .trace: count = 7
        }
        return Set(ordered.prefix(count))
    }
}
