import Foundation
import Testing
import PlayerKit

@Suite("Autoplay coordinator", .timeLimit(.minutes(4)))
struct FeedTests {
    /// Collects a coordinator's decisions.
    final class Log: Sendable {
        let decisions = Locked<[AutoplayCoordinator.Decision]>([])
        var all: [AutoplayCoordinator.Decision] { decisions.withLock { $0 } }
        func plays() -> [String] { all.filter { $0.action == .play }.map(\.item) }
    }

    private func feed(_ count: Int, settings: AutoplayCoordinator.Settings = .init(), budget: DecoderBudget? = nil,
                      source: (Int) -> MediaSource = { MediaSource($0 % 2 == 0 ? Fixtures.clipA : Fixtures.clipB) }
    ) async throws -> (AutoplayCoordinator, [Player], Log) {
        let coordinator = try AutoplayCoordinator(settings: settings, budget: budget)
        let log = Log()
        coordinator.onDecision = { decision in log.decisions.withLock { $0.append(decision) } }
        // Off the cooperative pool, as Fixtures.player does.
        let players = try await offPool { try (0..<count).map { _ in try Player(configuration: Fixtures.headless) } }
        for (index, player) in players.enumerated() {
            try coordinator.add("item-\(index)", player: player, source: source(index))
        }
        return (coordinator, players, log)
    }

    @Test("the choice: most visible at or above the threshold; a tie goes to the upper item; none below")
    func choice() {
        let choose = AutoplayCoordinator.choose
        #expect(choose([("a", 0, 0.9), ("b", 1, 0.95)], 0.85) == "b")
        #expect(choose([("a", 0, 0.9), ("b", 1, 0.9)], 0.85) == "a")
        #expect(choose([("b", 1, 0.9), ("a", 0, 0.9)], 0.85) == "a")
        #expect(choose([("a", 0, 0.84), ("b", 1, 0.5)], 0.85) == nil)
        #expect(choose([("a", 0, 0.85)], 0.85) == "a")
    }

    @Test("fast scrolling starts nothing until it settles; then the most visible item plays, muted")
    func fastScrolling() async throws {
        // A 1 s settle delay against reports every 50 ms: a wide margin for a busy machine.
        var settings = AutoplayCoordinator.Settings()
        settings.settleDelay = .seconds(1)
        let (coordinator, players, log) = try await feed(3, settings: settings)
        defer { Task { for player in players { await player.shutdown() } } }
        // Scroll for a second, a report every 50 ms: every item passes the threshold on the way.
        // What must hold is the rule, not the machine's punctuality: a play decision only ever
        // comes once no report came for the settle delay (a test task held up for a whole second
        // on a loaded machine lets the feed settle for real, and then a play is right).
        var reports: [Date] = []
        for step in 0..<20 {
            let phase = Double(step) / 20
            try coordinator.reportVisibility(max(0, 1 - abs(phase - 0.2) * 3), of: "item-0")
            try coordinator.reportVisibility(max(0, 1 - abs(phase - 0.5) * 3), of: "item-1")
            try coordinator.reportVisibility(max(0, 1 - abs(phase - 0.8) * 3), of: "item-2")
            reports.append(Date())
            try await Task.sleep(for: .milliseconds(50))
        }
        // It settles with item-1 fully visible.
        let settled = Date()
        try coordinator.reportVisibility(0.3, of: "item-0")
        try coordinator.reportVisibility(1, of: "item-1")
        try coordinator.reportVisibility(0, of: "item-2")
        reports.append(settled)
        #expect(await eventually { log.plays().last == "item-1" })
        for play in log.all where play.action == .play {
            let lastReport = reports.last { $0 <= play.time } ?? .distantPast
            #expect(play.time.timeIntervalSince(lastReport) >= 0.99,
                    "\(play.item) decided \(play.time.timeIntervalSince(lastReport)) s after the last report: \(log.all)")
        }
        let play = try #require(log.all.last { $0.action == .play })
        #expect(play.time.timeIntervalSince(settled) >= 0.99, "decided \(play.time.timeIntervalSince(settled)) s after settling")
        #expect(await eventually { players[1].state == .playing })
        #expect(try players[1].property("mute") == .flag(true))
        #expect(coordinator.playingItem == "item-1")
        // The partly visible item above gets a poster frame, paused on it (or, when a stalled
        // test let the feed settle on it mid-scroll and it played, it paused where it was, or
        // ran to its end before the feed moved on).
        let item0Played = log.plays().contains("item-0")
        #expect(await eventually {
            players[0].state == .ready || (item0Played && [.paused, .ended].contains(players[0].state))
        }, "\(players[0].state): \(log.all)")
        // The item off screen holds nothing.
        #expect(await eventually { players[2].state == .idle }, "\(log.all)")
    }

    @Test("two items above the threshold: the more visible wins; a tie goes to the upper; the previous one pauses")
    func twoAbove() async throws {
        let (coordinator, players, log) = try await feed(3)
        defer { Task { for player in players { await player.shutdown() } } }
        try coordinator.reportVisibility(0.9, of: "item-1")
        try coordinator.reportVisibility(0.95, of: "item-2")
        #expect(await eventually { log.plays() == ["item-2"] })
        #expect(await eventually { players[2].state == .playing })
        // A tie between item-0 and item-1: the upper, item-0, wins; item-2 pauses.
        try coordinator.reportVisibility(0.9, of: "item-0")
        try coordinator.reportVisibility(0.9, of: "item-1")
        try coordinator.reportVisibility(0.5, of: "item-2")
        #expect(await eventually { log.plays() == ["item-2", "item-0"] })
        let play = try #require(log.all.last { $0.action == .play })
        #expect(play.reason.contains("tie with item-1"), "\(play.reason)")
        #expect(await eventually { players[2].state == .paused })
        #expect(log.all.contains { $0.item == "item-2" && $0.action == .pause })
        #expect(await eventually { players[0].state == .playing })
    }

    @Test("an item that leaves the screen while loading: its load is cancelled and its decoder slot freed")
    func leavesMidLoad() async throws {
        // The item's media comes from a slow server, so it is still loading when it leaves.
        let server = try LoopbackHTTPServer(root: Fixtures.repository.appendingPathComponent("Media"), bytesPerSecond: 2_000)
        defer { server.stop() }
        let budget = try DecoderBudget(limit: 2)
        let url = "http://127.0.0.1:\(server.port)/clip-a.mp4"
        let (coordinator, players, log) = try await feed(1, budget: budget) { _ in MediaSource(url) }
        defer { Task { for player in players { await player.shutdown() } } }
        let events = players[0].events()
        try coordinator.reportVisibility(1, of: "item-0")
        #expect(await eventually { log.plays() == ["item-0"] })
        #expect(await eventually { players[0].state == .loading })
        #expect(budget.holders == [players[0].id])
        try coordinator.reportVisibility(0, of: "item-0")
        #expect(await eventually { log.all.contains { $0.item == "item-0" && $0.action == .release } })
        #expect(await eventually { players[0].state == .idle })
        #expect(budget.holders.isEmpty)
        // It never played, and mpv holds no media.
        var sawPlaying = false
        for await record in events {
            if case .stateChanged(_, .playing) = record.event { sawPlaying = true }
            if case .stateChanged(_, .idle) = record.event { break }
        }
        #expect(!sawPlaying)
        #expect(try players[0].property("track-list").arrayValue?.isEmpty == true)
    }

    @Test("bad input: a fraction outside 0...1 or NaN, an unknown or duplicate item, a threshold of 2")
    func badInput() async throws {
        let (coordinator, players, _) = try await feed(1)
        defer { Task { for player in players { await player.shutdown() } } }
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
            try coordinator.add("item-0", player: players[0], source: MediaSource(Fixtures.clipA))
        }
        var settings = AutoplayCoordinator.Settings()
        settings.threshold = 2
        #expect(throws: PlayerError.invalidArgument(name: "autoplay threshold", value: "2.0", reason: "must be between 0 and 1")) {
            try AutoplayCoordinator(settings: settings)
        }
        // Still usable.
        try coordinator.reportVisibility(1, of: "item-0")
        #expect(await eventually { coordinator.playingItem == "item-0" })
    }
}

