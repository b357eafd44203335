@testable import PlayerKitCore
import Foundation
import Testing
import PlayerKit
import PlayerKitSupport

/// Software frames from real mpv cores: pixels, times, slow consumers, lifetime, bad input.
@Suite("Software frames", .timeLimit(.minutes(4)), .tags(.timingPass))
struct FrameOutputTests {
    static var quadrants: String { Fixtures.fixture("quadrants.mp4") }

    static var framesConfiguration: PlayerConfiguration {
        var configuration = Fixtures.headless
        configuration.videoOutput = .frames
        return configuration
    }

    /// The first `count` frames of `output`, or those that came before `timeout` passed.
    static func collect(_ output: FrameOutput, count: Int, timeout: Duration = .seconds(20)) async -> [VideoFrame] {
        await collectFrames(output, count: count, timeout: timeout).frames
    }

    /// The first `count` frames, or fewer when the sequence ended; nil when `timeout` passed first.
    static func collectOrTimeOut(_ output: FrameOutput, count: Int, timeout: Duration) async -> [VideoFrame]? {
        let result = await collectFrames(output, count: count, timeout: timeout)
        return result.timedOut ? nil : result.frames
    }

    static func collectFrames(_ output: FrameOutput, count: Int, timeout: Duration) async -> (frames: [VideoFrame], timedOut: Bool) {
        let collected = Locked<[VideoFrame]>([])
        let timedOut = await withTaskGroup(of: Bool.self) { group in
            group.addTask {
                for await frame in output.frames {
                    if collected.withLock({ $0.append(frame); return $0.count }) == count { break }
                }
                return false
            }
            group.addTask {
                try? await Task.sleep(for: timeout)
                return true
            }
            let first = await group.next() ?? true
            group.cancelAll()
            return first
        }
        return (collected.withLock { $0 }, timedOut)
    }

    /// Frames as the renderer produces them, collected on its own thread by the output's frame
    /// handler: unlike a task reading `frames`, this misses none, however busy Swift's
    /// cooperative pool is (the rest of the suite keeps its two threads busy).
    static func sample(
        _ output: FrameOutput, count: Int, timeout: Duration = .seconds(20), newFramesOnly: Bool = false
    ) async throws -> [VideoFrame] {
        // Every frame the renderer makes, from its own thread (the output's frame handler).
        let collected = Locked<[VideoFrame]>([])
        output.setFrameHandler { frame in
            if !newFramesOnly || frame.info.isNewFrame { collected.withLock { if $0.count < count { $0.append(frame) } } }
        }
        defer { output.setFrameHandler(nil) }
        // Frames rendered before the handler was set count too.
        if let frame = output.latestFrame, !newFramesOnly || frame.info.isNewFrame {
            collected.withLock { if $0.isEmpty { $0.append(frame) } }
        }
        _ = await eventually(timeout: timeout) { collected.withLock { $0.count >= count } }
        return collected.withLock { frames in frames.sorted { $0.sequenceNumber < $1.sequenceNumber } }
    }

    /// Red, green, blue and white quadrants, as the fixture has them (or mirrored).
    static func expectQuadrants(_ frame: VideoFrame, mirrored: Bool, sourceLocation: SourceLocation = #_sourceLocation) {
        let red = RGBColor(red: 255, green: 0, blue: 0), green = RGBColor(red: 0, green: 255, blue: 0)
        let blue = RGBColor(red: 0, green: 0, blue: 255), white = RGBColor(red: 255, green: 255, blue: 255)
        let (w, h) = (frame.width, frame.height)
        let topLeft = frame.averageColor(x: w / 4 - 8, y: h / 4 - 8, width: 16, height: 16)!
        let topRight = frame.averageColor(x: 3 * w / 4 - 8, y: h / 4 - 8, width: 16, height: 16)!
        let bottomLeft = frame.averageColor(x: w / 4 - 8, y: 3 * h / 4 - 8, width: 16, height: 16)!
        let bottomRight = frame.averageColor(x: 3 * w / 4 - 8, y: 3 * h / 4 - 8, width: 16, height: 16)!
        let expected = mirrored ? [green, red, white, blue] : [red, green, blue, white]
        let seen = [topLeft, topRight, bottomLeft, bottomRight]
        for (got, want) in zip(seen, expected) {
            #expect(got.distance(to: want) < 48, "quadrants \(seen), expected \(expected)", sourceLocation: sourceLocation)
        }
    }

