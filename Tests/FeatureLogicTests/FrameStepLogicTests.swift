import PlayerKitCore
import PlayerKitSupport
import PlayerKitSync
import PlayerKitTesting
import Testing

/// A sync group's frame steps and frame seeks on fake players (issue 28): the alignment rule
/// (one group time; each member shows its frame on screen at that time plus its offset; a step
/// goes to the next moment any member's picture changes) and every typed refusal.
@Suite("SyncGroup's frame steps, on fake players and a manual clock", .timeLimit(.minutes(1)))
struct FrameStepLogicTests {
    let bus = PlayerEventBus(label: "frame-step-logic")
    let clock = ManualClock()

    /// Two fakes loaded in a group: `a` of `rateA` fps, `b` of `rateB`, 10 s each.
    func group(rateA: Double = 30, rateB: Double = 30, durationB: Double = 10) async throws -> (SyncGroup, FakePlayer, FakePlayer) {
        let a = try FakePlayer(clock: clock, bus: bus, defaultMedia: .init(duration: 10, frameRate: rateA))
        let b = try FakePlayer(clock: clock, bus: bus, defaultMedia: .init(duration: durationB, frameRate: rateB))
        let group = try SyncGroup(players: [a, b], clock: clock)
        try await group.load(["a.mp4", "b.mp4"])
        return (group, a, b)
    }

    func frames(_ frame: GroupFrame) -> [Int] { frame.members.map(\.frameNumber) }

    @Test("same rate: every step moves both members one frame (mpv's frame-step), back one frame (frame-back-step); a frame seek lands both on the frame")
    func lockstep() async throws {
        let (group, a, b) = try await group()
        var frame = try await group.seek(toFrame: 30)
        #expect(frames(frame) == [30, 30] && abs(frame.time - 1) < 1e-9)
        for expected in 31...33 {
            frame = try await group.stepFrame()
            #expect(frames(frame) == [expected, expected] && frame.members.allSatisfy(\.moved))
        }
        #expect(abs((a.position ?? 0) - 1.1) < 1e-9 && abs((b.position ?? 0) - 1.1) < 1e-9)
        frame = try await group.stepFrameBack()
        #expect(frames(frame) == [32, 32] && abs(frame.time - 32.0 / 30) < 1e-9)
        #expect(a.commands.filter { $0 == .stepFrame }.count == 3 && a.commands.filter { $0 == .stepFrameBack }.count == 1)
        #expect(a.isPaused && b.isPaused && group.phase == .paused)
        group.invalidate()
        for player in [a, b] { await player.shutdown() }
    }

    @Test("30 and 25 fps: each step shows the next change of either member, so no frame of either is skipped; stepping back retraces the same pictures to the first frames")
    func differentRates() async throws {
        let (group, a, b) = try await group(rateA: 30, rateB: 25)
        // Changes: a at k/30, b at k/25; merged: 1/30, 1/25, 2/30, 2/25, 3/30, 3/25, 4/30, 4/25, 5/30, 6/30 = 5/25.
        let expected: [[Int]] = [[1, 0], [1, 1], [2, 1], [2, 2], [3, 2], [3, 3], [4, 3], [4, 4], [5, 4], [6, 5]]
        var seen: [[Int]] = []
        var moved: [[Bool]] = []
        for _ in expected {
            let frame = try await group.stepFrame()
            seen.append(frames(frame))
            moved.append(frame.members.map(\.moved))
        }
        #expect(seen == expected)
        #expect(moved[0] == [true, false] && moved[1] == [false, true] && moved[9] == [true, true])
        var back: [[Int]] = []
        for _ in expected {
            back.append(frames(try await group.stepFrameBack()))
        }
        #expect(back == Array(expected.reversed().dropFirst()) + [[0, 0]])
        await #expect(throws: FrameStepError.atFirstFrame) { try await group.stepFrameBack() }
        // A frame seek of the 25 fps member: the 30 fps one shows its frame on screen then.
        let frame = try await group.seek(toFrame: 10, of: b.id)                     // 0.4 s
        #expect(frames(frame) == [12, 10])
        group.invalidate()
        for player in [a, b] { await player.shutdown() }
    }

