import ExampleSupport
@testable import PlayerKitCore
import Foundation
@testable import PlayerKitResources
@testable import PlayerKitSync
import Testing
import PlayerKit

/// Tests that measure time on screen (seam gaps, drift between synced players: within one
/// frame interval; a preloaded start against a cold one). They run after the rest of the suite, one at a time (`make test` runs them
/// separately): with the other tests decoding video on every core at once, a frame can really
/// be late.
@Suite("Timing on screen", .serialized, .timeLimit(.minutes(6)), .tags(.timingPass))
struct TimingTests {
    @Test("a treadmill of two clips wraps three times, with an event per clip change and per wrap, and seamless seams")
    func wrapsThreeTimes() async throws {
        let (player, events) = try await Fixtures.player()
        defer { Task { await player.shutdown() } }
        let loop = try ClipLoop(player: player, clips: [MediaSource(ClipLoopTests.shortA), MediaSource(ClipLoopTests.shortB)])
        try await loop.start()
        #expect(loop.playableClips == [0, 1])
        let third = await events.waitFor(timeout: .seconds(30)) { {
            if case .loopWrapped(let count, _)? = $0.event.feature(ClipEvent.self) { return count == 3 }; return false }($0) }
        #expect(third != nil)
        loop.stop()
        let clipChanges = events.events.compactMap { event -> Int? in
            if case .clipChanged(let index, _)? = event.feature(ClipEvent.self) { return index }
            return nil
        }
        let wraps = events.events.compactMap { event -> Int? in
            if case .loopWrapped(let count, _)? = event.feature(ClipEvent.self) { return count }
            return nil
        }
        // 0 1 | 0 1 | 0 1 | 0: the order of clips, and wraps counted 1, 2, 3.
        #expect(Array(clipChanges.prefix(7)) == [0, 1, 0, 1, 0, 1, 0], "\(clipChanges)")
        #expect(wraps == [1, 2, 3])
        // Every seam measured, each within one frame interval of its schedule (30 fps: 33 ms).
        let seams = loop.seams
        #expect(seams.count >= 6)
        #expect(seams.allSatisfy { abs($0.gap) <= 1.0 / 30 }, "seams: \(seams)")
        #expect(loop.wrapCount == 3)
    }

    @Test("background-loop --json --seconds 10: at least two wrap-arounds, every seam gap within one frame interval")
    func twoWrapsSeamless() async throws {
        let (status, output, errors) = try await ChildProcess.runToEnd(ChildProcess.example("playerkit-background-loop"), ["--json", "--seconds", "10"])
        #expect(status == 0, "exit status \(status): \(errors.suffix(2000))")
        let objects = try exampleJSONLines(output)
        let wraps = objects.filter { $0["event"] as? String == "loopWrapped" }
        #expect(wraps.count >= 2, "\(wraps)")
        #expect(wraps.allSatisfy { $0["player"] as? String == "background" })
        let seams = objects.filter { ["clipChanged", "loopWrapped"].contains($0["event"] as? String) && $0["gapMs"] != nil }
        #expect(seams.count >= 6)
        for seam in seams {
            let gap = try #require(seam["gapMs"] as? Double)
            #expect(abs(gap) <= 33.3, "seam \(seam)")
        }
        // Clips follow each other 0, 1, 2, 0, ...
        let order = objects.filter { $0["event"] as? String == "clipChanged" }.compactMap { $0["index"] as? Int }
        #expect(order.enumerated().allSatisfy { $0.element == $0.offset % 3 }, "\(order)")
        // The foreground player plays alongside.
        #expect(objects.contains { $0["player"] as? String == "foreground" && $0["state"] as? String == "playing" })
    }