    @Test("frames of a known pattern have the right pixels in the chosen format; a flipped player's frames are mirrored")
    func pixels() async throws {
        let (player, _) = try await Fixtures.player(configuration: Self.framesConfiguration)
        defer { Task { await player.shutdown() } }
        let output = try player.makeFrameOutput(FrameFormat(width: 160, height: 120, pixelFormat: .bgr0))
        try await player.perform(.setLoop(.forever))
        #expect(output.delivery == .stream && output.format.stride % 64 == 0)
        _ = try await player.load(MediaSource(Self.quadrants))
        let frames = try await Self.sample(output, count: 5)
        try #require(frames.count == 5)
        let frame = frames[4]
        #expect(frame.width == 160 && frame.height == 120 && frame.pixelFormat == .bgr0 && frame.playerID == player.id)
        #expect(frame.stride >= 160 * 4 && frame.stride % 64 == 0)
        frame.withUnsafeBytes { bytes in
            #expect(Int(bitPattern: bytes.baseAddress) % 64 == 0 && bytes.count == frame.stride * 120)
        }
        Self.expectQuadrants(frame, mirrored: false)

        // The same pattern mirrored left to right, in another format.
        let (flipped, _) = try await Fixtures.player(configuration: Self.framesConfiguration)
        defer { Task { await flipped.shutdown() } }
        try await flipped.perform(.setFlip(.horizontal))
        try await flipped.perform(.setLoop(.forever))
        #expect(flipped.flip == .horizontal)
        let flippedOutput = try flipped.makeFrameOutput(FrameFormat(width: 160, height: 120, pixelFormat: .rgb0))
        _ = try await flipped.load(MediaSource(Self.quadrants))
        let flippedFrames = try await Self.sample(flippedOutput, count: 5)
        try #require(flippedFrames.count == 5)
        Self.expectQuadrants(flippedFrames[4], mirrored: true)
    }

    @Test("frame times increase while playing forwards and decrease while playing backwards; sequence numbers count up")
    func frameTimes() async throws {
        // As many frames as mpv can give, even on a busy machine: it would otherwise also drop
        // late frames (its default `framedrop=vo`).
        var configuration = Self.framesConfiguration
        configuration.extraOptions["framedrop"] = "no"
        let (player, _) = try await Fixtures.player(configuration: configuration)
        defer { Task { await player.shutdown() } }
        let output = try player.makeFrameOutput(FrameFormat(width: 64, height: 48))
        _ = try await player.load(MediaSource(Self.quadrants))
        // New frames only (mpv also redraws the current frame now and then). On a machine the
        // rest of the suite keeps busy, mpv's renderer hands over fewer of the clip's 120 frames
        // (it keeps only the newest queued frame); those that come are in order.
        let forward = try await Self.sample(output, count: 30, timeout: .seconds(10), newFramesOnly: true)
        try #require(forward.count >= 8)
        let times = forward.compactMap(\.videoTime)
        #expect(times.count >= forward.count - 1)  // the very first frame may come before its position
        // Rising; on a machine so busy that a position report comes later than the renderer
        // waits for it, a frame repeats the previous frame's time (rarely).
        #expect(zip(times, times.dropFirst()).allSatisfy { $0 <= $1 } && times.last! > times.first!, "times \(times)")
        #expect(zip(times, times.dropFirst()).filter { $0 == $1 }.count <= times.count / 4, "times \(times)")
        let numbers = forward.map(\.sequenceNumber)
        #expect(zip(numbers, numbers.dropFirst()).allSatisfy { $0 < $1 })
        output.close()

        // Backwards, on a second player.
        let (reverse, _) = try await Fixtures.player(configuration: configuration)
        defer { Task { await reverse.shutdown() } }
        let reverseOutput = try reverse.makeFrameOutput(FrameFormat(width: 64, height: 48))
        try await reverse.perform(.setPlaybackDirection(.backward))
        _ = try await reverse.load(MediaSource(Self.quadrants))
        let backward = try await Self.sample(reverseOutput, count: 30, timeout: .seconds(10), newFramesOnly: true)
        try #require(backward.count >= 8)
        let backTimes = backward.compactMap(\.videoTime)
        #expect(backTimes.count >= backward.count - 1)
        #expect(zip(backTimes, backTimes.dropFirst()).allSatisfy { $0 >= $1 } && backTimes.last! < backTimes.first!, "times \(backTimes)")
        #expect(zip(backTimes, backTimes.dropFirst()).filter { $0 == $1 }.count <= backTimes.count / 4, "times \(backTimes)")
    }

