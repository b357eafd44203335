import PlayerKitCore
import PlayerKitFeed
import PlayerKitSupport
import PlayerKitSync
@testable import PlayerKitTesting
import Testing

@Suite("MultiView on fake players: the core's typed API only, settings checked", .timeLimit(.minutes(1)))
struct MultiViewLogicTests {
    let bus = PlayerEventBus(label: "multiview-logic")
    let clock = ManualClock()

    func players(_ count: Int) throws -> [FakePlayer] {
        try (0..<count).map { _ in try FakePlayer(clock: clock, bus: bus, defaultMedia: .init(duration: 60)) }
    }

    @Test("a member is set up through typed commands a fake carries out as a real player does: the source's timestamps, positions when a frame is due, 0.2 s after a stall, its video on its own clock unless it is the member heard (an AudioPolicy's focus, solo or ducked)")
    func membersSetUpThroughTypedCommands() async throws {
        let p = try players(2)
        let view = try MultiView(players: p, clock: clock)
        try await view.load([MediaSource("a.mp4"), MediaSource("b.mp4")])
        for player in p {
            #expect(player.timestampOrigin == .source)
            #expect(player.positionTiming == .whenDue)
            #expect(player.bufferAfterStall == .milliseconds(200))
            #expect(player.videoClock == .independent)
            #expect(player.bufferedMediaObservationCount == 1)
        }
        // Who is heard is the app's (an AudioPolicy's) choice; the member heard alone, or above
        // every other, has its video on its audio.
        let audio = try AudioPolicy(mode: .solo, players: p)
        try await audio.focus(p[0])
        #expect(await eventually { p[0].videoClock == .audio && p[1].videoClock == .independent })
        try await audio.focus(p[1])
        #expect(await eventually { p[0].videoClock == .independent && p[1].videoClock == .audio })
        // Ducked, the focused member is still heard above the other.
        let ducking = try AudioPolicy(mode: .duck(volume: 20), players: p)
        try await audio.clearFocus()
        #expect(await eventually { p.allSatisfy { $0.videoClock == .independent } }, "both heard alike: neither follows its audio")
        try await ducking.focus(p[0])
        #expect(await eventually { p[0].videoClock == .audio && p[1].videoClock == .independent })
        // The member heard leaves the group: the one left is heard alone (ducked, but alone), and
        // its video follows its audio.
        view.remove(p[0].id)
        #expect(await eventually { p[1].videoClock == .audio })
        view.invalidate()
        #expect(p.allSatisfy { $0.bufferedMediaObservationCount == 0 && $0.frameObservationCount == 0 })
        for player in p { await player.shutdown() }
    }