    @Test("a media offset aligns a member whose content starts later: b at +0.5 s shows frame 15 more than a, on seeks, frame seeks and steps; offsets read and set as Durations in every group's one sign")
    func offsets() async throws {
        let (group, a, b) = try await group()
        try await group.setMediaOffset(.milliseconds(500), for: b.id)
        #expect(group.settings.mediaOffsets == [b.id: .milliseconds(500)])
        var frame = try await group.seek(toFrame: 10)
        #expect(frames(frame) == [10, 25])
        frame = try await group.stepFrame()
        #expect(frames(frame) == [11, 26])
        try await group.seek(to: 2)
        #expect(abs((a.position ?? 0) - 2) < 1e-9 && abs((b.position ?? 0) - 2.5) < 1e-9)
        frame = try await group.stepFrame()                                       // realigned from the seek
        #expect(frames(frame) == [61, 76])
        await #expect(throws: PlayerError.invalidArgument(name: "sync group member", value: "nobody", reason: "is not a member of this group")) {
            try await group.setMediaOffset(.seconds(1), for: "nobody")
        }
        try await group.setMediaOffset(.seconds(1), for: b.id)
        frame = try await group.seek(toFrame: 10)
        #expect(frames(frame) == [10, 40])
        try await group.setMediaOffset(nil, for: b.id)
        #expect(group.settings.mediaOffsets.isEmpty)
        frame = try await group.seek(toFrame: 10)
        #expect(frames(frame) == [10, 10])
        group.invalidate()
        for player in [a, b] { await player.shutdown() }
    }

    @Test("members that drifted apart (stepped on their own) are realigned by the next step: a one-frame move steps, a longer one seeks")
    func realign() async throws {
        let (group, a, b) = try await group()
        try await group.seek(toFrame: 30)
        try await b.perform(.seek(to: 2, precision: .exact))                      // b alone, 30 frames on
        let frame = try await group.stepFrame()
        #expect(frames(frame) == [61, 61])
        #expect(a.commands.last == .seek(to: 61.0 / 30, precision: .exact) && b.commands.last == .stepFrame)
        group.invalidate()
        for player in [a, b] { await player.shutdown() }
    }

    @Test("typed refusals name the member or value and change nothing: nothing loaded, no frame rate, no duration to step back in, first and last frame, a frame out of range, a member refusing, a group invalidated")
    func refusals() async throws {
        let a = try FakePlayer(clock: clock, bus: bus, defaultMedia: .init(duration: 1, frameRate: 30))
        let b = try FakePlayer(clock: clock, bus: bus, media: [
            "unknown-rate.mp4": .init(duration: 1, frameRate: 0),
            "live": .init(duration: .infinity, frameRate: 30),
        ], defaultMedia: .init(duration: 1, frameRate: 30))
        let group = try SyncGroup(players: [a, b], clock: clock)
        await #expect(throws: FrameStepError.nothingLoaded(a.id)) { try await group.stepFrame() }
        try await group.load(["a.mp4", "unknown-rate.mp4"])
        await #expect(throws: FrameStepError.frameRateUnknown(b.id)) { try await group.stepFrame() }
        try await group.load(["a.mp4", "live"])
        await #expect(throws: FrameStepError.cannotStepBack(b.id, reason: "its item has no duration, so mpv cannot seek in it (a live or piped stream)")) {
            try await group.stepFrameBack()
        }
        #expect(try await group.stepFrame().members.map(\.frameNumber) == [1, 1])  // forward still works
        try await group.load(["a.mp4", "b.mp4"])
        await #expect(throws: FrameStepError.atFirstFrame) { try await group.stepFrameBack() }
        await #expect(throws: FrameStepError.invalidFrame(-1, of: a.id, reason: "frames are numbered from 0")) { try await group.seek(toFrame: -1) }
        await #expect(throws: FrameStepError.invalidFrame(30, of: b.id, reason: "its item's last frame is 29")) { try await group.seek(toFrame: 30, of: b.id) }
        await #expect(throws: FrameStepError.invalidFrame(3, of: "c", reason: "the reference is not a member of the group")) {
            try await group.seek(toFrame: 3, of: "c")
        }
        #expect(frames(try await group.seek(toFrame: 29)) == [29, 29])
        await #expect(throws: FrameStepError.atLastFrame) { try await group.stepFrame() }
        let refusal = PlayerError.commandFailed(command: ["frame-back-step"], MPVError(code: -12, message: "refused", logMessages: []))
        b.refuseCommands { $0 == .stepFrameBack ? refusal : nil }
        await #expect(throws: FrameStepError.memberFailed(b.id, refusal)) { try await group.stepFrameBack() }
        b.refuseCommands(nil)
        #expect(frames(try await group.stepFrameBack()) == [28, 28])              // usable after the refusal
        group.invalidate()
        await #expect(throws: FrameStepError.groupInvalidated) { try await group.stepFrame() }
        for player in [a, b] { await player.shutdown() }
    }
}
