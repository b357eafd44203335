import Dispatch
import Foundation
import Logging
import PlayerKitSupport

// A player's commands (sent, awaited, on several players at once or in turn), settings, tracks,
// audio devices and the escape hatches to mpv's own names.
extension Player {
    // MARK: Commands

    /// Checks `command` and hands it to mpv without waiting: the form for code that must not
    /// wait (a feature's event handler, an `.immediate` bus handler on the event pump, a render
    /// loop, a GTK callback). Everything else awaits the command instead, by name
    /// (`try await player.play()`, the methods of ``MediaPlayer``) or as a value
    /// (``perform(_:timeout:)``).
    ///
    /// A setting (volume, mute, speed, pause, loop, fullscreen, ...) shows in the read-outs and
    /// its change event is published before this returns, in order with the player's other
    /// events; mpv carries it out a moment later. Settings of one property sent faster than mpv
    /// answers coalesce: one is in flight at a time and the latest waits behind it, so a slider
    /// dragged or a fade sent in a loop never fills mpv's queue, and mpv ends with the last
    /// value. The rest of the player's state changes as mpv carries the command out (reported by
    /// events as usual). Commands sent or awaited on one player are carried out in the order
    /// they were made (and after a ``load(_:startPaused:)`` started before them), except that a
    /// coalesced setting may skip values sent meanwhile.
    ///
    /// - Throws: at once, ``PlayerError/invalidArgument(name:value:reason:)`` for a bad argument,
    ///   ``PlayerError/noMediaLoaded(operation:)`` for a seek with nothing loaded,
    ///   ``PlayerError/fullscreenRefused(_:reason:)`` when the ``fullscreenArbiter`` refuses, or
    ///   ``PlayerError/playerShutDown(_:)``. When mpv refuses the command later, the refusal is
    ///   reported as a ``PlayerEvent/error(_:)`` event naming it.
    public func send(_ command: PlayerCommand) throws(PlayerError) {
        let command = try checked(command)
        try arbitrate(command)
        try core.send(.command(command))
    }

    /// `command` after the checks every entry point makes; throws what it refuses.
    func checked(_ command: PlayerCommand) throws(PlayerError) -> PlayerCommand {
        try command.validate()
        switch command {
        case .seek, .seekBy:
            guard state.hasMedia else { throw .noMediaLoaded(operation: "seek") }
        case .stepFrame, .stepFrameBack:
            guard state.hasMedia else { throw .noMediaLoaded(operation: "step a frame") }
        case .selectTrack(let kind, let id):
            guard state.hasMedia else { throw .noMediaLoaded(operation: "select a track") }
            if let id {
                let available = tracks.filter { $0.kind == kind }.map(\.id)
                guard available.contains(id) else { throw .unknownTrack(kind: kind, id: id, available: available) }
            }
        case .setVolume(let volume):
            // mpv clamps silently above its maximum; say so instead.
            let maximum = model(\.volumeMaximum) ?? 130
            guard volume <= maximum else {
                throw .invalidArgument(name: "volume", value: "\(volume)", reason: "must be at most \(maximum) (mpv's volume-max)")
            }
        case .setPositionTiming(.whenQueued) where configuration.videoOutput == .frames:
            // Frames the app draws are handed over when due, so that a frame's `videoTime` names
            // the frame shown: such a player reports when due either way.
            return .setPositionTiming(.whenDue)
        default:
            break
        }
        return command
    }

    /// Asks the fullscreen arbiter, if any, about a fullscreen request.
    func arbitrate(_ command: PlayerCommand) throws(PlayerError) {
        guard case .setFullscreen(let fullscreen) = command, let arbiter = fullscreenArbiter else { return }
        if let reason = arbiter.refusal(ofFullscreen: fullscreen, for: self) { throw .fullscreenRefused(id, reason: reason) }
    }

