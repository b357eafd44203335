import PlayerKitCore
import PlayerKitSupport

/// Who is heard when several players play at once: one player at a time (``Mode/solo``),
/// everyone (``Mode/mix``), or the focused player at full volume over the others turned down
/// (``Mode/duck(volume:)``).
///
/// ```swift
/// let audio = try AudioPolicy(mode: .duck(volume: 20), players: [main, preview, background])
/// try audio.focus(main)        // main as it was; preview and background at volume 20
/// try audio.focus(preview)     // preview back to its own volume; main down to 20
/// ```
///
/// The policy remembers each player's own volume and mute and restores them when the player
/// gets the focus back, or when the policy lets go (``clearFocus()``).
///
/// Written, as every PlayerKit feature, against the core's public API only.
///
/// **Threading.** Methods may be called from any thread. Each call is one step under the
/// policy's one lock, and its volume and mute changes are made when it returns: a read of the
/// players' volumes right after `focus` shows the new ones. This is the one feature whose steps
/// include waiting calls (``/PlayerKitCore/MediaPlayer/setVolume(_:)`` and
/// ``/PlayerKitCore/MediaPlayer/setMuted(_:)`` wait for mpv, a few milliseconds), so that calls
/// racing from several threads take effect whole, one after another; nothing the policy calls
/// calls back into it (Architecture.md, "Features: one concurrency model"). Call it from a thread
/// of your own, not from async code on Swift's cooperative pool.
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
    public let mode: Mode

    private struct State: Sendable {
        var players: [any MediaPlayer]
        var focus: PlayerID?
        /// Each player's own volume and mute, from before the policy changed them.
        var saved: [PlayerID: (volume: Double?, muted: Bool?)] = [:]
    }

    /// Read and changed under its lock, for a whole call.
    private let state: Locked<State>

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

    /// The player with the focus, if any. Waits while a call of the policy runs.
    public var focused: PlayerID? { state.withLock { $0.focus } }

    /// Adds a player; it sounds as the mode says for a player without the focus.
    public func add(_ player: any MediaPlayer) throws(PlayerError) {
        try state.withLock { (state: inout State) throws(PlayerError) in
            guard !state.players.contains(where: { $0 === player }) else { return }
            state.players.append(player)
            guard state.focus != nil else { return }
            try quiet(player, in: &state)
        }
    }

    /// Gives `player` the focus: it sounds as it would alone, and the others as the mode says.
    /// - Throws: ``/PlayerKitCore/PlayerError/invalidArgument(name:value:reason:)`` for a player that is not
    ///   in the policy; the errors of setting volume or mute.
    public func focus(_ player: any MediaPlayer) throws(PlayerError) {
        try state.withLock { (state: inout State) throws(PlayerError) in
            guard state.players.contains(where: { $0 === player }) else {
                throw .invalidArgument(name: "audio focus", value: player.id.rawValue, reason: "is not in the audio policy")
            }
            try restore(player, in: &state)
            state.focus = player.id
            for other in state.players where other !== player && !other.isShutDown {
                try quiet(other, in: &state)
            }
        }
    }

    /// Lets go of the focus: every player sounds as it did before the policy changed it.
    public func clearFocus() throws(PlayerError) {
        try state.withLock { (state: inout State) throws(PlayerError) in
            state.focus = nil
            for player in state.players where !player.isShutDown {
                try restore(player, in: &state)
            }
        }
    }

    /// Turns a player without the focus down as the mode says, remembering its own setting.
    private func quiet(_ player: any MediaPlayer, in state: inout State) throws(PlayerError) {
        switch mode {
        case .mix:
            return
        case .solo, .duck:
            if state.saved[player.id] == nil { state.saved[player.id] = (player.volume, player.isMuted) }
            if case .duck(let volume) = mode {
                try player.setVolume(volume)
            } else {
                try player.setMuted(true)
            }
        }
    }

    /// Puts back a player's own volume and mute.
    private func restore(_ player: any MediaPlayer, in state: inout State) throws(PlayerError) {
        guard let saved = state.saved.removeValue(forKey: player.id) else { return }
        if let volume = saved.volume { try player.setVolume(volume) }
        if let muted = saved.muted { try player.setMuted(muted) }
    }
}
