import Foundation
import PlayerKitCore
import PlayerKitSupport
import PlayerKitTesting
import Testing

/// What apps rely on when they test with PlayerKitTesting: the manual clock's order, the fake's
/// playback on it (speed, pause, seek, loops, release, shutdown), and the emitter's numbering.
@Suite("PlayerKitTesting: the clock, the fake's playback and the emitter", .timeLimit(.minutes(1)))
struct TestingLibraryTests {
    let bus = PlayerEventBus(label: "testing-library")
    let clock = ManualClock()

    @Test("the manual clock runs what falls due in deadline order, with now at each deadline; a cancelled action never runs")
    func clockOrder() {
        let log = Locked<[String]>([])
        let start = clock.now
        _ = clock.schedule(at: start + .seconds(3)) { log.withLock { $0.append("c at \(clock.now - start)") } }
        _ = clock.schedule(at: start + .seconds(1)) { log.withLock { $0.append("a at \(clock.now - start)") } }
        let cancelled = clock.schedule(at: start + .seconds(2)) { log.withLock { $0.append("cancelled") } }
        _ = clock.schedule(at: start + .seconds(2)) { log.withLock { $0.append("b at \(clock.now - start)") } }
        #expect(cancelled.cancel())
        #expect(!cancelled.cancel())                              // once
        clock.advance(by: .milliseconds(999))
        #expect(log.withLock { $0 }.isEmpty)
        clock.advance(by: .seconds(5))
        #expect(log.withLock { $0 } == ["a at 1.0 seconds", "b at 2.0 seconds", "c at 3.0 seconds"])
        #expect(clock.now - start == .milliseconds(5999) && clock.elapsed == .milliseconds(5999))
    }

    @Test("a sleeping task cancelled before its deadline ends at once with CancellationError and leaves no sleeper")
    func cancelledSleeper() async throws {
        let sleeper = Task { try await clock.sleep(until: clock.now + .seconds(10), tolerance: nil) }
        #expect(await clock.waitForSleepers(1))
        sleeper.cancel()
        await #expect(throws: CancellationError.self) { try await sleeper.value }
        #expect(clock.sleeperCount == 0)
        // A deadline already past returns at once.
        try await clock.sleep(until: clock.now - .seconds(1), tolerance: nil)
    }

    @Test("playback moves with the clock at the player's speed, stops while paused, and a seek moves it")
    func speedPauseSeek() async throws {
        let player = try FakePlayer(clock: clock, bus: bus, defaultMedia: .init(duration: 60))
        _ = try await player.load("a.mp4")
        clock.advance(by: .seconds(2))
        #expect(player.position == 2)
        try player.setSpeed(2)
        clock.advance(by: .seconds(2))
        #expect(player.position == 6 && player.speed == 2)
        try player.pause()
        clock.advance(by: .seconds(10))
        #expect(player.position == 6 && player.state == .paused)
        try player.seek(to: 30)
        #expect(player.position == 30)
        try player.play()
        clock.advance(by: .milliseconds(500))
        #expect(player.position == 31)
        #expect(throws: PlayerError.invalidArgument(name: "speed", value: "0.0", reason: "must be between 0.25 and 4")) { try player.setSpeed(0) }
        #expect(player.speed == 2)
        await player.shutdown()
    }

    @Test("an item that loops wraps at its end and plays on; one that does not ends, in the core's order")
    func loopsAndEnds() async throws {
        let looping = try FakePlayer(clock: clock, bus: bus, defaultMedia: .init(duration: 2))
        let ending = try FakePlayer(clock: clock, bus: bus, defaultMedia: .init(duration: 2))
        let events = EventLog(bus: bus, players: [looping.id, ending.id])
        try looping.setLoop(.forever)
        _ = try await looping.load("a.mp4")
        _ = try await ending.load("b.mp4")
        clock.advance(by: .seconds(5))
        #expect(looping.state == .playing && looping.position == 1)
        #expect(events.events(of: looping.id).filter { $0 == .seekCompleted(position: 0) }.count == 2)
        // It reported the end position, then ended; an ended item has no position (as mpv's).
        #expect(ending.state == .ended && ending.position == nil)
        #expect(events.events(of: ending.id, positions: true).suffix(3) == [.positionChanged(2), .itemEnded(.finished), .stateChanged(from: .playing, to: .ended)])
        await looping.shutdown()
        await ending.shutdown()
    }

    @Test("releaseMedia ends the item as a stop does and counts; shutdown ends the events, and later calls fail naming the player")
    func releaseAndShutdown() async throws {
        let player = try FakePlayer(clock: clock, bus: bus, defaultMedia: .init(duration: 60))
        let events = EventLog(bus: bus, players: [player.id])
        _ = try await player.load("a.mp4")
        player.releaseMedia()
        #expect(player.state == .idle && player.releaseCount == 1)
        #expect(events.events(of: player.id).contains(.itemEnded(.stopped)))
        await player.shutdown()
        #expect(player.isShutDown && events.events(of: player.id).last == .shutDown)
        #expect(throws: PlayerError.playerShutDown(player.id)) { try player.play() }
        await #expect(throws: PlayerError.playerShutDown(player.id)) { _ = try await player.load("a.mp4") }
        let count = events.all.count
        clock.advance(by: .seconds(5))
        #expect(events.all.count == count)                          // nothing after shutDown
    }

    @Test("an emitter numbers events from 16 threads without a gap or a repeat, hands them to every subscriber in that order, and drops what follows shutDown")
    func emitterNumbering() async throws {
        let emitter = PlayerEventEmitter(playerID: PlayerID(stringLiteral: "emitter-\(UUID().uuidString.prefix(8))"), bus: bus)
        let first = Locked<[UInt64]>([])
        let second = Locked<[UInt64]>([])
        let immediate = bus.subscribe(to: emitter.playerID, delivery: .immediate) { record in first.withLock { $0.append(record.sequenceNumber) } }
        let queued = bus.subscribe(to: emitter.playerID) { record in second.withLock { $0.append(record.sequenceNumber) } }
        defer { immediate.cancel(); queued.cancel() }
        await withTaskGroup(of: Void.self) { group in
            for thread in 0..<16 {
                group.addTask {
                    for index in 0..<100 { emitter.emit(.positionChanged(Double(thread * 100 + index))) }
                }
            }
        }
        emitter.emit(.shutDown)
        #expect(emitter.emit(.positionChanged(1)) == nil && emitter.hasEnded)
        #expect(emitter.lastSequenceNumber == 1_601)
        #expect(first.withLock { $0 } == Array(1...1_601))
        #expect(await eventually { second.withLock { $0 } == Array(1...1_601) })
    }
}