    /// Runs `command` and suspends until mpv carried it out or refused it: the awaited form of
    /// every command, which the named methods (``MediaPlayer/play()``,
    /// ``MediaPlayer/seek(to:precision:)``, ``PlayerCommand/setSpeed(_:)``, …) call. No thread
    /// waits: the command goes to mpv as ``send(_:)`` sends it, and mpv's answer, read by the
    /// event pump, resumes the caller.
    ///
    /// **Ordering.** Commands sent or performed on one player are carried out in the order they
    /// were made, as with ``send(_:)``. When it returns, the player's read-outs reflect the
    /// command (`perform(.setVolume(_:))` then `snapshot.volume`, ``MediaPlayer/pause()`` then
    /// ``isPaused``, and so on for mute, speed, loop, direction, fullscreen and track selection)
    /// and the matching change event has been published; a change mpv makes later (a key
    /// pressed in mpv's window) still comes through. A seek returns once the player shows the
    /// new position: ``position`` reads where it landed (the target of an exact seek) and
    /// ``PlayerEvent/seekCompleted(position:)`` has been published; a seek that the item's end
    /// overtakes returns then. A refusal is thrown to the caller and not reported as an
    /// ``PlayerEvent/error(_:)`` event.
    ///
    /// **Bounds.** It returns within `timeout` on the monotonic clock; cancelling the calling
    /// task does not withdraw the command (mpv has it), so the call still returns mpv's answer.
    ///
    /// - Parameters:
    ///   - command: the command.
    ///   - timeout: how long to wait for mpv's answer (default 10 s; must be positive).
    /// - Throws: what ``send(_:)`` throws at once (a bad argument, nothing loaded for a seek, a
    ///   refused fullscreen, ``PlayerError/playerShutDown(_:)``); mpv's refusal
    ///   (``PlayerError/commandFailed(command:_:)``, ``PlayerError/invalidPropertyValue(name:value:_:)``);
    ///   ``PlayerError/playerShutDown(_:)`` when the player shuts down first;
    ///   ``PlayerError/timedOut(operation:after:)`` after `timeout` (mpv may still carry the
    ///   command out); ``PlayerError/replyLost(_:operation:)`` when mpv's event queue overflowed
    ///   before its answer was read.
    public func perform(_ command: PlayerCommand, timeout: Duration = .seconds(10)) async throws(PlayerError) {
        guard timeout > .zero else {
            throw .invalidArgument(name: "timeout", value: "\(timeout)", reason: "must be positive")
        }
        let command = try checked(command)
        try arbitrate(command)
        try await core.request(.command(command), timeout: timeout)
    }

    /// Performs a command on each of several players at once, for async code that moves players
    /// together (start, pause or seek a group; one steps a frame while another seeks): each
    /// command is checked for its player and handed to every player's mpv core, one right after
    /// another and none waiting for mpv (microseconds apart, where a loop of
    /// ``perform(_:timeout:)`` calls would hand it to each only after the one before had
    /// answered), and then every answer is awaited, as ``perform(_:timeout:)`` awaits one. No
    /// thread waits. One command for all: `Player.perform(each: players.map { ($0, .play) })`.
    ///
    /// **Ordering.** On each player, the commands are carried out in the order of the commands
    /// sent or performed on that player. When it returns, every player's read-outs reflect its
    /// result.
    ///
    /// **Bounds.** It returns within `timeout` on the monotonic clock (one deadline for all).
    ///
    /// Players of other ``MediaPlayer`` types (a test's `FakePlayer`) get their commands through
    /// their own ``MediaPlayer/perform(_:timeout:)``, all at once (in turn: one after another),
    /// beside the mpv-backed ones.
    /// - Parameters:
    ///   - commands: the players and their commands (a player listed twice gets both, in order).
    ///   - timeout: how long to wait for the answers (default 10 s; must be positive).
    ///   - pacing: all handed over at once (``CommandPacing/together``, the default) or each once
    ///     the one before answered (``CommandPacing/inTurn``).
    /// - Returns: one result per entry of `commands`, in their order: success, or what
    ///   ``perform(_:timeout:)`` would have thrown for that player. A refusal on one player does
    ///   not stop the command on the others.
    public static func perform(
        each commands: [(any MediaPlayer, PlayerCommand)], timeout: Duration = .seconds(10),
        pacing: CommandPacing = .together
    ) async -> [Result<Void, PlayerError>] {
        let players = commands.map(\.0)
        guard timeout > .zero else {
            let error = PlayerError.invalidArgument(name: "timeout", value: "\(timeout)", reason: "must be positive")
            return players.map { _ in .failure(error) }
        }
        if pacing == .inTurn { return await performInTurn(commands, timeout: timeout) }
        var results = [Result<Void, PlayerError>](repeating: .success(()), count: players.count)
        var mpvIndices: [Int] = []
        var items: [(core: PlayerCore, operation: Result<EngineOperation, PlayerError>)] = []
        var others: [(index: Int, player: any MediaPlayer, command: PlayerCommand)] = []
        for (index, (candidate, command)) in commands.enumerated() {
            guard let player = candidate as? Player else {
                others.append((index, candidate, command))
                continue
            }
            mpvIndices.append(index)
            do throws(PlayerError) {
                let checked = try player.checked(command)
                try player.arbitrate(checked)
                items.append((player.core, .success(.command(checked))))
            } catch {
                items.append((player.core, .failure(error)))
            }
        }
        let pending = others
        async let otherResults = withTaskGroup(of: (Int, Result<Void, PlayerError>).self) { group in
            for (index, player, command) in pending {
                group.addTask {
                    do throws(PlayerError) {
                        try await player.perform(command, timeout: timeout)
                        return (index, .success(()))
                    } catch {
                        return (index, .failure(error))
                    }
                }
            }
            var collected: [(Int, Result<Void, PlayerError>)] = []
            for await result in group { collected.append(result) }
            return collected
        }
        let mpvResults = await PlayerCore.requestAll(items, timeout: timeout)
        for (index, result) in zip(mpvIndices, mpvResults) { results[index] = result.map { _ in () } }
        for (index, result) in await otherResults { results[index] = result }
        return results
    }

