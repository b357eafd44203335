import PlayerKitCore
import PlayerKitSupport

/// How fake players hand their events to their bus: at once (``immediate``), or held and handed
/// over later with the players' event batches interleaved in an order chosen by a seed
/// (``interleaved(seed:)``), as the event pumps of real players deliver them: each player's
/// events in its own order, but one player's events may reach a subscriber before or after
/// another's, and after both players have moved on.
///
/// Races in an app's orchestration show up this way. Two real players started together both
/// read `.playing` before either's `stateChanged` reaches a handler; a handler that pauses "every
/// other playing player" then pauses both. On fakes with immediate delivery the handler hears the
/// first start before the second happens, and the race never shows; with interleaved delivery it
/// does, every time, and the seed picks which player's events come first.
///
/// ```swift
/// let delivery = FakeEventDelivery.interleaved(seed: 7)
/// let a = try FakePlayer(clock: clock, bus: bus, delivery: delivery)
/// let b = try FakePlayer(clock: clock, bus: bus, delivery: delivery)
/// try await a.play(); try await b.play()      // both play; their events are held
/// delivery.deliverPending()                   // now, interleaved by the seed
/// ```
///
/// **Threading.** Safe from any thread. ``deliverPending()`` hands batches to the bus with no
/// lock held; events the subscribers cause meanwhile (a handler's `send`) are held and handed
/// over in the same call.
public final class FakeEventDelivery: Sendable {
    private struct Held {
        var generator: SeededGenerator?
        /// Each player's batches not yet handed over, oldest first; players in the order they
        /// first held one.
        var batches: [(player: PlayerID, deliver: @Sendable () -> Void)] = []
    }

    private let held: Locked<Held>

    private init(seed: UInt64?) {
        held = Locked(Held(generator: seed.map { SeededGenerator(seed: $0) }))
    }

    /// Events reach the bus at once, on the thread that caused them (the fakes' default).
    public static var immediate: FakeEventDelivery { FakeEventDelivery(seed: nil) }

    /// Events are held until ``deliverPending()``, which hands them over interleaved in an order
    /// chosen by `seed` (the same seed gives the same order on every machine).
    public static func interleaved(seed: UInt64) -> FakeEventDelivery { FakeEventDelivery(seed: seed) }

    /// Whether events are held for ``deliverPending()``.
    var isInterleaved: Bool { held.withLock { $0.generator != nil } }

    /// How many event batches are held.
    var pendingCount: Int { held.withLock { $0.batches.count } }

    /// Hands every held batch to its bus: each step, the seed picks one of the players that have
    /// batches held, and that player's events held so far go, in its order. Batches held while this runs (events a
    /// subscriber caused) go in the same call. Returns the number of batches handed over.
    @discardableResult
    public func deliverPending() -> Int {
        var count = 0
        while let deliver = takeNext() {
            deliver()
            count += 1
        }
        return count
    }

    /// Holds a delivery of `player`'s queued events (its emitter's `deliverQueued`, which hands
    /// over everything the player queued so far, in order); false when delivery is immediate
    /// (the caller delivers itself).
    func hold(_ deliver: @escaping @Sendable () -> Void, of player: PlayerID) -> Bool {
        held.withLock { held in
            guard held.generator != nil else { return false }
            held.batches.append((player, deliver))
            return true
        }
    }

    private func takeNext() -> (@Sendable () -> Void)? {
        held.withLock { held in
            guard !held.batches.isEmpty, var generator = held.generator else { return nil }
            var players: [PlayerID] = []
            for batch in held.batches where !players.contains(batch.player) { players.append(batch.player) }
            let player = players[Int(generator.next() % UInt64(players.count))]
            held.generator = generator
            let index = held.batches.firstIndex { $0.player == player }!
            return held.batches.remove(at: index).deliver
        }
    }
}
