import PlayerKitCore
import PlayerKitFeed
import PlayerKitSupport
@testable import PlayerKitTesting
import Testing

@Suite("AutoplayCoordinator's decisions, on fake players and a manual clock", .timeLimit(.minutes(1)))
struct AutoplayLogicTests {
    let bus = PlayerEventBus(label: "autoplay-logic")
    let clock = ManualClock()

    func feed(_ count: Int, settings: AutoplayCoordinator.Settings = .init()) throws -> (AutoplayCoordinator, [FakePlayer]) {
        let coordinator = try AutoplayCoordinator(settings: settings, clock: clock)
        let players = try (0..<count).map { _ in try FakePlayer(clock: clock, bus: bus) }
        for (index, player) in players.enumerated() { try coordinator.add("item-\(index)", player: player, source: MediaSource("item-\(index).mp4")) }
        return (coordinator, players)
    }

    @Test("nothing is decided until reports settle for the settle delay; then the most visible item plays, muted")
    func settles() async throws {
        let (coordinator, p) = try feed(3)
        try coordinator.reportVisibility(0.5, of: "item-0")
        try coordinator.reportVisibility(0.95, of: "item-1")
        #expect(await clock.waitForSleepers(1))
        clock.advance(by: .milliseconds(200))
        try coordinator.reportVisibility(0.9, of: "item-2")             // postpones the decision
        #expect(await eventually { clock.sleeperCount == 1 })
        clock.advance(by: .milliseconds(299))
        #expect(coordinator.playingItem == nil && p.allSatisfy { $0.state == .idle })
        clock.advance(by: .milliseconds(1))
        #expect(await eventually { p[1].state == .playing })
        #expect(coordinator.playingItem == "item-1")
        #expect(p[1].snapshot.isMuted == true)
        // The others are visible: prepared as posters, not playing.
        #expect(await eventually { p[0].state == .ready && p[2].state == .ready })
        for player in p { await player.shutdown() }
    }

    @Test("two items above the threshold: the more visible wins; a tie goes to the upper, with the reason; the previous one pauses")
    func twoAbove() async throws {
        let (coordinator, p) = try feed(3)
        let decisions = Locked<[AutoplayCoordinator.Decision]>([])
        let heard = bus.subscribe(to: .all, kinds: [.autoplayDecision], delivery: .immediate) { record in
            if case .decision(let decision)? = record.event.feature(AutoplayEvent.self) { decisions.withLock { $0.append(decision) } }
        }
        defer { heard.cancel() }
        try coordinator.reportVisibility(0.9, of: "item-1")
        try coordinator.reportVisibility(0.95, of: "item-2")
        #expect(await eventually { clock.sleeperCount == 1 })
        clock.advance(by: .milliseconds(300))
        #expect(await eventually { p[2].state == .playing })
        try coordinator.reportVisibility(0.9, of: "item-0")
        try coordinator.reportVisibility(0.9, of: "item-1")
        try coordinator.reportVisibility(0.5, of: "item-2")
        #expect(await eventually { clock.sleeperCount == 1 })
        clock.advance(by: .milliseconds(300))
        #expect(await eventually { p[0].state == .playing && p[2].state == .paused })
        #expect(await eventually { decisions.withLock { $0.filter { $0.action == .play }.map(\.item) } == ["item-2", "item-0"] })
        let play = try #require(decisions.withLock { $0.last { $0.action == .play } })
        #expect(play.reason.contains("tie with item-1"), "\(play.reason)")
        #expect(decisions.withLock { $0.contains { $0.item == "item-2" && $0.action == .pause } })
        #expect(await eventually { p[1].state == .ready })              // visible: a poster, not playing
        for player in p { await player.shutdown() }
    }