    /// ``perform(each:timeout:pacing:)`` in turn. Players over mpv only: each command is handed to
    /// its core by the pump that read the answer before (``PlayerCore/requestInTurn(_:timeout:)``),
    /// so nothing waits between two players. With other players among them, one after another,
    /// each awaited.
    static func performInTurn(
        _ commands: [(any MediaPlayer, PlayerCommand)], timeout: Duration
    ) async -> [Result<Void, PlayerError>] {
        let checked = commands.compactMap { candidate, command -> (PlayerCore, Result<EngineOperation, PlayerError>)? in
            guard let player = candidate as? Player else { return nil }
            do throws(PlayerError) {
                let command = try player.checked(command)
                try player.arbitrate(command)
                return (player.core, .success(.command(command)))
            } catch {
                return (player.core, .failure(error))
            }
        }
        if checked.count == commands.count {
            return await PlayerCore.requestInTurn(checked, timeout: timeout).map { $0.map { _ in () } }
        }
        let deadline = ContinuousClock.now + timeout
        var results: [Result<Void, PlayerError>] = []
        for (player, command) in commands {
            let left = deadline - ContinuousClock.now
            guard left > .zero else {
                results.append(.failure(.timedOut(operation: "\(command) on player \(player.id) (in turn)", after: timeout)))
                continue
            }
            do throws(PlayerError) {
                try await player.perform(command, timeout: left)
                results.append(.success(()))
            } catch {
                results.append(.failure(error))
            }
        }
        return results
    }

    // MARK: Settings

    /// The mirroring set with ``PlayerCommand/setFlip(_:)`` (none at first).
    var flip: VideoFlip { model(\.flip) }

    /// The feature that decides whether this player's own fullscreen requests may go ahead
    /// (a `FullscreenPolicy` that governs it), or nil: see ``FullscreenArbiter``. Held weakly.
    /// Set it with ``setFullscreenArbiter(_:replacing:)``.
    public var fullscreenArbiter: (any FullscreenArbiter)? { arbiter.withLock { $0.object } }

    /// Installs `newArbiter` (nil removes the current one) if the arbiter now in place is
    /// `expected` (compared by identity; nil: none, or one that was deallocated). Atomic, so two
    /// features cannot both believe they arbitrate this player. Safe from any thread.
    /// - Returns: whether `newArbiter` was installed.
    @discardableResult
    public func setFullscreenArbiter(_ newArbiter: (any FullscreenArbiter)?, replacing expected: (any FullscreenArbiter)?) -> Bool {
        arbiter.withLock { current in
            guard current.object === expected else { return false }
            current = WeakReference(newArbiter)
            return true
        }
    }

    // MARK: Tracks

