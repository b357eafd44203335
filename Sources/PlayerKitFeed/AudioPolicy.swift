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
/// **Threading.** Methods may be called from any thread; each runs on the policy's own serial
/// queue, one at a time, and its volume and mute changes are made when it returns.
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

    /// Changed only on `queue`; locked so the read-outs can be read from anywhere.
    private let state: Locked<State>
    private let queue = SerialQueue(label: "PlayerKit.audio-policy")

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

    /// The player with the focus, if any.
    public var focused: PlayerID? { state.withLock { $0.focus } }

    /// Adds a player; it sounds as the mode says for a player without the focus.
    public func add(_ player: any MediaPlayer) throws(PlayerError) {
        try queue.sync { () throws(PlayerError) in
            let added = state.withLock { state -> Bool in
                guard !state.players.contains(where: { $0 === player }) else { return false }
                state.players.append(player)
                return true
            }
            guard added, state.withLock({ $0.focus }) != nil else { return }
            try quiet(player)
        }
    }

    /// Gives `player` the focus: it sounds as it would alone, and the others as the mode says.
    /// - Throws: ``/PlayerKitCore/PlayerError/invalidArgument(name:value:reason:)`` for a player that is not
    ///   in the policy; the errors of setting volume or mute.
    public func focus(_ player: any MediaPlayer) throws(PlayerError) {
        try queue.sync { () throws(PlayerError) in
            let (known, others) = state.withLock { state in
                (state.players.contains { $0 === player }, state.players.filter { $0 !== player && !$0.isShutDown })
            }
            guard known else {
                throw .invalidArgument(name: "audio focus", value: player.id.rawValue, reason: "is not in the audio policy")
            }
            try restore(player)
            state.withLock { $0.focus = player.id }
            for other in others { try quiet(other) }
        }
    }

    /// Lets go of the focus: every player sounds as it did before the policy changed it.
    public func clearFocus() throws(PlayerError) {
        try queue.sync { () throws(PlayerError) in
            let players = state.withLock { state -> [any MediaPlayer] in
                state.focus = nil
                return state.players.filter { !$0.isShutDown }
            }
            for player in players { try restore(player) }
        }
    }

    /// Turns a player without the focus down as the mode says, remembering its own setting.
    private func quiet(_ player: any MediaPlayer) throws(PlayerError) {
        switch mode {
        case .mix:
            return
        case .solo, .duck:
            state.withLock { state in
                if state.saved[player.id] == nil { state.saved[player.id] = (player.volume, player.isMuted) }
            }
            if case .duck(let volume) = mode {
                try player.setVolume(volume)
            } else {
                try player.setMuted(true)
            }
        }
    }

    /// Puts back a player's own volume and mute.
    private func restore(_ player: any MediaPlayer) throws(PlayerError) {
        guard let saved = state.withLock({ $0.saved.removeValue(forKey: player.id) }) else { return }
        if let volume = saved.volume { try player.setVolume(volume) }
        if let muted = saved.muted { try player.setMuted(muted) }
    }
}
