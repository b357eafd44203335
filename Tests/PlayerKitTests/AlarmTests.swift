import Foundation
@testable import PlayerKitCore
import PlayerKitSupport
import PlayerKitTesting
import Testing

/// Alarms and loudness (issue 68, item 2): the tracker on its own, fed what mpv's detectors
/// report, a real player on media with faults written into it, the loudness meter against
/// ffmpeg's on the same audio, bad input, and the fake.
@Suite("Alarms and loudness", .timeLimit(.minutes(2)))
struct AlarmTests {
    // MARK: The tracker, on its own

    /// What `freezedetect`, `blackdetect` and `silencedetect` reported for Tests/Fixtures/faults.mp4
    /// through mpv (thresholds 0.5 s), in order: mpv keeps each key's last value.
    private static let freezeStart = ["lavfi.freezedetect.freeze_start": "0.96"]
    private static let freezeEnd = ["lavfi.freezedetect.freeze_start": "0.96", "lavfi.freezedetect.freeze_end": "3", "lavfi.freezedetect.freeze_duration": "2.04"]
    private static let freezeAgain = ["lavfi.freezedetect.freeze_start": "4", "lavfi.freezedetect.freeze_end": "3", "lavfi.freezedetect.freeze_duration": "2.04"]

    @Test("the tracker raises once the position reaches the start plus the threshold, and clears at the end the position reaches")
    func trackerRaisesInStep() {
        var tracker = AlarmTracker()
        #expect(tracker.watch([.freeze: 0.5]).isEmpty)
        #expect(tracker.note(position: 1.40).isEmpty)
        #expect(tracker.note(.freeze, metadata: Self.freezeStart).isEmpty, "the filter runs ahead: 1.40 < 0.96 + 0.5")
        #expect(tracker.note(position: 1.44).isEmpty)
        #expect(tracker.note(position: 1.48) == [.raised(Alarm(kind: .freeze, start: 0.96))])
        #expect(tracker.note(position: 2.0).isEmpty, "raised once")
        #expect(tracker.note(.freeze, metadata: Self.freezeEnd).isEmpty, "the end is ahead of the position")
        #expect(tracker.note(position: 3.0) == [.cleared(Alarm(kind: .freeze, start: 0.96, end: 3))])
        // The next fault: only the start's value changed.
        #expect(tracker.note(.freeze, metadata: Self.freezeAgain).isEmpty)
        #expect(tracker.note(position: 4.52) == [.raised(Alarm(kind: .freeze, start: 4))])
        #expect(Alarm(kind: .freeze, start: 0.96, end: 3).duration == 3 - 0.96)
    }

    @Test("a black stretch shorter than the threshold raises nothing (blackdetect writes its start at once)")
    func trackerShortFault() {
        var tracker = AlarmTracker()
        _ = tracker.watch([.black: 2])
        #expect(tracker.note(.black, metadata: ["lavfi.black_start": "1"]).isEmpty)
        #expect(tracker.note(position: 1.2).isEmpty)
        #expect(tracker.note(.black, metadata: ["lavfi.black_start": "1", "lavfi.black_end": "1.24"]).isEmpty)
        #expect(tracker.note(position: 5).isEmpty, "the fault ended before its threshold")
    }