    @Test("a member shut down while in the group hears dropped(shutDown) on its own ID before its shutDown; the others stay members")
    func memberShutDown() async throws {
        let p = try players(2)
        let view = try MultiView(players: p, clock: clock)
        try await view.load([MediaSource("a.mp4"), MediaSource("b.mp4")])
        let log = EventLog(bus: bus, players: [p[0].id])
        await p[0].shutdown()
        let events = log.events(of: p[0].id)
        let dropped = events.firstIndex { $0.feature(SyncEvent.self) == .dropped(.shutDown) }
        let last = events.lastIndex(of: .shutDown)
        #expect(dropped != nil, "\(events)")
        #expect(last == events.count - 1)
        if let dropped, let last { #expect(dropped < last) }
        #expect(view.members.map(\.id) == [p[1].id])
        view.invalidate()
        await p[1].shutdown()
    }

    /// Advances the clock `seconds`, one frame (1/30 s) at a time, so the fakes show every frame.
    func play(_ seconds: Double) {
        for _ in 0..<Int((seconds * 30).rounded()) { clock.advance(by: .seconds(1.0 / 30)) }
    }

    /// Three fakes loaded in a group, played 2 s, each aligned.
    func alignedGroup(duration: Double = 60) async throws -> ([FakePlayer], MultiView, EventLog) {
        let p = try (0..<3).map { _ in try FakePlayer(clock: clock, bus: bus, defaultMedia: .init(duration: duration)) }
        let log = EventLog(bus: bus, players: p.map(\.id))
        let view = try MultiView(players: p, clock: clock)
        try await view.load(p.indices.map { MediaSource("angle-\($0).mp4") })
        play(2)
        for player in p {
            #expect(log.features(SyncEvent.self, of: player.id).contains { if case .aligned = $0 { true } else { false } }, "\(player.id)")
        }
        return (p, view, log)
    }

    /// When member `id` was realigned after falling out for `reason`, by its record's time.
    func realigned(_ log: EventLog, _ id: PlayerID, _ reason: SyncEvent.Reason) -> [ContinuousClock.Instant] {
        log.all.filter { record in
            guard record.playerID == id, case .realigned(_, reason)? = record.event.feature(SyncEvent.self) else { return false }
            return true
        }.map(\.time)
    }

    @Test("a group's speed trims are speed corrections, not speed changes: a member 25 ms off is trimmed several times, its app hears no speedChanged and its speed stays 1; the group reports the correction with its drift reports, at most one per report interval (issue 66: 306 speedChanged in 40 s)")
    func trimsPublishNoSpeedChanges() async throws {
        let (p, view, log) = try await alignedGroup()
        try await p[1].seek(to: (p[1].position ?? 0) + 0.025, precision: .exact)  // a jump the group did not make
        let start = clock.now
        play(6)
        let corrections = p[1].commands.filter { if case .setSpeedCorrection = $0 { true } else { false } }
        #expect(corrections.count >= 2, "\(p[1].commands)")
        #expect(!p[1].commands.contains { if case .setSpeed = $0 { true } else { false } }, "\(p[1].commands)")
        for player in p {
            #expect(!log.events(of: player.id).contains { if case .speedChanged = $0 { true } else { false } }, "\(player.id)")
            #expect(player.snapshot.speed == 1)
        }
        let reported = log.all.filter { record in
            guard record.playerID == p[1].id, record.time >= start, case .corrected? = record.event.feature(SyncEvent.self) else { return false }
            return true
        }
        #expect(!reported.isEmpty, "the group never said it corrected the member")
        // Of the one sync kind, as every SyncEvent.
        #expect(reported.allSatisfy { $0.event.kind == .sync })
        let interval = SyncSettings().driftReportInterval
        #expect(zip(reported, reported.dropFirst()).allSatisfy { $1.time - $0.time >= interval }, "\(reported.map(\.time))")
        // Back in step, the correction is taken away again, and said so.
        #expect(p[1].commands.last { if case .setSpeedCorrection = $0 { true } else { false } } == .setSpeedCorrection(1), "\(p[1].commands.suffix(6))")
        view.invalidate()
        for player in p { await player.shutdown() }
    }

    @Test("a stall: the member falls behind (stall), the others play on in step, and it is back in step within 0.5 s of its data flowing again")
    func stall() async throws {
        let (p, view, log) = try await alignedGroup()
        p[1].stall(for: .seconds(4))
        #expect(p[1].state == .buffering)
        play(4)
        let flowing = clock.now
        play(3)
        #expect(log.features(SyncEvent.self, of: p[1].id).contains(.fellBehind(.stall)))
        let back = try #require(realigned(log, p[1].id, .stall).first)
        #expect(back - flowing <= .milliseconds(500), "back in step \(back - flowing) after its data flowed again")
        for other in [p[0], p[2]] {
            #expect(!log.features(SyncEvent.self, of: other.id).contains { if case .fellBehind = $0 { true } else { false } })
        }
        #expect(view.members.count == 3)
        view.invalidate()
        for player in p { await player.shutdown() }
    }

    @Test("two stalls in a row (4 s each, 0.5 s apart): back in step within 0.5 s of the data flowing again after the second")
    func twoStalls() async throws {
        let (p, view, log) = try await alignedGroup()
        p[2].stall(for: .seconds(4))
        play(4.5)
        p[2].stall(for: .seconds(4))
        play(4)
        let flowing = clock.now
        play(3)
        let origin = flowing - .seconds(8.5)
        let trace = log.all.filter { $0.playerID == p[2].id && $0.event.kind != .positionChanged }
            .map { "\(String(format: "%.2f", ($0.time - origin).inSeconds)) \($0.event)" }
        let back = try #require(realigned(log, p[2].id, .stall).last, "\(trace.joined(separator: "\n"))\n\(p[2].commands)")
        #expect(back > flowing && back - flowing <= .milliseconds(500), "back in step \(back - flowing) after its data flowed again")
        view.invalidate()
        for player in p { await player.shutdown() }
    }

    @Test("two stalls in a row on a live angle whose seekable end lags its cache by a segment, the second while the group held it: it is back in step within 1 s of its data flowing again, its seeks all within what it could seek (a fake refuses a seek past it, as mpv does)")
    func twoStallsOnALiveAngle() async throws {
        let (p, view, log) = try await alignedGroup()
        let live = p[2]
        func clockPosition() -> Double { view.position ?? 0 }
        /// Plays `seconds` in quarters, reporting the live angle's buffer at each (as mpv does
        /// while its demuxer reads): `report` gives it from the group's position.
        func play(_ seconds: Double, report: () -> BufferedMedia) {
            for _ in 0..<Int((seconds * 4).rounded()) {
                live.setBufferedMedia(report())
                self.play(0.25)
            }
        }
        play(1) { BufferedMedia(cachedUntil: clockPosition() + 3, seekableUntil: clockPosition() + 2) }
        // First stall: its cache runs dry where it is.
        let dry = live.position ?? 0
        live.setBufferedMedia(BufferedMedia(cachedUntil: dry, seekableUntil: dry - 1))
        live.stall(for: .seconds(2))
        self.play(2)
        // The first late segment, long, reaches past the group: it is seeked there and held.
        let first = clockPosition()
        live.setBufferedMedia(BufferedMedia(cachedUntil: first + 1.2, seekableUntil: first + 0.8))
        self.play(1.0 / 30)
        #expect(live.state == .paused, "held after its first stall: \(live.state)")
        // Held at the end of what it has, its demuxer runs dry: mpv buffers it, paused.
        let held = live.position ?? 0
        live.stall(for: .seconds(4))
        self.play(4)
        // The second late segment: its data flows, but what it can seek ends short of the group.
        live.setBufferedMedia(BufferedMedia(cachedUntil: held + 2, seekableUntil: held + 1.5))
        let flowing = clock.now
        self.play(0.25)
        play(3) { BufferedMedia(cachedUntil: clockPosition() + 3, seekableUntil: clockPosition() + 2) }
        let trace = log.all.filter { $0.playerID == live.id && $0.event.kind != .positionChanged }
            .map { "\(String(format: "%.2f", ($0.time - flowing).inSeconds)) \($0.event)" }
        let back = realigned(log, live.id, .stall).last
        #expect(back.map { $0 > flowing && $0 - flowing <= .seconds(1) } == true,
                "back in step \(String(describing: back.map { $0 - flowing })) after its data flowed again:\n\(trace.joined(separator: "\n"))")
        let skew = view.skews[live.id]
        #expect(skew.map { abs($0.current) < 0.01 } == true, "\(String(describing: skew))")
        view.invalidate()
        for player in p { await player.shutdown() }
    }

