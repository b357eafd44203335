@testable import PlayerKitCore
import Foundation
import Testing
import PlayerKit

@Suite("Decoder budget, release, preloading, speed and direction", .timeLimit(.minutes(4)))
struct ResourceTests {
    // A full budget's typed refusal, waiters first come first served, timeouts, holders that
    // shut down, a refused player staying usable and bad limits: DecoderBudgetLogicTests, on
    // fake players and a manual clock.

    @Test("a holder's shutdown frees its slot as soon as shutdown() returns, before its last event reaches the budget")
    func freedAtOnce() async throws {
        let budget = try DecoderBudget(limit: 1)
        for _ in 0..<3 {
            let (holder, _) = try await Fixtures.player()
            let (next, _) = try await Fixtures.player()
            try await budget.load(MediaSource(Fixtures.clipA), into: holder, startPaused: true)
            await holder.shutdown()
            // No waiting: a load that refuses to wait gets the slot at once.
            try await budget.load(MediaSource(Fixtures.clipB), into: next, startPaused: true, whenFull: .fail)
            #expect(budget.snapshot.holders == [next.id])
            await next.shutdown()
            #expect(budget.snapshot.holders.isEmpty)
        }
    }

    @Test("release unloads the media: mpv has no tracks, no decoder and no demuxer afterwards")
    func releaseFrees() async throws {
        let budget = try DecoderBudget(limit: 4)
        let (player, events) = try await Fixtures.player()
        defer { Task { await player.shutdown() } }
        // Paused on the first frame: the item cannot end before the checks.
        try await budget.load(MediaSource(Fixtures.clipA), into: player, startPaused: true)
        #expect(await events.waitFor { $0.event == .firstFrame } != nil)
        let codec = try? await player.property("video-codec")
        let trackList = try? await player.property("track-list")
        #expect(codec != nil, "tracks: \(String(describing: trackList)) events: \(events.events)")
        await #expect(try player.property("track-list").arrayValue?.isEmpty == false)
        try budget.release(player)
        #expect(await events.waitForState(.idle))
        await #expect(try player.property("track-list").arrayValue?.isEmpty == true)
        await #expect(throws: PlayerError.propertyUnavailable(name: "video-codec")) { try await player.property("video-codec") }
        await #expect(throws: PlayerError.propertyUnavailable(name: "demuxer-cache-state")) { try await player.property("demuxer-cache-state") }
        // Releasing twice is a typed error naming the player; the player stays usable.
        #expect(throws: DecoderBudgetError.notHolding(player.id)) { try budget.release(player) }
        try await player.load(MediaSource(Fixtures.clipB), startPaused: true)
        #expect(player.state == .ready)
    }

    @Test("bad input: a speed of 0, NaN or out of range")
    func badInput() async throws {
        let (player, _) = try await Fixtures.player()
        defer { Task { await player.shutdown() } }
        for speed in [0, .nan, 0.1, 4.5, -1, .infinity] {
            await #expect(throws: PlayerError.invalidArgument(name: "speed", value: "\(speed)", reason: "must be between 0.25 and 4")) {
                try await player.perform(.setSpeed(speed))
            }
        }
        try await player.perform(.setSpeed(0.25))
        try await player.perform(.setSpeed(4))
        #expect(try await player.property("speed") == .double(4))
    }

    @Test("reverse playback reports decreasing positions and ends at the start")
    func reverse() async throws {
        let (player, events) = try await Fixtures.player()
        defer { Task { await player.shutdown() } }
        try await player.load(MediaSource(Fixtures.clipA), startPaused: true)
        try await player.seek(to: 3, precision: .exact)
        #expect(await events.waitFor { if case .seekCompleted = $0.event { return true }; return false } != nil)
        // Let the demuxer read the file to its end first: reversing from there used to hang.
        #expect(await eventually { (try? await player.property("demuxer-cache-state"))?["eof"] == .flag(true) })
        try await player.perform(.setPlaybackDirection(.backward))
        await #expect(try player.property("play-dir") == .string("backward"))
        let mark = events.mark
        try await player.play()
        let ended = await events.waitFor(timeout: .seconds(20), after: mark) { $0.event == .itemEnded(.finished) }
        var diagnostics = ""
        for name in ["time-pos", "pause", "core-idle", "paused-for-cache", "seeking", "eof-reached", "demuxer-cache-state"] {
            diagnostics += "\(name)=\(String(describing: try? await player.property(name))) "
        }
        #expect(ended != nil, "events: \(events.events) \(diagnostics)")
        let positions = events.records.filter { $0.sequenceNumber > mark }.compactMap { record -> Double? in
            if case .positionChanged(let position) = record.event { return position }
            return nil
        }
        #expect(positions.count >= 5, "positions: \(positions)")
        // Each report is at or below the one before (a frame's worth of slack for rounding).
        #expect(zip(positions, positions.dropFirst()).allSatisfy { $1 <= $0 + 0.04 }, "positions: \(positions)")
        #expect((positions.first ?? 0) - (positions.last ?? 0) > 2, "positions: \(positions)")
        try await player.perform(.setPlaybackDirection(.forward))
        await #expect(try player.property("play-dir") == .string("forward"))
    }
}
