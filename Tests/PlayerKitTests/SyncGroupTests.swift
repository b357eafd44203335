import Foundation
import Testing
@testable import PlayerKit

@Suite("Sync group")
struct SyncGroupTests {
    @Test("members seek together and play on together")
    func seekTogether() async throws {
        let (left, leftEvents) = try Fixtures.player()
        let (right, _) = try Fixtures.player()
        defer { Task { await left.shutdown(); await right.shutdown() } }
        let group = try SyncGroup(players: [left, right])
        try await group.load([MediaSource(Fixtures.clipA), MediaSource(Fixtures.clipB)], looping: true)
        #expect(left.state == .ready && right.state == .ready)
        try group.play()
        #expect(group.phase == .playing)
        #expect(await leftEvents.waitFor { if case .positionChanged(let p) = $0.event { return p > 0.5 }; return false } != nil)
        try await group.seek(to: 2.5)
        #expect(group.phase == .playing)
        // Both landed on 2.5 s and play on from there, together.
        let positions = [left.position ?? -1, right.position ?? -1]
        #expect(positions.allSatisfy { abs($0 - 2.5) < 0.15 }, "positions after the seek: \(positions)")
        let mark = leftEvents.mark
        #expect(await leftEvents.waitFor(after: mark) { if case .positionChanged(let p) = $0.event { return p > 2.8 }; return false } != nil)
        #expect(await eventually { group.drifts.count == 2 })
        #expect(group.drifts.values.allSatisfy { abs($0) < 0.1 }, "drifts: \(group.drifts)")
        try group.pause()
        #expect(group.phase == .paused)
        #expect(await eventually { left.state == .paused && right.state == .paused })
    }

    @Test("bad input: fewer than two players, a player twice, a source count that differs, a speed of 0, a NaN seek")
    func badInput() async throws {
        let (a, _) = try Fixtures.player()
        let (b, _) = try Fixtures.player()
        defer { Task { await a.shutdown(); await b.shutdown() } }
        #expect(throws: PlayerError.invalidArgument(name: "sync group", value: "1 player(s)", reason: "needs at least two players")) {
            try SyncGroup(players: [a])
        }
        #expect(throws: PlayerError.self) { try SyncGroup(players: [a, a]) }
        let group = try SyncGroup(players: [a, b])
        await #expect(throws: PlayerError.invalidArgument(name: "sync group sources", value: "1", reason: "needs one source per member (2)")) {
            try await group.load([MediaSource(Fixtures.clipA)])
        }
        #expect(throws: PlayerError.invalidArgument(name: "speed", value: "0.0", reason: "must be between 0.25 and 4")) {
            try group.setSpeed(0)
        }
        await #expect(throws: PlayerError.invalidArgument(name: "seek position", value: "nan", reason: "must be a finite number of seconds, 0 or more")) {
            try await group.seek(to: .nan)
        }
        // The group and its players are still usable.
        try await group.load([MediaSource(Fixtures.clipA), MediaSource(Fixtures.clipB)])
        try group.setSpeed(1.5)
        #expect(group.speed == 1.5)
        #expect(try a.property("speed") == .double(1.5))
    }
}
