import ExampleSupport
import Foundation
@testable import PlayerKitCore
import PlayerKit
import PlayerKitSupport
import PlayerKitTesting
import Testing

/// Playback statistics (issue 68, item 1): the tally of stalls, start-up and frames on its own,
/// a real player's figures against what else counts them, the sampling, bad input, and the fake.
@Suite("Playback statistics", .timeLimit(.minutes(2)))
struct StatisticsTests {
    // MARK: The tally, on its own

    private static let start = ContinuousClock.now

    private static func at(_ seconds: Double) -> ContinuousClock.Instant { start + .milliseconds(Int(seconds * 1000)) }

    @Test("the tally: a stall is buffering after the first frame; its count, total and longest; an ongoing stall counts up to the read")
    func tallyStalls() {
        var tally = PlaybackTally()
        tally.note(.stateChanged(from: .idle, to: .loading), at: Self.at(0))
        tally.note(.stateChanged(from: .loading, to: .buffering), at: Self.at(0.1))  // before the first frame: start-up, not a stall
        tally.note(.firstFrame, at: Self.at(0.4))
        tally.note(.stateChanged(from: .buffering, to: .playing), at: Self.at(0.4))
        #expect(tally.figures(at: Self.at(1)).stallCount == 0)
        #expect(tally.figures(at: Self.at(1)).timeToFirstFrame == .milliseconds(400))
        tally.note(.stateChanged(from: .playing, to: .buffering), at: Self.at(2))
        tally.note(.stateChanged(from: .buffering, to: .playing), at: Self.at(2.5))
        tally.note(.stateChanged(from: .playing, to: .buffering), at: Self.at(3))
        let ongoing = tally.figures(at: Self.at(4.2))
        #expect(ongoing.stallCount == 2)
        #expect(ongoing.stallTime == .milliseconds(1700))
        #expect(ongoing.longestStall == .milliseconds(1200))
        tally.note(.stateChanged(from: .buffering, to: .paused), at: Self.at(4.5))
        let ended = tally.figures(at: Self.at(9))
        #expect(ended.stallCount == 2)
        #expect(ended.stallTime == .seconds(2))
        #expect(ended.longestStall == .milliseconds(1500))
        // A new item starts every figure again.
        tally.note(.stateChanged(from: .paused, to: .loading), at: Self.at(10))
        #expect(tally.figures(at: Self.at(11)) == PlaybackTally.Figures())
    }

    @Test("the tally counts frames only while asked, from the next new picture, only with video, and their rate over the last second")
    func tallyFrames() {
        var tally = PlaybackTally()
        tally.note(.stateChanged(from: .idle, to: .loading), at: Self.at(0))
        tally.note(.videoDecoderChanged(VideoDecoder(codec: "h264")), at: Self.at(0.1))
        tally.noteFrame(position: 0, at: Self.at(0.2))  // not counting yet
        #expect(tally.figures(at: Self.at(0.2)).framesRendered == nil)
        tally.countFrames(true, at: Self.at(1))
        tally.noteFrame(position: 0.5, at: Self.at(1))  // the picture already shown: the baseline
        for frame in 1...50 { tally.noteFrame(position: 0.5 + Double(frame) * 0.04, at: Self.at(1 + Double(frame) * 0.04)) }
        tally.noteFrame(position: 2.5, at: Self.at(3.01))  // the same position again: no new picture
        let figures = tally.figures(at: Self.at(3))
        #expect(figures.framesRendered == 50)
        // 25 frames in the second before 3 s.
        #expect(figures.renderedFrameRate.map { abs($0 - 25) <= 1 } == true, "\(String(describing: figures.renderedFrameRate))")
        tally.note(.videoDecoderChanged(nil), at: Self.at(3.1))
        tally.noteFrame(position: 2.6, at: Self.at(3.2))
        #expect(tally.figures(at: Self.at(3.2)).framesRendered == nil, "no video: no frames")
        tally.countFrames(false, at: Self.at(4))
        #expect(tally.figures(at: Self.at(4)).framesRendered == nil)
    }

