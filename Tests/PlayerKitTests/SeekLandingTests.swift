import Dispatch
import Foundation
import Testing
import PlayerKit

/// An awaited seek returns once the player shows the new position, and a load returns with the
/// position known (issue 41, what a new user hit): before, `perform(.seek)` returned when mpv had
/// only queued the seek (`position` nil, `time-pos` still the old value), and `position` was nil
/// right after `load(_, startPaused: true)`, so `SyncGroup.seek(toFrame:)` right after a load threw
/// `nothingLoaded` one run in four on reused players.
@Suite("Seeks and loads land before they return", .timeLimit(.minutes(3)))
struct SeekLandingTests {
    /// The 20 s fixture (30 fps): no end comes between a check and the next step.
    private var longClip: String { Fixtures.fixture("long.mp4") }

    @Test("await perform(.seek): position is the target when it returns, and mpv's time-pos agrees")
    func awaitedSeekShowsTarget() async throws {
        let (player, _) = try await Fixtures.player(id: Fixtures.uniqueID("seek-await"))
        defer { Task { await player.shutdown() } }
        try await player.load(.file(longClip), startPaused: true)
        for target in [2.0, 1.0, 7.5, 0.5] {
            try await player.perform(.seek(to: target, precision: .exact))
            #expect(player.position.map { abs($0 - target) < 1e-6 } == true,
                    "after seeking to \(target): position \(String(describing: player.position))")
            let reported = try await player.property("time-pos").doubleValue
            #expect(reported.map { abs($0 - target) < 1e-6 } == true,
                    "after seeking to \(target): mpv's time-pos \(String(describing: reported))")
        }
        // While playing too: it returns at or past the target (the clip plays on from there; how
        // far depends on the machine, so no upper bound), never at the old place (0.5).
        try await player.perform(.play)
        try await player.perform(.seek(to: 12, precision: .exact))
        #expect(player.position.map { $0 >= 12 } == true, "playing: \(String(describing: player.position))")
    }

    @Test("the blocking seek(to:) returns with position at the target")
    func blockingSeekShowsTarget() async throws {
        let (player, _) = try await Fixtures.player(id: Fixtures.uniqueID("seek-block"))
        defer { Task { await player.shutdown() } }
        try await player.load(.file(longClip), startPaused: true)
        // Off the cooperative pool: the blocking form waits for mpv.
        let position = try await Task.detached { () throws -> Double? in
            try await player.seek(to: 0.5)
            return player.position
        }.value
        #expect(position.map { abs($0 - 0.5) < 1e-6 } == true, "position \(String(describing: position))")
    }

    @Test("a load returns with position set, paused or playing, on a fresh and on a reused player")
    func loadSetsPosition() async throws {
        let (player, _) = try await Fixtures.player(id: Fixtures.uniqueID("load-position"))
        defer { Task { await player.shutdown() } }
        for round in 0..<6 {
            try await player.load(.file(round.isMultiple(of: 2) ? longClip : Fixtures.clipA), startPaused: true)
            #expect(player.position == 0, "round \(round), paused: \(String(describing: player.position))")
        }
        try await player.load(.file(longClip))
        #expect(player.position != nil)
    }

    @Test("a seek on the same item twice in a row, without waiting: both calls return at the last target")
    func overlappingSeeks() async throws {
        let (player, _) = try await Fixtures.player(id: Fixtures.uniqueID("seek-overlap"))
        defer { Task { await player.shutdown() } }
        try await player.load(.file(longClip), startPaused: true)
        // Handed over in this order, one right after the other, then both awaited. (Two
        // `async let`s would race: either child task may hand its seek over first.)
        let results = await Player.perform(each: [(player, .seek(to: 3, precision: .exact)), (player, .seek(to: 6, precision: .exact))])
        #expect(results.allSatisfy { (try? $0.get()) != nil }, "\(results)")
        #expect(player.position.map { abs($0 - 6) < 1e-6 } == true, "position \(String(describing: player.position))")
    }

    @Test("a seek past the end returns when the item ends")
    func seekPastEnd() async throws {
        let (player, _) = try await Fixtures.player(id: Fixtures.uniqueID("seek-end"))
        defer { Task { await player.shutdown() } }
        // The 20 s clip: it cannot end on its own before the seek, however loaded the machine.
        try await player.load(.file(longClip), startPaused: true)
        try await player.perform(.play)
        try await player.perform(.seek(to: 60, precision: .exact), timeout: .seconds(10))
        #expect(await eventually { player.state == .ended || player.state == .idle })
    }

    @Test("SyncGroup.seek(toFrame:) right after load, players reused: 20 of 20")
    func groupFrameSeekAfterLoad() async throws {
        let (left, _) = try await Fixtures.player(id: Fixtures.uniqueID("frames-left"))
        let (right, _) = try await Fixtures.player(id: Fixtures.uniqueID("frames-right"))
        defer { Task { await left.shutdown(); await right.shutdown() } }
        let group = try SyncGroup(players: [left, right])
        for run in 0..<20 {
            if run.isMultiple(of: 2) {
                try await group.load([.file(longClip), .file(longClip)])
            } else {
                // What an app does as often: each player loaded paused, then the group moved.
                try await left.load(.file(longClip), startPaused: true)
                try await right.load(.file(longClip), startPaused: true)
            }
            let frame = 30 + run
            do {
                let landed = try await group.seek(toFrame: frame)
                #expect(landed.members.allSatisfy { $0.frameNumber == frame }, "run \(run): \(landed)")
            } catch {
                Issue.record("run \(run): seek(toFrame: \(frame)) right after load threw \(error)")
            }
        }
    }
}
