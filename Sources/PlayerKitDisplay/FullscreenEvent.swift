import Foundation
import PlayerKitCore

/// What a ``FullscreenPolicy`` tells each player it concerns, published through the player's
/// own pipeline (``/PlayerKitCore/Player/publish(_:)``): to its delegate (``/PlayerKitCore/PlayerDelegate/player(_:didEmit:)`` and, when the
/// delegate adopts ``FullscreenEventDelegate``, the typed methods), to bus subscribers of its
/// ID, async sequences, and NotificationCenter.
///
/// `@nonexhaustive`: a `switch` over it outside PlayerKit needs `@unknown default`.
@nonexhaustive
public enum FullscreenEvent: PlayerDelegateEvent {
    /// The owner of the player's policy changed: sent to the old and the new owner, with the
    /// new owner's ID (nil when the policy became free).
    case ownershipChanged(owner: PlayerID?)
    /// The player entered (true) or left (false) fullscreen through its policy.
    case fullscreenChanged(Bool)
    /// The app (or an ``OrientationSource``) reported a new screen orientation; sent to the
    /// policy's owner.
    case orientationChanged(Orientation)

    /// ``PlayerKitCore/PlayerEventKind/fullscreenOwnershipChanged``, ``PlayerKitCore/PlayerEventKind/fullscreenChanged`` or
    /// ``PlayerKitCore/PlayerEventKind/orientationChanged``.
    public var kind: PlayerEventKind {
        switch self {
        case .ownershipChanged: return .fullscreenOwnershipChanged
        case .fullscreenChanged: return .fullscreenChanged
        case .orientationChanged: return .orientationChanged
        }
    }

    /// `.playerDidChangeFullscreenOwnership` and `.playerDidChangeFullscreen`; orientation
    /// changes are not posted.
    public var notificationName: Notification.Name? {
        switch self {
        case .ownershipChanged: return .playerDidChangeFullscreenOwnership
        case .fullscreenChanged: return .playerDidChangeFullscreen
        case .orientationChanged: return nil
        }
    }

    /// E.g. "fullscreenChanged(true)".
    public var description: String {
        switch self {
        case .ownershipChanged(let owner): return "fullscreenOwnershipChanged(\(owner?.rawValue ?? "none"))"
        case .fullscreenChanged(let fullscreen): return "fullscreenChanged(\(fullscreen))"
        case .orientationChanged(let orientation): return "orientationChanged(\(orientation))"
        }
    }

    /// Calls the matching ``FullscreenEventDelegate`` method, if the delegate adopts it.
    public func dispatch(to delegate: any PlayerDelegate, from player: Player) {
        guard let delegate = delegate as? any FullscreenEventDelegate else { return }
        switch self {
        case .ownershipChanged(let owner): delegate.player(player, didChangeFullscreenOwner: owner)
        case .fullscreenChanged(let fullscreen): delegate.player(player, didChangeFullscreen: fullscreen)
        case .orientationChanged(let orientation): delegate.player(player, didSeeOrientation: orientation)
        }
    }
}

/// Typed delegate methods for ``FullscreenEvent``s: adopt it next to ``/PlayerKitCore/PlayerDelegate`` on a
/// player's delegate. Called on the player's delegate queue, in the player's event order, after
/// ``/PlayerKitCore/PlayerDelegate/player(_:didEmit:)``. Every method does nothing by default.
public protocol FullscreenEventDelegate: PlayerDelegate {
    /// ``FullscreenEvent/ownershipChanged(owner:)``. Default: nothing.
    func player(_ player: Player, didChangeFullscreenOwner owner: PlayerID?)
    /// ``FullscreenEvent/fullscreenChanged(_:)``. Default: nothing.
    func player(_ player: Player, didChangeFullscreen isFullscreen: Bool)
    /// ``FullscreenEvent/orientationChanged(_:)``. Default: nothing.
    func player(_ player: Player, didSeeOrientation orientation: Orientation)
}

extension FullscreenEventDelegate {
    /// Does nothing.
    public func player(_ player: Player, didChangeFullscreenOwner owner: PlayerID?) {}
    /// Does nothing.
    public func player(_ player: Player, didChangeFullscreen isFullscreen: Bool) {}
    /// Does nothing.
    public func player(_ player: Player, didSeeOrientation orientation: Orientation) {}
}

extension PlayerEventKind {
    /// ``FullscreenEvent/ownershipChanged(owner:)``.
    public static let fullscreenOwnershipChanged: PlayerEventKind = "fullscreenOwnershipChanged"
    /// ``FullscreenEvent/fullscreenChanged(_:)``.
    public static let fullscreenChanged: PlayerEventKind = "fullscreenChanged"
    /// ``FullscreenEvent/orientationChanged(_:)``.
    public static let orientationChanged: PlayerEventKind = "orientationChanged"
}

extension Notification.Name {
    /// A player entered or left fullscreen (``FullscreenEvent/fullscreenChanged(_:)``).
    public static let playerDidChangeFullscreen = Notification.Name("PlayerKit.playerDidChangeFullscreen")
    /// A fullscreen policy's owner changed (``FullscreenEvent/ownershipChanged(owner:)``).
    public static let playerDidChangeFullscreenOwnership = Notification.Name("PlayerKit.playerDidChangeFullscreenOwnership")
}