    @Test("the tally: frames the output dropped were handed to it but not shown, so they come off the count and the rate")
    func tallyOutputDrops() {
        var tally = PlaybackTally()
        tally.note(.videoDecoderChanged(VideoDecoder(codec: "h264")), at: Self.at(0))
        tally.countFrames(true, at: Self.at(0))
        tally.noteOutputDrops(7, at: Self.at(0))  // drops before counting began: the baseline
        tally.noteFrame(position: nil, at: Self.at(0))
        for frame in 1...60 { tally.noteFrame(position: Double(frame) / 30, at: Self.at(Double(frame) / 30)) }
        tally.noteOutputDrops(17, at: Self.at(2))  // 10 of the 60 dropped, over 2 s: 5 a second
        let figures = tally.figures(at: Self.at(2))
        #expect(figures.framesRendered == 50)
        #expect(figures.renderedFrameRate.map { abs($0 - 25) <= 1 } == true, "\(String(describing: figures.renderedFrameRate))")
        // A new item: mpv counts drops per file, so they count from 0 (not from the first sample).
        tally.note(.stateChanged(from: .playing, to: .loading), at: Self.at(3))
        tally.note(.videoDecoderChanged(VideoDecoder(codec: "h264")), at: Self.at(3.1))
        for frame in 1...20 { tally.noteFrame(position: Double(frame) / 30, at: Self.at(3.1 + Double(frame) / 30)) }
        tally.noteOutputDrops(4, at: Self.at(4))
        #expect(tally.figures(at: Self.at(4)).framesRendered == 16)
    }

    @Test("the tally's frames of the last second stay bounded however many frames come")
    func tallyBounded() {
        var tally = PlaybackTally()
        tally.note(.videoDecoderChanged(VideoDecoder(codec: "h264")), at: Self.at(0))
        tally.countFrames(true, at: Self.at(0))
        tally.noteFrame(position: nil, at: Self.at(0))
        // 100,000 frames in 10 s (10 kHz): the window holds at most its cap.
        for frame in 1...100_000 { tally.noteFrame(position: Double(frame), at: Self.start + .microseconds(frame * 100)) }
        let figures = tally.figures(at: Self.at(10))
        #expect(figures.framesRendered == 100_000)
        #expect(figures.renderedFrameRate.map { $0 <= Double(PlaybackTally.recentFramesKept) + 1 } == true)
    }

    @Test("statistics encode their durations in seconds and decode back to the same figures")
    func coding() throws {
        var statistics = PlaybackStatistics()
        statistics.framesRendered = 250
        statistics.stallCount = 1
        statistics.stallTime = .milliseconds(1250)
        statistics.longestStall = .milliseconds(1250)
        statistics.timeToFirstFrame = .milliseconds(84)
        statistics.bufferAhead = 4.5
        let data = try JSONEncoder().encode(statistics)
        let json = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        #expect(json["stallTime"] as? Double == 1.25)
        #expect(json["timeToFirstFrame"] as? Double == 0.084)
        #expect(json["mediaBitrate"] == nil, "a figure not known is left out")
        #expect(try JSONDecoder().decode(PlaybackStatistics.self, from: data) == statistics)
    }

    // MARK: A real player

