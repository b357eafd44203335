import PlayerKitCore

/// What an ``AutoplayCoordinator`` tells the player of a feed item, published through the
/// player's own pipeline (``/PlayerKitCore/Player/publish(_:)``): to its delegate
/// (``/PlayerKitCore/PlayerDelegate/player(_:didEmit:)``), to bus subscribers of its ID, and to async sequences.
///
/// `@nonexhaustive`: a `switch` over it outside PlayerKit needs `@unknown default`.
@nonexhaustive
public enum AutoplayEvent: PlayerFeatureEvent {
    /// The coordinator decided about this player's item: play, pause, release or prepare, and why.
    case decision(AutoplayCoordinator.Decision)

    /// ``PlayerKitCore/PlayerEventKind/autoplayDecision``.
    public var kind: PlayerEventKind {
        switch self {
        case .decision: return .autoplayDecision
        }
    }

    /// E.g. "autoplayDecision(play post-3: most visible ...)".
    public var description: String {
        switch self {
        case .decision(let decision): return "autoplayDecision(\(decision))"
        }
    }
}

extension PlayerEventKind {
    /// ``AutoplayEvent/decision(_:)``.
    public static let autoplayDecision: PlayerEventKind = "autoplayDecision"
}