    @Test("a missing segment: the member jumps ahead, falls out (missing segment), and is held until the group gets there")
    func missingSegment() async throws {
        let (p, view, log) = try await alignedGroup()
        let jumped = clock.now
        p[0].skipMedia(by: 2)
        play(4)
        #expect(log.features(SyncEvent.self, of: p[0].id).contains(.fellBehind(.missingSegment)))
        let back = try #require(realigned(log, p[0].id, .missingSegment).first)
        #expect(back - jumped <= .seconds(3), "back in step \(back - jumped) after the jump")
        view.invalidate()
        for player in p { await player.shutdown() }
    }

    @Test("a member whose source ends is dropped (ended); the others play on in step")
    func memberEnds() async throws {
        let (p, view, log) = try await alignedGroup()
        let short = try FakePlayer(clock: clock, bus: bus, defaultMedia: .init(duration: 1))
        let shortLog = EventLog(bus: bus, players: [short.id])
        try await view.load(MediaSource("short.mp4"), on: short)
        play(2)
        #expect(shortLog.features(SyncEvent.self).contains(.dropped(.ended)))
        #expect(view.members.map(\.id) == p.map(\.id))
        for player in p {
            #expect(!log.features(SyncEvent.self, of: player.id).contains { if case .fellBehind = $0 { true } else { false } })
        }
        view.invalidate()
        for player in p + [short] { await player.shutdown() }
    }

    /// The members' positions against the group's clock now (positive: ahead), in seconds.
    func offsets(_ p: [FakePlayer], _ view: MultiView) -> [Double] {
        p.compactMap { player in player.position.flatMap { position in view.position.map { position - $0 } } }
    }

