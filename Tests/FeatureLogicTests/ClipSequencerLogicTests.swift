@testable import PlayerKitCore
@testable import PlayerKitSequencer
import PlayerKitSupport
import PlayerKitTesting
import Testing

/// The sequencer's decisions (which clip is shown at each pull, when the next one starts, what a
/// failed clip or an edit changes) on fake players rendering frames on a manual clock: the
/// display loop is the test, pulling a frame every 1/30 s of clock time.
@Suite("ClipSequencer's timeline, on fake players", .timeLimit(.minutes(1)))
struct ClipSequencerLogicTests {
    let bus = PlayerEventBus(label: "sequencer-logic")
    let clock = ManualClock()
    let tick = Duration.seconds(1) / 30
    let format = try! FrameFormat(width: 8, height: 8)

    /// Fakes for the sequencer's three slots, knowing `media` (by source) and rendering at 30 fps.
    func sequencer(_ clips: [SequenceClip], media: [String: FakePlayer.Media]) throws -> ClipSequencer {
        try ClipSequencer(clips: clips, format: format, clock: clock) { (_: Int) throws(PlayerError) -> any MediaPlayer in
            try FakePlayer(clock: clock, bus: bus, media: media, defaultMedia: nil)
        }
    }

    /// Pulls `ticks` frames, one per tick of clock time. Before each pull, waits (real time,
    /// bounded) until the clip after the current one is prepared, as a display loop on a machine
    /// fast enough would find it: the preparation runs in the sequencer's background task.
    func pull(_ sequencer: ClipSequencer, ticks: Int, next: [String: String]) async -> [SequencedFrame] {
        var frames: [SequencedFrame] = []
        for _ in 0..<ticks {
            if let current = sequencer.currentClipID, let following = next[current] {
                #expect(await eventually { sequencer.preparedClipIDs.contains(following) }, "\(following) never prepared")
            }
            clock.advance(by: tick)
            if let frame = sequencer.frame() { frames.append(frame) }
        }
        return frames
    }

    static func order(_ frames: [SequencedFrame]) -> [String] {
        frames.map(\.clipID).reduce(into: []) { order, id in if order.last != id { order.append(id) } }
    }

