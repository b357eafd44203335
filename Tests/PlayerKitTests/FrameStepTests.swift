import Foundation
@testable import PlayerKitCore
import PlayerKit
import PlayerKitSupport
import Testing

/// Stepping one frame at a time on a real mpv core: the first steps of issue 28's frame-accurate
/// comparison. The shipped clip is 30 frames per second, so a frame is 1/30 s.
@Suite("Frame stepping", .timeLimit(.minutes(2)))
struct FrameStepTests {
    /// mpv's exact position, read until it differs from `old` (a step is carried out a moment
    /// after mpv accepted it), at most 5 s.
    private func position(of player: Player, after old: Double?) async -> Double? {
        let now = Locked<Double?>(nil)
        _ = await eventually(timeout: .seconds(5)) {
            let read = (try? await player.property("time-pos"))?.doubleValue
            now.withLock { $0 = read }
            return read != nil && read != old
        }
        return now.withLock { $0 }
    }

    @Test("three steps forward land three frames on, paused; a step back one frame before; nothing loaded is a typed error")
    func stepForwardAndBack() async throws {
        let (player, _) = try await Fixtures.player()
        defer { Task { await player.shutdown() } }
        await #expect(throws: PlayerError.noMediaLoaded(operation: "step a frame")) { try await player.perform(.stepFrame) }
        #expect(throws: PlayerError.noMediaLoaded(operation: "step a frame")) { try player.send(.stepFrameBack) }

        try await player.preload(MediaSource(Fixtures.clipA))
        // From a frame in the middle, once the seek has landed (a step sent during the seek is
        // part of it).
        let landings = player.events(kinds: [.seekCompleted])
        try await player.perform(.seek(to: 1, precision: .exact))
        #expect(await landings.first(timeout: .seconds(5)) { _ in true } != nil)
        var time = try #require(await position(of: player, after: nil))
        let start = time
        #expect(abs(start - 1) < 0.5 / 30, "the seek landed at \(start)")
        for _ in 0..<3 {
            try await player.perform(.stepFrame)
            time = try #require(await position(of: player, after: time))
        }
        #expect(abs(time - (start + 3.0 / 30)) < 0.5 / 30, "from \(start) to \(time)")
        #expect(player.isPaused)
        try await player.perform(.stepFrameBack)
        time = try #require(await position(of: player, after: time))
        #expect(abs(time - (start + 2.0 / 30)) < 0.5 / 30, "back to \(time)")
        #expect(player.isPaused)
    }

    @Test("a sync group steps two real players in lockstep: the same frame number on both, as mpv counts it; a frame seek and a step back too; the item's frame rate is read")
    func groupLockstep() async throws {
        let (left, _) = try await Fixtures.player()
        let (right, _) = try await Fixtures.player()
        let (idle, _) = try await Fixtures.player()
        defer { Task { for player in [left, right, idle] { await player.shutdown() } } }
        let info = try await idle.preload(MediaSource(Fixtures.clipA))
        #expect(info.frameRate == 30 && idle.snapshot.frameRate == 30)
        idle.releaseMedia()
        #expect(await eventually(timeout: .seconds(5)) { idle.position == nil })
        let unloaded = try SyncGroup(players: [left, idle])
        await #expect(throws: FrameStepError.nothingLoaded(left.id)) { try await unloaded.stepFrame() }
        unloaded.invalidate()

        let group = try SyncGroup(players: [left, right])
        defer { group.invalidate() }
        try await group.load([MediaSource(Fixtures.clipA), MediaSource(Fixtures.clipB)])
        var frame = try await group.seek(toFrame: 30)
        #expect(frame.members.map(\.frameNumber) == [30, 30], "\(frame)")
        for expected in 31...33 {
            frame = try await group.stepFrame()
            #expect(frame.members.map(\.frameNumber) == [expected, expected] && frame.members.allSatisfy(\.moved), "\(frame)")
        }
        for player in [left, right] {
            await #expect(try player.property("estimated-frame-number").intValue == 33)
            #expect(player.isPaused)
        }
        frame = try await group.stepFrameBack()
        #expect(frame.members.map(\.frameNumber) == [32, 32], "\(frame)")
        for player in [left, right] {
            await #expect(try player.property("estimated-frame-number").intValue == 32)
        }
        // The last frame of the 4 s clips is 119: one more step is refused, nothing moves.
        frame = try await group.seek(toFrame: 119)
        #expect(frame.members.map(\.frameNumber) == [119, 119], "\(frame)")
        await #expect(throws: FrameStepError.atLastFrame) { try await group.stepFrame() }
    }
}
