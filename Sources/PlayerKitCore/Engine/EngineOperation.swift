/// One typed operation of the engine: the mpv requests it makes and how the playback model
/// changes with them, declared together. The only place where mpv's names for the player's
/// operations (`pause`, `speed`, `loop-file`, `seek`, `playlist-next`, ...) are spelled.
///
/// The engine runs an operation in one of two ways (``PlayerCore/send(_:reply:)``, and
/// ``PlayerCore/request(_:timeout:)`` which awaits mpv's answer), always in this order: ``prepare(_:)`` on the model, the requests,
/// then ``applied(to:result:)`` once mpv accepted them, or ``revert(_:)`` when it refused.
enum EngineOperation: Sendable {
    /// A command of the public set (validated by the player).
    case command(PlayerCommand)
    case clearPlaylist
    /// `loadfile <argument> append-play`; `source` names the entry in errors.
    case append(argument: String, source: String)
    case saveFrame(path: String)
    /// `sub-add`: an external subtitle file for the current item.
    case addSubtitles(path: String, title: String?, language: String?, select: Bool)
    /// Sends the player's sound to an output device (mpv's `audio-device`).
    case setAudioDevice(String)
    /// PlayerKit's pitch filter (``PlayerConfiguration/pitchFilter``) for a muted player (nobody
    /// hears its pitch): without its search and overlap, so it only cuts and joins (about
    /// nothing, against half a percent of a core), still taking the speed, so mpv never inserts
    /// its `scaletempo2`; the full filter for a player heard. Replaces the filter in place (by
    /// its label): one change of the chain.
    case setPitchFilter(muted: Bool)
    /// Puts one of PlayerKit's measuring filters in the player's chain (`graph`: a libavfilter
    /// graph) or takes it out (nil), by its label, in place: the app's own filters and the
    /// other measuring ones stay (``MeasuringFilter``).
    case setMeasuringFilter(MeasuringFilter, graph: String?)
    /// The escape hatches: any property or command, names as the app gave them.
    case setProperty(name: String, value: MPVValue)
    case runCommand([String])

    /// One request to mpv.
    enum Request: Sendable {
        case set(String, MPVValue)
        case command([String])
    }

    /// Whether a caller that awaits the operation waits until the player shows its result: a
    /// seek is answered by mpv when queued, and lands a little later (see
    /// ``PlaybackModel/awaitSeekLanding(ticket:)``).
    var landsOnRestart: Bool {
        switch self {
        case .command(.seek), .command(.seekBy): true
        default: false
        }
    }

    /// The requests, in order, with the values they have for `model`: mpv's speed is the app's
    /// speed times the speed correction (``PlayerCommand/setSpeedCorrection(_:)``). Called under
    /// the state lock, after ``prepare(_:)``, so the correction and the speed are the ones the
    /// model has as the requests are handed over.
    func requests(for model: PlaybackModel) -> [Request] {
        switch self {
        case .command(.setSpeed(let speed)):
            return [.set("speed", .double(PlaybackModel.mpvSpeed(speed, correction: model.speedCorrection)))]
        case .command(.setSpeedCorrection(let factor)):
            return [.set("speed", .double(PlaybackModel.mpvSpeed(model.speed ?? 1, correction: factor)))]
        default:
            return requests
        }
    }

