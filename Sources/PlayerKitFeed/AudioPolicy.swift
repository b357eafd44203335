import PlayerKitCore
import PlayerKitSupport

/// Who is heard when several players play at once: one player at a time (``Mode/solo``),
/// everyone (``Mode/mix``), or the focused player at full volume over the others turned down
/// (``Mode/duck(volume:)``).
///
/// ```swift
/// let audio = try AudioPolicy(mode: .duck(volume: 20), players: [main, preview, background])
/// try await audio.focus(main)        // main as it was; preview and background at volume 20
/// try await audio.focus(preview)     // preview back to its own volume; main down to 20
/// ```
///
/// The policy remembers each player's own volume and mute and restores them when the player
/// gets the focus back, or when the policy lets go (``clearFocus()``).
///
/// **Sound nobody hears, not decoded.** A `.solo` policy made with `decodesUnheardAudio: false`
/// also switches off the audio track of every player without the focus (and of each item it
/// loads meanwhile), so their sound is not decoded at all: about 0.7% of a core per live
/// 1080p angle here, a fifth of what such a player costs (Performance.md). Each gets its audio
/// track back with the focus; mpv then starts its audio decoder where the picture is, so its
/// sound comes a moment (about a tenth of a second) after the call returns, where an unmute
/// is instant. For a multi-view whose viewer picks one angle to hear.
///
/// Written, as every PlayerKit feature, against the core's public API only.
///
/// **Threading.** Methods may be called from any thread or task. Each call decides under the
/// policy's lock (a pure step: who is turned down, who gets their own volume back) and then
/// awaits the players' volume and mute changes with no lock held; calls run one after another,
/// in call order (an async gate, no thread blocked), so calls racing from several tasks take
/// effect whole. When a call returns, its changes are made: a read of the players' volumes
/// right after `focus` shows the new ones.
public final class AudioPolicy: Sendable {
    /// How the players that do not have the focus sound.
    public enum Mode: Sendable, Hashable {
        /// Muted: only the focused player is heard.
        case solo
        /// Unchanged: everyone is heard.
        case mix
        /// Turned down to `volume` (0 to 100) while another player has the focus.
        case duck(volume: Double)
    }

    /// The mode.
    let mode: Mode
    /// Whether the players without the focus still decode their sound: true unless the policy was
    /// made `.solo` with `decodesUnheardAudio: false` (then their audio tracks are off).
    let decodesUnheardAudio: Bool

    private struct State: Sendable {
        var players: [any MediaPlayer]
        var focus: PlayerID?
        /// Each player's own volume and mute, from before the policy changed them.
        var saved: [PlayerID: (volume: Double?, muted: Bool?)] = [:]
        /// The players whose audio track the policy switched off, each with the track it had
        /// selected (nil while none was known), which it gets back with the focus.
        var silenced: [PlayerID: Int?] = [:]
        /// Each player's tracks as its events last listed them (``/PlayerKitCore/PlayerEvent/mediaLoaded(_:)``,
        /// ``/PlayerKitCore/PlayerEvent/tracksChanged(_:)``), with their selection.
        var tracks: [PlayerID: [Track]] = [:]
        /// The subscriptions that keep ``tracks`` and switch the audio of a silenced player's new
        /// item off; only without ``decodesUnheardAudio``.
        var watches: [PlayerID: PlayerSubscription] = [:]
    }

    /// Read and changed under its lock, by one step of a call at a time.
    private let state: Locked<State>
    /// One call at a time, in call order: a call's changes are made before the next call decides.
    private let calls = AsyncSerialGate()

    /// A policy over `players`. With `decodesUnheardAudio` false (true by default) it switches off the audio
    /// track of every player without the focus, so nothing decodes sound nobody hears (see
    /// "Sound nobody hears, not decoded" above). Only a `.solo` policy can: in the other modes
    /// every player is heard.
    /// - Throws: ``/PlayerKitCore/PlayerError/invalidArgument(name:value:reason:)`` for a ducking volume that
    ///   is NaN or outside 0...100, a player listed twice, or `decodesUnheardAudio: false` with a
    ///   mode other than `.solo`.
    public init(mode: Mode, players: [any MediaPlayer] = [], decodesUnheardAudio: Bool = true) throws(PlayerError) {
        if case .duck(let volume) = mode, !(volume.isFinite && (0...100).contains(volume)) {
            throw .invalidArgument(name: "ducking volume", value: "\(volume)", reason: "must be between 0 and 100")
        }
        guard Set(players.map(\.id)).count == players.count else {
            throw .invalidArgument(name: "audio policy", value: players.map(\.id.rawValue).joined(separator: ", "), reason: "lists a player twice")
        }
        if !decodesUnheardAudio, mode != .solo {
            throw .invalidArgument(name: "decodesUnheardAudio", value: "false", reason: "needs the solo mode (in \(mode) every player is heard)")
        }
        self.mode = mode
        self.decodesUnheardAudio = decodesUnheardAudio
        state = Locked(State(players: players))
        for player in players { watch(player) }
    }

    deinit {
        for watch in state.withLock({ $0.watches.values }) { watch.cancel() }
    }

    /// The player with the focus, if any (set as a call decides, before its changes are made).
    var focused: PlayerID? { state.withLock { $0.focus } }

    /// Adds a player; it sounds as the mode says for a player without the focus. Returns once
    /// it does.
    /// - Throws: the errors of setting its volume or mute.
    public func add(_ player: any MediaPlayer) async throws(PlayerError) {
        watch(player)
        try await run { state throws(PlayerError) in
            guard !state.players.contains(where: { $0 === player }) else { return [] }
            state.players.append(player)
            guard state.focus != nil else { return [] }
            return self.quiet(player, in: &state)
        }
    }

