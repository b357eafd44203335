import PlayerKitCore

/// Why a ``SyncGroup``'s frame step or frame seek (``SyncGroup/stepFrame()``,
/// ``SyncGroup/stepFrameBack()``, ``SyncGroup/seek(toFrame:of:)``) could not be carried out.
/// Each case names the member or the value at fault. A refused step changes nothing; a step
/// that fails part way leaves every member usable where it is, and the next step realigns them.
///
/// `@nonexhaustive`: a `switch` over it outside PlayerKit needs `@unknown default`.
@nonexhaustive
public enum FrameStepError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The member has no item loaded (load the group first).
    case nothingLoaded(PlayerID)
    /// The member's item has no known frame rate (an audio-only item, a container that gives
    /// none, or a ``/PlayerKitCore/MediaPlayer`` that does not report one), so its frames
    /// cannot be numbered.
    case frameRateUnknown(PlayerID)
    /// The member cannot go back: mpv can only step back by seeking, and this item cannot be
    /// seeked (it has no duration: a live or piped stream). The reason says which.
    case cannotStepBack(PlayerID, reason: String)
    /// Every member already shows its first frame: there is no earlier picture to step back to.
    case atFirstFrame
    /// Every member already shows its last frame: there is no later picture to step to.
    case atLastFrame
    /// The frame asked for does not exist in the reference member's item (negative, or after
    /// its last frame).
    case invalidFrame(Int, of: PlayerID, reason: String)
    /// A member refused its part of the step (its item failed, it was shut down); the error
    /// is the member's own.
    case memberFailed(PlayerID, PlayerError)
    /// A member did not show its new frame within the time given (monotonic clock).
    case timedOut(PlayerID, after: Duration)
    /// The group was invalidated (``SyncGroup/invalidate()``).
    case groupInvalidated

    /// A one-line description naming the member or value.
    public var description: String {
        switch self {
        case .nothingLoaded(let player):
            return "player \"\(player)\" has no item loaded: load the group before stepping frames"
        case .frameRateUnknown(let player):
            return "player \"\(player)\": its item's frame rate is unknown, so its frames cannot be numbered"
        case .cannotStepBack(let player, let reason):
            return "player \"\(player)\" cannot step back: \(reason)"
        case .atFirstFrame:
            return "every member already shows its first frame"
        case .atLastFrame:
            return "every member already shows its last frame"
        case .invalidFrame(let frame, let player, let reason):
            return "frame \(frame) of player \"\(player)\": \(reason)"
        case .memberFailed(let player, let error):
            return "player \"\(player)\" failed to step: \(error)"
        case .timedOut(let player, let after):
            return "player \"\(player)\" did not show its new frame within \(after)"
        case .groupInvalidated:
            return "the sync group was invalidated"
        }
    }
}

/// Where one member of a ``SyncGroup`` stands after a frame step or a frame seek.
public struct MemberFrame: Sendable, Hashable, CustomStringConvertible {
    /// The member.
    public var player: PlayerID
    /// The number of the frame it shows: its media time × its frame rate, rounded (the first
    /// frame is 0).
    public var frameNumber: Int
    /// The media time of the frame it shows, in seconds, as the member reported it.
    public var time: Double
    /// Whether this step or seek changed the member's picture (members with a lower frame
    /// rate hold theirs on some steps).
    public var moved: Bool

    /// Creates a description.
    init(player: PlayerID, frameNumber: Int, time: Double, moved: Bool) {
        self.player = player
        self.frameNumber = frameNumber
        self.time = time
        self.moved = moved
    }

    /// E.g. `left: frame 33 (1.100 s)`.
    public var description: String {
        "\(player): frame \(frameNumber) (\(String(format: "%.3f", time)) s)" + (moved ? "" : ", held")
    }
}

/// Where a whole ``SyncGroup`` stands after a frame step or a frame seek: the group's time and
/// every member's frame.
public struct GroupFrame: Sendable, Hashable, CustomStringConvertible {
    /// The group's time in seconds: every member shows the frame on screen at this time plus
    /// its media offset (``SyncSettings/mediaOffsets``, in ``SyncGroup/settings``).
    public var time: Double
    /// Every member's frame, in member order.
    public var members: [MemberFrame]

    /// Creates a description.
    init(time: Double, members: [MemberFrame]) {
        self.time = time
        self.members = members
    }

    /// The frame of `player`, if it is a member.
    func frame(of player: PlayerID) -> MemberFrame? { members.first { $0.player == player } }

    /// E.g. `1.100 s: left: frame 33 (1.100 s); right: frame 33 (1.100 s)`.
    public var description: String {
        String(format: "%.3f s: ", time) + members.map(\.description).joined(separator: "; ")
    }
}