    @Test("a frame's time names the frame whose pixels it carries (frame numbers burned in as grey levels), not the one after")
    func frameTimeMatchesPixels() async throws {
        var configuration = Self.framesConfiguration
        configuration.extraOptions["framedrop"] = "no"
        let (player, _) = try await Fixtures.player(configuration: configuration)
        defer { Task { await player.shutdown() } }
        let output = try player.makeFrameOutput(FrameFormat(width: 64, height: 48))
        _ = try await player.load(MediaSource(Fixtures.fixture("frame-numbers.mp4")))
        let frames = try await Self.sample(output, count: 40, timeout: .seconds(10), newFramesOnly: true)
        try #require(frames.count >= 20)
        // Frame N is luma 20 + 2N; mpv shows limited-range luma Y as grey (Y - 16) * 255 / 219.
        let pairs = frames.compactMap { frame -> (label: Int, pixels: Int)? in
            guard let time = frame.videoTime, let grey = frame.color(x: 32, y: 24)?.green else { return nil }
            let luma = Double(grey) * 219 / 255 + 16
            return (Int((time * 30).rounded()), Int(((luma - 20) / 2).rounded()))
        }
        try #require(pairs.count >= frames.count - 1)
        let report = pairs.map { "\($0.label)/\($0.pixels)" }.joined(separator: " ")
        // mpv moves `time-pos` to a frame when it hands it to the renderer, which by default is
        // up to 50 ms before its display time: the position read as a frame was rendered named
        // the next one. Never later than the pixels; on a machine so busy that the position comes
        // after the renderer stops waiting for it, a frame keeps the previous frame's time.
        #expect(pairs.allSatisfy { $0.label <= $0.pixels }, "label/pixels: \(report)")
        #expect(pairs.filter { $0.label == $0.pixels }.count * 5 >= pairs.count * 4, "label/pixels: \(report)")
    }

    @Test("a reader that stops for 2 s gets the newest frame and the count it missed; memory does not grow")
    func slowConsumer() async throws {
        let (player, _) = try await Fixtures.player(configuration: Self.framesConfiguration)
        defer { Task { await player.shutdown() } }
        let output = try player.makeFrameOutput(FrameFormat(width: 320, height: 240))
        try await player.perform(.setLoop(.forever))
        _ = try await player.load(MediaSource(Self.quadrants))
        var iterator = output.frames.makeAsyncIterator()
        let first = try #require(await iterator.next())
        let renderedBefore = output.renderedFrameCount
        // The reader stops; the player keeps rendering (about 30 frames a second).
        try await Task.sleep(for: .seconds(2))
        let renderedDuring = output.renderedFrameCount - renderedBefore
        #expect(renderedDuring >= 20, "rendered \(renderedDuring) frames in 2 s")
        let next = try #require(await iterator.next())
        // The newest frame, not the one after `first`; it says how many frames were skipped.
        #expect(next.sequenceNumber > first.sequenceNumber + 10)
        #expect(next.info.framesMissed == next.sequenceNumber - first.sequenceNumber - 1)
        #expect(output.missedFrameCount >= next.info.framesMissed - 1)
        // 60 frames of 320x240x4 would be 18 MB; the pool reused a handful of buffers.
        #expect(output.allocatedBufferCount <= 4, "\(output.allocatedBufferCount) buffers for \(output.renderedFrameCount) frames")
    }