    /// Adds subtitles from a file (SubRip, WebVTT, ASS, ... anything mpv reads) to the loaded
    /// item and, unless `select` is false, shows them in place of the current subtitle track.
    /// Returns once mpv has read the file and ``tracks`` lists the new track.
    /// - Parameters:
    ///   - path: the subtitle file.
    ///   - title: the track's title (default: none; the file name when only `language` is given).
    ///   - language: the track's language tag, e.g. "eng".
    ///   - select: whether to show the new track now.
    /// - Returns: the new track, as ``tracks`` lists it (``Track/externalFile`` is `path`).
    /// - Throws: ``PlayerError/noMediaLoaded(operation:)`` with nothing loaded; for the file, the
    ///   errors of ``load(_:startPaused:)`` (``PlayerError/fileNotFound(path:)``,
    ///   ``PlayerError/emptyFile(path:)``, ...); ``PlayerError/subtitlesFailed(path:_:)`` when
    ///   mpv cannot read it.
    @discardableResult
    public func addSubtitles(path: String, title: String? = nil, language: String? = nil, select: Bool = true) async throws(PlayerError) -> Track {
        guard state.hasMedia else { throw .noMediaLoaded(operation: "add subtitles") }
        let argument = try validate(.file(path))
        do {
            try await core.request(.addSubtitles(path: argument, title: title, language: language, select: select), timeout: Self.answerTimeout)
        } catch .commandFailed(_, let error) {
            throw .subtitlesFailed(path: path, error)
        }
        try await core.refreshTrackList(timeout: Self.answerTimeout)
        // mpv keeps the path as given; the newest external subtitle track if it normalized it.
        let external = tracks.filter { $0.kind == .subtitle && $0.externalFile != nil }
        let added = external.filter { $0.externalFile == argument }.max { $0.id < $1.id } ?? external.max { $0.id < $1.id }
        guard let added else {
            throw .subtitlesFailed(path: path, MPVError(code: -1, message: "the track did not appear in mpv's track list"))
        }
        return added
    }

    // MARK: Audio devices

    /// The audio output devices this player can use, as mpv's audio drivers see them now (the
    /// first is `auto`, the system's default). Suspends while mpv asks the sound server.
    /// - Throws: what ``property(_:)`` throws.
    public func audioDevices() async throws(PlayerError) -> [AudioDevice] {
        try await core.audioDeviceList(timeout: Self.answerTimeout)
    }

    /// Sends this player's sound to another device (one of ``audioDevices()``), at once, also
    /// while playing; other players keep theirs. The device is in use when this returns (mpv's
    /// `audio-device` property names it).
    /// - Throws: ``PlayerError/unknownAudioDevice(name:available:)`` when there is no such
    ///   device (the player keeps its device).
    public func setAudioDevice(_ name: String) async throws(PlayerError) {
        let available = try await audioDevices().map(\.name)
        guard available.contains(name) else { throw .unknownAudioDevice(name: name, available: available) }
        try await core.request(.setAudioDevice(name), timeout: Self.answerTimeout)
    }

    // MARK: Escape hatches

    /// Sets any mpv property, and returns once mpv took it. The name and value are passed to mpv
    /// as data, never parsed as a command.
    /// - Throws: ``PlayerError/propertyNotFound(name:)``,
    ///   ``PlayerError/invalidPropertyValue(name:value:_:)`` or
    ///   ``PlayerError/propertyUnavailable(name:)``; what ``perform(_:timeout:)`` throws while
    ///   waiting for mpv's answer.
    public func setProperty(_ name: String, to value: MPVValue) async throws(PlayerError) {
        try await core.request(.setProperty(name: name, value: value), timeout: Self.answerTimeout)
    }

    /// Reads any mpv property: suspends until mpv answers (no thread waits), at most 10 s.
    /// Prefer the read-out properties and events where they exist: they never wait.
    /// - Throws: ``PlayerError/propertyNotFound(name:)`` or ``PlayerError/propertyUnavailable(name:)``;
    ///   ``PlayerError/playerShutDown(_:)``, ``PlayerError/timedOut(operation:after:)`` or
    ///   ``PlayerError/replyLost(_:operation:)`` when no answer comes.
    public func property(_ name: String) async throws(PlayerError) -> MPVValue {
        try await core.read(name, timeout: Self.answerTimeout)
    }

    /// Runs any mpv command from an argument array, e.g. `["screenshot-to-file", path, "video"]`,
    /// and returns once mpv carried it out. Each argument is passed to mpv as one word, so no
    /// file name or title can inject a command.
    /// - Returns: the command's result (``MPVValue/none`` for most commands).
    /// - Throws: ``PlayerError/unknownCommand(name:)`` for a name mpv does not have,
    ///   ``PlayerError/commandFailed(command:_:)`` when mpv refuses or fails it; what
    ///   ``perform(_:timeout:)`` throws while waiting for mpv's answer.
    @discardableResult
    public func command(_ arguments: [String]) async throws(PlayerError) -> MPVValue {
        guard let name = EngineOperation.commandName(arguments) else {
            throw .invalidArgument(name: "command", value: "\(arguments)", reason: "has no command name")
        }
        guard core.catalog.commands.contains(name) else { throw .unknownCommand(name: name) }
        return try await core.request(.runCommand(arguments), timeout: Self.answerTimeout)
    }
}
