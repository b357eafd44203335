import PlayerKitCore
@testable import PlayerKitResources
import PlayerKitSupport
import PlayerKitTesting
import Testing

@Suite("AlternatingPlayers' decisions, on fake players and a manual clock", .timeLimit(.minutes(1)))
struct AlternatingPlayersLogicTests {
    let bus = PlayerEventBus(label: "alternating-logic")
    let clock = ManualClock()

    @Test("back to back: each clip plays on the other player, the outgoing one is released, an unplayable clip is skipped")
    func backToBack() async throws {
        let media: [String: FakePlayer.Media] = [
            "one": .init(duration: 2), "bad": .unplayable(source: "bad"), "two": .init(duration: 3), "three": .init(duration: 1),
        ]
        let first = try FakePlayer(clock: clock, bus: bus, media: media, defaultMedia: nil)
        let second = try FakePlayer(clock: clock, bus: bus, media: media, defaultMedia: nil)
        let pair = try AlternatingPlayers(first, second)
        let log = EventLog(bus: bus, players: [first.id, second.id])
        let run = Task { try await pair.playBackToBack(["one", "bad", "two", "three"]) }
        #expect(await eventually { first.state == .playing && second.state == .ready })
        clock.advance(by: .seconds(2))                                  // "one" ends on the first player
        #expect(await eventually { second.state == .playing })
        #expect(await eventually { first.releaseCount == 1 })
        clock.advance(by: .seconds(3))                                  // "two" ends on the second
        #expect(await eventually { first.state == .playing })
        clock.advance(by: .seconds(1))
        try await run.value
        let changes = log.features(ClipEvent.self).compactMap { event -> Int? in
            if case .clipChanged(let index, _) = event { return index } else { return nil }
        }
        #expect(changes == [0, 2, 3])
        #expect(pair.active === first)
        // Only started with play: no blocking start on the pool, no seek.
        #expect(second.commands == [.play])
        await first.shutdown()
        await second.shutdown()
    }

    @Test("switching with nothing prepared is refused; the same player twice is refused")
    func refusals() async throws {
        let first = try FakePlayer(clock: clock, bus: bus)
        let second = try FakePlayer(clock: clock, bus: bus)
        await #expect(throws: PlayerError.noMediaLoaded(operation: "switch to the prepared player")) {
            try await AlternatingPlayers(first, second).switchToPrepared()
        }
        #expect(throws: PlayerError.self) { try AlternatingPlayers(first, first) }
    }

    @Test("prepare and switch by hand: the standby becomes active and plays, the one before is released, the roles swap each time")
    func prepareAndSwitch() async throws {
        let first = try FakePlayer(clock: clock, bus: bus)
        let second = try FakePlayer(clock: clock, bus: bus)
        let pair = try AlternatingPlayers(first, second)
        #expect(pair.active == nil && pair.standby === first)
        try await pair.prepare("a.mp4")
        #expect(first.state == .ready)
        await #expect(try pair.switchToPrepared() === first)
        #expect(first.state == .playing && pair.standby === second)
        try await pair.prepare("b.mp4")
        await #expect(try pair.switchToPrepared() === second)
        #expect(second.state == .playing && first.state == .idle && first.releaseCount == 1)
        await #expect(throws: PlayerError.noMediaLoaded(operation: "switch to the prepared player")) { try await pair.switchToPrepared() }
        #expect(pair.active === second)
        await first.shutdown()
        await second.shutdown()
    }

    @Test("back to back: an empty list is refused by name; the playing player shutting down ends the call with its error; a cancelled call starts nothing more")
    func backToBackEnds() async throws {
        let first = try FakePlayer(clock: clock, bus: bus, defaultMedia: .init(duration: 5))
        let second = try FakePlayer(clock: clock, bus: bus, defaultMedia: .init(duration: 5))
        let pair = try AlternatingPlayers(first, second)
        await #expect(throws: PlayerError.self) { try await pair.playBackToBack([]) }
        let run = Task { try await pair.playBackToBack(["a", "b", "c"]) }
        #expect(await eventually { first.state == .playing && second.state == .ready })
        await first.shutdown()
        await #expect(throws: PlayerError.playerShutDown(first.id)) { try await run.value }
        let third = try FakePlayer(clock: clock, bus: bus, defaultMedia: .init(duration: 5))
        let other = try AlternatingPlayers(second, third)
        let cancelled = Task { try await other.playBackToBack(["a", "b", "c"]) }
        #expect(await eventually { second.state == .playing })
        cancelled.cancel()
        try await cancelled.value
        clock.advance(by: .seconds(6))
        #expect(third.state != .playing)                               // nothing more started
        await second.shutdown()
        await third.shutdown()
    }
}