    @Test("dropping a player with a frame output while frames flow neither crashes nor leaks; the frames end")
    func dropWhileRendering() async throws {
        var endedOutputs: [FrameOutput] = []
        for round in 0..<6 {
            let (player, _) = try await Fixtures.player(configuration: Self.framesConfiguration)
            let output = try player.makeFrameOutput(FrameFormat(width: 160, height: 120))
            try await player.perform(.setLoop(.forever))
            _ = try await player.load(MediaSource(Self.quadrants))
            let frames = try await Self.sample(output, count: 3)
            #expect(frames.count == 3, "round \(round)")
            let id = player.id
            // Drop the player (no shutdown) while its render thread is busy.
            _ = consume player
            // The renderer is freed before the core (mpv aborts the process otherwise) and the
            // sequence ends.
            #expect(await eventually(timeout: .seconds(10)) { output.isClosed }, "round \(round)")
            #expect(throws: FrameOutputError.playerShutDown(id)) { try Self.pullFrom(output) }
            endedOutputs.append(output)
        }
        // Each sequence ended, and a frame the
        // app keeps stays readable after its player went.
        for output in endedOutputs {
            // (A frame rendered just before the renderer was freed may still come after the
            // one buffered: at most those two, then the end.)
            let rest = await Self.collectOrTimeOut(output, count: 3, timeout: .seconds(10))
            #expect(rest != nil && rest!.count <= 2)
            if let frame = rest?.first { #expect(frame.color(x: 10, y: 10) != nil) }
        }
    }

    static func pullFrom(_ output: FrameOutput) throws(FrameOutputError) {
        let memory = UnsafeMutableRawPointer.allocate(byteCount: output.format.byteCount, alignment: 64)
        defer { memory.deallocate() }
        _ = try output.renderIfDue(into: memory, stride: output.format.stride)
    }

    @Test("pull delivery renders into the app's memory when a frame is due, and not otherwise")
    func pull() async throws {
        let (player, _) = try await Fixtures.player(configuration: Self.framesConfiguration)
        defer { Task { await player.shutdown() } }
        let format = try FrameFormat(width: 160, height: 120, pixelFormat: .rgb0)
        let output = try player.makeFrameOutput(format, delivery: .pull)
        try await player.perform(.setLoop(.forever))
        _ = try await player.load(MediaSource(Self.quadrants))
        // The app's own memory, 64-byte aligned.
        let memory = UnsafeMutableRawPointer.allocate(byteCount: format.byteCount, alignment: 64)
        defer { memory.deallocate() }
        var infos: [FrameInfo] = []
        let deadline = ContinuousClock.now + .seconds(20)
        while infos.count < 10, ContinuousClock.now < deadline {
            if let info = try output.renderIfDue(into: memory, stride: format.stride) { infos.append(info) }
            try await Task.sleep(for: .milliseconds(10))  // the app's display loop, ~100 Hz
        }
        try #require(infos.count == 10)
        // Pixels landed in the app's memory: the top-left quadrant is red.
        let red = memory.load(fromByteOffset: 30 * format.stride + 40 * 4, as: UInt8.self)
        let green = memory.load(fromByteOffset: 30 * format.stride + 40 * 4 + 1, as: UInt8.self)
        #expect(red > 200 && green < 60)
        // A stream-only call on a pull output is refused, and the other way round.
        #expect(Array(await Self.collect(output, count: 1, timeout: .seconds(1))).isEmpty)
        let streamOutputPlayer = try await Fixtures.player(configuration: Self.framesConfiguration).0
        defer { Task { await streamOutputPlayer.shutdown() } }
        let streamOutput = try streamOutputPlayer.makeFrameOutput(format)
        #expect(throws: FrameOutputError.wrongDelivery(expected: .pull, actual: .stream)) { try streamOutput.nextFrameIfDue() }
        // Paused: once the paused picture is drawn, no new video frame is due any more (mpv may
        // still ask for redraws of the same one).
        try await player.pause()
        #expect(await eventually { player.isPaused })
        for _ in 0..<20 {
            _ = try output.nextFrameIfDue()
            try await Task.sleep(for: .milliseconds(20))
        }
        for _ in 0..<10 {
            if let frame = try output.nextFrameIfDue() { #expect(!frame.info.isNewFrame) }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    @Test("an OpenGL renderer without a usable GL context is a typed error; the player then takes a software output")
    func openGLWithoutContext() async throws {
        let (player, _) = try await Fixtures.player(configuration: Self.framesConfiguration)
        defer { Task { await player.shutdown() } }
        // No GL context is current on this thread: every GL function is missing.
        #expect {
            try player.makeOpenGLRenderer(getProcAddress: { _ in nil }, onFrameReady: {})
        } throws: { error in
            guard case FrameOutputError.rendererUnavailable(let id, _) = error else { return false }
            return id == player.id
        }
        let output = try player.makeFrameOutput(FrameFormat(width: 160, height: 120))
        try await player.perform(.setLoop(.forever))
        _ = try await player.load(MediaSource(Self.quadrants))
        #expect(try await Self.sample(output, count: 2).count == 2)
        // The renderers of a shut-down player are typed errors too.
        await player.shutdown()
        #expect(throws: FrameOutputError.playerShutDown(player.id)) {
            try player.makeOpenGLRenderer(getProcAddress: { _ in nil }, onFrameReady: {})
        }
    }

    @Test("a pixel format by name: mpv's two layouts, any other name a typed error naming it")
    func pixelFormatByName() throws {
        #expect(try PixelFormat("rgb0") == .rgb0)
        #expect(try PixelFormat("bgr0") == .bgr0)
        #expect(try PixelFormat(PixelFormat.bgr0.name) == .bgr0)
        for name in ["yuv420p", "RGB0", "", "rgb0 "] {
            #expect(throws: FrameOutputError.unsupportedPixelFormat(name)) { try PixelFormat(name) }
        }
    }

    @Test("bad input gets typed errors naming it, and the player stays usable")
    func badInput() async throws {
        #expect(throws: FrameOutputError.invalidSize(width: 0, height: 120)) { try FrameFormat(width: 0, height: 120) }
        #expect(throws: FrameOutputError.invalidSize(width: 100_000, height: 100_000)) { try FrameFormat(width: 100_000, height: 100_000) }
        #expect(throws: FrameOutputError.invalidSize(width: 160, height: -1)) { try FrameFormat(width: 160, height: -1) }
        #expect(throws: FrameOutputError.unsupportedPixelFormat("yuv420p")) { try PixelFormat("yuv420p") }
        #expect(try PixelFormat("bgr0") == .bgr0)

        // A player whose video goes elsewhere has no frames.
        let (headless, _) = try await Fixtures.player()
        defer { Task { await headless.shutdown() } }
        let format = try FrameFormat(width: 160, height: 120)
        #expect(throws: FrameOutputError.notConfiguredForFrames(playerID: headless.id, videoOutput: .none)) {
            try headless.makeFrameOutput(format)
        }

        let (player, _) = try await Fixtures.player(configuration: Self.framesConfiguration)
        let output = try player.makeFrameOutput(format, delivery: .pull)
        // A second output on the same player.
        #expect(throws: FrameOutputError.alreadyAttached(playerID: player.id)) { try player.makeFrameOutput(format) }
        // Destinations that cannot hold a frame.
        let memory = UnsafeMutableRawPointer.allocate(byteCount: format.byteCount, alignment: 64)
        defer { memory.deallocate() }
        #expect(throws: FrameOutputError.invalidDestination(stride: 100, reason: "a row of 160 pixels needs 640 bytes")) {
            try output.renderIfDue(into: memory, stride: 100)
        }
        #expect(throws: FrameOutputError.self) { try output.renderIfDue(into: memory, stride: 642) }
        // The player still plays, and after closing the first output a new one works.
        _ = try await player.load(MediaSource(Self.quadrants), startPaused: true)
        output.close()
        #expect(throws: FrameOutputError.outputClosed(player.id)) { try output.nextFrameIfDue() }
        let second = try player.makeFrameOutput(format)
        _ = try await player.load(MediaSource(Self.quadrants))
        #expect(try await Self.sample(second, count: 2).count == 2)
        // After shutdown: typed errors, for rendering and for making outputs.
        await player.shutdown()
        #expect(second.isClosed)
        #expect(throws: FrameOutputError.playerShutDown(player.id)) { try player.makeFrameOutput(format) }
        #expect(throws: FrameOutputError.self) { try second.nextFrameIfDue() }
        // Other players were never affected.
        _ = try await headless.load(MediaSource(Self.quadrants), startPaused: true)
        #expect(headless.state == .ready)
    }
}
