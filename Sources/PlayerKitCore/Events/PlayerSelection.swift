/// Which players a subscription hears: one ID, a set of IDs, or every player. (For one ID,
/// the bus's methods also take a ``PlayerID`` directly: `bus.events(for: "main")`; for several,
/// `bus.subscribe(to: .players(["left", "right"])) { ... }`, or, for IDs in an array,
/// `bus.subscribe(to: .players(Set(ids))) { ... }`.)
///
/// IDs need no live player: a subscription to `"main"` hears every player that has that ID,
/// now or later, including one that replaces an earlier `"main"`.
public enum PlayerSelection: Sendable, Hashable {
    /// Every player on the bus, including players created later.
    case all
    /// The players with these IDs.
    case players(Set<PlayerID>)

    /// The player with this ID.
    static func player(_ id: PlayerID) -> PlayerSelection { .players([id]) }

    /// Whether the selection includes `id`.
    func contains(_ id: PlayerID) -> Bool {
        switch self {
        case .all: return true
        case .players(let ids): return ids.contains(id)
        }
    }
}
