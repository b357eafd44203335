import Foundation
import PlayerKitSupport

/// Numbers one player's events and hands them to a bus as ``Player`` does: sequence numbers 1,
/// 2, 3, … with no gaps, every subscriber in that order whichever thread emits, nothing after
/// ``PlayerEvent/shutDown``. For ``MediaPlayer``s that are not backed by mpv (a test's
/// `FakePlayer`, a player in another process); ``Player`` numbers its own.
///
/// **Threading.** Safe from any thread. Events emitted by one call keep their order; calls
/// that race are numbered in the order they take the emitter's lock. Records are handed to the
/// bus with no lock held, by whichever caller finds nobody delivering (so `.immediate` bus
/// handlers run on an emitting thread, one batch at a time).
package final class PlayerEventEmitter: Sendable {
    /// The player whose events these are.
    let playerID: PlayerID
    /// The bus the records go to.
    let bus: PlayerEventBus

    /// The same outbox a ``Player``'s core keeps (``EventOutbox``): its numbering, times and
    /// shutdown rules are a real player's.
    private let outbox: Locked<EventOutbox>

    /// Creates an emitter for the player `playerID`, publishing to `bus`.
    package init(playerID: PlayerID, bus: PlayerEventBus) {
        self.playerID = playerID
        self.bus = bus
        self.outbox = Locked(EventOutbox(playerID: playerID))
    }

    /// The sequence number of the last event emitted, 0 before the first.
    package var lastSequenceNumber: UInt64 { outbox.withLock { $0.lastSequenceNumber } }

    /// Whether ``PlayerEvent/shutDown`` has been emitted (later events are dropped).
    var hasEnded: Bool { outbox.withLock { $0.stage == .closed } }

    /// Numbers `events` in order and publishes them, stamped with `time` (monotonic, for
    /// measuring; never earlier than the last event's, as a real player's) and `timestamp` (wall
    /// clock, for display). From ``PlayerEvent/shuttingDown`` on only features' events and
    /// ``PlayerEvent/shutDown`` are taken, and after ``PlayerEvent/shutDown`` nothing, as from a
    /// real player. Returns the records emitted.
    @discardableResult
    package func emit(_ events: [PlayerEvent], at time: ContinuousClock.Instant = .now,
                     timestamp: Date = Date()) -> [PlayerEventRecord] {
        let records = enqueue(events, at: time, timestamp: timestamp)
        deliverQueued()
        return records
    }

    /// Numbers `events` as ``emit(_:at:timestamp:)-([PlayerEvent],_,_)`` does but only queues them; they reach the
    /// bus at the next ``deliverQueued()`` (or ``emit(_:at:timestamp:)-([PlayerEvent],_,_)``). For a player that
    /// changes its state under a lock of its own: queue under that lock, so the numbering follows
    /// the order of the changes, and deliver after releasing it, so a handler may call back in.
    @discardableResult
    package func enqueue(_ events: [PlayerEvent], at time: ContinuousClock.Instant = .now,
                        timestamp: Date = Date()) -> [PlayerEventRecord] {
        outbox.withLock { $0.append(events, at: time, timestamp: timestamp) }
    }

    /// Hands every queued record to the bus, in order, unless another thread is delivering
    /// already (it then delivers them). Never holds a lock while subscribers run.
    package func deliverQueued() {
        guard outbox.withLock({ $0.claimDelivery() }) else { return }
        while let batch = outbox.withLock({ $0.takeBatch() }) { bus.publish(batch) }
    }

    /// ``emit(_:at:timestamp:)-([PlayerEvent],_,_)`` for one event.
    @discardableResult
    func emit(_ event: PlayerEvent, at time: ContinuousClock.Instant = .now,
                     timestamp: Date = Date()) -> PlayerEventRecord? {
        emit([event], at: time, timestamp: timestamp).first
    }
}
