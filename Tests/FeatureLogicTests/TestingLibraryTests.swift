@testable import PlayerKitCore
import Foundation
@testable import PlayerKitCore
import PlayerKitSupport
@testable import PlayerKitTesting
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
        try await player.perform(.setSpeed(2))
        clock.advance(by: .seconds(2))
        #expect(player.position == 6 && player.snapshot.speed == 2)
        try await player.pause()
        clock.advance(by: .seconds(10))
        #expect(player.position == 6 && player.state == .paused)
        try await player.seek(to: 30)
        #expect(player.position == 30)
        try await player.play()
        clock.advance(by: .milliseconds(500))
        #expect(player.position == 31)
        await #expect(throws: PlayerError.invalidArgument(name: "speed", value: "0.0", reason: "must be between 0.25 and 4")) { try await player.perform(.setSpeed(0)) }
        #expect(player.snapshot.speed == 2)
        await player.shutdown()
    }

    @Test("an item that loops wraps at its end and plays on; one that does not ends, in the core's order")
    func loopsAndEnds() async throws {
        let looping = try FakePlayer(clock: clock, bus: bus, defaultMedia: .init(duration: 2))
        let ending = try FakePlayer(clock: clock, bus: bus, defaultMedia: .init(duration: 2))
        let events = EventLog(bus: bus, players: [looping.id, ending.id])
        try await looping.perform(.setLoop(.forever))
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
        await #expect(throws: PlayerError.playerShutDown(player.id)) { try await player.play() }
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

    @Test("a paused load shows its first frame after the item's first-frame delay, then firstFrame, in that order")
    func firstFrame() async throws {
        let player = try FakePlayer(clock: clock, bus: bus, defaultMedia: .init(duration: 10, firstFrameDelay: .milliseconds(40)))
        let events = EventLog(bus: bus, players: [player.id])
        _ = try await player.load("a.mp4", startPaused: true)
        #expect(player.state == .ready && !player.snapshot.hasShownFirstFrame)
        #expect(!events.events(of: player.id).contains(.firstFrame))
        clock.advance(by: .milliseconds(39))
        #expect(!player.snapshot.hasShownFirstFrame)
        clock.advance(by: .milliseconds(1))
        #expect(player.snapshot.hasShownFirstFrame && events.events(of: player.id).last == .firstFrame)
        #expect(player.position == 0)                               // paused: it did not move
        await player.shutdown()
    }

    @Test("an observation of every frame reports each frame at the item's rate while it lives, and counts")
    func everyFrame() async throws {
        let player = try FakePlayer(clock: clock, bus: bus, defaultMedia: .init(duration: 10, frameRate: 25), positionInterval: .seconds(1))
        let events = EventLog(bus: bus, players: [player.id])
        _ = try await player.load("a.mp4")
        let observation = player.observeEveryFrame()
        #expect(player.frameObservationCount == 1)
        for _ in 0..<25 { clock.advance(by: .milliseconds(40)) }
        let perFrame = events.events(of: player.id, positions: true).filter { $0.kind == .positionChanged }
        #expect(perFrame.count >= 25, "\(perFrame.count) reports in a second at 25 fps")
        observation.cancel()
        #expect(player.frameObservationCount == 0)
        let before = events.events(of: player.id, positions: true).filter { $0.kind == .positionChanged }.count
        for _ in 0..<25 { clock.advance(by: .milliseconds(40)) }
        let after = events.events(of: player.id, positions: true).filter { $0.kind == .positionChanged }.count
        #expect(after - before <= 2, "\(after - before) reports in a second at a 1 s interval")
        await player.shutdown()
    }

    @Test("volume and mute: each change is one event, a repeat is none; a volume above 130 is refused by name")
    func volumeAndMute() async throws {
        let player = try FakePlayer(clock: clock, bus: bus)
        let events = EventLog(bus: bus, players: [player.id])
        try await player.perform(.setVolume(40))
        try await player.perform(.setVolume(40))
        try await player.perform(.setMuted(true))
        try await player.perform(.setMuted(true))
        #expect(events.events(of: player.id) == [.volumeChanged(40), .muteChanged(true)])
        await #expect(throws: PlayerError.invalidArgument(name: "volume", value: "131.0", reason: "must be at most 130 (mpv's volume-max)")) {
            try await player.perform(.setVolume(131))
        }
        await #expect(throws: PlayerError.invalidArgument(name: "volume", value: "-1.0", reason: "must be a finite number, 0 or more")) {
            try await player.perform(.setVolume(-1))
        }
        #expect(player.snapshot.volume == 40 && player.snapshot.isMuted == true)
        await player.shutdown()
    }

    @Test("an item that fails while it plays ends with its error and leaves the player failed but usable")
    func failWhilePlaying() async throws {
        let player = try FakePlayer(clock: clock, bus: bus, defaultMedia: .init(duration: 10))
        let events = EventLog(bus: bus, players: [player.id])
        _ = try await player.load("a.mp4")
        clock.advance(by: .seconds(1))
        let failure = PlayerError.playbackFailed(source: "a.mp4", MPVError(code: -13, message: "decoder gave up"))
        player.failCurrentItem(with: failure)
        #expect(player.state == .failed)
        #expect(events.events(of: player.id).contains(.itemEnded(.error(failure))))
        _ = try await player.load("b.mp4")
        #expect(player.state == .playing)
        await player.shutdown()
    }

    @Test("a fake's fullscreen arbiter is set only over the one expected, and asked before the fake goes fullscreen")
    func arbiter() async throws {
        final class NoFullscreen: FullscreenArbiter {
            func refusal(ofFullscreen fullscreen: Bool, for player: any MediaPlayer) -> String? { fullscreen ? "not here" : nil }
        }
        let player = try FakePlayer(clock: clock, bus: bus)
        let first = NoFullscreen()
        let second = NoFullscreen()
        #expect(player.setFullscreenArbiter(first, replacing: nil))
        #expect(!player.setFullscreenArbiter(second, replacing: nil))        // not the one expected
        #expect(player.fullscreenArbiter === first)
        await #expect(throws: PlayerError.fullscreenRefused(player.id, reason: "not here")) { try await player.perform(.setFullscreen(true)) }
        #expect(player.snapshot.isFullscreen == false)
        #expect(player.setFullscreenArbiter(nil, replacing: first))
        try await player.perform(.setFullscreen(true))
        #expect(player.snapshot.isFullscreen == true)
        await player.shutdown()
    }

    @Test("the manual clock never goes back; an action scheduled by an action runs in the same advance when it falls due; waiting for sleepers is bounded")
    func clockEdges() async {
        let start = clock.now
        let log = Locked<[String]>([])
        _ = clock.schedule(at: start + .seconds(1)) {
            log.withLock { $0.append("first") }
            _ = clock.schedule(at: clock.now + .milliseconds(500)) { log.withLock { $0.append("second at \(clock.now - start)") } }
        }
        clock.advance(to: start + .seconds(2))
        #expect(log.withLock { $0 } == ["first", "second at 1.5 seconds"])
        clock.advance(to: start)                                    // back: nothing
        clock.advance(by: .seconds(-1))
        #expect(clock.now == start + .seconds(2))
        #expect(await clock.waitForSleepers(1, timeout: .milliseconds(20)) == false)
    }

    @Test("an emitter's queued events reach the bus at deliverQueued, in their order; an immediate handler that emits gets its event after the batch")
    func emitterQueue() {
        let emitter = PlayerEventEmitter(playerID: PlayerID(stringLiteral: "queue-\(UUID().uuidString.prefix(8))"), bus: bus)
        let seen = Locked<[String]>([])
        let token = bus.subscribe(to: emitter.playerID, delivery: .immediate) { record in
            seen.withLock { $0.append("\(record.sequenceNumber) \(record.event)") }
            if record.event == .firstFrame { emitter.emit(.volumeChanged(50)) }  // from inside a delivery
        }
        defer { token.cancel() }
        let queued = emitter.enqueue([.created, .firstFrame])
        #expect(queued.map(\.sequenceNumber) == [1, 2] && seen.withLock { $0 }.isEmpty)
        emitter.deliverQueued()
        #expect(seen.withLock { $0 } == ["1 created", "2 firstFrame", "3 volumeChanged(50.0)"])
        emitter.deliverQueued()                                      // nothing queued: nothing
        #expect(seen.withLock { $0 }.count == 3 && emitter.lastSequenceNumber == 3)
    }

    @Test("a scheduled action runs once: cancelling it after it ran says so, and a second advance does not run it again")
    func scheduledOnce() {
        let runs = Locked(0)
        let action = clock.schedule(at: clock.now + .milliseconds(10)) { runs.withLock { $0 += 1 } }
        clock.advance(by: .milliseconds(10))
        clock.advance(by: .seconds(1))
        #expect(runs.withLock { $0 } == 1)
        #expect(!action.cancel())
        // Scheduled in the past: runs at the next advance, at the clock's now (time does not go back).
        let before = clock.now
        let late = Locked<ContinuousClock.Instant?>(nil)
        _ = clock.schedule(at: before - .seconds(5)) { late.withLock { $0 = clock.now } }
        clock.advance(by: .zero)
        #expect(late.withLock { $0 } == before)
    }
}

