import Foundation
import PlayerKitCore

/// What a ``SyncGroup`` tells each member, published through the member's own pipeline
/// (``/PlayerKitCore/Player/publish(_:)``): to its delegate (``/PlayerKitCore/PlayerDelegate/player(_:didEmit:)``), to bus subscribers of its ID, and to
/// async sequences.
///
/// `@nonexhaustive`: a `switch` over it outside PlayerKit needs `@unknown default`.
@nonexhaustive
public enum SyncEvent: PlayerFeatureEvent {
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

}

extension PlayerEventKind {
    /// ``SyncEvent/drift(_:)``.
    public static let syncDrift: PlayerEventKind = "syncDrift"
}
