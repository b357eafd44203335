import PlayerKitCore
@testable import PlayerKitSync
@testable import PlayerKitTesting
import Testing

@Suite("ClockFollower: players kept on a clock the app sets, on fake players and a manual clock", .timeLimit(.minutes(1)))
struct ClockFollowerLogicTests {
    let bus = PlayerEventBus(label: "clock-follower-logic")
    let clock = ManualClock()

    func players(_ count: Int) throws -> [FakePlayer] {
        try (0..<count).map { _ in try FakePlayer(clock: clock, bus: bus, defaultMedia: .init(duration: 60)) }
    }

    /// Advances the clock `seconds` one frame (1/30 s) at a time, so the fakes report every frame.
    func play(_ seconds: Double) {
        for _ in 0..<Int(seconds * 30) { clock.advance(by: .seconds(1.0 / 30)) }
    }

    @Test("bad input is refused by name: a player twice, a NaN setting, a clock that is not a position or a speed out of range; nothing reaches a player")
    func badInput() async throws {
        let p = try players(2)
        // Any number of players makes a follower (2.0's one rule), none included.
        let nobody = try ClockFollower(players: [], clock: clock)
        try nobody.setClock(0, at: clock.now)
        #expect(nobody.members.isEmpty && nobody.skews.isEmpty)
        nobody.invalidate()
        #expect(throws: PlayerError.self) { try ClockFollower(players: [p[0], p[0]], clock: clock) }
        var settings = SyncSettings()
        settings.maximumSpeedTrim = .nan
        #expect(throws: PlayerError.self) { try ClockFollower(players: p, settings: settings, clock: clock) }
        let follower = try ClockFollower(players: p, clock: clock)
        #expect(throws: PlayerError.invalidArgument(name: "clock position", value: "inf", reason: "must be a finite number of seconds")) {
            try follower.setClock(.infinity, at: clock.now)
        }
        #expect(throws: PlayerError.self) { try follower.setClock(0, speed: 0, at: clock.now) }
        #expect(follower.position(at: clock.now) == nil)
        #expect(p.allSatisfy { $0.commands == [.setPositionTiming(.whenDue)] }, "\(p.map(\.commands))")
        follower.invalidate()
        for player in p { await player.shutdown() }
    }

    @Test("players on the app's clock: in step they report near-zero skew and no correction; one that jumps 2 s ahead is seeked back to the clock; with the clock stopped nothing is corrected")
    func followsTheClock() async throws {
        let p = try players(2)
        let follower = try ClockFollower(players: p, clock: clock)
        let log = EventLog(bus: bus, players: p.map(\.id))
        for player in p { try await player.load("clip.mp4") }
        try follower.setClock(0, at: clock.now)
        play(1)
        #expect(follower.correctiveSeeks == 0)
        #expect(try #require(follower.skews[p[1].id]).p99 < 0.002)
        #expect(log.features(SyncEvent.self, of: p[0].id).contains { if case .aligned = $0 { true } else { false } })
        try await p[1].seek(to: (p[1].position ?? 0) + 2, precision: .exact)
        play(1)
        #expect(follower.correctiveSeeks == 1)
        #expect(abs((p[1].position ?? 0) - (follower.position(at: clock.now) ?? 0)) < 0.05)
        #expect(log.features(SyncEvent.self, of: p[1].id).contains { if case .realigned(_, .drift) = $0 { true } else { false } }, "\(log.features(SyncEvent.self, of: p[1].id)) \(p[1].commands) \(String(describing: follower.skews[p[1].id]))")
        // Stopped: a player off the clock is left alone.
        try follower.setClock(nil, at: clock.now)
        try await p[0].seek(to: (p[0].position ?? 0) + 2, precision: .exact)
        let commands = p[0].commands.count
        play(1)
        #expect(p[0].commands.count == commands)
        follower.invalidate()
        #expect(p.allSatisfy { $0.frameObservationCount == 0 && $0.bufferedMediaObservationCount == 0 })
        for player in p { await player.shutdown() }
    }

    @Test("a player that stalls (2 s) while the clock runs on is brought back to it within 1 s of its data flowing again (fellBehind(stall), realigned(stall)); the other plays on untouched")
    func stall() async throws {
        let p = try players(2)
        let follower = try ClockFollower(players: p, clock: clock)
        let log = EventLog(bus: bus, players: p.map(\.id))
        for player in p { try await player.load("clip.mp4") }
        try follower.setClock(0, at: clock.now)
        play(1)
        p[1].stall(for: .seconds(2))
        play(2)
        let flowing = clock.now
        play(1)
        #expect(log.features(SyncEvent.self, of: p[1].id).contains(.fellBehind(.stall)))
        let back = log.all.first { record in
            guard record.playerID == p[1].id, case .realigned(_, .stall)? = record.event.feature(SyncEvent.self) else { return false }
            return true
        }
        let time = try #require(back?.time, "\(log.features(SyncEvent.self, of: p[1].id))")
        #expect(time - flowing <= .seconds(1), "back in step \(time - flowing) after its data flowed again")
        #expect(abs((p[1].position ?? 0) - (follower.position(at: clock.now) ?? 0)) < 0.01)
        #expect(!log.features(SyncEvent.self, of: p[0].id).contains { if case .fellBehind = $0 { true } else { false } })
        follower.invalidate()
        for player in p { await player.shutdown() }
    }
}