    @Test("a preloaded item starts measurably faster than a cold load")
    func preloadIsFaster() async throws {
        var cold: [Duration] = []
        var warm: [Duration] = []
        for _ in 0..<3 {
            // Cold: from the load call to the first frame, playing.
            let (coldPlayer, coldEvents) = try await Fixtures.player()
            let start = ContinuousClock.now
            try await coldPlayer.load(MediaSource(Fixtures.clipA))
            let frame = await coldEvents.waitFor { $0.event == .firstFrame }
            #expect(frame != nil)
            cold.append(ContinuousClock.now - start)
            await coldPlayer.shutdown()

            // Preloaded: the frame is already up; from play() to playing.
            let (warmPlayer, warmEvents) = try await Fixtures.player()
            try await warmPlayer.preload(MediaSource(Fixtures.clipA))
            #expect(warmPlayer.state == .ready)
            #expect(await warmEvents.waitFor { $0.event == .firstFrame } != nil)
            let mark = warmEvents.mark
            let play = ContinuousClock.now
            try await warmPlayer.play()
            #expect(await warmEvents.waitForState(.playing, after: mark))
            warm.append(ContinuousClock.now - play)
            await warmPlayer.shutdown()
        }
        let coldMedian = cold.sorted()[1]
        let warmMedian = warm.sorted()[1]
        #expect(warmMedian * 2 < coldMedian, "preloaded \(warmMedian) vs cold \(coldMedian)")
    }

    @Test("a sync group keeps two players within one frame interval (33 ms) of each other at p99 over the drift window (6 s; 20 s in make test-long)")
    func syncGroupDrift() async throws {
        let (left, _) = try await Fixtures.player()
        let (right, _) = try await Fixtures.player()
        defer { Task { await left.shutdown(); await right.shutdown() } }
        let group = try SyncGroup(players: [left, right])
        try await group.load([MediaSource(Fixtures.clipA), MediaSource(Fixtures.clipB)], looping: true)
        try await group.play()
        // The window's frames from both players (30 fps each), however long that takes.
        let window = Fixtures.driftWindowSeconds
        #expect(await eventually(timeout: .seconds(3 * window)) { group.spreads.count >= 2 * 30 * window })
        let spreads = group.spreads.sorted()
        let p99 = spreads[Int(Double(spreads.count) * 0.99)]
        #expect(p99 <= 1.0 / 30, "p99 spread \(p99 * 1000) ms over \(spreads.count) frames")
        // Each member reported its drift along the way.
        #expect(group.skews.count == 2)
    }

    @Test("a stepped wall clock does not disturb a sync group: timestamps jump, drift does not, no member is seeked")
    func steppedWallClock() async throws {
        // The players' wall clock (PlayerConfiguration.wallClock) is stepped back an hour while
        // the group plays, as NTP or an administrator might step the system clock.
        let step = Guarded(0.0)
        var configuration = Fixtures.headless
        configuration.wallClock = { Date().addingTimeInterval(step.withLock { $0 }) }
        let (left, leftEvents) = try await Fixtures.player(configuration: configuration)
        let (right, _) = try await Fixtures.player(configuration: configuration)
        defer { Task { await left.shutdown(); await right.shutdown() } }
        let group = try SyncGroup(players: [left, right])
        try await group.load([MediaSource(Fixtures.clipA), MediaSource(Fixtures.clipB)], looping: true)
        try await group.play()
        // Two seconds of frames from both players to settle.
        #expect(await eventually(timeout: .seconds(30)) { group.spreads.count >= 2 * 30 * 2 })
        let seeksBefore = group.correctiveSeeks
        let framesBefore = group.spreads.count
        let mark = leftEvents.mark
        step.withLock { $0 = -3600 }
        // The records' display timestamps jumped back an hour. (A record stamped just before the
        // step can still arrive after the mark, so wait for the first stepped one rather than
        // judge the first one to arrive.)
        let stepped = await leftEvents.waitFor(after: mark) {
            $0.event.kind == .positionChanged && $0.timestamp.timeIntervalSinceNow < -3000
        }
        #expect(stepped != nil, "no position record stamped an hour back after the step")
        // ...and for three more seconds of frames the group neither noticed nor seeked anyone.
        #expect(await eventually(timeout: .seconds(30)) { group.spreads.count >= framesBefore + 2 * 30 * 3 })
        #expect(group.correctiveSeeks == seeksBefore)
        let after = Array(group.spreads.suffix(group.spreads.count - framesBefore)).sorted()
        let p99 = after[Int(Double(after.count) * 0.99)]
        #expect(p99 <= 1.0 / 30, "p99 spread after the step \(p99 * 1000) ms over \(after.count) frames")
        #expect(group.skews.values.allSatisfy { abs($0.drift) < 1.0 / 30 }, "skews: \(group.skews)")
    }

