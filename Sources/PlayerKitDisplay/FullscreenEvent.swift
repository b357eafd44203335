import Foundation
import PlayerKitCore

/// What a ``FullscreenPolicy`` tells each player it concerns, published through the player's
/// own pipeline (``/PlayerKitCore/Player/publish(_:)``): to its delegate (``/PlayerKitCore/PlayerDelegate/player(_:didEmit:)``), to bus subscribers
/// of its ID, async sequences, and NotificationCenter.
///
/// `@nonexhaustive`: a `switch` over it outside PlayerKit needs `@unknown default`.
@nonexhaustive
public enum FullscreenEvent: PlayerFeatureEvent {
    /// The owner of the player's policy changed: sent to the old and the new owner, with the
    /// new owner's ID (nil when the policy became free).
    case ownershipChanged(owner: PlayerID?)
    /// The player, as its policy's owner, entered (true) or left (false) fullscreen: through
    /// the policy or by any other path the policy heard of (mpv's window, the window manager).
    case fullscreenChanged(Bool)
    /// The player entered fullscreen by a path its policy could not refuse beforehand (mpv's
    /// window, the window manager, an escape hatch) while `owner` owns the policy, and the policy
    /// took it out of fullscreen again. Published once the player is out (its read-out and mpv
    /// agree), so an app that reads the player's state on hearing it sees it windowed.
    case fullscreenUndone(owner: PlayerID)
    /// The app (or an ``OrientationSource``) reported a new screen orientation; sent to the
    /// policy's owner.
    case orientationChanged(Orientation)
    /// With `fullscreenControlsOrientation` on, the player (the policy's
    /// owner) entered fullscreen in portrait: the app should turn the screen (or its window) to
    /// this orientation. PlayerKit does not rotate the video itself.
    case orientationRequested(Orientation)

    /// ``PlayerKitCore/PlayerEventKind/fullscreenPolicy``: every event of ``FullscreenEvent`` has this
    /// one kind (filter on it, then switch over the event).
    public var kind: PlayerEventKind { .fullscreenPolicy }

    /// E.g. "fullscreenChanged(true)".
    public var description: String {
        switch self {
        case .ownershipChanged(let owner): return "fullscreenOwnershipChanged(\(owner?.rawValue ?? "none"))"
        case .fullscreenChanged(let fullscreen): return "fullscreenChanged(\(fullscreen))"
        case .fullscreenUndone(let owner): return "fullscreenUndone(owner \(owner))"
        case .orientationChanged(let orientation): return "orientationChanged(\(orientation))"
        case .orientationRequested(let orientation): return "orientationRequested(\(orientation))"
        }
    }

}

extension PlayerEventKind {
    /// Every ``FullscreenEvent``, whatever its case: what a ``FullscreenPolicy`` reports about a player.
    public static let fullscreenPolicy: PlayerEventKind = "fullscreenPolicy"
}
