import Foundation
import PlayerKitCore

/// What a ``MultiView`` tells each member, published through the member's own pipeline
/// (``/PlayerKitCore/MediaPlayer/publish(_:)``), under the one kind ``PlayerKitCore/PlayerEventKind/multiView``: to
/// its delegate, to bus subscribers of its ID, and to async sequences.
///
/// `@nonexhaustive`: a `switch` over it outside PlayerKit needs `@unknown default`.
@nonexhaustive
public enum MultiViewEvent: PlayerFeatureEvent {
    /// Why a member fell out of step.
    ///
    /// `@nonexhaustive`: a `switch` over it outside PlayerKit needs `@unknown default`.
    @nonexhaustive
    public enum Reason: Sendable, Hashable, CustomStringConvertible {
        /// Its player waited for the network (a stalled or slow source).
        case stall
        /// Its media jumped forward: a segment of the source was missing.
        case missingSegment
        /// It drifted beyond ``MultiView/Settings/realignThreshold`` for another reason.
        case drift

        /// "stall", "missing segment" or "drift".
        public var description: String {
            switch self {
            case .stall: "stall"
            case .missingSegment: "missing segment"
            case .drift: "drift"
            }
        }
    }

    /// Why a member left the group.
    ///
    /// `@nonexhaustive`: a `switch` over it outside PlayerKit needs `@unknown default`.
    @nonexhaustive
    public enum DropReason: Sendable, Hashable, CustomStringConvertible {
        /// Its source ended (a live playlist that ended, a file played to its end).
        case ended
        /// Its source failed (for example answered 404 or went away); the player's error.
        case failed(PlayerError)
        /// Its player shut down.
        case shutDown
        /// Its timestamps are unrelated to the group's: its live edge is about `offset` from
        /// the first member's (positive: later), beyond
        /// ``MultiView/Settings/unrelatedTimestampThreshold``. Aligning it on its timestamps
        /// would show it that far off. It plays on, outside the group; give it an offset
        /// (``MultiView/setOffset(_:for:)``, or from the playlists' PROGRAM-DATE-TIME) and add
        /// it again.
        case unrelatedTimestamps(offset: Duration)

        /// "ended", "failed: ...", "shut down" or "unrelated timestamps (+3.02 s from the group)".
        public var description: String {
            switch self {
            case .ended: "ended"
            case .failed(let error): "failed: \(error)"
            case .shutDown: "shut down"
            case .unrelatedTimestamps(let offset):
                "unrelated timestamps (\(offset < .zero ? "-" : "+")\((offset < .zero ? .zero - offset : offset).formattedSeconds) from the group)"
            }
        }
    }

    /// The member showed its first frame in the group.
    case joined
    /// The member is in step with the group for the first time, this long after it joined.
    case aligned(after: Duration)
    /// The member fell out of step, for this reason; the group brings it back.
    case fellBehind(Reason)
    /// The member is back in step, this long after it fell out for `reason`.
    case realigned(after: Duration, reason: Reason)
    /// The member left the group for this reason; the others play on.
    case dropped(DropReason)
    /// The member gained (true) or lost (false) the audio focus: it alone is heard.
    case audioFocusChanged(Bool)

    /// ``PlayerKitCore/PlayerEventKind/multiView``.
    public var kind: PlayerEventKind { .multiView }

    /// E.g. "multiView(realigned after 0.41 s: stall)".
    public var description: String {
        let text: String
        switch self {
        case .joined: text = "joined"
        case .aligned(let after): text = "aligned after \(after.formattedSeconds)"
        case .fellBehind(let reason): text = "fell behind: \(reason)"
        case .realigned(let after, let reason): text = "realigned after \(after.formattedSeconds): \(reason)"
        case .dropped(let reason): text = "dropped: \(reason)"
        case .audioFocusChanged(let focused): text = focused ? "has the audio focus" : "lost the audio focus"
        }
        return "multiView(\(text))"
    }
}

extension PlayerEventKind {
    /// ``MultiViewEvent``: every event of a multi-view.
    public static let multiView: PlayerEventKind = "multiView"
}

/// How far one member of a group is from the group's clock, measured at each of its frame
/// changes: the moment it showed a frame against the moment the group's clock shows that frame.
/// Seconds; positive: ahead (the member shows frames early). The same figure for every way
/// players are kept together: a ``MultiView``'s members, a ``SyncGroup``'s, a room follower's
/// players (PlayerKitRooms), and any player a ``DriftCorrector`` keeps on a clock.
public struct MemberSkew: Sendable, Hashable, CustomStringConvertible {
    /// The skew at the member's latest frame change (signed).
    public var current: Double
    /// The median of the absolute skews over the window (a ``MultiView``'s
    /// ``MultiView/Settings/skewWindow``; 10 s for a ``SyncGroup``'s members and a
    /// ``DriftCorrector``'s player).
    public var p50: Double
    /// The 95th percentile of the absolute skews over the window.
    public var p95: Double
    /// The 99th percentile of the absolute skews over the window.
    public var p99: Double
    /// How many frame changes the window holds.
    public var samples: Int

    /// E.g. "+0.8 ms (p50 0.6, p95 1.9, p99 2.4 ms over 300 frames)".
    public var description: String {
        String(format: "%+.1f ms (p50 %.1f, p95 %.1f, p99 %.1f ms over %d frames)",
               current * 1000, p50 * 1000, p95 * 1000, p99 * 1000, samples)
    }
}

extension Duration {
    /// "0.41 s".
    var formattedSeconds: String {
        let seconds = Double(components.seconds) + Double(components.attoseconds) / 1e18
        return String(format: "%.2f s", seconds)
    }
}
