import Foundation
import Testing
import PlayerKit

@Suite("Prefetch window and alternating players", .timeLimit(.minutes(4)))
struct SequenceTests {
    private static var shortA: String { Fixtures.fixture("short-a.mp4") }
    private static var shortB: String { Fixtures.fixture("short-b.mp4") }

    private static func window(radius: Int, items: [PrefetchWindow.Item]) throws -> PrefetchWindow {
        try PrefetchWindow(items: items, radius: radius) { _ async throws(PlayerError) in
            try await Player.create(configuration: Fixtures.headless)
        }
    }

    // The window's moves (neighbours prepared, what left released, players reused, an item's own
    // speed): PrefetchWindowLogicTests, on fake players; release freeing mpv's tracks, decoder
    // and demuxer on a real player: ResourceTests.

    // Bad input (a negative radius, a bad speed, an index outside the sequence, the same player
    // twice): PrefetchWindowLogicTests and AlternatingPlayersLogicTests, on fake players.

    @Test("alternating players play clips back to back, each incoming player already on its first frame")
    func backToBack() async throws {
        let (a, aEvents) = try await Fixtures.player()
        let (b, bEvents) = try await Fixtures.player()
        defer { Task { await a.shutdown(); await b.shutdown() } }
        let pair = try AlternatingPlayers(a, b)
        try await pair.playBackToBack([MediaSource(Self.shortA), MediaSource(Fixtures.fixture("random-bytes.mp4")), MediaSource(Self.shortB), MediaSource(Self.shortA)])
        func changes(_ recorder: EventRecorder) -> [Int] {
            recorder.events.compactMap { if case .clipChanged(let index, _)? = $0.feature(ClipEvent.self) { return index }; return nil }
        }
        // The broken clip (1) is skipped; the others alternate between the two players.
        // (Delegates hear events asynchronously: wait for the last one.)
        #expect(await aEvents.waitFor { $0.event.feature(ClipEvent.self) == .clipChanged(index: 3, seam: nil) } != nil)
        #expect(changes(aEvents) == [0, 3])
        #expect(changes(bEvents) == [2])
        // Each clip change comes after that player's first frame of the clip: a firstFrame
        // since the item started loading.
        for recorder in [aEvents, bEvents] {
            let events = recorder.events
            for (position, event) in events.enumerated() {
                guard case .clipChanged? = event.feature(ClipEvent.self) else { continue }
                let before = events[..<position]
                let lastStart = before.lastIndex { if case .stateChanged(_, .loading) = $0 { return true }; return false }
                let lastFrame = before.lastIndex(of: .firstFrame)
                #expect(lastStart != nil && lastFrame != nil && lastFrame! > lastStart!, "\(events)")
            }
        }
        #expect(await aEvents.waitFor { $0.event == .itemEnded(.finished) } != nil)
    }
}
