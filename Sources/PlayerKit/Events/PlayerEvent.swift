import Foundation

/// Why an item stopped playing.
public enum ItemEndReason: Sendable, Hashable, CustomStringConvertible {
    /// It played to its end.
    case finished
    /// `stop()` (or clearing the playlist) ended it.
    case stopped
    /// Another item replaced it (a new `load`, `next()` or `previous()`).
    case replaced
    /// It could not be opened or played.
    case error(PlayerError)

    /// "finished", "stopped", "replaced" or "error".
    public var description: String {
        switch self {
        case .finished: return "finished"
        case .stopped: return "stopped"
        case .replaced: return "replaced"
        case .error: return "error"
        }
    }
}

/// Something that happened to one player. Delivered together with the player (to a
/// ``PlayerDelegate``) or its ``PlayerID`` (in a ``PlayerEventRecord``, on a
/// ``PlayerEventBus``, in an async sequence, or as a `Notification`).
public enum PlayerEvent: Sendable, Hashable, CustomStringConvertible {
    /// The player was created. Always the first event of a player (sequence number 1).
    case created
    /// The state changed. Never sent with `from == to`.
    case stateChanged(from: PlayerState, to: PlayerState)
    /// The playback position in seconds, at most once per
    /// ``PlayerConfiguration/positionUpdateInterval`` and right after each seek.
    case positionChanged(Double)
    /// The duration of the current item became known or changed.
    case durationKnown(Double)
    /// The item loaded: duration, size and tracks. Follows the state change out of `loading`.
    case mediaLoaded(MediaInfo)
    /// The item's first frame was decoded and presented (mpv's first playback restart after
    /// loading; also when loaded paused, which leaves the player on that frame). The end of
    /// "time to first frame".
    case firstFrame
    /// A seek finished; the position where playback resumes, when known.
    case seekCompleted(position: Double?)
    /// Network cache fill while buffering, 0 to 100.
    case bufferingProgress(percent: Double)
    /// The volume changed (0 to 100 is normal, up to mpv's `volume-max`).
    case volumeChanged(Double)
    /// Mute was switched on or off.
    case muteChanged(Bool)
    /// The playback speed changed.
    case speedChanged(Double)
    /// The current item ended, and why.
    case itemEnded(ItemEndReason)
    /// Something failed; the error names what.
    case error(PlayerError)
    /// The owner of this player's ``FullscreenPolicy`` changed: sent to the old and the new
    /// owner, with the new owner's ID (nil when the policy became free).
    case fullscreenOwnershipChanged(owner: PlayerID?)
    /// The player entered (true) or left (false) fullscreen through its ``FullscreenPolicy``.
    case fullscreenChanged(Bool)
    /// The app (or an ``OrientationSource``) reported a new screen orientation; sent to the
    /// policy's owner.
    case orientationChanged(Orientation)
    /// A ``ClipLoop`` moved to another clip: `index` into its ``ClipLoop/clips``, and how the
    /// seam looked (nil for the first clip).
    case clipChanged(index: Int, seam: SeamTiming?)
    /// A ``ClipLoop`` started its list over for the `count`-th time, with the seam's timing.
    /// Follows the ``clipChanged(index:seam:)`` of the first clip.
    case loopWrapped(count: Int, seam: SeamTiming?)
    /// How far this member of a ``SyncGroup`` is from the group's clock, in seconds (positive:
    /// ahead), about once per ``SyncGroup/Settings/driftReportInterval``.
    case syncDrift(Double)
    /// The player shut down and its mpv core is destroyed. Always the last event of a player,
    /// also when it was dropped without ``Player/shutdown()``.
    case shutDown

    /// The kinds of ``PlayerEvent``, for filtering subscriptions. The raw value is the stable
    /// name used in JSON output and logs.
    public enum Kind: String, Sendable, Hashable, Codable, CaseIterable {
        /// ``PlayerEvent/created``.
        case created
        /// ``PlayerEvent/stateChanged(from:to:)``.
        case stateChanged
        /// ``PlayerEvent/positionChanged(_:)``.
        case positionChanged
        /// ``PlayerEvent/durationKnown(_:)``.
        case durationKnown
        /// ``PlayerEvent/mediaLoaded(_:)``.
        case mediaLoaded
        /// ``PlayerEvent/firstFrame``.
        case firstFrame
        /// ``PlayerEvent/seekCompleted(position:)``.
        case seekCompleted
        /// ``PlayerEvent/bufferingProgress(percent:)``.
        case bufferingProgress
        /// ``PlayerEvent/volumeChanged(_:)``.
        case volumeChanged
        /// ``PlayerEvent/muteChanged(_:)``.
        case muteChanged
        /// ``PlayerEvent/speedChanged(_:)``.
        case speedChanged
        /// ``PlayerEvent/itemEnded(_:)``.
        case itemEnded
        /// ``PlayerEvent/error(_:)``.
        case error
        /// ``PlayerEvent/fullscreenOwnershipChanged(owner:)``.
        case fullscreenOwnershipChanged
        /// ``PlayerEvent/fullscreenChanged(_:)``.
        case fullscreenChanged
        /// ``PlayerEvent/orientationChanged(_:)``.
        case orientationChanged
        /// ``PlayerEvent/clipChanged(index:seam:)``.
        case clipChanged
        /// ``PlayerEvent/loopWrapped(count:seam:)``.
        case loopWrapped
        /// ``PlayerEvent/syncDrift(_:)``.
        case syncDrift
        /// ``PlayerEvent/shutDown``.
        case shutDown
    }

