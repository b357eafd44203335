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
    /// With ``FullscreenPolicy/fullscreenControlsOrientation`` on, the player (the policy's
    /// owner) entered fullscreen in portrait: the app should turn the screen (or its window) to
    /// this orientation. PlayerKit does not rotate the video itself.
    case orientationRequested(Orientation)

    /// ``PlayerKitCore/PlayerEventKind/fullscreenOwnershipChanged``, ``PlayerKitCore/PlayerEventKind/fullscreenChanged``,
    /// ``PlayerKitCore/PlayerEventKind/fullscreenUndone``, ``PlayerKitCore/PlayerEventKind/orientationChanged`` or
    /// ``PlayerKitCore/PlayerEventKind/orientationRequested``.
    public var kind: PlayerEventKind {
        switch self {
        case .ownershipChanged: return .fullscreenOwnershipChanged
        case .fullscreenChanged: return .fullscreenChanged
        case .fullscreenUndone: return .fullscreenUndone
        case .orientationChanged: return .orientationChanged
        case .orientationRequested: return .orientationRequested
        }
    }

    /// `.playerDidChangeFullscreenOwnership` and `.playerDidChangeFullscreen` (an undone
    /// fullscreen too); orientation changes and requests are not posted.
    public var notificationName: Notification.Name? {
        switch self {
        case .ownershipChanged: return .playerDidChangeFullscreenOwnership
        case .fullscreenChanged, .fullscreenUndone: return .playerDidChangeFullscreen
        case .orientationChanged, .orientationRequested: return nil
        }
    }

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

    /// Calls the matching ``FullscreenEventDelegate`` method, if the delegate adopts it.
    public func dispatch(to delegate: any PlayerDelegate, from player: any MediaPlayer) {
        guard let delegate = delegate as? any FullscreenEventDelegate else { return }
        switch self {
        case .ownershipChanged(let owner): delegate.player(player, didChangeFullscreenOwner: owner)
        case .fullscreenChanged(let fullscreen): delegate.player(player, didChangeFullscreen: fullscreen)
        case .fullscreenUndone(let owner): delegate.player(player, hadFullscreenUndoneFor: owner)
        case .orientationChanged(let orientation): delegate.player(player, didSeeOrientation: orientation)
        case .orientationRequested(let orientation): delegate.player(player, requestsOrientation: orientation)
        }
    }
}

/// Typed delegate methods for ``FullscreenEvent``s: adopt it next to ``/PlayerKitCore/PlayerDelegate`` on a
/// player's delegate. Called on the player's delegate queue, in the player's event order, after
/// ``/PlayerKitCore/PlayerDelegate/player(_:didEmit:)``. Every method does nothing by default.
public protocol FullscreenEventDelegate: PlayerDelegate {
    /// ``FullscreenEvent/ownershipChanged(owner:)``. Default: nothing.
    func player(_ player: any MediaPlayer, didChangeFullscreenOwner owner: PlayerID?)
    /// ``FullscreenEvent/fullscreenChanged(_:)``. Default: nothing.
    func player(_ player: any MediaPlayer, didChangeFullscreen isFullscreen: Bool)
    /// ``FullscreenEvent/fullscreenUndone(owner:)``. Default: nothing.
    func player(_ player: any MediaPlayer, hadFullscreenUndoneFor owner: PlayerID)
    /// ``FullscreenEvent/orientationChanged(_:)``. Default: nothing.
    func player(_ player: any MediaPlayer, didSeeOrientation orientation: Orientation)
    /// ``FullscreenEvent/orientationRequested(_:)``. Default: nothing.
    func player(_ player: any MediaPlayer, requestsOrientation orientation: Orientation)
}

extension FullscreenEventDelegate {
    /// Does nothing.
    public func player(_ player: any MediaPlayer, didChangeFullscreenOwner owner: PlayerID?) {}
    /// Does nothing.
    public func player(_ player: any MediaPlayer, didChangeFullscreen isFullscreen: Bool) {}
    /// Does nothing.
    public func player(_ player: any MediaPlayer, hadFullscreenUndoneFor owner: PlayerID) {}
    /// Does nothing.
    public func player(_ player: any MediaPlayer, didSeeOrientation orientation: Orientation) {}
    /// Does nothing.
    public func player(_ player: any MediaPlayer, requestsOrientation orientation: Orientation) {}
}

extension PlayerEventKind {
    /// ``FullscreenEvent/ownershipChanged(owner:)``.
    public static let fullscreenOwnershipChanged: PlayerEventKind = "fullscreenOwnershipChanged"
    /// ``FullscreenEvent/fullscreenChanged(_:)``.
    public static let fullscreenChanged: PlayerEventKind = "fullscreenChanged"
    /// ``FullscreenEvent/fullscreenUndone(owner:)``.
    public static let fullscreenUndone: PlayerEventKind = "fullscreenUndone"
    /// ``FullscreenEvent/orientationChanged(_:)``.
    public static let orientationChanged: PlayerEventKind = "orientationChanged"
    /// ``FullscreenEvent/orientationRequested(_:)``.
    public static let orientationRequested: PlayerEventKind = "orientationRequested"
}

extension Notification.Name {
    /// A player entered or left fullscreen (``FullscreenEvent/fullscreenChanged(_:)``).
    public static let playerDidChangeFullscreen = Notification.Name("PlayerKit.playerDidChangeFullscreen")
    /// A fullscreen policy's owner changed (``FullscreenEvent/ownershipChanged(owner:)``).
    public static let playerDidChangeFullscreenOwnership = Notification.Name("PlayerKit.playerDidChangeFullscreenOwnership")
}
