import Foundation
import PlayerKitCore

/// What a ``ClipLoop`` tells the player it plays on, published
/// through the player's own pipeline (``/PlayerKitCore/Player/publish(_:)``): to its delegate
/// (``/PlayerKitCore/PlayerDelegate/player(_:didEmit:)``), to bus subscribers of its ID, async sequences, and NotificationCenter.
///
/// `@nonexhaustive`: a `switch` over it outside PlayerKit needs `@unknown default`.
@nonexhaustive
public enum ClipEvent: PlayerFeatureEvent {
    /// The player moved to another clip: `index` into the clip list, and how the seam looked
    /// (nil for the first clip, and when it was not measured).
    case clipChanged(index: Int, seam: SeamTiming?)
    /// A ``ClipLoop`` started its list over for the `count`-th time, with the seam's timing.
    /// Follows the ``clipChanged(index:seam:)`` of the first clip.
    case loopWrapped(count: Int, seam: SeamTiming?)
    /// A ``ClipLoop`` found the clip at `index` unplayable before it started (the error names
    /// the clip) and left it out.
    case clipUnplayable(index: Int, error: PlayerError)

    /// ``PlayerKitCore/PlayerEventKind/clip``: every event of ``ClipEvent`` has this
    /// one kind (filter on it, then switch over the event).
    public var kind: PlayerEventKind { .clip }

    /// E.g. "clipChanged(1, gap 0.4 ms (frame to frame 33.7 ms))".
    public var description: String {
        switch self {
        case .clipChanged(let index, let seam): return "clipChanged(\(index)\(seam.map { ", \($0)" } ?? ""))"
        case .loopWrapped(let count, let seam): return "loopWrapped(\(count)\(seam.map { ", \($0)" } ?? ""))"
        case .clipUnplayable(let index, let error): return "clipUnplayable(\(index), \(error))"
        }
    }

    /// The seam's timing, when measured.
    var seam: SeamTiming? {
        switch self {
        case .clipChanged(_, let seam), .loopWrapped(_, let seam): return seam
        case .clipUnplayable: return nil
        }
    }

}

extension PlayerEventKind {
    /// Every ``ClipEvent``, whatever its case: what a ``ClipLoop`` reports about a player.
    public static let clip: PlayerEventKind = "clip"
}
