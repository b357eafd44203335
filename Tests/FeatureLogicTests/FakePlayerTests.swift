import PlayerKitCore
import PlayerKitSupport
@testable import PlayerKitTesting
import Testing

/// Every event of the selected players, recorded on the emitting thread (`.immediate`), so a
/// test reads them as soon as the call or clock advance that made them returns.
final class EventLog: Sendable {
    private let records = Locked<[PlayerEventRecord]>([])
    private let subscription: Locked<PlayerSubscription?> = Locked(nil)

    init(bus: PlayerEventBus, players: [PlayerID]) {
        let records = records
        let token = bus.subscribe(to: .players(Set(players)), delivery: .immediate) { record in
            records.withLock { $0.append(record) }
        }
        subscription.withLock { $0 = token }
    }

    deinit { subscription.withLock { $0?.cancel() } }

    var all: [PlayerEventRecord] { records.withLock { $0 } }

    /// The events of `id`, without position reports (which depend on the interval).
    func events(of id: PlayerID, positions: Bool = false) -> [PlayerEvent] {
        all.filter { $0.playerID == id && (positions || $0.event.kind != .positionChanged) }.map(\.event)
    }

    func features<E: PlayerFeatureEvent>(_ type: E.Type, of id: PlayerID? = nil) -> [E] {
        all.filter { id == nil || $0.playerID == id }.compactMap { $0.event.feature(type) }
    }
}

/// Waits, at most `timeout` of real time, until `condition` holds; returns whether it did. For the
/// moment a task started by the test has reached the fake (its load is under way). 30 s: in make
/// test's parallel pass a task may wait that long for a thread of Swift's cooperative pool (one
/// waited over 10 s, 2026-11-26, while real-player tests blocked the pool's two threads).
func eventually(timeout: Duration = .seconds(30), _ condition: @Sendable () -> Bool) async -> Bool {
    let deadline = ContinuousClock.now.advanced(by: timeout)
    while !condition() {
        // A cancelled task's sleep throws at once: without the check this spun until the deadline.
        guard ContinuousClock.now < deadline, !Task.isCancelled else { return false }
        try? await Task.sleep(for: .milliseconds(1))
    }
    return true
}

@Suite("FakePlayer and ManualClock: a player on a test clock, in the core's event order", .timeLimit(.minutes(1)))
struct FakePlayerTests {
    let bus = PlayerEventBus(label: "fake-tests")
    let clock = ManualClock()

    @Test("a live item (an infinite duration, as documented) plays on with no end and no duration; it trapped making a Duration of its end")
    func liveItemPlaysOn() async throws {
        let player = try FakePlayer(clock: clock, bus: bus, defaultMedia: .init(duration: .infinity))
        _ = try await player.load("live.m3u8")
        clock.advance(by: .seconds(100))
        #expect(player.state == .playing && player.snapshot.duration == nil)
        #expect(player.position == 100)
        await player.shutdown()
    }

    @Test("told the source's own timestamps, a fake reports positions, seeks and their landings in them (Media.sourceStart), as a real player does; from the item's start again when told so")
    func sourceTimestamps() async throws {
        var media = FakePlayer.Media(duration: 60)
        media.sourceStart = 1_000
        let player = try FakePlayer(clock: clock, bus: bus, defaultMedia: media)
        let log = EventLog(bus: bus, players: [player.id])
        try await player.perform(.setTimestampOrigin(.source))
        _ = try await player.load("a.ts")
        clock.advance(by: .seconds(2))
        #expect(player.position == 1_002)
        try await player.perform(.seek(to: 1_010, precision: .exact))
        #expect(player.position == 1_010)
        #expect(log.events(of: player.id).contains(.seekCompleted(position: 1_010)))
        let reported = log.all.compactMap { if case .positionChanged(let position) = $0.event { position } else { nil } }
        #expect(reported.count > 4 && reported.allSatisfy { $0 >= 1_000 && $0 <= 1_010 }, "\(reported)")
        try await player.perform(.setTimestampOrigin(.itemStart))
        #expect(player.position == 10)
        await player.shutdown()
    }