    @Test("bad input is refused by name: a fraction outside 0...1 or NaN, an unknown or duplicate item, a threshold of 2; the feed stays usable")
    func badInput() async throws {
        let (coordinator, p) = try feed(1)
        #expect(throws: PlayerError.invalidArgument(name: "visible fraction", value: "1.5", reason: "must be between 0 and 1")) {
            try coordinator.reportVisibility(1.5, of: "item-0")
        }
        #expect(throws: PlayerError.invalidArgument(name: "visible fraction", value: "nan", reason: "must be between 0 and 1")) {
            try coordinator.reportVisibility(.nan, of: "item-0")
        }
        #expect(throws: PlayerError.invalidArgument(name: "feed item", value: "nope", reason: "is not in the feed")) {
            try coordinator.reportVisibility(0.5, of: "nope")
        }
        #expect(throws: PlayerError.invalidArgument(name: "feed item", value: "item-0", reason: "is already in the feed")) {
            try coordinator.add("item-0", player: p[0], source: "other.mp4")
        }
        var settings = AutoplayCoordinator.Settings()
        settings.threshold = 2
        #expect(throws: PlayerError.invalidArgument(name: "autoplay threshold", value: "2.0", reason: "must be between 0 and 1")) {
            try AutoplayCoordinator(settings: settings, clock: clock)
        }
        #expect(clock.sleeperCount == 0 && p[0].commands.isEmpty)      // nothing was scheduled or sent
        try coordinator.reportVisibility(1, of: "item-0")
        #expect(await eventually { clock.sleeperCount == 1 })
        clock.advance(by: .milliseconds(300))
        #expect(await eventually { coordinator.playingItem == "item-0" && p[0].state == .playing })
        await p[0].shutdown()
    }

    @Test("an item that leaves the screen is released; the one playing pauses when another wins")
    func releaseAndHandOver() async throws {
        let (coordinator, p) = try feed(2)
        try coordinator.reportVisibility(1, of: "item-0")
        try coordinator.reportVisibility(0.3, of: "item-1")
        #expect(await clock.waitForSleepers(1))
        clock.advance(by: .milliseconds(300))
        #expect(await eventually { p[0].state == .playing && p[1].state == .ready })
        try coordinator.reportVisibility(0, of: "item-0")
        try coordinator.reportVisibility(1, of: "item-1")
        #expect(await eventually { clock.sleeperCount == 1 })
        clock.advance(by: .milliseconds(300))
        #expect(await eventually { p[1].state == .playing && p[0].state == .idle })
        #expect(p[0].releaseCount == 1)
        #expect(coordinator.playingItem == "item-1")
        for player in p { await player.shutdown() }
    }

    @Test("each decision is published once, on its item's player: its stream and a subscription to every player hear the same decisions")
    func oneSource() async throws {
        let (coordinator, p) = try feed(1)
        let log = EventLog(bus: bus, players: [p[0].id])
        let stream = p[0].events(kinds: [.autoplayDecision])
        try coordinator.reportVisibility(1, of: "item-0")
        #expect(await clock.waitForSleepers(1))
        clock.advance(by: .milliseconds(300))
        let streamed = await stream.first(timeout: .seconds(10)) { _ in true }
        let published = log.features(AutoplayEvent.self).compactMap { event -> AutoplayCoordinator.Decision? in
            if case .decision(let decision) = event { return decision } else { return nil }
        }
        #expect(published.count == 1 && published.first?.action == .play)
        #expect(streamed?.event.feature(AutoplayEvent.self) == published.first.map { .decision($0) })
        #expect(coordinator.playingItem == "item-0")
        await p[0].shutdown()
    }

    @Test("a settle racing the winner's shutdown: nothing plays, nothing is left playing, the next report decides again")
    func settleRacesShutdown() async throws {
        let (coordinator, p) = try feed(2)
        try coordinator.reportVisibility(1, of: "item-0")
        try coordinator.reportVisibility(0.9, of: "item-1")
        #expect(await clock.waitForSleepers(1))
        await p[0].shutdown()                                          // during the settle delay
        clock.advance(by: .milliseconds(300))
        #expect(await eventually { p[1].state == .ready })             // its poster, whatever happened to item-0
        #expect(await eventually { coordinator.playingItem == nil })
        try coordinator.reportVisibility(0, of: "item-0")
        try coordinator.reportVisibility(1, of: "item-1")
        #expect(await eventually { clock.sleeperCount == 1 })
        clock.advance(by: .milliseconds(300))
        #expect(await eventually { p[1].state == .playing })
        #expect(coordinator.playingItem == "item-1")
        await p[1].shutdown()
    }

    @Test("a coordinator released during the settle delay decides nothing and leaves no task sleeping")
    func releasedDuringSettle() async throws {
        var coordinator: AutoplayCoordinator? = try AutoplayCoordinator(clock: clock)
        let player = try FakePlayer(clock: clock, bus: bus)
        try coordinator?.add("only", player: player, source: "only.mp4")
        try coordinator?.reportVisibility(1, of: "only")
        #expect(await clock.waitForSleepers(1))
        coordinator = nil
        #expect(await eventually { clock.sleeperCount == 0 })
        clock.advance(by: .seconds(1))
        #expect(player.state == .idle && player.commands.isEmpty)
        await player.shutdown()
    }

    @Test("scrolling without new fractions postpones the decision by the settle delay each time")
    func scrollingPostpones() async throws {
        let (coordinator, p) = try feed(1)
        try coordinator.reportVisibility(1, of: "item-0")
        #expect(await eventually { clock.sleeperCount == 1 })
        for _ in 0..<3 {
            clock.advance(by: .milliseconds(250))
            coordinator.reportScrolling()
            #expect(await eventually { clock.sleeperCount == 1 })
        }
        clock.advance(by: .milliseconds(299))
        #expect(coordinator.playingItem == nil && p[0].state == .idle)
        clock.advance(by: .milliseconds(1))
        #expect(await eventually { p[0].state == .playing })
        await p[0].shutdown()
    }

    @Test("the switches: a winner that starts with sound, and visible losers left without a poster")
    func switches() async throws {
        var settings = AutoplayCoordinator.Settings()
        settings.startsMuted = false
        settings.preparesPosters = false
        let (coordinator, p) = try feed(2, settings: settings)
        try coordinator.reportVisibility(1, of: "item-0")
        try coordinator.reportVisibility(0.5, of: "item-1")
        #expect(await eventually { clock.sleeperCount == 1 })
        clock.advance(by: .milliseconds(300))
        #expect(await eventually { p[0].state == .playing })
        #expect(p[0].snapshot.isMuted == false && !p[0].commands.contains(.setMuted(true)))
        #expect(p[1].state == .idle && p[1].commands.isEmpty)
        for player in p { await player.shutdown() }
    }
}

