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

    private struct State: Sendable {
        var players: [any MediaPlayer]
        var focus: PlayerID?
        /// Each player's own volume and mute, from before the policy changed them.
        var saved: [PlayerID: (volume: Double?, muted: Bool?)] = [:]
    }

    /// Read and changed under its lock, by one step of a call at a time.
    private let state: Locked<State>
    /// One call at a time, in call order: a call's changes are made before the next call decides.
    private let calls = AsyncSerialGate()

    /// A policy over `players`.
    /// - Throws: ``/PlayerKitCore/PlayerError/invalidArgument(name:value:reason:)`` for a ducking volume that
    ///   is NaN or outside 0...100, or a player listed twice.
    public init(mode: Mode, players: [any MediaPlayer] = []) throws(PlayerError) {
        if case .duck(let volume) = mode, !(volume.isFinite && (0...100).contains(volume)) {
            throw .invalidArgument(name: "ducking volume", value: "\(volume)", reason: "must be between 0 and 100")
        }
        guard Set(players.map(\.id)).count == players.count else {
            throw .invalidArgument(name: "audio policy", value: players.map(\.id.rawValue).joined(separator: ", "), reason: "lists a player twice")
        }
        self.mode = mode
        state = Locked(State(players: players))
    }

    /// The player with the focus, if any (set as a call decides, before its changes are made).
    public var focused: PlayerID? { state.withLock { $0.focus } }

    /// Adds a player; it sounds as the mode says for a player without the focus. Returns once
    /// it does.
    /// - Throws: the errors of setting its volume or mute.
    public func add(_ player: any MediaPlayer) async throws(PlayerError) {
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
    /// lock held; the first failure is thrown once every command has its answer.
    private func run(
        _ decide: @escaping @Sendable (inout State) throws(PlayerError) -> [(any MediaPlayer, PlayerCommand)]
    ) async throws(PlayerError) {
        try await calls.run { () async throws(PlayerError) in
            let commands = try state.withLock { (state: inout State) throws(PlayerError) in try decide(&state) }
            guard !commands.isEmpty else { return }
            for result in await Player.perform(each: commands) { try result.get() }
        }
    }

    /// Turns a player without the focus down as the mode says, remembering its own setting.
    private func quiet(_ player: any MediaPlayer, in state: inout State) -> [(any MediaPlayer, PlayerCommand)] {
        switch mode {
        case .mix:
            return []
        case .solo, .duck:
            if state.saved[player.id] == nil { state.saved[player.id] = (player.snapshot.volume, player.snapshot.isMuted) }
            if case .duck(let volume) = mode { return [(player, .setVolume(volume))] }
            return [(player, .setMuted(true))]
        }
    }

    /// Puts back a player's own volume and mute.
    private func restore(_ player: any MediaPlayer, in state: inout State) -> [(any MediaPlayer, PlayerCommand)] {
        guard let saved = state.saved.removeValue(forKey: player.id) else { return [] }
        var commands: [(any MediaPlayer, PlayerCommand)] = []
        if let volume = saved.volume { commands.append((player, .setVolume(volume))) }
        if let muted = saved.muted { commands.append((player, .setMuted(muted))) }
        return commands
    }
}
