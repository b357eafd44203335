import PlayerKitCore
@testable import PlayerKitResources
import PlayerKitSupport
@testable import PlayerKitTesting
import Testing

@Suite("ClipLoop's decisions, on fake players and a manual clock", .timeLimit(.minutes(1)))
struct ClipLoopLogicTests {
    let bus = PlayerEventBus(label: "clip-loop-logic")
    let clock = ManualClock()

    @Test("clips are probed (an unplayable one is reported and left out), then each clip change, wrap and seam is reported as the timeline plays")
    func loopEvents() async throws {
        let clips: [String: FakePlayer.Media] = ["a.mp4": .init(duration: 2), "b.mp4": .init(duration: 3), "bad.mp4": .unplayable(source: "bad.mp4")]
        // The loop plays one joined timeline: any source is 30 min long.
        let player = try FakePlayer(clock: clock, bus: bus, defaultMedia: .init(duration: 1800))
        let log = EventLog(bus: bus, players: [player.id])
        let probers = Locked<[FakePlayer]>([])
        let loop = try ClipLoop(player: player, clips: ["a.mp4", "bad.mp4", "b.mp4"]) { () throws(PlayerError) in
            let prober = try FakePlayer(clock: self.clock, bus: PlayerEventBus(label: "probe"), media: clips, defaultMedia: nil)
            probers.withLock { $0.append(prober) }
            return prober
        }
        try await loop.start()
        #expect(loop.playableClips == [0, 2])
        #expect(probers.withLock { $0.count == 1 && $0[0].isShutDown })
        #expect(player.frameObservationCount == 1)
        for _ in 0..<(6 * 30) { clock.advance(by: .seconds(1.0 / 30)) }       // 6 s, frame by frame
        let events = log.features(ClipEvent.self)
        let changes = events.compactMap { event -> Int? in
            if case .clipChanged(let index, _) = event { return index } else { return nil }
        }
        #expect(changes == [0, 2, 0])
        #expect(events.contains { if case .loopWrapped(count: 1, _) = $0 { true } else { false } })
        #expect(events.contains { if case .clipUnplayable(index: 1, _) = $0 { true } else { false } })
        #expect(loop.wrapCount == 1)
        // A fake plays without a hitch: every seam measured, none with a gap.
        #expect(loop.seams.count == 2)
        #expect(loop.seams.allSatisfy { abs($0.gap) < 0.001 })
        loop.stop()
        #expect(player.frameObservationCount == 0)
        #expect(player.state == .idle)
        #expect(player.snapshot.loopMode == .off)
        await player.shutdown()
    }

    @Test("no clips, or no playable clip: refused naming the clips, the player untouched; a stop during the probe keeps the start from loading")
    func nothingPlayable() async throws {
        let player = try FakePlayer(clock: clock, bus: bus)
        #expect(throws: PlayerError.invalidArgument(name: "clip list", value: "[]", reason: "needs at least one clip")) {
            try ClipLoop(player: player, clips: [])
        }
        let loop = try ClipLoop(player: player, clips: ["x", "y"]) { () throws(PlayerError) in
            try FakePlayer(clock: self.clock, bus: PlayerEventBus(label: "probe"), defaultMedia: nil)
        }
        await #expect(throws: PlayerError.invalidArgument(name: "clip list", value: "x, y", reason: "none of the clips can be played")) {
            try await loop.start()
        }
        #expect(player.commands.isEmpty && player.state == .idle)
        // A probe that takes clock time, stopped halfway.
        let prober = Locked<FakePlayer?>(nil)
        let slow = try ClipLoop(player: player, clips: ["x"]) { () throws(PlayerError) in
            let made = try FakePlayer(clock: self.clock, bus: PlayerEventBus(label: "probe"), defaultMedia: .init(duration: 2, loadTime: .seconds(1)))
            prober.withLock { $0 = made }
            return made
        }
        let start = Task { try await slow.start() }
        #expect(await eventually { prober.withLock { $0?.state } == .loading })
        slow.stop()
        clock.advance(by: .seconds(1))
        try await start.value
        #expect(player.state == .idle && player.commands.isEmpty)
        await player.shutdown()
    }

    @Test("stop while the loop plays: the player is stopped and unlooped, no clip event follows, and the player stays usable")
    func stopWhilePlaying() async throws {
        let player = try FakePlayer(clock: clock, bus: bus, defaultMedia: .init(duration: 2))
        let log = EventLog(bus: bus, players: [player.id])
        let loop = try ClipLoop(player: player, clips: ["x", "y"]) { () throws(PlayerError) in
            try FakePlayer(clock: self.clock, bus: PlayerEventBus(label: "probe"), defaultMedia: .init(duration: 2))
        }
        try await loop.start()
        for _ in 0..<30 { clock.advance(by: .seconds(1.0 / 30)) }    // a second into the first clip
        #expect(loop.currentClip == 0)
        loop.stop()
        #expect(player.state == .idle && player.commands.suffix(2) == [.stop, .setLoop(.off)])
        let clipEvents = log.features(ClipEvent.self).count
        for _ in 0..<90 { clock.advance(by: .seconds(1.0 / 30)) }
        #expect(log.features(ClipEvent.self).count == clipEvents)
        _ = try await player.load("z.mp4")
        #expect(player.state == .playing)
        await player.shutdown()
    }
}

