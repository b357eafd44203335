@testable import PlayerKitCore
import Foundation
@testable import PlayerKitSequencer
import Testing
import PlayerKit
import PlayerKitSupport

/// The clip sequencer: edits while playing, mirroring, bad input. (Its gaps at boundaries and
/// a still's hold are timing, in ``TimingTests``.) In make test's waits lane: three small
/// software-rendered players, pulled 30 times a second, with no tight bound of their own.
@Suite("Clip sequencer", .timeLimit(.minutes(4)), .tags(.waitPass))
struct SequencerTests {
    static func clip(_ number: Int, id: String, speed: Double = 1, flip: VideoFlip = []) -> SequenceClip {
        .video(MediaSource(Fixtures.media("sequence-\(number).mp4")), id: id, speed: speed, flip: flip)
    }

    static var format: FrameFormat { get throws { try FrameFormat(width: 160, height: 120, pixelFormat: .rgb0) } }

    /// Pulls frames about 30 times a second until `done` says so or `timeout` passes.
    static func pull(_ sequencer: ClipSequencer, timeout: Duration = .seconds(20), until done: (SequencedFrame) -> Bool) async -> [SequencedFrame] {
        var frames: [SequencedFrame] = []
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline, !Task.isCancelled {
            if let frame = sequencer.frame() {
                frames.append(frame)
                if done(frame) { break }
            }
            try? await Task.sleep(for: .milliseconds(33))
        }
        return frames
    }

    @Test("a swap made while the first clip plays takes effect at the next boundary; a mirrored clip's frames are mirrored")
    func swapWhilePlaying() async throws {
        let sequencer = try ClipSequencer(
            clips: [Self.clip(1, id: "orange"), Self.clip(2, id: "halves", flip: .horizontal), Self.clip(3, id: "purple")],
            format: try Self.format, playerIDPrefix: Fixtures.uniqueID("seq").rawValue)
        try await sequencer.start()
        let first = await Self.pull(sequencer) { _ in true }
        #expect(first.first?.clipID == "orange")
        // While "orange" plays: purple goes second, halves last.
        var clips = sequencer.clips
        clips.swapAt(1, 2)
        try sequencer.setClips(clips)
        #expect(sequencer.clips.map(\.id) == ["orange", "purple", "halves"])
        #expect(sequencer.currentClipID == "orange")
        let untilPurple = await Self.pull(sequencer) { $0.clipID != "orange" }
        #expect(untilPurple.last?.clipID == "purple")
        #expect(await eventually { sequencer.preparedClipIDs.contains("halves") })
        // The mirrored clip: cyan | magenta halves come out magenta | cyan.
        let halves = await Self.pull(sequencer) { $0.clipID == "halves" }
        let mirrored = try #require(halves.last)
        #expect(mirrored.flip == .horizontal)
        let left = try #require(mirrored.frame.averageColor(x: 10, y: 10, width: 20, height: 20))
        let right = try #require(mirrored.frame.averageColor(x: 130, y: 10, width: 20, height: 20))
        #expect(left.distance(to: RGBColor(red: 255, green: 0, blue: 255)) < 60, "left \(left)")
        #expect(right.distance(to: RGBColor(red: 0, green: 255, blue: 255)) < 60, "right \(right)")
        // The boundaries crossed, in order.
        #expect(sequencer.boundaries.map(\.toClip).prefix(2) == ["purple", "halves"])
        await sequencer.shutdown()
    }