    @Test("a seek or an item's end clears a raised alarm at the last position; values seen before are not news again")
    func trackerReset() {
        var tracker = AlarmTracker()
        _ = tracker.watch([.silence: 0.5])
        _ = tracker.note(position: 6.2)
        _ = tracker.note(.silence, metadata: ["lavfi.silence_start": "6.0"])
        #expect(tracker.note(position: 6.5) == [.raised(Alarm(kind: .silence, start: 6))])
        #expect(tracker.note(position: 6.6).isEmpty)
        #expect(tracker.reset() == [.cleared(Alarm(kind: .silence, start: 6, end: 6.6))])
        // mpv reports nothing, then the same values again, after a seek: no new fault.
        #expect(tracker.note(.silence, metadata: nil).isEmpty)
        #expect(tracker.note(.silence, metadata: ["lavfi.silence_start": "6.0"]).isEmpty)
        #expect(tracker.note(position: 9).isEmpty)
        // A new item (its predecessor's end is a break too): the filter starts with no values,
        // then a start equal to an old one is news.
        #expect(tracker.reset().isEmpty)
        #expect(tracker.note(.silence, metadata: [:]).isEmpty)
        _ = tracker.note(.silence, metadata: ["lavfi.silence_start": "6.0"])
        #expect(tracker.note(position: 6.5) == [.raised(Alarm(kind: .silence, start: 6))])
        // Watching no more clears it too.
        #expect(tracker.watch([:]) == [.cleared(Alarm(kind: .silence, start: 6, end: 6.5))])
        #expect(!tracker.isWatching)
    }

