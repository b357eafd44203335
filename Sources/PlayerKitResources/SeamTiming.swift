import Foundation
import PlayerKitCore

/// How one seam (a clip change or a wrap-around) looked on screen, measured from the
/// monotonic times (``/PlayerKitCore/PlayerEventRecord/time``) of the player's per-frame
/// ``/PlayerKitCore/PlayerEvent/positionChanged(_:)`` records.
public struct SeamTiming: Sendable, Hashable, CustomStringConvertible {
    /// Seconds from the outgoing clip's last frame to the incoming clip's first frame. About
    /// one frame interval (1/30 s for 30 fps) when the seam is seamless.
    public let frameInterval: Double
    /// The gap: how much later than scheduled the incoming clip's first frames appeared, in
    /// seconds, against the schedule kept by the frames before the seam (clock time minus
    /// media time at the current speed). About 0 when seamless; a seam that stalls shows its
    /// stall here.
    public let gap: Double

    /// Creates a timing from its two figures.
    init(frameInterval: Double, gap: Double) {
        self.frameInterval = frameInterval
        self.gap = gap
    }

    /// "gap 0.4 ms (frame to frame 33.7 ms)".
    public var description: String {
        String(format: "gap %.1f ms (frame to frame %.1f ms)", gap * 1000, frameInterval * 1000)
    }
}
