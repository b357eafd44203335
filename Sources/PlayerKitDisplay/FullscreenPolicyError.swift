import PlayerKitCore

/// Why a ``FullscreenPolicy`` refused a request. Each case names the players involved.
///
/// `@nonexhaustive`: a `switch` over it outside PlayerKit needs `@unknown default`.
@nonexhaustive
public enum FullscreenPolicyError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Another player owns the policy; the request changed nothing.
    case ownedByAnotherPlayer(owner: PlayerID, requester: PlayerID)
    /// Only the owner may do this, and this player is not it (`owner` is nil when nobody owns
    /// the policy).
    case notOwner(PlayerID, owner: PlayerID?)
    /// The player is shut down and cannot own the policy.
    case playerShutDown(PlayerID)
    /// Another fullscreen policy governs the player (it is that policy's member, see
    /// ``FullscreenPolicy/add(_:)``); remove it there first. Nothing changed.
    case governedByAnotherPolicy(PlayerID)
    /// An ``OrientationSource`` cannot work here; the reason says why.
    case orientationSourceUnavailable(String)

    /// A one-line description naming the players.
    public var description: String {
        switch self {
        case .ownedByAnotherPlayer(let owner, let requester):
            return "player \"\(requester)\" cannot take the fullscreen policy: player \"\(owner)\" owns it"
        case .notOwner(let player, let owner):
            return "player \"\(player)\" does not own the fullscreen policy (owner: \(owner.map { "\"\($0)\"" } ?? "none"))"
        case .playerShutDown(let player):
            return "player \"\(player)\" is shut down and cannot own the fullscreen policy"
        case .governedByAnotherPolicy(let player):
            return "player \"\(player)\" is governed by another fullscreen policy"
        case .orientationSourceUnavailable(let reason):
            return "orientation source unavailable: \(reason)"
        }
    }
}
