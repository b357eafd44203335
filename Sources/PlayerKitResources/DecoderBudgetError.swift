import PlayerKitCore

/// Why a ``DecoderBudget`` refused or failed a request. Each case names the players and values
/// involved.
///
/// `@nonexhaustive`: a `switch` over it outside PlayerKit needs `@unknown default`.
@nonexhaustive
public enum DecoderBudgetError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The limit given to ``DecoderBudget/init(limit:clock:)`` is below 1.
    case invalidLimit(Int)
    /// Every slot is taken and the caller chose not to wait; `holders` are the players holding
    /// the slots, in the order they got them.
    case full(limit: Int, holders: [PlayerID])
    /// The player holds no slot of this budget (never loaded through it, or already released).
    case notHolding(PlayerID)
    /// The player waited for a slot longer than it was willing to.
    case timedOut(player: PlayerID, limit: Int, after: Duration)
    /// The task waiting for a slot for this player was cancelled.
    case waitCancelled(PlayerID)
    /// The player got its slot but the load itself failed (the slot was freed again), or the
    /// player is shut down; the player's error says why.
    case loadFailed(PlayerError)

    /// A one-line description naming the values.
    public var description: String {
        switch self {
        case .invalidLimit(let limit):
            return "invalid decoder budget \(limit): must be 1 or more players"
        case .full(let limit, let holders):
            return "the decoder budget of \(limit) is full (held by \(holders.map { "\"\($0)\"" }.joined(separator: ", ")))"
        case .notHolding(let player):
            return "player \"\(player)\" holds no slot of this decoder budget"
        case .timedOut(let player, let limit, let after):
            return "player \"\(player)\" waited \(after) for a slot of the decoder budget of \(limit) and gave up"
        case .waitCancelled(let player):
            return "the wait of player \"\(player)\" for a decoder slot was cancelled"
        case .loadFailed(let error):
            return "\(error)"
        }
    }
}