    /// The event's kind.
    public var kind: Kind {
        switch self {
        case .created: return .created
        case .stateChanged: return .stateChanged
        case .positionChanged: return .positionChanged
        case .durationKnown: return .durationKnown
        case .mediaLoaded: return .mediaLoaded
        case .firstFrame: return .firstFrame
        case .seekCompleted: return .seekCompleted
        case .bufferingProgress: return .bufferingProgress
        case .volumeChanged: return .volumeChanged
        case .muteChanged: return .muteChanged
        case .speedChanged: return .speedChanged
        case .itemEnded: return .itemEnded
        case .error: return .error
        case .fullscreenOwnershipChanged: return .fullscreenOwnershipChanged
        case .fullscreenChanged: return .fullscreenChanged
        case .orientationChanged: return .orientationChanged
        case .clipChanged: return .clipChanged
        case .loopWrapped: return .loopWrapped
        case .syncDrift: return .syncDrift
        case .shutDown: return .shutDown
        }
    }

    /// A short, stable name for the event's kind ("stateChanged", "positionChanged", ...),
    /// the raw value of ``kind``.
    public var name: String { kind.rawValue }

    /// The event name with its payload, e.g. "stateChanged(loading -> playing)".
    public var description: String {
        switch self {
        case .created: return "created"
        case .stateChanged(let from, let to): return "stateChanged(\(from) -> \(to))"
        case .positionChanged(let position): return "positionChanged(\(String(format: "%.3f", position)))"
        case .durationKnown(let duration): return "durationKnown(\(String(format: "%.3f", duration)))"
        case .mediaLoaded(let info):
            return "mediaLoaded(\(info.title ?? info.source), \(info.videoSize?.description ?? "no video"), \(info.tracks.count) tracks)"
        case .firstFrame: return "firstFrame"
        case .seekCompleted(let position): return "seekCompleted(\(position.map { String(format: "%.3f", $0) } ?? "?"))"
        case .bufferingProgress(let percent): return "bufferingProgress(\(percent)%)"
        case .volumeChanged(let volume): return "volumeChanged(\(volume))"
        case .muteChanged(let muted): return "muteChanged(\(muted))"
        case .speedChanged(let speed): return "speedChanged(\(speed))"
        case .itemEnded(let reason): return "itemEnded(\(reason))"
        case .error(let error): return "error(\(error))"
        case .fullscreenOwnershipChanged(let owner): return "fullscreenOwnershipChanged(\(owner?.rawValue ?? "none"))"
        case .fullscreenChanged(let fullscreen): return "fullscreenChanged(\(fullscreen))"
        case .orientationChanged(let orientation): return "orientationChanged(\(orientation))"
        case .clipChanged(let index, let seam): return "clipChanged(\(index)\(seam.map { ", \($0)" } ?? ""))"
        case .loopWrapped(let count, let seam): return "loopWrapped(\(count)\(seam.map { ", \($0)" } ?? ""))"
        case .syncDrift(let drift): return String(format: "syncDrift(%+.1f ms)", drift * 1000)
        case .shutDown: return "shutDown"
        }
    }
}

/// One event as delivered, with the ID of the player it came from.
public struct PlayerEventRecord: Sendable, Hashable {
    /// The player that emitted the event.
    public let playerID: PlayerID
    /// The event.
    public let event: PlayerEvent
    /// Position in the player's event sequence: 1, 2, 3, ... with no gaps, per player.
    public let sequenceNumber: UInt64
    /// When the event pump produced the event.
    public let timestamp: Date
    /// For async-sequence subscribers only: how many events of this subscription were dropped
    /// just before this one because its buffer was full (see ``PlayerEventStream``). Always 0
    /// for delegates and queue subscribers, which never drop.
    public internal(set) var droppedBefore: Int = 0

    /// Creates a record.
    public init(playerID: PlayerID, event: PlayerEvent, sequenceNumber: UInt64, timestamp: Date) {
        self.playerID = playerID
        self.event = event
        self.sequenceNumber = sequenceNumber
        self.timestamp = timestamp
    }
}
