@testable import PlayerKitCore
@testable import PlayerKitResources
import PlayerKitSupport
@testable import PlayerKitTesting
import Testing

@Suite("PrefetchWindow's decisions, on fake players and a manual clock", .timeLimit(.minutes(1)))
struct PrefetchWindowLogicTests {
    let bus = PlayerEventBus(label: "prefetch-logic")
    let clock = ManualClock()

    /// A factory of fakes that counts its calls.
    final class Factory: Sendable {
        let made = Locked<[FakePlayer]>([])
        let clock: ManualClock
        let bus: PlayerEventBus
        let media: [String: FakePlayer.Media]
        init(clock: ManualClock, bus: PlayerEventBus, media: [String: FakePlayer.Media]) {
            self.clock = clock
            self.bus = bus
            self.media = media
        }
        func make(_ slot: Int) throws(PlayerError) -> any MediaPlayer {
            let player = try FakePlayer(clock: clock, bus: bus, media: media)
            made.withLock { $0.append(player) }
            return player
        }
    }

    @Test("bad input is refused by name and makes no player: a negative radius, a speed of 0 or NaN, an index outside the sequence; an item's own speed is applied")
    func badInputAndSpeeds() async throws {
        let factory = Factory(clock: clock, bus: bus, media: [:])
        let make: @Sendable (Int) async throws(PlayerError) -> any MediaPlayer = { slot throws(PlayerError) in try factory.make(slot) }
        let items = [PrefetchWindow.Item("a.mp4"), PrefetchWindow.Item("b.mp4", speed: 2)]
        #expect(throws: PlayerError.invalidArgument(name: "prefetch radius", value: "-1", reason: "must be 0 or more")) {
            try PrefetchWindow(items: items, radius: -1, makePlayer: make)
        }
        for speed in [0, Double.nan] {
            #expect(throws: PlayerError.invalidArgument(name: "speed", value: "\(speed)", reason: "must be between 0.25 and 4")) {
                try PrefetchWindow(items: [PrefetchWindow.Item("a.mp4", speed: speed)], radius: 0, makePlayer: make)
            }
        }
        let window = try PrefetchWindow(items: items, radius: 1, makePlayer: make)
        await #expect(throws: PlayerError.invalidArgument(name: "sequence index", value: "2", reason: "must be in 0..<2")) {
            try await window.move(to: 2)
        }
        #expect(window.players.isEmpty && factory.made.withLock { $0.isEmpty })
        try await window.move(to: 0)
        #expect(window.player(for: 0)?.snapshot.speed == 1 && window.player(for: 1)?.snapshot.speed == 2)
        for player in factory.made.withLock({ $0 }) { await player.shutdown() }
    }

    @Test("a move prepares the current item and its neighbours, releases what left, and reuses the freed players")
    func moves() async throws {
        let factory = Factory(clock: clock, bus: bus, media: [:])
        let sources: [MediaSource] = (0..<6).map { MediaSource("item-\($0).mp4") }
        let window = try PrefetchWindow(items: sources.map { PrefetchWindow.Item($0) }, radius: 1) { slot throws(PlayerError) in try factory.make(slot) }
        let first = try await window.move(to: 0)
        #expect(window.preparedIndexes == [0, 1])
        #expect(first.state == .ready)
        let second = try await window.move(to: 1)
        #expect(second === window.player(for: 1))
        #expect(window.preparedIndexes == [0, 1, 2])
        try await window.move(to: 4)                                  // 0, 1, 2 leave; 3, 4, 5 enter
        #expect(window.preparedIndexes == [3, 4, 5])
        let made = factory.made.withLock { $0 }
        #expect(made.count == 3)                                      // never more than 2 × radius + 1
        #expect(made.map(\.releaseCount).reduce(0, +) == 3)
        for player in made { await player.shutdown() }
    }

    @Test("an unplayable neighbour leaves its slot free and the move succeeds; an unplayable current item fails the move")
    func failures() async throws {
        let factory = Factory(clock: clock, bus: bus, media: [
            "bad.mp4": .unplayable(source: "bad.mp4"),
        ])
        let window = try PrefetchWindow(items: ["good.mp4", "bad.mp4", "also-good.mp4"].map { PrefetchWindow.Item(MediaSource($0)) }, radius: 1) { slot throws(PlayerError) in
            try factory.make(slot)
        }
        try await window.move(to: 0)
        #expect(window.preparedIndexes == [0])
        await #expect(throws: PlayerError.self) { try await window.move(to: 1) }
        #expect(window.currentIndex == 1)
        #expect(window.preparedIndexes == [0])                       // the current item first: its failure ends the move
        for player in factory.made.withLock({ $0 }) { await player.shutdown() }
    }

    @Test("neighbours prepare at the same time: with loads of 1 s, a window of radius 2 is ready in 2 s of clock time")
    func neighboursOverlap() async throws {
        let media = FakePlayer.Media(loadTime: .seconds(1))
        let factory = Factory(clock: clock, bus: bus, media: Dictionary(uniqueKeysWithValues: (0..<5).map { ("i\($0).mp4", media) }))
        let window = try PrefetchWindow(items: (0..<5).map { PrefetchWindow.Item(MediaSource("i\($0).mp4")) }, radius: 2) { slot throws(PlayerError) in
            try factory.make(slot)
        }
        let move = Task { try await window.move(to: 2) }
        #expect(await eventually { factory.made.withLock { $0.count } == 1 && factory.made.withLock { $0[0].state } == .loading })
        clock.advance(by: .seconds(1))                                // the current item
        #expect(await eventually { factory.made.withLock { $0.count == 5 && $0.dropFirst().allSatisfy { $0.state == .loading } } })
        clock.advance(by: .seconds(1))                                // all four neighbours at once
        _ = try await move.value
        #expect(window.preparedIndexes == [0, 1, 2, 3, 4])
        #expect(clock.elapsed == .seconds(2))
        for player in factory.made.withLock({ $0 }) { await player.shutdown() }
    }
}