    @Test("ab-compare --json over the drift window: drift between the two players at most 33 ms at p99")
    func abCompare() async throws {
        let window = Fixtures.driftWindowSeconds
        let (status, output, errors) = try await ChildProcess.runToEnd(
            ChildProcess.example("playerkit-ab-compare"), ["--json", "--seconds", "\(window)"])
        #expect(status == 0, "exit status \(status): \(errors.suffix(2000))")
        let objects = try exampleJSONLines(output)
        // Each member reports its drift about once a second.
        for player in ["left", "right"] {
            let reports = objects.filter { $0["player"] as? String == player && $0["event"] as? String == "syncDrift" }
            #expect(reports.count >= window * 3 / 4, "\(player): \(reports.count) drift reports")
            #expect(reports.allSatisfy { $0["driftMs"] is Double })
        }
        let summary = try #require(objects.last { $0["event"] as? String == "summary" })
        #expect(summary["player"] as? String == "group")
        let p99 = try #require(summary["p99Ms"] as? Double)
        #expect(p99 <= 33, "summary: \(summary)")
        #expect((summary["count"] as? Int ?? 0) > window * 50)
    }

    /// Two `playerkit-room` processes in one room on the real server, the second starting the
    /// room; their frame logs give the drift between them (each frame of one against the
    /// other's position at that instant, on the shared system clock). Returns the figures for
    /// the pair over `seconds` of play from one second after the room started (the first frame
    /// past the start in either process).
    ///
    /// The start is not in the figure, and is printed apart: a member hears of the start one
    /// path's delay after the member that made it, and catches up (an exact seek ahead, then
    /// speed nudges). Over a 50 ms path, under `make test-loaded`, the catch-up's first frames
    /// were 40-70 ms behind for up to 0.4 s (5 runs with per-frame drifts, 2026-11-24), which
    /// alone could put the p99 of 20 s past the bound. The figure's bound after one second also
    /// bounds the catch-up: a member not caught up within one second fails it.
    private func roomDrift(seconds: Double, secondThroughPort: Int? = nil, server: SyncplayServer) async throws -> CrossProcessDrift.Figures {
        let room = "timing-\(UInt32.random(in: 0...UInt32.max))"
        // Each process runs the window plus 4.5 s: the second joins and starts the room about
        // 1.5 s after the first started (2.5 s on a loaded machine), and the window opens one
        // second after that. A window cut short by a slow start still counts 75% of its frames.
        // The test's syncplay-server offers no TLS, which the example requires by default.
        let common = ["--room", room, "--security", "plain", "--frames", "--json", "--seconds", "\(seconds + 4.5)"]
        let example = try ChildProcess.example("playerkit-room")
        async let first = ChildProcess.runToEnd(example, ["--server", "127.0.0.1:\(server.port)", "--name", "first"] + common)
        try await Task.sleep(for: .milliseconds(300))
        async let second = ChildProcess.runToEnd(
            example, ["--server", "127.0.0.1:\(secondThroughPort ?? server.port)", "--name", "second", "--start-with", "2"] + common)
        let results = try await [first, second]
        for result in results { #expect(result.status == 0, "exit status \(result.status): \(result.errors.suffix(2000))") }
        let logs = results.map { CrossProcessDrift.frames(in: $0.output) }
        #expect(logs.allSatisfy { !$0.isEmpty }, "no frames: \(results.map { $0.errors.suffix(1000) })")
        // The clips start at 0: the first frame past 50 ms, in either process, is the start.
        let start = try #require(logs.joined().filter { $0.position >= 0.05 }.map(\.wall).min(), "the room never started")
        let settled = start + 1
        if let startFigures = CrossProcessDrift.compare(logs, from: start, to: settled).first {
            print("room drift in the first second after the start (not counted): \(startFigures)")
        }
        let figures = try #require(CrossProcessDrift.compare(logs, from: settled, to: settled + seconds).first)
        #expect(Double(figures.frames) >= seconds * 30 * 0.75, "\(figures)")
        print("room drift between processes: \(figures)")
        return figures
    }

    @Test("two playerkit-room processes in a room on the real syncplay-server: drift between them at most 33 ms at p99 over the drift window of play, from 1 s after the start")
    func roomDriftBetweenProcesses() async throws {
        let server = try await SyncplayServer.start()
        defer { server.stop() }
        let figures = try await roomDrift(seconds: Double(Fixtures.driftWindowSeconds), server: server)
        #expect(figures.p99Ms <= 33, "\(figures)")
    }

    @Test("the same with 50 ms ± 5 ms of one-way delay on one member's path: at most 50 ms at p99 over the drift window of play, from 1 s after the start")
    func roomDriftOverSlowPath() async throws {
        // The issue asked for Linux's netem (`tc qdisc … netem delay 50ms 5ms` on a veth pair
        // between network namespaces). Namespaces can be made here, but this kernel has no
        // sch_netem ("Specified qdisc kind is unknown") and no modules can be loaded: a
        // user-space proxy on loopback holds every chunk, both ways, for the same 50 ms ± 5 ms,
        // in order, which is what the room's latency compensation has to cope with.
        let server = try await SyncplayServer.start()
        defer { server.stop() }
        let proxy = FaultProxy(upstreamPort: UInt16(server.port))
        try proxy.start()
        defer { proxy.stop() }
        proxy.setMode(.delay(seconds: 0.05, jitter: 0.005))
        print("room drift over a slow path: 50 ms ± 5 ms one-way through a user-space delay proxy (netem: not in this kernel)")
        let figures = try await roomDrift(seconds: Double(Fixtures.driftWindowSeconds), secondThroughPort: Int(proxy.port), server: server)
        // What the path really did: the proxy's threads run at a raised priority where allowed
        // (root), so a loaded machine's other processes do not stretch its delays; elsewhere a
        // failure shows here whether the path kept to 50 ms ± 5 ms.
        let held = proxy.realizedDelays.sorted()
        let path = held.isEmpty ? "no chunk delayed" : String(
            format: "path's realized one-way delay over %d chunks: p50 %.1f ms, p99 %.1f ms, max %.1f ms",
            held.count, held[held.count / 2] * 1000, held[min(held.count - 1, held.count * 99 / 100)] * 1000, held[held.count - 1] * 1000)
        print("room drift over a slow path: \(path)")
        #expect(!held.isEmpty)
        #expect(figures.p99Ms <= 50, "\(figures); \(path)")
    }

    @Test("sequencer --headless --json: each clip starts within half a frame of its turn, no boundary gap over one frame at 30 fps beyond tail frames the decoder dropped, the still holds 1.5 s within a frame, directions and mirroring as shipped")
    func sequencerBoundaries() async throws {
        let (status, output, errors) = try await ChildProcess.runToEnd(ChildProcess.example("playerkit-sequencer"), ["--headless", "--json"])
        #expect(status == 0, "exit status \(status): \(errors.suffix(2000))")
        let lines = try exampleJSONLines(output)
        let summary = try #require(lines.first { $0["event"] as? String == "sequenceSummary" })
        #expect(summary["count"] as? Int == 3)
        let hold = try #require(lines.first { $0["event"] as? String == "stillHold" })
        #expect(abs(hold["gapMs"] as? Double ?? 99) <= 33.4, "still held \(hold)")
        // Frames of each clip, in output order: times rise, fall for the reversed clip.
        let frames = lines.filter { $0["event"] as? String == "frame" }
        // Each boundary. The shipped clips are 2 s at 30 fps (last frame at 1.967 s); clip-1
        // plays at 2x, so the output gives it 1 s, clip-2 2 s and the still 1.5 s.
        // - The sequencer's part: the incoming clip's first frame comes at the pull nearest the
        //   moment the outgoing clip's time is up (its start plus its output length), within
        //   half a tick: not a tick early (the outgoing clip's last frame cut), nor late.
        // - The gap, from the outgoing clip's last frame shown to the incoming clip's first, is
        //   one tick. A starved decoder (make test-loaded: stress-ng beside the run) may show the
        //   outgoing clip's last frames late or never, as it then drops frames anywhere in a
        //   clip: each tail frame the output never got adds one tick, and is reported.
        let tick = 1.0 / 30
        let outputLength = ["clip-1": 1.0, "clip-2": 2.0, "still": 1.5]
        let speed = ["clip-1": 2.0, "clip-2": 1.0]
        let lastSourceFrame = 1.967
        var start = try #require(frames.first?["outputTime"] as? Double)
        let boundaries = lines.filter { $0["event"] as? String == "boundary" }
        #expect(boundaries.count == 3)
        for boundary in boundaries {
            let pair = (boundary["clip"] as? String ?? "").components(separatedBy: "->")
            guard pair.count == 2, let gap = boundary["gapMs"] as? Double, let incoming = boundary["outputTime"] as? Double,
                  let length = outputLength[pair[0]]
            else {
                Issue.record("unexpected boundary \(boundary)")
                continue
            }
            #expect(abs(incoming - (start + length)) <= tick / 2 + 0.001,
                    "\(pair[1]) started at \(incoming) s, the turn began at \(start + length) s")
            var missedTail = 0
            if let clipSpeed = speed[pair[0]] {
                let shown = frames.filter { $0["clip"] as? String == pair[0] }.compactMap { $0["sourceTime"] as? Double }
                #expect(shown.allSatisfy { $0 <= lastSourceFrame + 0.001 }, "\(pair[0]): \(shown)")
                // The boundary's gap counts from the last new frame (a redraw of the one before
                // is not one), so the missed tail does too.
                let last = try #require(frames.last { $0["clip"] as? String == pair[0] && $0["isNewFrame"] as? Bool != false }?["sourceTime"] as? Double)
                // Output ticks between the last frame shown and the clip's last frame (at 2x
                // the output shows every other frame: half a tick short is not a missed one).
                missedTail = max(0, Int(((lastSourceFrame - last) / (tick * clipSpeed) + 0.01).rounded(.down)))
            }
            if missedTail > 0 { print("\(boundary["clip"] ?? ""): the decoder never delivered the outgoing clip's last \(missedTail) frame(s) in time; gap \(gap) ms") }
            #expect(gap <= 33.4 * Double(1 + missedTail), "boundary \(boundary), \(missedTail) tail frame(s) missed")
            start = incoming
        }
        func sourceTimes(_ clip: String) -> [Double] {
            frames.filter { $0["clip"] as? String == clip }.compactMap { $0["sourceTime"] as? Double }
        }
        for clip in ["clip-1", "clip-2"] {
            let times = sourceTimes(clip)
            #expect(times.count >= 20 && zip(times, times.dropFirst()).allSatisfy { $0 <= $1 } && times.last! > 1.5, "\(clip): \(times)")
        }
        let reversed = sourceTimes("clip-3")
        #expect(reversed.count >= 20 && zip(reversed, reversed.dropFirst()).allSatisfy { $0 >= $1 } && reversed.first! > 1.5, "clip-3: \(reversed)")
        #expect(frames.filter { $0["clip"] as? String == "clip-2" }.allSatisfy { $0["flip"] as? String == "horizontal" })
        // The output clock never stalls: consecutive output frames at most one tick apart
        // (a still or a slow clip repeats its frame, which is not reported again).
        let order = frames.map { $0["clip"] as? String ?? "" }
        #expect(order.first == "clip-1" && order.last == "clip-3")
    }

