import Foundation
@testable import PlayerKitCore
import PlayerKitSupport
import PlayerKitTesting
import Testing

/// The one outbox a real player's core and a fake's emitter both keep (issue 67, item 2): a fake
/// numbers, times and gates its events at shutdown exactly as a real player does.
@Suite("Event outbox: one order for real players and fakes", .timeLimit(.minutes(1)))
struct EventOutboxTests {
    private struct LastWord: PlayerFeatureEvent {
        var kind: PlayerEventKind { "test.lastWord" }
        var description: String { "lastWord" }
    }

    @Test("numbers without gaps, one time per batch that never goes back, one deliverer until the outbox is empty")
    func numbersTimesAndDelivery() {
        var outbox = EventOutbox(playerID: "outbox")
        let later = ContinuousClock.now + .seconds(5)
        let first = outbox.append([.created, .stateChanged(from: .idle, to: .loading)], at: later, timestamp: Date())
        #expect(first.map(\.sequenceNumber) == [1, 2])
        #expect(first.allSatisfy { $0.time == later })
        // An earlier time (another thread's, read before this one's): stamped no earlier.
        let second = outbox.append([.firstFrame], at: later - .seconds(1), timestamp: Date())
        #expect(second.map(\.sequenceNumber) == [3])
        #expect(second[0].time == later)
        let claimed = outbox.claimDelivery(), claimedAgain = outbox.claimDelivery()
        #expect(claimed && !claimedAgain)  // the second: someone delivers already
        let batch = outbox.takeBatch(), after = outbox.takeBatch()
        #expect(batch?.map(\.sequenceNumber) == [1, 2, 3])
        #expect(after == nil)  // the role is given up
        let idle = outbox.claimDelivery()
        #expect(!idle)  // nothing waits
        outbox.append([.positionChanged(1)], timestamp: Date())
        let next = outbox.claimDelivery()
        #expect(next)
    }

    @Test("from shuttingDown (or beginShutdown) only features' events and shutDown are taken; after shutDown nothing")
    func lastWords() {
        var outbox = EventOutbox(playerID: "outbox")
        outbox.append([.created], timestamp: Date())
        outbox.beginShutdown()
        let words = outbox.append([.positionChanged(2), .shuttingDown, .stateChanged(from: .playing, to: .idle), .feature(LastWord()), .shutDown,
                                   .feature(LastWord()), .created], timestamp: Date())
        #expect(words.map(\.event.kind.rawValue) == ["shuttingDown", "test.lastWord", "shutDown"])
        #expect(words.map(\.sequenceNumber) == [2, 3, 4])
        #expect(outbox.stage == .closed)
        var emitterLike = EventOutbox(playerID: "emitter")
        let taken = emitterLike.append([.created, .shuttingDown, .stateChanged(from: .playing, to: .idle), .feature(LastWord()), .shutDown], timestamp: Date())
        #expect(taken.map(\.event.kind.rawValue) == ["created", "shuttingDown", "test.lastWord", "shutDown"])
    }

    @Test("a fake's shutdown publishes what a real player's does: shuttingDown, a feature's last word, shutDown; none of its own events after shuttingDown, nothing after shutDown")
    func fakeShutdown() async throws {
        let bus = PlayerEventBus()
        let clock = ManualClock()
        let records = Locked<[PlayerEventRecord]>([])
        let all = bus.subscribe(to: "fake-outbox", delivery: .immediate) { record in records.withLock { $0.append(record) } }
        defer { all.cancel() }
        let fake = try FakePlayer(id: "fake-outbox", clock: clock, bus: bus)
        // On hearing shuttingDown: a feature's last word, and the fake's clock moves on a second
        // (its position ticks fire): a real player publishes nothing of its own from then on.
        let word = bus.subscribe(to: fake.id, kinds: [.shuttingDown], delivery: .immediate) { _ in
            fake.publish(LastWord())
            clock.advance(by: .seconds(1))
        }
        defer { word.cancel() }
        try await fake.load("clip.mp4")
        #expect(fake.state == .playing)
        await fake.shutdown()
        fake.publish(LastWord())  // after shutDown: ignored
        let seen = records.withLock { $0 }
        let tail = seen.drop { $0.event != .shuttingDown }.map(\.event.kind.rawValue)
        #expect(tail == ["shuttingDown", "test.lastWord", "shutDown"], "\(seen.map(\.event))")
        #expect(seen.map(\.sequenceNumber) == Array(1...UInt64(seen.count)))
        #expect(zip(seen, seen.dropFirst()).allSatisfy { $0.time <= $1.time })
    }
}