    /// Gives `player` the focus: it sounds as it would alone, and the others as the mode says.
    /// Returns once every change is made.
    /// - Throws: ``/PlayerKitCore/PlayerError/invalidArgument(name:value:reason:)`` for a player that is not
    ///   in the policy (nothing changes); the first error of setting a volume or mute (the
    ///   other changes are still made).
    public func focus(_ player: any MediaPlayer) async throws(PlayerError) {
        try await run { state throws(PlayerError) in
            guard state.players.contains(where: { $0 === player }) else {
                throw .invalidArgument(name: "audio focus", value: player.id.rawValue, reason: "is not in the audio policy")
            }
            var commands = self.restore(player, in: &state)
            state.focus = player.id
            for other in state.players where other !== player && !other.isShutDown {
                commands += self.quiet(other, in: &state)
            }
            return commands
        }
    }

    /// Lets go of the focus: every player sounds as it did before the policy changed it.
    /// - Throws: the first error of setting a volume or mute (the other changes are still made).
    public func clearFocus() async throws(PlayerError) {
        try await run { state throws(PlayerError) in
            state.focus = nil
            return state.players.filter { !$0.isShutDown }.flatMap { self.restore($0, in: &state) }
        }
    }

    /// One call: its decision under the lock, then its commands, all players at once, with no
    /// lock held; the first failure is thrown once every command has its answer. A track
    /// change refused because the item went (nothing loaded, or its track is gone) is no failure:
    /// the player's next item is handled as it loads.
    private func run(
        _ decide: @escaping @Sendable (inout State) throws(PlayerError) -> [(any MediaPlayer, PlayerCommand)]
    ) async throws(PlayerError) {
        try await calls.run { () async throws(PlayerError) in
            let commands = try state.withLock { (state: inout State) throws(PlayerError) in try decide(&state) }
            guard !commands.isEmpty else { return }
            for (result, (_, command)) in zip(await Player.perform(each: commands), commands) {
                if case .selectTrack = command, case .failure(let error) = result {
                    switch error {
                    case .noMediaLoaded, .unknownTrack: continue
                    default: break
                    }
                }
                try result.get()
            }
        }
    }

    /// Without ``decodesUnheardAudio``: follows `player`'s tracks, and switches the audio of each
    /// item it loads off while it is silenced (an `.immediate` handler: one step under the lock,
    /// then a command sent, which never waits).
    private func watch(_ player: any MediaPlayer) {
        guard !decodesUnheardAudio else { return }
        let id = player.id
        let subscription = player.eventBus.subscribe(to: id, kinds: [.mediaLoaded, .tracksChanged], delivery: .immediate) {
            [weak self, weak player] record in
            let tracks: [Track]
            switch record.event {
            case .mediaLoaded(let info): tracks = info.tracks
            case .tracksChanged(let list): tracks = list
            default: return
            }
            guard let self, let player else { return }
            let switchOff = self.state.withLock { state -> Bool in
                state.tracks[id] = tracks
                guard state.silenced[id] != nil, let heard = tracks.first(where: { $0.kind == .audio && $0.isSelected }) else { return false }
                state.silenced[id] = heard.id
                return true
            }
            if switchOff { try? player.send(.selectTrack(.audio, id: nil)) }
        }
        let replaced = state.withLock { state -> PlayerSubscription? in
            if state.tracks[id] == nil { state.tracks[id] = player.snapshot.mediaInfo?.tracks }
            defer { state.watches[id] = subscription }
            return state.watches[id]
        }
        replaced?.cancel()
    }

    /// Turns a player without the focus down as the mode says, remembering its own setting.
    private func quiet(_ player: any MediaPlayer, in state: inout State) -> [(any MediaPlayer, PlayerCommand)] {
        switch mode {
        case .mix:
            return []
        case .solo, .duck:
            if state.saved[player.id] == nil { state.saved[player.id] = (player.snapshot.volume, player.snapshot.isMuted) }
            if case .duck(let volume) = mode { return [(player, .setVolume(volume))] }
            var commands: [(any MediaPlayer, PlayerCommand)] = [(player, .setMuted(true))]
            if !decodesUnheardAudio, state.silenced[player.id] == nil {
                // Its audio track off; the one it had comes back with the focus.
                let heard = state.tracks[player.id]?.first { $0.kind == .audio && $0.isSelected }
                state.silenced[player.id] = .some(heard?.id)
                if heard != nil { commands.append((player, .selectTrack(.audio, id: nil))) }
            }
            return commands
        }
    }

    /// Puts back a player's audio track (when the policy switched it off), its own volume and
    /// its mute.
    private func restore(_ player: any MediaPlayer, in state: inout State) -> [(any MediaPlayer, PlayerCommand)] {
        var commands: [(any MediaPlayer, PlayerCommand)] = []
        if let silenced = state.silenced.removeValue(forKey: player.id) {
            let audio = (state.tracks[player.id] ?? []).filter { $0.kind == .audio }
            // The track it had, when the item still has it; else the item's first.
            let track = silenced.flatMap { id in audio.first { $0.id == id } } ?? audio.first
            if let track, !audio.contains(where: \.isSelected) { commands.append((player, .selectTrack(.audio, id: track.id))) }
        }
        guard let saved = state.saved.removeValue(forKey: player.id) else { return commands }
        if let volume = saved.volume { commands.append((player, .setVolume(volume))) }
        if let muted = saved.muted { commands.append((player, .setMuted(muted))) }
        return commands
    }
}