    /// Whether `player` was told to seek since its command number `since`.
    func seeked(_ player: FakePlayer, since: Int = 0) -> Bool {
        player.commands.dropFirst(since).contains { if case .seek = $0 { true } else { false } }
    }

    @Test("members loaded together start together: each waits paused on its first frame until the slowest load (0.1 s against 0.4 s) has ended, then all play at once, in step from their first frames, with no seek")
    func loadedTogetherStartTogether() async throws {
        let p = try [0.1, 0.4].map { seconds in
            try FakePlayer(clock: clock, bus: bus, defaultMedia: .init(duration: 60, loadTime: .seconds(seconds)))
        }
        let log = EventLog(bus: bus, players: p.map(\.id))
        let view = try MultiView(players: p, clock: clock)
        let start = clock.now
        let load = Task { try await view.load([MediaSource("a.mp4"), MediaSource("b.mp4")]) }
        #expect(await clock.waitForSleepers(2))
        play(0.2)
        #expect(p[0].position == 0, "the faster member started alone: at \(p[0].position ?? -1) s")
        // To the slower load's end (0.4 s) exactly, and no further while the group starts them:
        // the clock stands still meanwhile, however long the machine takes (moved on while they
        // started, a slow machine's members started a frame apart).
        clock.advance(by: start + .milliseconds(400) - clock.now)
        try await load.value
        #expect(p.allSatisfy { $0.state == .playing }, "\(p.map(\.state))")
        #expect(p[0].position == p[1].position, "\(p.map(\.position))")
        play(2)
        #expect(offsets(p, view).allSatisfy { abs($0) < 0.001 }, "\(offsets(p, view))")
        for player in p {
            #expect(!seeked(player))
            #expect(!log.features(SyncEvent.self, of: player.id).contains { if case .fellBehind = $0 { true } else { false } })
        }
        view.invalidate()
        for player in p { await player.shutdown() }
    }

    @Test("a group that loads new sources starts them together from their start: the clock of the old ones is forgotten, and nobody is seeked to where it was")
    func newSourcesStartFromTheirStart() async throws {
        let (p, view, log) = try await alignedGroup()
        let before = p.map(\.commands.count)
        try await view.load(p.indices.map { MediaSource("next-\($0).mp4") })
        play(1)
        let position = try #require(view.position)
        #expect(abs(position - 1) < 0.05, "the clock is at \(position) s, 1 s into the new sources")
        #expect(offsets(p, view).allSatisfy { abs($0) < 0.001 }, "\(offsets(p, view))")
        for (player, count) in zip(p, before) {
            #expect(!seeked(player, since: count), "\(player.commands.dropFirst(count))")
            #expect(!log.features(SyncEvent.self, of: player.id).contains { if case .fellBehind = $0 { true } else { false } })
        }
        view.invalidate()
        for player in p { await player.shutdown() }
    }

    @Test("pause and resume are awaited, as every group call (2.0): a pause returns once every member answered, one answering 100 ms late holding it until then; a member that refuses its pause fails the call with its error while the others pause")
    func pauseAndResumeAreAwaited() async throws {
        let (p, view, _) = try await alignedGroup()
        p[1].replyDelay = .milliseconds(100)
        let pause = Task { try await view.pause() }
        #expect(await eventually { p[1].commandsInFlight == 1 })
        #expect(p[1].state == .playing)             // not answered yet, so the call has not returned
        clock.advance(by: .milliseconds(100))
        try await pause.value
        #expect(p.allSatisfy { $0.state == .paused }, "\(p.map(\.state))")
        p[1].replyDelay = .zero
        try await view.resume()
        play(0.5)                                   // each released as the clock reaches its frame
        #expect(p.allSatisfy { $0.state == .playing }, "\(p.map(\.state))")
        let refusal = PlayerError.commandFailed(command: ["set", "pause", "yes"], MPVError(code: -12, message: "refused by the test"))
        p[2].refuseCommands { $0 == .pause ? refusal : nil }
        await #expect(throws: refusal) { try await view.pause() }
        #expect(p[0].state == .paused && p[1].state == .paused && p[2].state == .playing)
        view.invalidate()
        for player in p { await player.shutdown() }
    }

