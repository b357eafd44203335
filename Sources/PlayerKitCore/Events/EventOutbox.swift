import Foundation

/// One player's events on their way out: numbered 1, 2, 3, ... with no gaps, stamped with times
/// that never go back, and handed out in that order by one deliverer at a time. ``PlayerCore``
/// keeps one under its state lock, and so does ``PlayerEventEmitter`` (a fake's, or any player
/// not backed by mpv): a fake orders, numbers and times its events exactly as a real player does.
///
/// The rules:
/// - **Numbers.** Each event taken gets the next sequence number; nothing is skipped.
/// - **Times.** The events of one ``append(_:at:timestamp:)`` share one monotonic time: the
///   time given (when mpv signalled them), or now; never earlier than the last event's, so event
///   times never go back whatever thread emits.
/// - **Shutdown.** From ``beginShutdown()`` (or a ``PlayerEvent/shuttingDown`` taken) only
///   ``PlayerEvent/shuttingDown``, the features' last events (``PlayerEvent/feature(_:)``) and the
///   final ``PlayerEvent/shutDown`` are taken; after ``PlayerEvent/shutDown``, nothing.
/// - **Delivery.** Whoever ``claimDelivery()`` hands the role to empties the outbox with
///   ``takeBatch()`` until it returns nil (which gives the role up), with no lock held while
///   subscribers run; events appended meanwhile go out next, in order.
///
/// **Threading.** A value: its owner keeps it under one lock (it holds no lock itself).
struct EventOutbox: Sendable {
    /// Where the outbox is in its player's life.
    enum Stage: Sendable, Equatable {
        /// Every event is taken.
        case open
        /// Shutdown began: only the last words are taken (see the rules above).
        case lastWords
        /// ``PlayerEvent/shutDown`` was taken: nothing more is.
        case closed
    }

    let playerID: PlayerID
    private(set) var stage = Stage.open
    /// The sequence number of the last event taken, 0 before the first.
    private(set) var lastSequenceNumber: UInt64 = 0
    private var lastTime: ContinuousClock.Instant?
    private var pending: [PlayerEventRecord] = []
    private var delivering = false

    init(playerID: PlayerID) {
        self.playerID = playerID
    }

    /// Shutdown began: from now on only the last words are taken.
    mutating func beginShutdown() {
        if stage == .open { stage = .lastWords }
    }

    /// Numbers `events` into the outbox, stamped with `time` (nil: now; never earlier than the
    /// last event's) and `timestamp` (the wall clock, for display). Returns the records taken.
    @discardableResult
    mutating func append(_ events: [PlayerEvent], at time: ContinuousClock.Instant? = nil, timestamp: Date) -> [PlayerEventRecord] {
        var stamped: ContinuousClock.Instant?
        var records: [PlayerEventRecord] = []
        for event in events {
            switch (stage, event) {
            case (.closed, _): continue
            case (.lastWords, .shuttingDown), (.lastWords, .feature), (.lastWords, .shutDown), (.open, _): break
            case (.lastWords, _): continue
            }
            var now = stamped ?? time ?? ContinuousClock.now
            if let last = lastTime, last > now { now = last }
            stamped = now
            lastTime = now
            lastSequenceNumber += 1
            records.append(PlayerEventRecord(
                playerID: playerID, event: event, sequenceNumber: lastSequenceNumber, time: now, timestamp: timestamp))
            switch event {
            case .shuttingDown: beginShutdown()
            case .shutDown: stage = .closed
            default: break
            }
        }
        pending += records
        return records
    }

    /// Whether the caller must deliver: true (and the role is the caller's) when nobody is
    /// delivering and events wait.
    mutating func claimDelivery() -> Bool {
        guard !delivering, !pending.isEmpty else { return false }
        delivering = true
        return true
    }

    /// The deliverer's next batch, in order; nil once the outbox is empty, which gives the
    /// delivering role up.
    mutating func takeBatch() -> [PlayerEventRecord]? {
        guard !pending.isEmpty else {
            delivering = false
            return nil
        }
        defer { pending = [] }
        return pending
    }
}