    @Test("a sequencer pulled at 30 Hz shows each frame of a 30 fps clip at its own tick, its last one included (frame numbers burned in as grey levels)")
    func sequencerFramesOnTheirTicks() async throws {
        let sequencer = try ClipSequencer(clips: [
            .video(MediaSource(Fixtures.fixture("short-a.mp4")), id: "lead-in"),
            .video(MediaSource(Fixtures.fixture("frame-numbers.mp4")), id: "numbers"),
        ], format: FrameFormat(width: 64, height: 48, pixelFormat: .bgr0), playerIDPrefix: "ticks")
        try await sequencer.start()
        // A display loop on a thread of its own, as an app's: one pull per 1/30 s tick, each
        // asking for the instant it meant (its tick), however late it woke.
        let pulls = await withCheckedContinuation { (continuation: CheckedContinuation<[(tick: Int, clip: String, grey: UInt8, isRepeat: Bool)], Never>) in
            Thread.detachNewThread {
                var pulls: [(tick: Int, clip: String, grey: UInt8, isRepeat: Bool)] = []
                let origin = ContinuousClock.now
                for tick in 0..<240 {
                    let deadline = origin + .nanoseconds(Int64(tick) * 1_000_000_000 / 30)
                    let wait = deadline - ContinuousClock.now
                    if wait > .zero {
                        Thread.sleep(forTimeInterval: Double(wait.components.seconds) + Double(wait.components.attoseconds) / 1e18)
                    }
                    if let frame = sequencer.frame(at: deadline) {
                        pulls.append((tick, frame.clipID, frame.frame.color(x: 32, y: 24)?.green ?? 0, frame.isRepeat))
                    }
                    if sequencer.isFinished { break }
                }
                continuation.resume(returning: pulls)
            }
        }
        await sequencer.shutdown()
        let numbers = pulls.filter { $0.clip == "numbers" }
        let first = try #require(numbers.first?.tick, "the numbers clip never came: \(pulls.map(\.clip))")
        // Frame N is luma 20 + 2N; mpv shows limited-range luma Y as grey (Y - 16) * 255 / 219.
        let shown = numbers.map { pull -> (offset: Int, frame: Int) in
            let luma: Double = Double(pull.grey) * 219.0 / 255.0 + 16.0
            let frame: Double = (luma - 20.0) / 2.0
            return (pull.tick - first, Int(frame.rounded()))
        }
        let report = shown.map { "\($0.offset):\($0.frame)" }.joined(separator: " ")
        // The clip starts half a tick before its turn, so each frame is ready half a tick before
        // the pull that shows it: started at the pull, every frame would come just after its
        // tick and be shown a tick late, and the last one (89) never.
        #expect(shown.contains { $0.frame == 89 }, "tick:frame \(report)")
        let onTime: Int = shown.filter { $0.offset == $0.frame }.count
        let expected: Int = min(shown.count, 90)
        #expect(onTime * 10 >= expected * 9, "tick:frame \(report)")
        #expect(zip(shown, shown.dropFirst()).allSatisfy { $0.frame <= $1.frame }, "tick:frame \(report)")
    }

    @Test("cancelling the task awaiting a load of a server that never answers ends it within 100 ms")
    func cancelledLoadIsPrompt() async throws {
        let server = LoopbackMediaServer(files: ["never.mp4": Data(repeating: 0, count: 1000)])
        server.setFault(.stall, for: "never.mp4")
        try server.start()
        defer { server.stop() }
        let (player, _) = try await Fixtures.player()
        var waits: [Duration] = []
        for _ in 0..<5 {
            let task = Task { try await player.load(MediaSource(server.url("never.mp4").absoluteString)) }
            let requests = server.counts("never.mp4").requests
            let deadline = ContinuousClock.now + .seconds(10)
            while server.counts("never.mp4").requests == requests, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(5))
            }
            let cancelled = ContinuousClock.now
            task.cancel()
            let result = await task.result
            waits.append(ContinuousClock.now - cancelled)
            #expect(throws: PlayerError.self) { try result.get() }
        }
        #expect(waits.allSatisfy { $0 < .milliseconds(100) }, "\(waits)")
        await player.shutdown()
    }
}
