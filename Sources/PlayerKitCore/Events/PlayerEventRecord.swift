import Foundation

/// One event as delivered, with the ID of the player it came from.
public struct PlayerEventRecord: Sendable, Hashable {
    /// The player that emitted the event.
    public let playerID: PlayerID
    /// The event.
    public let event: PlayerEvent
    /// Position in the player's event sequence: 1, 2, 3, ... with no gaps, per player.
    public let sequenceNumber: UInt64
    /// When the event was produced, on the monotonic `ContinuousClock`: measure with this
    /// (intervals between frames, drift, latency). A stepped system clock does not move it.
    /// An event that comes from mpv (a new position, a state change) carries the moment mpv
    /// signalled it, not the later moment PlayerKit's event thread got to it, so a busy
    /// machine does not move it. A player's events' times never go back.
    public let time: ContinuousClock.Instant
    /// When the event was produced, by the wall clock (``PlayerConfiguration/wallClock``): for
    /// display and logs only; it jumps when the system clock is stepped.
    public let timestamp: Date
    /// For async-sequence subscribers only: how many events of this subscription were dropped
    /// just before this one because its buffer was full (see ``EventStream``). Always 0
    /// for delegates and queue subscribers, which never drop.
    public internal(set) var droppedBefore: Int = 0

    /// Creates a record (for tests and tools; players make their own).
    init(playerID: PlayerID, event: PlayerEvent, sequenceNumber: UInt64,
                time: ContinuousClock.Instant = .now, timestamp: Date = Date()) {
        self.playerID = playerID
        self.event = event
        self.sequenceNumber = sequenceNumber
        self.time = time
        self.timestamp = timestamp
    }
}