/// The audio policy on real players: mpv's own mute follows the focus. Its decisions are tested
/// on fake players in AudioPolicyLogicTests.
@Suite("Audio policy", .timeLimit(.minutes(4)))
struct AudioPolicyTests {
    private func players(_ count: Int) async throws -> [Player] {
        let made = try await offPool { try (0..<count).map { _ in try Player(configuration: Fixtures.headless) } }
        // Volume and mute are known once mpv reported them.
        #expect(await eventually { made.allSatisfy { $0.volume != nil && $0.isMuted != nil } })
        return made
    }

    @Test("solo: only the focused player is heard; the others get their own mute back with the focus")
    func solo() async throws {
        let all = try await players(3)
        defer { Task { for player in all { await player.shutdown() } } }
        let audio = try AudioPolicy(mode: .solo, players: all)
        try audio.focus(all[0])
        #expect(try all.map { try $0.property("mute") } == [.flag(false), .flag(true), .flag(true)])
        try audio.focus(all[1])
        #expect(try all.map { try $0.property("mute") } == [.flag(true), .flag(false), .flag(true)])
        #expect(audio.focused == all[1].id)
        try audio.clearFocus()
        #expect(try all.map { try $0.property("mute") } == [.flag(false), .flag(false), .flag(false)])
    }
    // Duck, mix, a player's own mute kept, bad input, refusals and racing focus calls:
    // AudioPolicyLogicTests (FeatureLogicTests), on fake players.
}

@Suite("Poster frames", .timeLimit(.minutes(4)))
struct PosterFrameTests {
    @Test("a paused player saves its first frame as a PNG poster; with nothing loaded it is a typed error")
    func saveFrame() async throws {
        let (player, _) = try await Fixtures.player()
        defer { Task { await player.shutdown() } }
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("poster-\(UUID().uuidString).png").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        #expect(throws: PlayerError.noMediaLoaded(operation: "save a frame")) { try player.saveFrame(to: path) }
        try await player.preload(MediaSource(Fixtures.clipA))
        try player.saveFrame(to: path)
        let data = try Data(contentsOf: URL(fileURLWithPath: path))
        #expect(data.starts(with: [0x89, 0x50, 0x4E, 0x47]), "not a PNG: \(data.prefix(8).map { $0 })")
        // 320x240, from the PNG header.
        let width = data[16..<20].reduce(0) { $0 << 8 | Int($1) }, height = data[20..<24].reduce(0) { $0 << 8 | Int($1) }
        #expect(width == 320 && height == 240)
        #expect(player.state == .ready)
    }
}