    @Test("a local clip: a read with nothing observed has the decoder, the start-up and no drops, and counts no frames")
    func readWithoutObserving() async throws {
        let (player, recorder) = try await Fixtures.player()
        try await player.load(.file(Fixtures.clipA))
        #expect(await recorder.waitFor(timeout: .seconds(10)) { $0.event == .firstFrame } != nil)
        let statistics = try await player.statistics()
        #expect(statistics.videoDecoder != nil)
        #expect(statistics.framesRendered == nil, "frames are counted only while observed")
        #expect(statistics.framesDroppedByDecoder != nil)
        #expect(statistics.stallCount == 0)
        // Start-up as the events say: from the load's start to the first frame.
        let loading = recorder.records.first { if case .stateChanged(_, .loading) = $0.event { true } else { false } }
        let first = recorder.records.first { $0.event == .firstFrame }
        if let loading, let first { #expect(statistics.timeToFirstFrame == first.time - loading.time) }
        #expect(statistics.bufferAhead.map { $0 >= 0 } == true, "\(statistics)")
        #expect(statistics.liveLatency == nil, "a file is not live")
        await player.shutdown()
        await #expect(throws: PlayerError.playerShutDown(player.id)) { _ = try await player.statistics() }
        #expect(throws: PlayerError.playerShutDown(player.id)) { _ = try player.observeStatistics(every: .seconds(1)) }
    }

    @Test("an interval out of range is refused, naming it; the player goes on")
    func badInterval() async throws {
        let (player, _) = try await Fixtures.player()
        for interval in [Duration.zero, .milliseconds(-5), .milliseconds(10), .seconds(100_000)] {
            #expect(throws: PlayerError.invalidArgument(name: "interval", value: "\(interval)",
                                                        reason: "must be from 0.05 s (20 a second) to a day")) {
                _ = try player.observeStatistics(every: interval)
            }
        }
        try await player.load(.file(Fixtures.clipA))
        #expect(player.state == .playing || player.state == .loading || player.state == .buffering)
        await player.shutdown()
    }

    @Test("observed: an event every interval, with frames counted; none once the observation ends")
    func periodicEvents() async throws {
        let (player, recorder) = try await Fixtures.player()
        try await player.perform(.setLoop(.forever))
        try await player.load(.file(Fixtures.clipA))
        let observation = try player.observeStatistics(every: .milliseconds(200))
        @Sendable func updates() -> [PlaybackStatistics] {
            recorder.events.compactMap { if case .statisticsUpdated(let statistics) = $0 { statistics } else { nil } }
        }
        #expect(await eventually(timeout: .seconds(20)) { updates().count >= 4 })
        let frames = updates().compactMap(\.framesRendered)
        #expect(frames.count >= 3, "\(updates())")
        #expect(frames.last.map { $0 > 0 } == true, "frames were shown: \(frames)")
        #expect(zip(frames, frames.dropFirst()).allSatisfy { $0 <= $1 }, "a count never goes back: \(frames)")
        observation.cancel()
        // A sample under way may still arrive (one at most); then nothing more.
        let isUpdate = { @Sendable (record: PlayerEventRecord) -> Bool in if case .statisticsUpdated = record.event { true } else { false } }
        _ = await recorder.waitFor(timeout: .milliseconds(500), after: recorder.mark, isUpdate)
        let after = updates().count
        let more = await recorder.waitFor(timeout: .seconds(1), after: recorder.mark, isUpdate)
        #expect(more == nil, "an update after the observation ended (\(after) before)")
        // And a read then counts no frames.
        #expect(try await player.statistics().framesRendered == nil)
        await player.shutdown()
    }

    // MARK: The fake

    @Test("the fake reports the statistics a test sets, read and every interval of its clock while observed")
    func fakeStatistics() async throws {
        let clock = ManualClock()
        let fake = try FakePlayer(id: "stats-fake", clock: clock, media: ["clip.mp4": .init(duration: 30)])
        let events = fake.events(kinds: [.statisticsUpdated])
        var set = PlaybackStatistics()
        set.framesRendered = 120
        set.framesDroppedByOutput = 3
        set.stallCount = 2
        set.longestStall = .milliseconds(800)
        fake.setStatistics(set)
        #expect(try await fake.statistics() == set)
        #expect(set.framesDecoded == 123)
        let observation = try fake.observeStatistics(every: .seconds(1))
        clock.advance(by: .seconds(3))
        var iterator = events.makeAsyncIterator()
        for _ in 0..<3 {
            let record = await iterator.next()
            #expect(record?.event == .statisticsUpdated(set))
        }
        observation.cancel()
        #expect(throws: PlayerError.self) { _ = try fake.observeStatistics(every: .zero) }
        clock.advance(by: .seconds(3))
        await fake.shutdown()
        // Nothing more came after the cancel: the next record is the stream's end.
        #expect(await iterator.next() == nil)
    }
}