    @Test("pause stops the group's clock and every member where it is; resume (where paused) plays them on together from there, with nobody falling out of step")
    func pauseAndResumeWherePaused() async throws {
        let (p, view, log) = try await alignedGroup()
        try await view.pause()
        #expect(view.isPaused)
        play(0.1)
        #expect(p.allSatisfy { $0.state == .paused }, "\(p.map(\.state))")
        let stopped = try #require(view.position)
        let positions = p.map(\.position)
        play(5)
        #expect(view.position == stopped, "the clock moved while paused")
        #expect(p.map(\.position) == positions, "a member moved while paused")
        #expect(p.allSatisfy { !$0.commands.contains { if case .seek = $0 { true } else { false } } })
        try await view.resume()
        #expect(!view.isPaused)
        play(3)
        #expect(p.allSatisfy { $0.state == .playing })
        let position = try #require(view.position)
        #expect(abs(position - (stopped + 3)) < 0.1, "the clock resumed at \(position), paused at \(stopped)")
        #expect(offsets(p, view).allSatisfy { abs($0) < 0.05 }, "\(offsets(p, view))")
        for player in p {
            #expect(!log.features(SyncEvent.self, of: player.id).contains { if case .fellBehind = $0 { true } else { false } })
            #expect(!player.commands.contains { if case .seek = $0 { true } else { false } }, "resuming where paused seeks nobody")
        }
        view.invalidate()
        for player in p { await player.shutdown() }
    }

    @Test("resume at the live edge: after 5 s paused the clock is where it would have been, and every member is seeked there, held, and plays in step")
    func pauseAndResumeAtLiveEdge() async throws {
        let (p, view, _) = try await alignedGroup()
        try await view.pause()
        play(0.1)
        let stopped = try #require(view.position)
        play(5)
        try await view.resume(from: .liveEdge)
        let resumed = try #require(view.position)
        // Paused 5.1 s (a tenth before the position was read).
        #expect(abs(resumed - (stopped + 5.1)) < 0.05, "resumed at \(resumed), paused at \(stopped)")
        play(3)
        #expect(p.allSatisfy { $0.state == .playing })
        #expect(offsets(p, view).allSatisfy { abs($0) < 0.05 }, "\(offsets(p, view))")
        #expect(p.allSatisfy { player in player.commands.contains { if case .seek = $0 { true } else { false } } })
        view.invalidate()
        for player in p { await player.shutdown() }
    }

    @Test("a member that joins while the group is paused is paused at its first frame, and plays in step after the resume")
    func joinWhilePaused() async throws {
        let (p, view, _) = try await alignedGroup()
        try await view.pause()
        let late = try FakePlayer(clock: clock, bus: bus, defaultMedia: .init(duration: 60))
        try await view.load(MediaSource("late.mp4"), on: late)
        play(1)
        #expect(late.state == .paused)
        try await view.resume()
        play(4)
        #expect(offsets(p + [late], view).allSatisfy { abs($0) < 0.05 }, "\(offsets(p + [late], view))")
        view.invalidate()
        for player in p + [late] { await player.shutdown() }
    }

    @Test("a member stalled when the group pauses is brought back in step after the resume; pause and resume twice do nothing more")
    func stalledWhenPaused() async throws {
        let (p, view, log) = try await alignedGroup()
        p[1].stall(for: .seconds(2))
        play(0.5)
        try await view.pause()
        try await view.pause()
        play(3)
        try await view.resume()
        try await view.resume()
        play(4)
        #expect(p.allSatisfy { $0.state == .playing }, "\(p.map(\.state))")
        #expect(offsets(p, view).allSatisfy { abs($0) < 0.05 }, "\(offsets(p, view))")
        #expect(log.features(SyncEvent.self, of: p[1].id).contains { if case .realigned = $0 { true } else { false } })
        view.invalidate()
        for player in p { await player.shutdown() }
    }

    /// A live angle on a fake: no end, its source's timestamps starting at `start` (where the
    /// stream was when the player joined it).
    func liveAngle(start: Double) throws -> FakePlayer {
        var media = FakePlayer.Media(duration: .infinity)
        media.sourceStart = start
        return try FakePlayer(clock: clock, bus: bus, defaultMedia: media)
    }

    func aligned(_ log: EventLog, _ id: PlayerID) -> ContinuousClock.Instant? {
        log.all.first { record in
            guard record.playerID == id, case .aligned? = record.event.feature(SyncEvent.self) else { return false }
            return true
        }?.time
    }