    @Test("a whole fault in one report (changes merged) raises and clears at once if it lasted the threshold")
    func trackerMergedReport() {
        var tracker = AlarmTracker()
        _ = tracker.watch([.black: 0.5, .freeze: 0.5])
        _ = tracker.note(position: 9)
        #expect(tracker.note(.black, metadata: ["lavfi.black_start": "4", "lavfi.black_end": "5.52"])
            == [.raised(Alarm(kind: .black, start: 4)), .cleared(Alarm(kind: .black, start: 4, end: 5.52))])
        #expect(tracker.note(.freeze, metadata: ["lavfi.freezedetect.freeze_start": "7", "lavfi.freezedetect.freeze_end": "7.2"]).isEmpty)
        #expect(tracker.note(.silence, metadata: ["lavfi.silence_start": "1"]).isEmpty, "silence is not watched")
    }

    @Test("positions are wanted only while a fault is under way, and one kept from before a fault never raises it early")
    func trackerNeedsPositionsOnlyDuringFaults() {
        var tracker = AlarmTracker()
        _ = tracker.watch([.freeze: 0.5])
        #expect(!tracker.needsPositions, "nothing under way")
        #expect(tracker.note(position: 19).isEmpty)
        // A fault reported after positions stopped (say the item looped): the position from
        // before is not taken for the one shown.
        #expect(tracker.note(.freeze, metadata: Self.freezeAgain).isEmpty, "19 s was before the loop, not now")
        #expect(tracker.needsPositions, "begun, not yet an alarm")
        #expect(tracker.note(position: 4.48).isEmpty)
        #expect(tracker.note(position: 4.52) == [.raised(Alarm(kind: .freeze, start: 4))])
        #expect(tracker.needsPositions, "raised, not yet cleared")
        #expect(tracker.note(.freeze, metadata: ["lavfi.freezedetect.freeze_start": "4", "lavfi.freezedetect.freeze_end": "5"]).isEmpty)
        #expect(tracker.note(position: 5) == [.cleared(Alarm(kind: .freeze, start: 4, end: 5))])
        #expect(!tracker.needsPositions, "over")
    }

    @Test("the meter's metadata: levels in LUFS, the floor for silence as none, the peak in dBTP")
    func loudnessFromMetadata() {
        let loudness = PlayerCore.loudness(from: [
            "lavfi.r128.M": "-21.757", "lavfi.r128.S": "-120.691", "lavfi.r128.I": "-21.779", "lavfi.r128.true_peak": "0.125",
        ])
        #expect(loudness?.momentary == -21.757)
        #expect(loudness?.shortTerm == nil, "-120.7 is the meter's floor: nothing in the window")
        #expect(loudness?.integrated == -21.779)
        #expect(loudness.flatMap(\.truePeak).map { abs($0 - 20 * log10(0.125)) < 1e-9 } == true)
        #expect(PlayerCore.loudness(from: [:]) == nil)
    }

    // MARK: A real player

    @Test("faults written into the media raise and clear alarms at their positions, in step with playback, and nothing else")
    func realFaults() async throws {
        let (player, recorder) = try await Fixtures.player()
        let watch = try await player.watchAlarms(AlarmThresholds(freeze: .milliseconds(500), black: .milliseconds(500), silence: .milliseconds(500)))
        // The read-out's position moves with every frame, so the one at a raise says where the
        // picture was (within the frame the two observations of it may differ by).
        let everyFrame = player.observeEveryFrame()
        let positions = Locked<[(Alarm, Double?)]>([])
        let subscription = player.eventBus.subscribe(to: .player(player.id), kinds: [.alarmRaised], delivery: .immediate) { record in
            if case .alarmRaised(let alarm) = record.event { positions.withLock { $0.append((alarm, player.position)) } }
        }
        try await player.load(.file(Fixtures.fixture("faults.mp4")))
        #expect(await recorder.waitFor(timeout: .seconds(30)) { $0.event == .itemEnded(.finished) } != nil)
        subscription.cancel()
        let alarms = recorder.events.compactMap { event -> (raised: Bool, alarm: Alarm)? in
            switch event {
            case .alarmRaised(let alarm): (true, alarm)
            case .alarmCleared(let alarm): (false, alarm)
            default: nil
            }
        }
        func near(_ a: Double?, _ b: Double, within: Double = 0.06) -> Bool { a.map { abs($0 - b) <= within } == true }
        let cleared = alarms.filter { !$0.raised }.map(\.alarm)
        // The frozen stretch from 0.96 s to 3 s; the black one from 4 s to 5.52 s, which is
        // also still; the muted one from 6 s to 7 s (AAC frames blur its edges by a frame).
        let expected: [(AlarmKind, Double, Double)] = [(.freeze, 0.96, 3), (.black, 4, 5.52), (.freeze, 4, 5.52), (.silence, 6, 7)]
        #expect(cleared.count == expected.count, "\(alarms)")
        for (kind, start, end) in expected {
            let match = cleared.first { $0.kind == kind && near($0.start, start, within: 0.05) }
            #expect(match.map { near($0.end, end, within: 0.05) } == true, "\(kind) \(start)-\(end) in \(alarms)")
        }
        // Each raise came with the position at the fault's start plus the threshold (or a frame
        // after it), not before: the filters run ahead, the alarm waits for the picture.
        let raises = positions.withLock { $0 }
        #expect(raises.count == expected.count)
        for (alarm, position) in raises {
            let at = position ?? -1
            #expect(at >= alarm.start + 0.5 - 0.045 && at <= alarm.start + 0.5 + 0.25, "raised at \(at) for \(alarm)")
        }
        everyFrame.cancel()
        // Between faults and after the last one, the alarms observe no position.
        #expect(await eventually(timeout: .seconds(5)) { !player.core.alarmPositionsObserved.withLock { $0 } })
        // Raised and cleared in pairs, each clear after its raise.
        for (index, entry) in alarms.enumerated() where !entry.raised {
            #expect(alarms[..<index].contains { $0.raised && $0.alarm.kind == entry.alarm.kind && $0.alarm.start == entry.alarm.start })
        }
        watch.cancel()
        await player.shutdown()
    }

    @Test("a raised alarm is cleared when the watch ends; a watch leaves the mirroring in the chain and the mirroring leaves the detectors")
    func watchEndAndFlip() async throws {
        let (player, recorder) = try await Fixtures.player()
        try await player.perform(.setFlip(.horizontal))
        let watch = try await player.watchAlarms(AlarmThresholds(freeze: .milliseconds(300), black: nil, silence: nil))
        let chain = try await player.property("vf").description
        #expect(chain.contains("playerkit-flip") && chain.contains("playerkit-freeze") && !chain.contains("playerkit-black"), "\(chain)")
        try await player.perform(.setFlip([]))
        let after = try await player.property("vf").description
        #expect(!after.contains("playerkit-flip") && after.contains("playerkit-freeze"), "\(after)")
        try await player.load(.file(Fixtures.fixture("faults.mp4")))
        let raised = await recorder.waitFor(timeout: .seconds(15)) { if case .alarmRaised = $0.event { true } else { false } }
        guard case .alarmRaised(let alarm)? = raised?.event else { Issue.record("no alarm"); return }
        try await player.pause()
        let mark = recorder.mark
        watch.cancel()
        let cleared = await recorder.waitFor(timeout: .seconds(5), after: mark) { if case .alarmCleared = $0.event { true } else { false } }
        guard case .alarmCleared(let ended)? = cleared?.event else { Issue.record("not cleared"); return }
        #expect(ended.kind == alarm.kind && ended.start == alarm.start && (ended.end ?? 0) >= alarm.start + 0.3, "\(ended)")
        await #expect(try player.property("vf").description.contains("playerkit-freeze") == false)
        await player.shutdown()
    }

    @Test("loudness: momentary and short-term within 0.5 LU of ffmpeg's ebur128 on the same audio, every interval")
    func loudnessAgainstFFmpeg() async throws {
        // ffmpeg's meter on the file's sound: the short-term value 3.5 s in (a steady tone).
        let reference = try await Self.ffmpegLoudness(of: Fixtures.clipA, at: 3.5)
        let (player, recorder) = try await Fixtures.player()
        let observation = try await player.observeLoudness(every: .milliseconds(200))
        try await player.load(.file(Fixtures.clipA))
        #expect(await eventually(timeout: .seconds(20)) {
            recorder.events.contains { if case .loudnessUpdated(let loudness) = $0 { loudness.shortTerm != nil } else { false } }
        })
        let measured = recorder.events.compactMap { if case .loudnessUpdated(let loudness) = $0 { loudness } else { nil } }
        let last = measured.last { $0.shortTerm != nil }
        #expect(last.flatMap(\.shortTerm).map { abs($0 - reference.shortTerm) <= 0.5 } == true, "\(String(describing: last)) vs \(reference)")
        #expect(last.flatMap(\.momentary).map { abs($0 - reference.momentary) <= 0.5 } == true, "\(String(describing: last)) vs \(reference)")
        #expect(last.flatMap(\.truePeak).map { abs($0 - reference.truePeak) <= 0.5 } == true, "\(String(describing: last)) vs \(reference)")
        observation.cancel()
        let mark = recorder.mark
        _ = await recorder.waitFor(timeout: .milliseconds(500), after: mark) { _ in false }
        let chain = try await player.property("af").description
        #expect(!chain.contains("playerkit-loudness"), "\(chain)")
        await player.shutdown()
    }

    /// ffmpeg's `ebur128` on `path`'s audio: the momentary and short-term loudness of the
    /// metadata frame at `seconds`, and the true peak up to it (dBTP).
    static func ffmpegLoudness(of path: String, at seconds: Double) async throws -> (momentary: Double, shortTerm: Double, truePeak: Double) {
        let output = try await ChildProcess.runToEnd(URL(fileURLWithPath: "/usr/bin/ffmpeg"), [
            "-nostdin", "-hide_banner", "-nostats", "-i", path, "-t", String(seconds),
            "-af", "ebur128=metadata=1:peak=true,ametadata=print", "-f", "null", "-",
        ]).errors
        var last: [String: Double] = [:]
        for line in output.split(separator: "\n") {
            guard let range = line.range(of: "lavfi.r128.") else { continue }
            let pair = line[range.upperBound...].split(separator: "=", maxSplits: 1)
            if pair.count == 2, let value = Double(pair[1]) { last[String(pair[0])] = value }
        }
        guard let momentary = last["M"], let shortTerm = last["S"], let peak = last["true_peak"], peak > 0 else {
            throw AlarmTestError.noReference(output.suffix(500).description)
        }
        return (momentary, shortTerm, 20 * log10(peak))
    }

    enum AlarmTestError: Error { case noReference(String) }

    // MARK: Bad input

    @Test("a threshold or level out of range is refused, naming it; the player goes on")
    func badThresholds() async throws {
        let (player, _) = try await Fixtures.player()
        await #expect(throws: PlayerError.invalidArgument(name: "freeze", value: "\(Duration.milliseconds(10))", reason: "must be from 0.1 s to an hour, or nil")) {
            _ = try await player.watchAlarms(AlarmThresholds(freeze: .milliseconds(10)))
        }
        await #expect(throws: PlayerError.invalidArgument(name: "silenceLevel", value: "\(12.0)", reason: "must be from -90.0 to 0.0 dBFS")) {
            _ = try await player.watchAlarms(AlarmThresholds(silenceLevel: 12))
        }
        await #expect(throws: PlayerError.invalidArgument(name: "blackShare", value: "\(Double.nan)", reason: "must be from 0.0 to 1.0 of the picture")) {
            _ = try await player.watchAlarms(AlarmThresholds(blackShare: .nan))
        }
        await #expect(throws: Loudness.intervalRefused(.milliseconds(50))) { _ = try await player.observeLoudness(every: .milliseconds(50)) }
        let chain = try await player.property("vf").description
        #expect(!chain.contains("playerkit-"), "nothing was put in the chain: \(chain)")
        try await player.load(.file(Fixtures.clipA))
        #expect(player.state != .idle)
        await player.shutdown()
        await #expect(throws: PlayerError.playerShutDown(player.id)) { _ = try await player.watchAlarms(AlarmThresholds()) }
    }

    // MARK: The fake

    @Test("the fake: a watch records its thresholds, alarms a test raises are published, the watch's end clears them; loudness every interval")
    func fakeAlarms() async throws {
        let clock = ManualClock()
        let fake = try FakePlayer(id: "alarm-fake", clock: clock, media: ["clip.mp4": .init(duration: 30)])
        let events = fake.events(kinds: [.alarmRaised, .alarmCleared, .loudnessUpdated])
        #expect(fake.raiseAlarm(.freeze) == nil, "nothing watched")
        let thresholds = AlarmThresholds(freeze: .seconds(1), black: nil)
        let watch = try await fake.watchAlarms(thresholds)
        #expect(fake.alarmThresholds == thresholds)
        try await fake.load(.file("clip.mp4"))
        clock.advance(by: .seconds(3))
        #expect(fake.raiseAlarm(.black) == nil, "black is not watched")
        let raised = fake.raiseAlarm(.freeze)
        #expect(raised.map { abs($0.start - 2) < 0.01 } == true, "\(String(describing: raised))")
        clock.advance(by: .seconds(1))
        watch.cancel()
        #expect(fake.alarmThresholds == nil)
        let level = Loudness(momentary: -23, shortTerm: -23.5, integrated: -23.1, truePeak: -1)
        fake.setLoudness(level)
        let observation = try await fake.observeLoudness(every: .milliseconds(500))
        clock.advance(by: .seconds(1))
        var iterator = events.makeAsyncIterator()
        #expect(await iterator.next()?.event == raised.map { .alarmRaised($0) })
        let cleared = await iterator.next()?.event
        if case .alarmCleared(let alarm)? = cleared {
            #expect(alarm.kind == .freeze && alarm.start == raised?.start && alarm.end.map { abs($0 - 4) < 0.01 } == true, "\(alarm)")
        } else {
            Issue.record("\(String(describing: cleared))")
        }
        #expect(await iterator.next()?.event == .loudnessUpdated(level))
        #expect(await iterator.next()?.event == .loudnessUpdated(level))
        observation.cancel()
        await #expect(throws: Loudness.intervalRefused(.zero)) { _ = try await fake.observeLoudness(every: .zero) }
        await fake.shutdown()
    }
}