    @Test("clips, a faster clip and a still follow each other at their output lengths, with no gap, then the output finishes")
    func backToBack() async throws {
        let media: [String: FakePlayer.Media] = [
            "a.mp4": .init(duration: 1, frameColor: RGBColor(red: 255, green: 0, blue: 0)),
            "b.mp4": .init(duration: 2, frameColor: RGBColor(red: 0, green: 255, blue: 0)),
            "c.png": .init(duration: 0.04, frameColor: RGBColor(red: 0, green: 0, blue: 255)),
        ]
        let sequencer = try sequencer([
            .video("a.mp4", id: "a"), .video("b.mp4", id: "b", speed: 2), .still("c.png", duration: .milliseconds(500), id: "c"),
        ], media: media)
        let log = EventLog(bus: bus, players: sequencer.players.map(\.id))
        try await sequencer.start()
        #expect(sequencer.currentClipID == "a")
        let frames = await pull(sequencer, ticks: 90, next: ["a": "b", "b": "c"])
        #expect(Self.order(frames) == ["a", "b", "c"])
        // Each clip's place in the output is its length divided by its speed (a still: its duration).
        let starts = Dictionary(frames.map { ($0.clipID, $0.outputTime) }, uniquingKeysWith: min)
        #expect(abs((starts["b"]! - .seconds(1)) / tick) <= 1, "b started at \(starts["b"]!)")
        #expect(abs((starts["c"]! - .seconds(2)) / tick) <= 1, "c started at \(starts["c"]!)")
        #expect(sequencer.isFinished)
        // No gap at either boundary: the incoming clip's first frame comes one tick after the outgoing's last.
        #expect(sequencer.boundaries.map { "\($0.fromClip)->\($0.toClip)" } == ["a->b", "b->c"])
        for boundary in sequencer.boundaries { #expect(abs(boundary.gap / tick) < 1.01, "\(boundary)") }
        // b plays at twice the speed: its source time moves two frames per pull.
        let bTimes = frames.filter { $0.clipID == "b" && !$0.isRepeat }.compactMap(\.sourceTime)
        let steps = zip(bTimes.dropFirst(), bTimes).map { $0 - $1 }
        #expect(!steps.isEmpty && steps.allSatisfy { abs($0 - 2.0 / 30) < 0.005 }, "\(steps)")
        // The pictures are the clips' own.
        #expect(frames.first { $0.clipID == "b" }?.frame.color(x: 1, y: 1) == RGBColor(red: 0, green: 255, blue: 0))
        let events = log.features(SequencerEvent.self).map(\.description)
        #expect(events.filter { $0.hasPrefix("sequencerClipStarted") } == ["sequencerClipStarted(a at 0)", "sequencerClipStarted(b at 1)", "sequencerClipStarted(c at 2)"])
        #expect(events.last == "sequencerFinished")
        await sequencer.shutdown()
        #expect(sequencer.players.allSatisfy { $0.isShutDown })
    }

    @Test("the next clip starts half a tick before its turn, from the clock's timer, so each of its frames is ready before the pull that shows it")
    func earlyStart() async throws {
        let sequencer = try sequencer([.video("a.mp4", id: "a"), .video("b.mp4", id: "b")],
                                      media: ["a.mp4": .init(duration: 1), "b.mp4": .init(duration: 1)])
        try await sequencer.start()
        let b = sequencer.players[1] as! FakePlayer
        #expect(await eventually { sequencer.preparedClipIDs.contains("b") })
        _ = await pull(sequencer, ticks: 28, next: [:])
        #expect(!b.commands.contains(.play))                       // not yet: more than 1.5 ticks before the end
        _ = await pull(sequencer, ticks: 1, next: [:])             // this pull plans the start...
        clock.advance(by: tick / 2)                                // ...which the clock's timer makes half a tick before the switch
        #expect(b.commands.contains(.play) && sequencer.currentClipID == "a")
        clock.advance(by: tick / 2)
        #expect(sequencer.frame()?.clipID == "b")
        await sequencer.shutdown()
    }

    @Test("a clip that cannot play is skipped with clipFailed; the output goes on from the clip before it to the one after")
    func failedClipSkipped() async throws {
        let sequencer = try sequencer([.video("a.mp4", id: "a"), .video("broken.mp4", id: "broken"), .video("c.mp4", id: "c")],
                                      media: ["a.mp4": .init(duration: 1), "broken.mp4": .unplayable(source: "broken.mp4"),
                                              "c.mp4": .init(duration: 1)])
        let log = EventLog(bus: bus, players: sequencer.players.map(\.id))
        try await sequencer.start()
        #expect(await eventually { log.features(SequencerEvent.self).contains { if case .clipFailed(clipID: "broken", _) = $0 { return true }; return false } })
        let frames = await pull(sequencer, ticks: 66, next: ["a": "c"])
        #expect(Self.order(frames) == ["a", "c"])
        #expect(sequencer.boundaries.map(\.toClip) == ["c"] && sequencer.isFinished)
        await sequencer.shutdown()
    }

    @Test("the first clip's failure is thrown by start, naming its source")
    func firstClipFails() async throws {
        let sequencer = try sequencer([.video("gone.mp4", id: "gone")], media: ["gone.mp4": .unplayable(source: "gone.mp4")])
        await #expect(throws: PlayerError.self) { try await sequencer.start() }
        #expect(sequencer.currentClipID == nil && sequencer.frame() == nil)
        await sequencer.shutdown()
    }

    @Test("an edit while playing: a clip inserted after the current one is prepared and shown next; removing the current one lets it finish")
    func editWhilePlaying() async throws {
        let sequencer = try sequencer([.video("a.mp4", id: "a"), .video("c.mp4", id: "c")],
                                      media: ["a.mp4": .init(duration: 1), "b.mp4": .init(duration: 0.5), "c.mp4": .init(duration: 0.5)])
        try await sequencer.start()
        _ = await pull(sequencer, ticks: 5, next: ["a": "c"])
        var clips = sequencer.clips
        clips.insert(.video("b.mp4", id: "b"), at: 1)
        try sequencer.setClips(clips)
        clips.remove(at: 0)                                        // the current clip: it plays on to its end
        try sequencer.setClips(clips)
        #expect(sequencer.clips.map(\.id) == ["b", "c"])
        #expect(throws: PlayerError.self) { try sequencer.setClips([.video("c.mp4", id: "c"), .video("b.mp4", id: "b"), .video("c.mp4", id: "c")]) }   // one ID, one clip
        #expect(throws: PlayerError.self) { try sequencer.setClips([]) }
        #expect(sequencer.clips.map(\.id) == ["b", "c"])
        let frames = await pull(sequencer, ticks: 60, next: ["a": "b", "b": "c"])
        #expect(Self.order(frames) == ["a", "b", "c"])
        let starts = Dictionary(frames.map { ($0.clipID, $0.outputTime) }, uniquingKeysWith: min)
        #expect(abs((starts["b"]! - .seconds(1)) / tick) <= 1 && abs((starts["c"]! - .milliseconds(1500)) / tick) <= 1, "\(starts)")
        await sequencer.shutdown()
    }

    @Test("shutdown stops everything: a pending early start does nothing, later pulls change nothing, every player is down")
    func shutdownStopsEverything() async throws {
        let sequencer = try sequencer([.video("a.mp4", id: "a"), .video("b.mp4", id: "b")],
                                      media: ["a.mp4": .init(duration: 1), "b.mp4": .init(duration: 1)])
        try await sequencer.start()
        _ = await pull(sequencer, ticks: 29, next: ["a": "b"])    // the early start of b is planned
        await sequencer.shutdown()
        clock.advance(by: .seconds(1))                             // its timer fires on a shut-down sequencer
        #expect(sequencer.players.allSatisfy { $0.isShutDown })
        #expect(!(sequencer.players[1] as! FakePlayer).commands.contains(.play))
    }
}
