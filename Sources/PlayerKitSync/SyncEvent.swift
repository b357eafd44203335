import Foundation
import PlayerKitCore

/// What a group of players tells each member, published through the member's own pipeline
/// (``/PlayerKitCore/MediaPlayer/publish(_:)``): to its delegate
/// (``/PlayerKitCore/PlayerDelegate/player(_:didEmit:)``), to bus subscribers of its ID, and to
/// async sequences. The same events whatever clock the group follows: a ``SyncGroup``'s own, a
/// ``MultiView``'s live or on-demand angles, a Syncplay room's (PlayerKitRooms' `RoomFollower`).
///
/// One kind, ``PlayerKitCore/PlayerEventKind/sync``, for every case: the drift reports
/// (``drift(_:)``), the speed corrections (``corrected(speed:)``) and every step of the correction
/// (joined, aligned, fell behind, realigned, dropped). Filter on `.sync`, then switch over the
/// event (1.x's `syncDrift` and `syncCorrection` kinds are gone in 2.0).
///
/// `@nonexhaustive`: a `switch` over it outside PlayerKit needs `@unknown default`.
@nonexhaustive
public enum SyncEvent: PlayerFeatureEvent {
    /// Why a member fell out of step.
    ///
    /// `@nonexhaustive`: a `switch` over it outside PlayerKit needs `@unknown default`.
    @nonexhaustive
    public enum Reason: Sendable, Hashable, CustomStringConvertible {
        /// Its player waited for the network (a stalled or slow source).
        case stall
        /// Its media jumped forward: a segment of the source was missing.
        case missingSegment
        /// It drifted beyond ``SyncSettings/realignThreshold`` (or, on a clock the group does not take
        /// from its members, ahead beyond ``SyncSettings/holdThreshold``) for another reason.
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
        /// the first member's (positive: its timestamps run ahead), beyond
        /// ``SyncSettings/unrelatedTimestampThreshold``. Aligning it on its timestamps
        /// would show it that far off. It plays on, outside the group; `offset` is a media
        /// offset, so give it back as it is (``MultiView/setMediaOffset(_:for:)``, or one from
        /// the playlists' PROGRAM-DATE-TIME) and load it again (``MultiView/load(_:on:)``).
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

    /// How far this member is from the group's clock, in seconds (positive: ahead), about once
    /// per ``SyncSettings/driftReportInterval`` while the group plays.
    case drift(Double)
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
    /// The group now corrects this member's speed by `speed` (1: not at all): the factor its
    /// player plays at on top of the group's speed
    /// (``/PlayerKitCore/PlayerCommand/setSpeedCorrection(_:)``), which the group trims a few
    /// times a second without a `speedChanged` for each. Published with ``drift(_:)``, at most
    /// once per ``SyncSettings/driftReportInterval``, when it changed since the last one.
    case corrected(speed: Double)

    /// ``PlayerKitCore/PlayerEventKind/sync``, for every event.
    public var kind: PlayerEventKind { .sync }

    /// E.g. "syncDrift(+1.2 ms)", "sync(realigned after 0.41 s: stall)".
    public var description: String {
        let text: String
        switch self {
        case .drift(let seconds): return String(format: "syncDrift(%+.1f ms)", seconds * 1000)
        case .corrected(let speed): return String(format: "syncCorrection(%+.2f %%)", (speed - 1) * 100)
        case .joined: text = "joined"
        case .aligned(let after): text = "aligned after \(after.formattedSeconds)"
        case .fellBehind(let reason): text = "fell behind: \(reason)"
        case .realigned(let after, let reason): text = "realigned after \(after.formattedSeconds): \(reason)"
        case .dropped(let reason): text = "dropped: \(reason)"
        }
        return "sync(\(text))"
    }
}

extension PlayerEventKind {
    /// Every ``SyncEvent``, whatever its case: a member's drift reports, its speed corrections
    /// and the steps of a group's correction (filter on it, then switch over the event).
    public static let sync: PlayerEventKind = "sync"
}
