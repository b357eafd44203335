@testable import PlayerKitCore
@testable import PlayerKitFeed
import Foundation
import Testing
import PlayerKit
import PlayerKitSupport

@Suite("Autoplay coordinator", .timeLimit(.minutes(4)))
struct FeedTests {
    /// Collects a coordinator's decisions.
    final class Log: Sendable {
        let decisions = Locked<[AutoplayCoordinator.Decision]>([])
        private let subscription = Locked<PlayerSubscription?>(nil)

        /// Hears the decisions the coordinator publishes on `players` (one subscription for all).
        func watch(_ players: [Player]) {
            guard let bus = players.first?.eventBus else { return }
            let decisions = decisions
            let token = bus.subscribe(to: .players(Set(players.map(\.id))), kinds: [.autoplayDecision], delivery: .immediate) { record in
                if case .decision(let decision)? = record.event.feature(AutoplayEvent.self) { decisions.withLock { $0.append(decision) } }
            }
            subscription.withLock { $0 = token }
        }

        deinit { subscription.withLock { $0?.cancel() } }
        var all: [AutoplayCoordinator.Decision] { decisions.withLock { $0 } }
        func plays() -> [String] { all.filter { $0.action == .play }.map(\.item) }
    }

    private func feed(_ count: Int, settings: AutoplayCoordinator.Settings = .init(), budget: DecoderBudget? = nil,
                      source: (Int) -> MediaSource = { MediaSource($0 % 2 == 0 ? Fixtures.clipA : Fixtures.clipB) }
    ) async throws -> (AutoplayCoordinator, [Player], Log) {
        let coordinator = try AutoplayCoordinator(settings: settings, budget: budget)
        let log = Log()
        // Off the cooperative pool, as Fixtures.player does.
        let players = try await offPool { try (0..<count).map { _ in try Player(configuration: Fixtures.headless) } }
        log.watch(players)
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

    // Fast scrolling settling before a decision, the more visible of two winning (a tie to the
    // upper), the previous one pausing: AutoplayLogicTests, on fake players and a manual clock.

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
        #expect(budget.snapshot.holders == [players[0].id])
        try coordinator.reportVisibility(0, of: "item-0")
        #expect(await eventually { log.all.contains { $0.item == "item-0" && $0.action == .release } })
        #expect(await eventually { players[0].state == .idle })
        #expect(budget.snapshot.holders.isEmpty)
        // It never played, and mpv holds no media.
        var sawPlaying = false
        for await record in events {
            if case .stateChanged(_, .playing) = record.event { sawPlaying = true }
            if case .stateChanged(_, .idle) = record.event { break }
        }
        #expect(!sawPlaying)
        await #expect(try players[0].property("track-list").arrayValue?.isEmpty == true)
    }
    // Bad input (fractions, unknown and duplicate items, thresholds): AutoplayLogicTests.
}

/// The audio policy on real players: mpv's own mute follows the focus. Its decisions are tested
/// on fake players in AudioPolicyLogicTests.
@Suite("Audio policy", .timeLimit(.minutes(4)))
struct AudioPolicyTests {
    private func players(_ count: Int) async throws -> [Player] {
        let made = try await offPool { try (0..<count).map { _ in try Player(configuration: Fixtures.headless) } }
        // Volume and mute are known once mpv reported them.
        #expect(await eventually { made.allSatisfy { $0.snapshot.volume != nil && $0.snapshot.isMuted != nil } })
        return made
    }

    @Test("solo: only the focused player is heard; the others get their own mute back with the focus")
    func solo() async throws {
        let all = try await players(3)
        defer { Task { for player in all { await player.shutdown() } } }
        let audio = try AudioPolicy(mode: .solo, players: all)
        try await audio.focus(all[0])
        #expect(try await mutes(all) == [.flag(false), .flag(true), .flag(true)])
        try await audio.focus(all[1])
        #expect(try await mutes(all) == [.flag(true), .flag(false), .flag(true)])
        #expect(audio.focused == all[1].id)
        try await audio.clearFocus()
        #expect(try await mutes(all) == [.flag(false), .flag(false), .flag(false)])
    }

    @Test("solo without decoding the unheard: mpv's audio track is off on each player without the focus (also for an item loaded after the focus), and back with the focus")
    func unheardAudioOff() async throws {
        let all = try await players(2)
        defer { Task { for player in all { await player.shutdown() } } }
        let audio = try AudioPolicy(mode: .solo, players: all, decodesUnheardAudio: false)
        // The focus first, as a multi-view app gives it: the other's item loads with its sound off.
        try await audio.focus(all[0])
        // Looping, so no item ends (and its tracks with it) however slow the machine: in the
        // parallel pass the steps below once took longer than the clip's 4 s, and both players
        // then read no audio track at the end ([nil, nil]).
        for player in all { try await player.perform(.setLoop(.forever)) }
        for player in all { _ = try await player.load(MediaSource(Fixtures.clipA)) }
        @Sendable func heard() -> [Int?] { all.map { $0.tracks.first { $0.kind == .audio && $0.isSelected }?.id } }
        #expect(await eventually { heard() == [1, nil] }, "\(heard())")
        #expect(try await mutes(all) == [.flag(false), .flag(true)])
        try await audio.focus(all[1])
        #expect(await eventually { heard() == [nil, 1] }, "\(heard())")
        #expect(try await mutes(all) == [.flag(true), .flag(false)])
        // mpv decodes its sound again, and no more the other's.
        #expect(await eventually { (try? await all[1].property("audio-params/samplerate")) == .int(44100) })
        let off = try? await all[0].property("audio-params/samplerate")
        #expect(off == nil || off == MPVValue.none, "\(String(describing: off))")
        try await audio.clearFocus()
        #expect(await eventually { heard() == [1, 1] }, "\(heard())")
    }

    /// Each player's `mute` as mpv reads it.
    private func mutes(_ players: [Player]) async throws -> [MPVValue] {
        var values: [MPVValue] = []
        for player in players { values.append(try await player.property("mute")) }
        return values
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
        await #expect(throws: PlayerError.noMediaLoaded(operation: "save a frame")) { try await player.saveFrame(to: path) }
        try await player.preload(MediaSource(Fixtures.clipA))
        try await player.saveFrame(to: path)
        let data = try Data(contentsOf: URL(fileURLWithPath: path))
        #expect(data.starts(with: [0x89, 0x50, 0x4E, 0x47]), "not a PNG: \(data.prefix(8).map { $0 })")
        // 320x240, from the PNG header.
        let width = data[16..<20].reduce(0) { $0 << 8 | Int($1) }, height = data[20..<24].reduce(0) { $0 << 8 | Int($1) }
        #expect(width == 320 && height == 240)
        #expect(player.state == .ready)
    }
}