    @Test("a load that takes time, then playback to the end on the clock, in the core's event order")
    func loadPlayEnd() async throws {
        let player = try FakePlayer(clock: clock, bus: bus, media: ["a.mp4": .init(duration: 4, loadTime: .milliseconds(300))])
        let log = EventLog(bus: bus, players: [player.id])
        let load = Task { try await player.load("a.mp4") }
        #expect(await eventually { player.state == .loading })
        clock.advance(by: .milliseconds(300))
        let info = try await load.value
        #expect(info.duration == 4)
        #expect(player.state == .playing && player.position == 0)
        clock.advance(by: .seconds(1))
        #expect(player.position == 1)
        try await player.perform(.setSpeed(2))
        clock.advance(by: .seconds(1))
        #expect(player.position == 3)
        clock.advance(by: .seconds(10))
        #expect(player.state == .ended)
        #expect(log.events(of: player.id) == [
            .stateChanged(from: .idle, to: .loading), .stateChanged(from: .loading, to: .playing), .durationKnown(4),
            .mediaLoaded(info), .firstFrame, .speedChanged(2), .itemEnded(.finished), .stateChanged(from: .playing, to: .ended),
        ])
        // Position reports every 250 ms of clock time, the last at the end.
        let positions = log.all.filter { $0.event.kind == .positionChanged }
        #expect(positions.count >= 8)
        #expect(positions.last?.event == .positionChanged(4))
        #expect(positions.last.map { $0.time - clock.start } == .milliseconds(300) + .milliseconds(2500))
        let numbers = log.all.map(\.sequenceNumber)
        #expect(numbers == Array(2...UInt64(numbers.count + 1)))      // 1 was `created`, before the log
        await player.shutdown()
    }

    @Test("a failing item, a replaced load, a cancelled load")
    func loadFailures() async throws {
        let player = try FakePlayer(clock: clock, bus: bus, media: [
            "bad.mp4": .unplayable(loadTime: .milliseconds(100), source: "bad.mp4"),
            "slow.mp4": .init(loadTime: .seconds(1)),
            "good.mp4": .init(duration: 2),
        ], defaultMedia: nil)
        let log = EventLog(bus: bus, players: [player.id])
        await #expect(throws: PlayerError.fileNotFound(path: "missing.mp4")) { try await player.load("missing.mp4") }
        #expect(log.events(of: player.id).isEmpty)                 // refused before any change
        let bad = Task { try await player.load("bad.mp4") }
        #expect(await eventually { player.state == .loading })
        clock.advance(by: .milliseconds(100))
        await #expect(throws: PlayerError.self) { try await bad.value }
        #expect(player.state == .failed)
        // A second load replaces a slow one: the first fails as cancelled.
        let slow = Task { try await player.load("slow.mp4") }
        #expect(await eventually { player.state == .loading })
        try await player.load("good.mp4", startPaused: true)
        await #expect(throws: PlayerError.loadCancelled(source: "slow.mp4")) { try await slow.value }
        #expect(player.state == .ready)
        // Its timer, when the clock passes it, changes nothing.
        clock.advance(by: .seconds(1))
        #expect(player.state == .ready && player.position == 0)
        // A cancelled load stops its item.
        let cancelled = Task { try await player.load("slow.mp4") }
        #expect(await eventually { player.state == .loading })
        cancelled.cancel()
        await #expect(throws: PlayerError.loadCancelled(source: "slow.mp4")) { try await cancelled.value }
        #expect(player.state == .idle)
        await player.shutdown()
        let good = MediaInfo(source: "good.mp4", duration: 2, videoSize: VideoSize(width: 320, height: 240), title: nil, tracks: [])
        #expect(log.events(of: player.id) == [
            .stateChanged(from: .idle, to: .loading),
            .itemEnded(.error(.loadFailed(source: "bad.mp4", MPVError(code: -13, message: "loading failed", logMessages: ["fake: unplayable item"])))),
            .stateChanged(from: .loading, to: .failed),
            .stateChanged(from: .failed, to: .loading),
            .itemEnded(.replaced),
            .stateChanged(from: .loading, to: .ready), .durationKnown(2), .mediaLoaded(good), .firstFrame,
            .itemEnded(.replaced), .stateChanged(from: .ready, to: .loading),
            .itemEnded(.stopped), .stateChanged(from: .loading, to: .idle),
            .shuttingDown, .shutDown,
        ])
        #expect(log.events(of: player.id).last == .shutDown)
        await #expect(throws: PlayerError.playerShutDown(player.id)) { try await player.load("good.mp4") }
    }

    @Test("commands: checks and errors as a real player's, refusals thrown or published, replies on the clock")
    func commands() async throws {
        let player = try FakePlayer(clock: clock, bus: bus)
        let log = EventLog(bus: bus, players: [player.id])
        await #expect(throws: PlayerError.noMediaLoaded(operation: "seek")) { try await player.seek(to: 1, precision: .exact) }
        await #expect(throws: PlayerError.self) { try await player.perform(.setSpeed(.nan)) }
        try await player.load("x.mp4")
        try await player.seek(to: 3, precision: .exact)
        #expect(player.position == 3)
        player.refuseCommands { command in
            if case .seek = command { return .commandFailed(command: ["seek"], MPVError(code: -12, message: "refused")) }
            return nil
        }
        await #expect(throws: PlayerError.self) { try await player.seek(to: 5, precision: .exact) }
        try player.send(.seek(to: 5, precision: .exact))           // refused later: an error event
        #expect(log.events(of: player.id).last?.kind == .error)
        #expect(player.position == 3)
        player.refuseCommands(nil)
        player.replyDelay = .milliseconds(50)
        let pause = Task { try await player.perform(.pause) }
        #expect(await eventually { player.commandsInFlight == 1 })
        #expect(!player.isPaused)
        clock.advance(by: .milliseconds(50))
        try await pause.value
        #expect(player.isPaused && player.state == .paused)
        #expect(player.commands == [.seek(to: 3, precision: .exact), .pause])
        await player.shutdown()
    }

    @Test("frames are rendered while playing and on a step; a step forward or back moves one frame interval and pauses")
    func framesAndSteps() async throws {
        let player = try FakePlayer(clock: clock, bus: bus, media: ["a.mp4": .init(duration: 2, frameRate: 25)])
        let source = try player.makeFrameSource(try FrameFormat(width: 4, height: 4))
        #expect(throws: FrameOutputError.alreadyAttached(playerID: player.id)) { _ = try player.makeFrameSource(try FrameFormat(width: 4, height: 4)) }
        let frames = Locked<[VideoFrame]>([])
        source.setFrameHandler { frame in frames.withLock { $0.append(frame) } }
        try await player.load("a.mp4")                                 // playing; its first frame at 0
        clock.advance(by: .milliseconds(200))                          // 5 more frames at 25 fps
        #expect(frames.withLock { $0.map(\.info.sequenceNumber) } == Array(1...6))
        try await player.pause()
        let paused = try #require(player.position)
        try player.send(.stepFrame)
        #expect(player.isPaused && abs((player.position ?? 0) - (paused + 0.04)) < 1e-9)
        try await player.perform(.stepFrameBack)
        #expect(player.isPaused && abs((player.position ?? 0) - paused) < 1e-9)
        #expect(frames.withLock { $0.suffix(2).map(\.info.videoTime) } == [6.0 / 25, paused])  // frame 6 of 25 fps, then back
        clock.advance(by: .seconds(1))                                 // paused: no new frame
        #expect(frames.withLock { $0.count } == 8)
        await player.shutdown()
        #expect(throws: PlayerError.playerShutDown(player.id)) { try player.send(.stepFrame) }
    }

    @Test("IDs are unique among live fakes and free once shut down")
    func identity() async throws {
        let first = try FakePlayer(id: "fake-unique", clock: clock, bus: bus)
        #expect(throws: PlayerError.duplicateID("fake-unique")) { try FakePlayer(id: "fake-unique", clock: clock, bus: bus) }
        #expect(throws: PlayerError.invalidID("")) { try FakePlayer(id: PlayerID(stringLiteral: ""), clock: clock, bus: bus) }
        await first.shutdown()
        let second = try FakePlayer(id: "fake-unique", clock: clock, bus: bus)
        await second.shutdown()
    }

    @Test("IDs are unique per bus: two tests on buses of their own may both use \"left\" at once")
    func idsPerBus() async throws {
        let mine = try FakePlayer(id: "left", clock: clock, bus: PlayerEventBus(label: "mine"))
        let theirs = try FakePlayer(id: "left", clock: clock, bus: PlayerEventBus(label: "theirs"))
        #expect(throws: PlayerError.duplicateID("left")) { try FakePlayer(id: "left", clock: clock, bus: mine.eventBus) }
        await mine.shutdown()
        // Freed once, by the shutdown; the deinit of the old fake does not free a new one's ID.
        var again: FakePlayer? = try FakePlayer(id: "left", clock: clock, bus: mine.eventBus)
        #expect(throws: PlayerError.duplicateID("left")) { try FakePlayer(id: "left", clock: clock, bus: mine.eventBus) }
        await again?.shutdown()
        again = nil
        await theirs.shutdown()
    }

    @Test("waitForSleepers counts a fake's pending load, and its reply delay")
    func sleepersCoverPendingLoads() async throws {
        let player = try FakePlayer(clock: clock, bus: bus, media: ["slow.mp4": .init(duration: 4, loadTime: .seconds(2))])
        let load = Task { try await player.load("slow.mp4") }
        #expect(await clock.waitForSleepers(1, timeout: .seconds(5)), "the pending load was not counted")
        clock.advance(by: .seconds(2))
        _ = try await load.value
        #expect(clock.sleeperCount == 0)
        player.replyDelay = .milliseconds(100)
        let play = Task { try await player.perform(.pause) }
        #expect(await clock.waitForSleepers(1, timeout: .seconds(5)), "the pending reply was not counted")
        clock.advance(by: .milliseconds(100))
        try await play.value
        await player.shutdown()
    }

    @Test("a fake's event stream ends after its shutDown; load takes a String variable as a MediaSource")
    func streamEndsAndStringLoad() async throws {
        let player = try FakePlayer(clock: clock, bus: bus)
        let events = player.events()
        let path: String = ["clips", "a.mp4"].joined(separator: "/")
        try await player.load(MediaSource(path))
        #expect(player.snapshot.mediaInfo?.source == path || player.state == .playing)
        await player.shutdown()
        var seen: [PlayerEvent] = []
        for await record in events { seen.append(record.event) }
        #expect(seen.last == .shutDown)
        #expect(seen.contains { if case .mediaLoaded = $0 { return true } else { return false } })
    }

    @Test("a delegate subscribed to a fake (eventBus.subscribe(_:to:)), the same adapter as a real player's: typed calls in order, with the player, up to its shutDown")
    func fakeDelegate() async throws {
        final class Recorder: PlayerDelegate {
            let calls = Locked<[String]>([])
            func player(_ player: any MediaPlayer, didChangeStateFrom oldState: PlayerState, to newState: PlayerState) {
                calls.withLock { $0.append("\(player.id) \(newState)") }
            }
            func player(_ player: any MediaPlayer, didEmit record: PlayerEventRecord) {
                switch record.event {
                case .mediaLoaded(let media): calls.withLock { $0.append("\(player.id) loaded \(media.source)") }
                case .shutDown: calls.withLock { $0.append("\(player.id) shutDown") }
                default: break
                }
            }
        }
        let recorder = Recorder()
        let player = try FakePlayer(id: "delegated", clock: clock, bus: bus)
        let subscription = player.eventBus.subscribe(recorder, to: player)
        try await player.load("clip.mp4")
        await player.shutdown()
        #expect(await eventually { recorder.calls.withLock { $0.last } == "delegated shutDown" })
        let calls = recorder.calls.withLock { $0 }
        #expect(calls.contains("delegated loaded clip.mp4"))
        #expect(calls.firstIndex(of: "delegated playing") ?? .max < calls.firstIndex(of: "delegated shutDown") ?? 0)
        // A later fake with the same ID is a different player: the old delegate hears nothing of it.
        // (Its own delegate hearing its shutDown shows its events went through the bus.)
        let later = Recorder()
        let next = try FakePlayer(id: "delegated", clock: clock, bus: bus)
        let laterSubscription = next.eventBus.subscribe(later, to: next)
        try await next.load("clip.mp4")
        await next.shutdown()
        #expect(await eventually { later.calls.withLock { $0.last } == "delegated shutDown" })
        #expect(recorder.calls.withLock { $0 } == calls)
        withExtendedLifetime((subscription, laterSubscription)) {}
    }

    @Test("a sleeper on the manual clock wakes when the clock reaches its deadline, and not before")
    func manualClockSleep() async throws {
        let woke = Locked(false)
        let sleeper = Task {
            try await clock.sleep(for: .seconds(5))
            woke.withLock { $0 = true }
        }
        #expect(await clock.waitForSleepers(1))
        clock.advance(by: .seconds(4))
        #expect(clock.sleeperCount == 1)
        clock.advance(by: .seconds(1))
        try await sleeper.value
        #expect(woke.withLock { $0 })
        // Cancelled while sleeping: throws at once.
        let cancelled = Task { try await clock.sleep(for: .seconds(5)) }
        #expect(await clock.waitForSleepers(1))
        cancelled.cancel()
        await #expect(throws: CancellationError.self) { try await cancelled.value }
        #expect(clock.sleeperCount == 0)
    }
}
