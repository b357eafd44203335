import PlayerKitSupport
import Synchronization

/// The IDs of live players in this process. An ID is reserved before its core is created
/// and freed when the player is shut down or deallocated.
enum PlayerRegistry {
    private static let live = Locked<[PlayerID: UInt64]>([:])
    private static let tokens = Atomic<UInt64>(0)

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
    }

    /// The IDs of all live players, sorted.
    static var liveIDs: [PlayerID] {
        live.withLock { Array($0.keys) }.sorted()
    }
}
