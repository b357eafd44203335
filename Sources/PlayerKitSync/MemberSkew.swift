import Foundation
import PlayerKitCore

/// How far one member of a group is from the group's clock, measured at each of its frame
/// changes: the moment it showed a frame against the moment the group's clock shows that frame.
/// Seconds; positive: ahead (the member shows frames early). The same figure for every way
/// players are kept together: a ``MultiView``'s members, a ``SyncGroup``'s, a room follower's
/// players (PlayerKitRooms), and any player a ``ClockFollower`` keeps on a clock.
public struct MemberSkew: Sendable, Hashable, CustomStringConvertible {
    /// The skew at the member's latest frame change (signed).
    public var current: Double
    /// The median of the absolute skews over the window (a ``MultiView``'s
    /// ``SyncSettings/skewWindow``; 10 s for a ``SyncGroup``'s members and a
    /// ``ClockFollower``'s player).
    public var p50: Double
    /// The 95th percentile of the absolute skews over the window.
    public var p95: Double
    /// The 99th percentile of the absolute skews over the window.
    public var p99: Double
    /// How many frame changes the window holds.
    public var samples: Int
    /// The member's drift as the correction judges it, in seconds (positive: ahead): the median
    /// of its latest skews, which a one-frame jump does not move. What the correction trims and
    /// realigns on, and what ``SyncEvent/drift(_:)`` reports.
    public var drift: Double

    /// E.g. "+0.8 ms (p50 0.6, p95 1.9, p99 2.4 ms over 300 frames)"; the drift is not shown.
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