/// Frames shown, against the frames a ``FrameOutput`` received in the same run (issue 68: within
/// one frame). Frames counted: the timing pass, with the machine to itself.
@Suite("Playback statistics: frames against a frame output", .timeLimit(.minutes(2)), .tags(.timingPass))
struct StatisticsFrameTests {
    @Test("frames rendered match the new frames a frame output got, within one")
    func framesAgainstFrameOutput() async throws {
        var configuration = Fixtures.headless
        configuration.videoOutput = .frames
        let (player, recorder) = try await Fixtures.player(configuration: configuration)
        let output = try player.makeFrameOutput(FrameFormat(width: 64, height: 48))
        let newFrames = Locked(0)
        output.setFrameHandler { frame in if frame.info.isNewFrame { newFrames.withLock { $0 += 1 } } }
        let observation = try player.observeStatistics(every: .milliseconds(250))
        try await player.load(.file(Fixtures.fixture("long.mp4")), startPaused: true)
        #expect(await recorder.waitFor(timeout: .seconds(10)) { $0.event == .firstFrame } != nil)
        let shownBefore = newFrames.withLock { $0 }
        try await player.play()
        #expect(await recorder.waitFor(timeout: .seconds(20)) {
            if case .positionChanged(let position) = $0.event { position >= 3 } else { false }
        } != nil)
        try await player.pause()
        // Both counts settle once paused: the last frame shown reaches the output.
        var statistics = try await player.statistics()
        _ = await eventually(timeout: .seconds(3)) {
            guard let read = try? await player.statistics(), let rendered = read.framesRendered else { return false }
            return abs(rendered - newFrames.withLock { $0 }) <= 1
        }
        statistics = try await player.statistics()
        let received = newFrames.withLock { $0 }
        let rendered = try #require(statistics.framesRendered)
        #expect(abs(rendered - received) <= 1, "rendered \(rendered), the frame output got \(received) new frames (\(shownBefore) before play), \(statistics)")
        #expect(rendered >= 60, "3 s at 25 fps or more: \(rendered)")
        #expect(statistics.framesDroppedByOutput == 0 || statistics.framesDroppedByOutput.map { $0 < 5 } == true, "\(statistics)")
        observation.cancel()
        output.close()
        await player.shutdown()
    }
}

/// Stalls and the arriving bitrate against the faults a proxy on loopback causes and the bytes
/// its server sends.
@Suite("Playback statistics: over the network", .timeLimit(.minutes(3)), .tags(.waitPass))
struct StatisticsNetworkTests {
    @Test("the server goes away and comes back: one stall, timed as the events were, and bytes arriving while it plays")
    func stallCounted() async throws {
        let long = try Data(contentsOf: URL(fileURLWithPath: Fixtures.fixture("long.mp4")))
        // 90 kB/s for a 75 kB/s stream: it never gets far ahead (as in the network fault tests).
        let server = LoopbackMediaServer(files: ["long.mp4": long], bytesPerSecond: 90_000)
        try server.start()
        let proxy = FaultProxy(upstreamPort: server.port)
        try proxy.start()
        defer { proxy.stop(); server.stop() }
        let (player, recorder) = try await Fixtures.player()
        try await player.load(MediaSource(proxy.url("long.mp4").absoluteString))
        #expect(await recorder.waitFor(timeout: .seconds(20)) {
            if case .positionChanged(let position) = $0.event { position >= 1 } else { false }
        } != nil)
        let playing = try await player.statistics()
        #expect(playing.arrivingBitrate.map { $0 > 0 } == true, "\(playing)")
        #expect(playing.mediaBitrate.map { $0 > 100_000 && $0 < 2_000_000 } == true, "\(playing)")
        #expect(playing.stallCount == 0)
        let mark = recorder.mark
        proxy.setMode(.down)
        #expect(await recorder.waitForState(.buffering, timeout: .seconds(30), after: mark))
        let during = try await player.statistics()
        #expect(during.stallCount == 1, "\(during)")
        proxy.setMode(.pass)
        #expect(await recorder.waitForState(.playing, timeout: .seconds(30), after: mark))
        let after = try await player.statistics()
        let records = recorder.records.filter { $0.sequenceNumber > mark }
        let began = records.first { if case .stateChanged(_, .buffering) = $0.event { true } else { false } }
        let ended = records.first { if case .stateChanged(.buffering, _) = $0.event { true } else { false } }
        #expect(after.stallCount == 1, "\(after)")
        if let began, let ended {
            #expect(after.stallTime == ended.time - began.time, "\(after.stallTime) against the events' \(ended.time - began.time)")
            #expect(after.longestStall == after.stallTime)
        }
        #expect(after.stallTime >= during.stallTime)
        await player.shutdown()
    }
}