    func seeks(_ player: FakePlayer) -> Int {
        player.commands.filter { if case .seek = $0 { true } else { false } }.count
    }

    @Test("live angles joined 0, 0.7, 1.5 and 3 s apart, each its own way behind the edge (3, 2.6, 3.4 and 2.2 s), in the source's timestamps: each is aligned within 2 s of the last join, and they play in step where the nearest to the edge is")
    func joinsApart() async throws {
        let edge = 1_000.0
        let joins = [0, 0.7, 1.5, 3.0], latencies = [3.0, 2.6, 3.4, 2.2]
        let p = try joins.indices.map { try liveAngle(start: edge + joins[$0] - latencies[$0]) }
        let log = EventLog(bus: bus, players: p.map(\.id))
        let view = try MultiView(players: [], clock: clock)
        var elapsed = 0.0
        for (index, join) in joins.enumerated() {
            play(join - elapsed)
            elapsed = join
            try await view.load(MediaSource("angle-\(index).m3u8"), on: p[index])
        }
        let lastJoin = clock.now
        play(4)
        for player in p {
            let at = try #require(aligned(log, player.id), "\(player.id) never aligned")
            #expect(at - lastJoin <= .seconds(2), "\(player.id) aligned \(at - lastJoin) after the last join")
        }
        #expect(offsets(p, view).allSatisfy { abs($0) < 0.05 }, "\(offsets(p, view))")
        // Furthest ahead leads: the group is 2.2 s behind the edge, where the last angle joined.
        let position = try #require(view.position)
        #expect(abs(position - (edge + 7 - 2.2)) < 0.1, "the group is at \(position), the edge at \(edge + 7)")
        #expect(seeks(p[3]) == 0, "the leader is not seeked")
        view.invalidate()
        for player in p { await player.shutdown() }
    }

    @Test("the 33-bit wrap on fakes: an fMP4 angle (95,442 s and on), an MPEG-TS angle joined before its clock wrapped (a wrap below: -1.7 s and on) and one joined 2 s later, after it (0.28 s and on): aligned without a seek, in step, none dropped")
    func timestampWrap() async throws {
        let wrap = Double(1 << 33) / 90_000
        let fmp4 = try liveAngle(start: 95_442)
        let tsBefore = try liveAngle(start: 95_442 - wrap)
        let tsAfter = try liveAngle(start: 95_444 - wrap)
        let p = [fmp4, tsBefore, tsAfter]
        let log = EventLog(bus: bus, players: p.map(\.id))
        let view = try MultiView(players: [fmp4, tsBefore], clock: clock)
        try await view.load([MediaSource("fmp4.m3u8"), MediaSource("ts.m3u8")])
        play(2)
        try await view.load(MediaSource("ts-late.m3u8"), on: tsAfter)
        #expect(tsAfter.position.map { $0 > 0 && $0 < 1 } == true, "joined after the wrap: \(String(describing: tsAfter.position))")
        play(4)
        #expect(view.members.count == 3)
        for player in p {
            #expect(aligned(log, player.id) != nil, "\(player.id) never aligned")
            #expect(!log.features(SyncEvent.self, of: player.id).contains { if case .dropped = $0 { true } else { false } })
            #expect(seeks(player) == 0, "\(player.id) seeked")
            let skew = try #require(view.skews[player.id])
            #expect(abs(skew.current) < 0.005 && skew.p99 < 0.005, "\(player.id): \(skew)")
        }
        view.invalidate()
        for player in p { await player.shutdown() }
    }