    /// The requests, in order (a speed's value before its correction: ``requests(for:)`` has the
    /// values to hand over).
    var requests: [Request] {
        switch self {
        case .command(let command):
            switch command {
            case .play: return [.set("pause", .flag(false))]
            case .pause: return [.set("pause", .flag(true))]
            case .seek(let seconds, let precision):
                return [.command(["seek", String(seconds), precision == .exact ? "absolute+exact" : "absolute+keyframes"])]
            case .seekBy(let seconds, let precision):
                return [.command(["seek", String(seconds), precision == .exact ? "relative+exact" : "relative+keyframes"])]
            case .setSpeed(let speed): return [.set("speed", .double(speed))]
            case .setSpeedCorrection(let factor): return [.set("speed", .double(factor))]
            case .setVolume(let volume): return [.set("volume", .double(volume))]
            case .setMuted(let muted): return [.set("mute", .flag(muted))]
            case .setLoop(let mode):
                switch mode {
                case .off: return [.set("loop-file", .string("no"))]
                case .forever: return [.set("loop-file", .string("inf"))]
                case .playCount(let count): return [.set("loop-file", count <= 1 ? .string("no") : .int(Int64(count - 1)))]
                }
            case .setPlaybackDirection(let direction):
                // Backwards also makes the demuxer cache seekable: without it, libmpv 0.35 stays
                // "seeking" when the direction changes after the demuxer read a local file to its end.
                return [.set("demuxer-seekable-cache", .string(direction == .forward ? "auto" : "yes")),
                        .set("play-dir", .string(direction == .forward ? "forward" : "backward"))]
            case .setFullscreen(let fullscreen): return [.set("fullscreen", .flag(fullscreen))]
            case .setFlip(let flip):
                // libavfilter's hflip/vflip in mpv's video filter chain (software, any output),
                // by its label: the measuring filters (alarms) stay in the chain.
                var filters: [String] = []
                if flip.contains(.horizontal) { filters.append("hflip") }
                if flip.contains(.vertical) { filters.append("vflip") }
                return filters.isEmpty
                    ? [.command(["vf", "remove", "@playerkit-flip"])]
                    : [.command(["vf", "add", "@playerkit-flip:lavfi=[\(filters.joined(separator: ","))]"])]
            case .selectTrack(let kind, let id):
                let name = PlaybackModel.trackSelectionProperties.first { $0.value == kind }?.key ?? "sid"
                return [.set(name, id.map { .int(Int64($0)) } ?? .string("no"))]
            case .setHardwareDecoding(let enabled): return [.set("hwdec", .string(enabled ? "auto-safe" : "no"))]
            case .setTimestampOrigin(let origin): return [.set("rebase-start-time", .string(origin == .itemStart ? "yes" : "no"))]
            case .setPositionTiming(let timing):
                // mpv hands a frame to its video output up to `video-timing-offset` (50 ms) before
                // it is due, and reports the new position then; at 0, when it is due.
                return [.set("video-timing-offset", .double(timing == .whenDue ? 0 : 0.05))]
            case .setVideoClock(let clock): return [.set("video-sync", .string(clock == .audio ? "audio" : "desync"))]
            case .setBufferAfterStall(let duration):
                let seconds = Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
                return [.set("cache-pause-wait", .double(seconds))]
            case .stop: return [.command(["stop"])]
            case .stepFrame: return [.command(["frame-step"])]
            case .stepFrameBack: return [.command(["frame-back-step"])]
            case .next: return [.command(["playlist-next", "weak"])]
            case .previous: return [.command(["playlist-prev", "weak"])]
            }
        case .clearPlaylist: return [.command(["playlist-clear"])]
        case .append(let argument, _): return [.command(["loadfile", argument, "append-play"])]
        case .saveFrame(let path): return [.command(["screenshot-to-file", path, "video"])]
        case .addSubtitles(let path, let title, let language, let select):
            var arguments = ["sub-add", path, select ? "select" : "auto"]
            if title != nil || language != nil {
                arguments.append(title ?? path.split(separator: "/").last.map(String.init) ?? path)
            }
            if let language { arguments.append(language) }
            return [.command(arguments)]
        case .setAudioDevice(let name): return [.set("audio-device", .string(name))]
        case .setPitchFilter(let muted):
            return [.command(["af", "add", muted ? PlayerConfiguration.mutedPitchFilter : PlayerConfiguration.pitchFilter])]
        case .setMeasuringFilter(let filter, let graph):
            guard let graph else { return [.command([filter.chain, "remove", "@\(filter.label)"])] }
            return [.command([filter.chain, "add", "@\(filter.label):lavfi=[\(graph)]"])]
        case .setProperty(let name, let value): return [.set(name, value)]
        case .runCommand(let arguments): return [.command(arguments)]
        }
    }

    /// The model's note before the requests: what the next end of an item will mean.
    func prepare(_ model: inout PlaybackModel) {
        switch self {
        case .command(.setSpeedCorrection(let factor)): model.speedCorrection = factor
        case .command(.setSpeed): model.speedCorrection = 1  // a speed given takes the correction away
        case .command(.stop): model.noteStopping()
        case .runCommand(let arguments) where Self.commandName(arguments) == "stop": model.noteStopping()
        case .command(.next), .command(.previous): model.noteReplacing()
        default: break
        }
    }

    /// Undoes ``prepare(_:)`` when mpv refused the requests.
    func revert(_ model: inout PlaybackModel) {
        switch self {
        case .command(.next), .command(.previous): model.noteReplacementFailed()
        default: break
        }
    }

    /// The model's update as the requests are handed to mpv: the read-outs show what the
    /// operation sets (pause, volume, mute, speed, loop, direction, fullscreen, hardware
    /// decoding, a track) at once, with its change events, without waiting for mpv's answer or
    /// observation; each set asks for its confirmation: by mpv's answer to it, or by a read the
    /// caller asks for once the answer came (``PlaybackModel/noteSet(_:_:)``).
    func handedOver(to model: inout PlaybackModel) -> [PlaybackModel.Output] {
        var outputs: [PlaybackModel.Output] = []
        for case .set(let name, let value) in requests(for: model) {
            outputs += model.noteSet(name, value)
        }
        if case .runCommand = self { outputs += model.noteUnknownCommand() }
        switch self {
        case .command(.stop): outputs += model.stopRequested()
        case .runCommand(let arguments) where Self.commandName(arguments) == "stop": outputs += model.stopRequested()
        default: break
        }
        return outputs
    }

    /// The model's update once mpv accepted the requests; `result` is the last request's result.
    func applied(to model: inout PlaybackModel, result: MPVValue) -> [PlaybackModel.Output] {
        let outputs: [PlaybackModel.Output] = []
        switch self {
        case .command(.setFlip(let flip)):
            model.flip = flip
        case .append(_, let source):
            if let entryID = result["playlist_entry_id"]?.intValue { model.noteSource(source, forEntry: entryID) }
        default:
            break
        }
        return outputs
    }

    /// The command name of an argument array: the first word that is not a prefix (input.rst).
    static func commandName(_ arguments: [String]) -> String? {
        arguments.first { !MPVCatalog.commandPrefixes.contains($0) }
    }
}