    @Test("bad timelines and edits get typed errors naming the value, and the sequencer keeps its timeline")
    func badInput() async throws {
        let format = try Self.format
        #expect(throws: PlayerError.invalidArgument(name: "clips", value: "[]", reason: "the timeline needs at least one clip")) {
            try ClipSequencer(clips: [], format: format)
        }
        #expect(throws: PlayerError.self) { try ClipSequencer(clips: [Self.clip(1, id: "a", speed: 5)], format: format) }
        #expect(throws: PlayerError.invalidArgument(name: "clip id", value: "a", reason: "is used by two clips of the timeline")) {
            try ClipSequencer(clips: [Self.clip(1, id: "a"), Self.clip(2, id: "a")], format: format)
        }
        #expect(throws: PlayerError.self) {
            try ClipSequencer(clips: [.still(MediaSource(Fixtures.media("sequence-still.png")), duration: .zero, id: "s")], format: format)
        }
        let sequencer = try ClipSequencer(
            clips: [Self.clip(1, id: "a"), Self.clip(2, id: "b")], format: format, playerIDPrefix: Fixtures.uniqueID("seq").rawValue)
        #expect(throws: PlayerError.invalidArgument(name: "clips", value: "[]", reason: "the timeline needs at least one clip")) {
            try sequencer.setClips([])
        }
        #expect(throws: PlayerError.invalidArgument(name: "clip id", value: "a", reason: "is used by two clips of the timeline")) {
            try sequencer.setClips([Self.clip(1, id: "a"), Self.clip(3, id: "a")])
        }
        #expect(throws: PlayerError.self) { try sequencer.setClips([Self.clip(1, id: "a", speed: 5)]) }
        #expect(sequencer.clips.map(\.id) == ["a", "b"])
        try sequencer.setClips([Self.clip(1, id: "a")])
        #expect(sequencer.clips.map(\.id) == ["a"])
        // A clip that cannot play fails at start with the player's typed error.
        let broken = try ClipSequencer(
            clips: [.video(MediaSource(Fixtures.fixture("random-bytes.mp4")), id: "broken")], format: format,
            playerIDPrefix: Fixtures.uniqueID("seq").rawValue)
        await #expect(throws: PlayerError.self) { try await broken.start() }
        #expect(broken.frame() == nil)
        await broken.shutdown()
        await sequencer.shutdown()
    }

    @Test("a clip that cannot be played is skipped: red, a missing clip, blue plays red then blue and finishes")
    func skipsUnplayableClip() async throws {
        let missing = Fixtures.fixture("no-such-clip-\(UUID().uuidString.prefix(6)).mp4")
        let sequencer = try ClipSequencer(
            clips: [.video(MediaSource(Fixtures.media("tile-1.mp4")), id: "red"),
                    .video(MediaSource(missing), id: "missing"),
                    .video(MediaSource(Fixtures.media("tile-3.mp4")), id: "blue")],
            format: try Self.format, playerIDPrefix: Fixtures.uniqueID("seq").rawValue)
        defer { Task { await sequencer.shutdown() } }
        let events = Locked<[SequencerEvent]>([])
        let subscriptions = sequencer.players.map { player in
            player.eventBus.subscribe(to: player.id, kinds: [.sequencer]) { record in
                guard let event = record.event.feature(SequencerEvent.self) else { return }
                if case .boundary = event { return }
                events.withLock { $0.append(event) }
            }
        }
        defer { subscriptions.forEach { $0.cancel() } }
        try await sequencer.start()
        // Each tile is 4 s long: 20 s is room for both and the skipped one between them.
        let frames = await Self.pull(sequencer, timeout: .seconds(20)) { _ in sequencer.isFinished }
        #expect(frames.first?.clipID == "red")
        let blue = try #require(frames.first { $0.clipID == "blue" }, "blue never started: \(events.withLock { $0 })")
        let centre = try #require(blue.frame.averageColor(x: 60, y: 80, width: 40, height: 30))
        #expect(centre.distance(to: RGBColor(red: 0, green: 0, blue: 255)) < 60, "blue clip shows \(centre)")
        #expect(!frames.contains { $0.clipID == "missing" })
        #expect(sequencer.isFinished)
        #expect(await eventually(timeout: .seconds(5)) { events.withLock { $0.contains(.finished) } })
        let seen = events.withLock { $0 }
        #expect(seen.contains { if case .clipFailed("missing", _) = $0 { return true }; return false }, "\(seen)")
        #expect(seen.contains(.clipStarted(clipID: "blue", index: 2)), "\(seen)")
        // Blue came on within a second and a half of red's end (red's 4 s, at most one
        // preparation of blue after the skip).
        let redEnd = try #require(frames.last { $0.clipID == "red" }?.outputTime)
        #expect(blue.outputTime - redEnd < .milliseconds(1500), "red ended at \(redEnd), blue began at \(blue.outputTime)")
    }

    @Test("the sequencer example draws its frames into its own SDL window under Xvfb (a screenshot shows a clip of the timeline)")
    func exampleWindow() async throws {
        let display = try await VirtualDisplay.start(size: "1024x768")
        defer { display.stop() }
        let (process, output) = try ChildProcess.start(
            ChildProcess.example("playerkit-sequencer"), ["--json", "--seconds", "60"], environment: display.environment)
        defer { if process.isRunning { kill(process.processIdentifier, SIGKILL) } }
        let reader = JSONLineReader(output)
        // Wait until the output has run a little.
        var shown = false
        while let line = await reader.next() {
            if line["event"] as? String == "frame", (line["outputTime"] as? Double ?? 0) >= 0.3 {
                shown = true
                break
            }
        }
        #expect(shown)
        let shot = FileManager.default.temporaryDirectory.appendingPathComponent("sequencer-\(UUID().uuidString).xwd")
        defer { try? FileManager.default.removeItem(at: shot) }
        try await display.runAsync("xwd", ["-root", "-silent", "-out", shot.path])
        let image = try await XWDImage.read(shot)
        // The window (640x480 at the top-left corner) shows the 320x240 frames at twice their
        // size. Whichever item is on screen, its left and right thirds above the moving box show
        // its colours: clip-1 orange; clip-2 mirrored, magenta | cyan; the still black | grey;
        // clip-3 purple.
        let left = image.averageColor(x: 20, y: 20, width: 160, height: 120)
        let right = image.averageColor(x: 460, y: 20, width: 160, height: 120)
        let items: [(name: String, left: (Int, Int, Int), right: (Int, Int, Int))] = [
            ("clip-1", (255, 165, 0), (255, 165, 0)), ("clip-2 mirrored", (255, 0, 255), (0, 255, 255)),
            ("still", (0, 0, 0), (128, 128, 128)), ("clip-3", (128, 0, 128), (128, 0, 128)),
        ]
        let match = items.first { MosaicTests.matches(left, $0.left) && MosaicTests.matches(right, $0.right) }
        #expect(match != nil, "window shows \(left) | \(right)")
        // Checked: SIGTERM ends it cleanly (when the timeline has not ended it already).
        process.terminate()
        await reader.drain()
        await ChildProcess.waitForExit(process)
        #expect(process.terminationStatus == 0)
    }
}
