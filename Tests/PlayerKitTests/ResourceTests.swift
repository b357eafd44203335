import Foundation
import Testing
import PlayerKit

@Suite("Decoder budget, release, preloading, speed and direction", .timeLimit(.minutes(4)))
struct ResourceTests {
    @Test("a full budget refuses a load with a typed error naming the holders; the refused player stays usable")
    func budgetFails() async throws {
        let budget = try DecoderBudget(limit: 2)
        let (a, _) = try await Fixtures.player()
        let (b, _) = try await Fixtures.player()
        let (c, cEvents) = try await Fixtures.player()
        defer { Task { for player in [a, b, c] { await player.shutdown() } } }
        try await budget.load(MediaSource(Fixtures.clipA), into: a, startPaused: true)
        try await budget.load(MediaSource(Fixtures.clipB), into: b, startPaused: true)
        #expect(budget.holders == [a.id, b.id] && budget.availableSlots == 0)
        await #expect(throws: DecoderBudgetError.full(limit: 2, holders: [a.id, b.id])) {
            try await budget.load(MediaSource(Fixtures.clipA), into: c)
        }
        // Nothing was loaded into c, and nothing changed for the holders.
        #expect(c.state == .idle && !cEvents.events.contains { if case .mediaLoaded = $0 { return true }; return false })
        #expect(a.state == .ready && b.state == .ready && budget.holders == [a.id, b.id])
        // A holder loading again keeps its slot.
        try await budget.load(MediaSource(Fixtures.clipB), into: a, startPaused: true)
        #expect(budget.holders == [a.id, b.id])
        // c is still usable outside the budget.
        try await c.load(MediaSource(Fixtures.clipA), startPaused: true)
        #expect(c.state == .ready)
    }

    @Test("a load that waits gets the slot a release frees, first come first served; a wait can time out")
    func budgetWaits() async throws {
        let budget = try DecoderBudget(limit: 1)
        let (a, aEvents) = try await Fixtures.player()
        let (b, _) = try await Fixtures.player()
        let (c, _) = try await Fixtures.player()
        defer { Task { for player in [a, b, c] { await player.shutdown() } } }
        try await budget.load(MediaSource(Fixtures.clipA), into: a, startPaused: true)
        let bLoad = Task { try await budget.load(MediaSource(Fixtures.clipB), into: b, whenFull: .wait(timeout: .seconds(30))) }
        #expect(await eventually { budget.waitingCount == 1 })
        let cLoad = Task { try await budget.load(MediaSource(Fixtures.clipB), into: c, whenFull: .wait(timeout: .seconds(30))) }
        #expect(await eventually { budget.waitingCount == 2 })
        #expect(b.state == .idle && c.state == .idle)

        let mark = aEvents.mark
        try budget.release(a)
        #expect(await aEvents.waitFor(after: mark) { $0.event == .itemEnded(.stopped) } != nil)
        _ = try await bLoad.value
        #expect(budget.holders == [b.id] && budget.waitingCount == 1)
        try budget.release(b)
        _ = try await cLoad.value
        #expect(budget.holders == [c.id])

        // A wait that outlasts its timeout fails with a typed error and leaves no trace.
        await #expect(throws: DecoderBudgetError.timedOut(player: a.id, limit: 1, after: .milliseconds(200))) {
            try await budget.load(MediaSource(Fixtures.clipA), into: a, whenFull: .wait(timeout: .milliseconds(200)))
        }
        #expect(budget.waitingCount == 0 && budget.holders == [c.id] && a.state == .idle)
        // A player that shuts down gives its slot back.
        await c.shutdown()
        #expect(await eventually { budget.holders.isEmpty })
        try await budget.load(MediaSource(Fixtures.clipA), into: a, startPaused: true)
        #expect(budget.holders == [a.id])
    }

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
            #expect(budget.holders == [next.id])
            await next.shutdown()
            #expect(budget.holders.isEmpty)
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
        #expect((try? player.property("video-codec")) != nil, "tracks: \(String(describing: try? player.property("track-list"))) events: \(events.events)")
        #expect(try player.property("track-list").arrayValue?.isEmpty == false)
        try budget.release(player)
        #expect(await events.waitForState(.idle))
        #expect(try player.property("track-list").arrayValue?.isEmpty == true)
        #expect(throws: PlayerError.propertyUnavailable(name: "video-codec")) { try player.property("video-codec") }
        #expect(throws: PlayerError.propertyUnavailable(name: "demuxer-cache-state")) { try player.property("demuxer-cache-state") }
        // Releasing twice is a typed error naming the player; the player stays usable.
        #expect(throws: DecoderBudgetError.notHolding(player.id)) { try budget.release(player) }
        try await player.load(MediaSource(Fixtures.clipB), startPaused: true)
        #expect(player.state == .ready)
    }

    @Test("bad input: a budget of 0 or less, a speed of 0, NaN or out of range")
    func badInput() async throws {
        #expect(throws: DecoderBudgetError.invalidLimit(0)) {
            try DecoderBudget(limit: 0)
        }
        #expect(throws: DecoderBudgetError.invalidLimit(-3)) {
            try DecoderBudget(limit: -3)
        }
        let (player, _) = try await Fixtures.player()
        defer { Task { await player.shutdown() } }
        for speed in [0, .nan, 0.1, 4.5, -1, .infinity] {
            #expect(throws: PlayerError.invalidArgument(name: "speed", value: "\(speed)", reason: "must be between 0.25 and 4")) {
                try player.setSpeed(speed)
            }
        }
        try player.setSpeed(0.25)
        try player.setSpeed(4)
        #expect(try player.property("speed") == .double(4))
    }

    @Test("reverse playback reports decreasing positions and ends at the start")
    func reverse() async throws {
        let (player, events) = try await Fixtures.player()
        defer { Task { await player.shutdown() } }
        try await player.load(MediaSource(Fixtures.clipA), startPaused: true)
        try player.seek(to: 3, precision: .exact)
        #expect(await events.waitFor { if case .seekCompleted = $0.event { return true }; return false } != nil)
        // Let the demuxer read the file to its end first: reversing from there used to hang.
        #expect(await eventually { (try? player.property("demuxer-cache-state"))?["eof"] == .flag(true) })
        try player.setPlaybackDirection(.backward)
        #expect(try player.property("play-dir") == .string("backward"))
        let mark = events.mark
        try player.play()
        let ended = await events.waitFor(timeout: .seconds(20), after: mark) { $0.event == .itemEnded(.finished) }
        let diagnostics = ["time-pos", "pause", "core-idle", "paused-for-cache", "seeking", "eof-reached", "demuxer-cache-state"]
            .map { "\($0)=\(String(describing: try? player.property($0)))" }.joined(separator: " ")
        #expect(ended != nil, "events: \(events.events) \(diagnostics)")
        let positions = events.records.filter { $0.sequenceNumber > mark }.compactMap { record -> Double? in
            if case .positionChanged(let position) = record.event { return position }
            return nil
        }
        #expect(positions.count >= 5, "positions: \(positions)")
        // Each report is at or below the one before (a frame's worth of slack for rounding).
        #expect(zip(positions, positions.dropFirst()).allSatisfy { $1 <= $0 + 0.04 }, "positions: \(positions)")
        #expect((positions.first ?? 0) - (positions.last ?? 0) > 2, "positions: \(positions)")
        try player.setPlaybackDirection(.forward)
        #expect(try player.property("play-dir") == .string("forward"))
    }
}
