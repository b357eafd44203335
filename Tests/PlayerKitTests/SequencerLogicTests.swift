import Foundation
import Testing
import PlayerKit
@testable import PlayerKitSequencer

/// The clip sequencer's decisions that need no player: a clip's share of the output, its frame
/// step and last frame's hold, the source time of a frame mpv gives no position for, and which
/// clip comes next (after an edit, past clips that failed). No mpv core; the sequencer on real
/// players is SequencerTests' and TimingTests'.
@Suite("Clip sequencer's rules (no mpv)", .timeLimit(.minutes(1)))
struct SequencerLogicTests {
    private let red = SequenceClip.video("red.mp4", id: "red")
    private let still = SequenceClip.still("poster.png", duration: .milliseconds(1500), id: "still")

    @Test("a clip's share of the output: its duration over its speed, a still's own duration, nothing while the duration is unknown")
    func outputLength() throws {
        #expect(ClipSequencer.outputLength(of: red, duration: 4) == .milliseconds(4000))
        var fast = red
        fast.speed = 2
        #expect(ClipSequencer.outputLength(of: fast, duration: 4) == .milliseconds(2000))
        fast.speed = 0.5
        #expect(ClipSequencer.outputLength(of: fast, duration: 1.2345) == .milliseconds(2469))
        #expect(ClipSequencer.outputLength(of: red, duration: nil) == nil)
        #expect(ClipSequencer.outputLength(of: red, duration: 0) == nil)
        #expect(ClipSequencer.outputLength(of: still, duration: nil) == .milliseconds(1500))
        #expect(ClipSequencer.outputLength(of: still, duration: 99) == .milliseconds(1500))
    }

    @Test("the frame step is the median source step over the speed, either direction; the last frame holds one step beyond the tick")
    func frameStepAndHold() {
        let thirtyFPS = (0..<8).map { Double($0) / 30 }
        #expect(ClipSequencer.frameStep(of: red, sourceTimes: thirtyFPS) == .milliseconds(33))
        #expect(ClipSequencer.frameStep(of: red, sourceTimes: thirtyFPS.reversed()) == .milliseconds(33))
        var slow = red
        slow.speed = 0.5
        #expect(ClipSequencer.frameStep(of: slow, sourceTimes: thirtyFPS) == .milliseconds(67))
        // Repeats (redraws) and one odd step do not move the median.
        #expect(ClipSequencer.frameStep(of: red, sourceTimes: [0, 0, 0.04, 0.04, 0.08, 0.2, 0.24]) == .milliseconds(40))
        #expect(ClipSequencer.frameStep(of: red, sourceTimes: [1.0]) == nil)
        #expect(ClipSequencer.frameStep(of: red, sourceTimes: [1.0, 1.0]) == nil)
        // 15 fps shown on a 30 Hz output: each frame is meant for one tick more.
        let fifteenFPS = (0..<6).map { Double($0) / 15 }
        #expect(ClipSequencer.intendedHold(of: red, sourceTimes: fifteenFPS, tick: .milliseconds(33)) == .milliseconds(34))
        #expect(ClipSequencer.intendedHold(of: red, sourceTimes: thirtyFPS, tick: .milliseconds(33)) == .zero)
        #expect(ClipSequencer.intendedHold(of: red, sourceTimes: thirtyFPS, tick: .milliseconds(50)) == .zero)
        #expect(ClipSequencer.intendedHold(of: red, sourceTimes: [], tick: .milliseconds(33)) == .zero)
    }

    @Test("a last frame without a position is timed one median step after the frame before, forwards or reversed, to the microsecond")
    func nextSourceTime() {
        let forwards = [0.0, 0.04, 0.08, 0.12]
        #expect(ClipSequencer.nextSourceTime(after: 0.12, steps: forwards) == 0.16)
        #expect(ClipSequencer.nextSourceTime(after: 2.0, steps: [2.12, 2.08, 2.04, 2.0]) == 1.96)
        #expect(ClipSequencer.nextSourceTime(after: 1.0 / 3, steps: [0, 1.0 / 30, 2.0 / 30]) == 0.366667)
        #expect(ClipSequencer.nextSourceTime(after: 0.5, steps: [0.5, 0.5]) == nil)   // no step known
        #expect(ClipSequencer.nextSourceTime(after: nil, steps: forwards) == nil)
        #expect(ClipSequencer.median([.milliseconds(40), .milliseconds(10), .milliseconds(33)]) == .milliseconds(33))
        #expect(ClipSequencer.median([]) == nil)
    }

    @Test("the next clip: the one after in the timeline, or the one now at a removed clip's place; clips that failed as they are are skipped")
    func nextClip() {
        let blue = SequenceClip.video("blue.mp4", id: "blue")
        let green = SequenceClip.video("green.mp4", id: "green")
        let clips = [red, blue, still, green]
        #expect(ClipSequencer.clip(after: "red", hint: 0, in: clips)?.id == "blue")
        #expect(ClipSequencer.clip(after: "green", hint: 3, in: clips) == nil)
        // "blue" was removed while it played (it was at 1): the clip now at 1 comes next.
        let edited = [red, still, green]
        #expect(ClipSequencer.clip(after: "blue", hint: 1, in: edited)?.id == "still")
        #expect(ClipSequencer.clip(after: "gone", hint: 7, in: edited) == nil)
        // blue and the still failed: red is followed by green; nothing follows when all after failed.
        let failed = ["blue": blue, "still": still]
        #expect(ClipSequencer.playableClip(after: "red", hint: 0, in: clips, failed: failed)?.id == "green")
        #expect(ClipSequencer.playableClip(after: "red", hint: 0, in: [red, blue, still], failed: failed) == nil)
        // A failed clip that was changed since (same ID, new source) gets another try.
        let fixedBlue = SequenceClip.video("blue-fixed.mp4", id: "blue")
        #expect(ClipSequencer.playableClip(after: "red", hint: 0, in: [red, fixedBlue, green], failed: failed)?.id == "blue")
    }

    @Test("a clip checks itself by name: a speed outside 0.25...4 or NaN, a still of no time or over a day, an empty ID")
    func clipValidation() throws {
        for speed in [0, 5, Double.nan] {
            var clip = red
            clip.speed = speed
            #expect(throws: PlayerError.invalidArgument(name: "speed", value: "\(speed)", reason: "must be between 0.25 and 4")) {
                try clip.validate()
            }
        }
        for duration: Duration in [.zero, .seconds(-1), .seconds(24 * 3600 + 1)] {
            #expect(throws: PlayerError.invalidArgument(name: "still duration", value: "\(duration)", reason: "must be above 0 and at most a day")) {
                try SequenceClip.still("poster.png", duration: duration, id: "s").validate()
            }
        }
        #expect(throws: PlayerError.invalidArgument(name: "clip id", value: "\"\"", reason: "must not be empty")) {
            try SequenceClip.video("red.mp4", id: "").validate()
        }
        try red.validate()
        try still.validate()
        var reversed = red
        reversed.speed = 0.25
        reversed.direction = .backward
        try reversed.validate()
    }
}
