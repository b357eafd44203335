import Foundation
import Testing
import PlayerKit
@testable import PlayerKitResources

@Suite("Clip loops", .timeLimit(.minutes(4)))
struct ClipLoopTests {
    static var shortA: String { Fixtures.fixture("short-a.mp4") }
    static var shortB: String { Fixtures.fixture("short-b.mp4") }

    @Test("an unplayable clip is reported with a clipUnplayable event naming it and left out; the loop goes on")
    func unplayableClip() async throws {
        let (player, events) = try await Fixtures.player()
        defer { Task { await player.shutdown() } }
        let broken = Fixtures.fixture("random-bytes.mp4")
        let loop = try ClipLoop(player: player, clips: [MediaSource(Self.shortA), MediaSource(broken), MediaSource(Self.shortB)])
        try await loop.start()
        #expect(loop.playableClips == [0, 2])
        let unplayable = await events.waitFor { if case .clipUnplayable? = $0.event.feature(ClipEvent.self) { true } else { false } }
        guard case .clipUnplayable(let index, let error)? = unplayable?.event.feature(ClipEvent.self) else {
            Issue.record("no clipUnplayable event: \(events.events)")
            return
        }
        #expect(index == 1)
        #expect("\(error)".contains("random-bytes.mp4"), "error: \(error)")
        let wrapped = await events.waitFor(timeout: .seconds(20)) { if case .loopWrapped? = $0.event.feature(ClipEvent.self) { true } else { false } }
        #expect(wrapped != nil)
        let order = events.events.compactMap { event -> Int? in
            if case .clipChanged(let index, _)? = event.feature(ClipEvent.self) { return index }
            return nil
        }
        #expect(Array(order.prefix(3)) == [0, 2, 0], "\(order)")
        loop.stop()
        #expect(await events.waitForState(.idle))
    }

    @Test("one clip loops on its own: a wrap-around every pass, the clip index always 0")
    func singleClip() async throws {
        let (player, events) = try await Fixtures.player()
        defer { Task { await player.shutdown() } }
        let loop = try ClipLoop(player: player, clips: [MediaSource(Self.shortA)])
        try await loop.start()
        let second = await events.waitFor(timeout: .seconds(20)) { record in
            if case .loopWrapped(let count, let seam)? = record.event.feature(ClipEvent.self) { return count == 2 && seam != nil }
            return false
        }
        #expect(second != nil)
        loop.stop()
        let indexes = events.events.compactMap { event -> Int? in
            if case .clipChanged(let index, _)? = event.feature(ClipEvent.self) { return index }
            return nil
        }
        #expect(indexes.count >= 3 && indexes.allSatisfy { $0 == 0 }, "\(indexes)")
        #expect(player.state != .ended)  // it never ran out
    }
    // Bad input (no clips, no playable clip): ClipLoopLogicTests, on fake players.
}