    @Test("a leader whose timestamps are unrelated to the group's is dropped, and the member it held plays again, in step with the group (the drop's plays for the other members were lost: the held member stayed paused)")
    func unrelatedLeaderReleasesTheHeld() async throws {
        // a and c share a clock; b's timestamps are 3 s later for the same moment, so it joins
        // furthest ahead and leads. d, an on-demand file all in memory, joins just before the
        // group can judge b's timestamps (3 s of live edges): it is seeked to where b is and
        // held there when b is dropped.
        let a = try liveAngle(start: 10), c = try liveAngle(start: 10), b = try liveAngle(start: 13)
        var file = FakePlayer.Media(duration: 60)
        file.sourceStart = 10
        let d = try FakePlayer(clock: clock, bus: bus, defaultMedia: file)
        let p = [a, c, b, d]
        let log = EventLog(bus: bus, players: p.map(\.id))
        let view = try MultiView(players: [a, c, b], clock: clock)
        try await view.load([a, c, b].indices.map { MediaSource("angle-\($0).m3u8") })
        // Each live player holds its source up to 5 s past where it started, growing with time
        // in 1 s segments, each seen at a moment of its own: c, brought to where b (3 s ahead by
        // its timestamps) was, can seek there (a fake refuses a seek past its seekable end, as
        // mpv does).
        let live: [(FakePlayer, Double, Double)] = [(a, 10, 0.1), (c, 10, 0.9), (b, 13, 0.4)]
        for step in 0..<20 {
            let elapsed = Double(step) * 0.5
            if step == 10 {  // the group judges b at the next live edges
                d.setBufferedMedia(BufferedMedia(cachedUntil: 70, seekableUntil: 70))
                try await view.load(MediaSource("file.mp4"), on: d)
                play(0.1)
            }
            for (player, start, phase) in live {
                let edge = start + 5 + (elapsed + phase).rounded(.down)
                player.setBufferedMedia(BufferedMedia(cachedUntil: edge, seekableUntil: edge))
            }
            play(0.5)
        }
        let dropped = log.features(SyncEvent.self, of: b.id).compactMap { event -> Duration? in
            if case .dropped(.unrelatedTimestamps(let offset)) = event { return offset }
            return nil
        }
        #expect(dropped.count == 1 && abs((dropped.first?.inSeconds ?? 0) - 3) < 1, "b's drops: \(dropped)")
        #expect(view.members.map(\.id) == [a.id, c.id, d.id])
        for step in 20..<30 {
            let elapsed = Double(step) * 0.5
            for (player, start, phase) in live where player !== b {
                let edge = start + 5 + (elapsed + phase).rounded(.down)
                player.setBufferedMedia(BufferedMedia(cachedUntil: edge, seekableUntil: edge))
            }
            play(0.5)
        }
        // Every member plays; c and d, brought to where b was, are in step with the group.
        for player in [a, c, d] {
            #expect(player.state == .playing, "\(player.id) is \(player.state)")
        }
        for player in [c, d] {
            let skew = view.skews[player.id]
            #expect(skew.map { abs($0.current) < 0.01 } == true, "\(player.id): \(String(describing: skew))")
        }
        view.invalidate()
        for player in p { await player.shutdown() }
    }

    /// A setting that makes no sense, by name and case.
    static let badSettings = [
        "maximumSpeedTrim nan", "maximumSpeedTrim negative", "maximumSpeedTrim infinite", "realignThreshold zero",
        "holdThreshold negative", "alignedTolerance negative", "skewWindow zero", "unrelatedTimestampThreshold negative",
    ]

    @Test("settings that make no sense are refused by name (a NaN trim played a follower at 0.25x), and nothing is left subscribed",
          arguments: badSettings)
    func settingsChecked(bad: String) async throws {
        let setting = String(bad.split(separator: " ")[0])
        let p = try players(2)
        var settings = SyncSettings()
        switch bad {
        case "maximumSpeedTrim nan": settings.maximumSpeedTrim = .nan
        case "maximumSpeedTrim negative": settings.maximumSpeedTrim = -0.05
        case "maximumSpeedTrim infinite": settings.maximumSpeedTrim = .infinity
        case "realignThreshold zero": settings.realignThreshold = .zero
        case "holdThreshold negative": settings.holdThreshold = .milliseconds(-1)
        case "alignedTolerance negative": settings.alignedTolerance = .milliseconds(-5)
        case "skewWindow zero": settings.skewWindow = .zero
        default: settings.unrelatedTimestampThreshold = .seconds(-1)
        }
        do {
            _ = try MultiView(players: p, settings: settings, clock: clock)
            Issue.record("\(setting): accepted")
        } catch {
            guard case .invalidArgument(let name, _, _) = error else {
                Issue.record("\(setting): \(error)")
                return
            }
            #expect(name == "sync setting \(setting)")
        }
        #expect(p.allSatisfy { $0.frameObservationCount == 0 && $0.bufferedMediaObservationCount == 0 && $0.commands.isEmpty })
        for player in p { await player.shutdown() }
    }
}
