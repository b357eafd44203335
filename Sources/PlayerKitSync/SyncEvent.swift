import Foundation
import PlayerKitCore

/// What a ``SyncGroup`` tells each member, published through the member's own pipeline
/// (``/PlayerKitCore/Player/publish(_:)``): to its delegate (``/PlayerKitCore/PlayerDelegate/player(_:didEmit:)`` and, when the
/// delegate adopts ``SyncEventDelegate``, the typed method), to bus subscribers of its ID, and to
/// async sequences.
///
/// `@nonexhaustive`: a `switch` over it outside PlayerKit needs `@unknown default`.
@nonexhaustive
public enum SyncEvent: PlayerDelegateEvent {
    /// How far this member is from the group's clock, in seconds (positive: ahead), about once
    /// per ``DriftCorrector/Settings/driftReportInterval``.
    case drift(Double)

    /// ``PlayerKitCore/PlayerEventKind/syncDrift``.
    public var kind: PlayerEventKind {
        switch self {
        case .drift: return .syncDrift
        }
    }

    /// E.g. "syncDrift(+1.2 ms)".
    public var description: String {
        switch self {
        case .drift(let seconds): return String(format: "syncDrift(%+.1f ms)", seconds * 1000)
        }
    }

    /// Calls the matching ``SyncEventDelegate`` method, if the delegate adopts it.
    public func dispatch(to delegate: any PlayerDelegate, from player: any MediaPlayer) {
        guard let delegate = delegate as? any SyncEventDelegate else { return }
        switch self {
        case .drift(let seconds): delegate.player(player, didDriftBy: seconds)
        }
    }
}

/// Typed delegate methods for ``SyncEvent``s: adopt it next to ``/PlayerKitCore/PlayerDelegate`` on a member's
/// delegate. Called on the player's delegate queue, in the player's event order, after
/// ``/PlayerKitCore/PlayerDelegate/player(_:didEmit:)``. Every method does nothing by default.
public protocol SyncEventDelegate: PlayerDelegate {
    /// ``SyncEvent/drift(_:)``. Default: nothing.
    func player(_ player: any MediaPlayer, didDriftBy seconds: Double)
}

extension SyncEventDelegate {
    /// Does nothing.
    public func player(_ player: any MediaPlayer, didDriftBy seconds: Double) {}
}

extension PlayerEventKind {
    /// ``SyncEvent/drift(_:)``.
    public static let syncDrift: PlayerEventKind = "syncDrift"
}
