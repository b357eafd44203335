import PlayerKitSupport
import Synchronization

/// The IDs of live players in this process. An ID is reserved before its core is created
/// and freed when the player is shut down or deallocated.
enum PlayerRegistry {
    private static let live = Locked<[PlayerID: UInt64]>([:])
    private static let tokens = Atomic<UInt64>(0)
    /// The live players themselves, held weakly, by ID (set once a player is made).
    private static let players = Locked<[PlayerID: (token: UInt64, player: WeakReference<Player>)]>([:])

    /// Records `player` as the live player with its ID (after ``reserve(_:)``).
    static func register(_ player: Player, token: UInt64) {
        players.withLock { $0[player.id] = (token, WeakReference(player)) }
    }

    /// The live player with `id`, if any.
    static func player(_ id: PlayerID) -> Player? {
        let token = live.withLock { $0[id] }
        return players.withLock { players in
            guard let token, let entry = players[id], entry.token == token else { return nil }
            return entry.player.object
        }
    }

    /// Reserves `id`, returning a token that frees it.
    /// - Throws: ``PlayerError/duplicateID(_:)`` when a live player has it.
    static func reserve(_ id: PlayerID) throws(PlayerError) -> UInt64 {
        let token = tokens.add(1, ordering: .relaxed).newValue
        let reserved = live.withLock { live -> Bool in
            guard live[id] == nil else { return false }
            live[id] = token
            return true
        }
        guard reserved else { throw .duplicateID(id) }
        return token
    }

    /// Frees `id` if `token` still holds it.
    static func release(_ id: PlayerID, token: UInt64) {
        live.withLock { live in
            if live[id] == token { live[id] = nil }
        }
        players.withLock { players in
            if players[id]?.token == token { players[id] = nil }
        }
    }

    /// The IDs of all live players, sorted.
    static var liveIDs: [PlayerID] {
        live.withLock { Array($0.keys) }.sorted()
    }
}
