import Foundation
@testable import PlayerKitCore
@testable import PlayerKitCore
import PlayerKitSupport
@testable import PlayerKitSync
@testable import PlayerKitTesting
import Testing

@Suite("SyncGroup's decisions, on fake players and a manual clock", .timeLimit(.minutes(1)))
struct SyncGroupLogicTests {
    let bus = PlayerEventBus(label: "sync-logic")
    let clock = ManualClock()

    func players(_ count: Int, media: FakePlayer.Media = .init(duration: 60)) throws -> [FakePlayer] {
        try (0..<count).map { _ in try FakePlayer(clock: clock, bus: bus, defaultMedia: media) }
    }

    /// Advances the clock `seconds` one frame (1/30 s) at a time, so the fakes report every frame.
    func play(_ seconds: Double) {
        for _ in 0..<Int(seconds * 30) { clock.advance(by: .seconds(1.0 / 30)) }
    }

    @Test("bad input is refused by name: a player twice, a source count that differs, a speed of 0, a NaN seek; the group stays usable")
    func badInput() async throws {
        let p = try players(2)
        #expect(throws: PlayerError.invalidArgument(name: "sync group", value: "\(p[0].id.rawValue), \(p[0].id.rawValue)", reason: "lists a player twice")) {
            try SyncGroup(players: [p[0], p[0]], clock: clock)
        }
        let group = try SyncGroup(players: p, clock: clock)
        await #expect(throws: PlayerError.invalidArgument(name: "sync group sources", value: "1", reason: "needs one source per member (2)")) {
            try await group.load(["a.mp4"])
        }
        await #expect(throws: PlayerError.invalidArgument(name: "speed", value: "0.0", reason: "must be between 0.25 and 4")) {
            try await group.setSpeed(0)
        }
        await #expect(throws: PlayerError.invalidArgument(name: "seek position", value: "nan", reason: "must be a finite number of seconds, 0 or more")) {
            try await group.seek(to: .nan)
        }
        // Nothing reached a member but the group's own setting (frames timed when due).
        #expect(p.allSatisfy { $0.commands == [.setPositionTiming(.whenDue)] && $0.state == .idle }, "\(p.map(\.commands))")
        try await group.load(["a.mp4", "b.mp4"])
        try await group.setSpeed(1.5)
        #expect(group.speed == 1.5 && p.allSatisfy { $0.snapshot.speed == 1.5 })
        group.invalidate()
        for player in p { await player.shutdown() }
    }

    @Test("members load at the same time: four loads of 1 s take 1 s of clock time, each paused on its first frame")
    func concurrentLoad() async throws {
        let p = try players(4, media: .init(duration: 60, loadTime: .seconds(1)))
        let group = try SyncGroup(players: p, clock: clock)
        let load = Task { try await group.load(["a", "b", "c", "d"]) }
        #expect(await eventually { p.allSatisfy { $0.state == .loading } })
        clock.advance(by: .seconds(1))
        try await load.value
        #expect(p.allSatisfy { $0.state == .ready && $0.position == 0 })
        #expect(clock.elapsed == .seconds(1))
        for player in p { await player.shutdown() }
    }

    @Test("play starts every member on the group's clock; pause and setSpeed move all of them and the clock")
    func playPauseSpeed() async throws {
        let p = try players(2)
        let group = try SyncGroup(players: p, clock: clock)
        try await group.load(["a", "b"])
        try await group.play()
        #expect(group.phase == .playing && p.allSatisfy { $0.state == .playing })
        play(2)
        #expect(abs((group.position ?? 0) - 2) < 1e-9)
        try await group.setSpeed(2)
        play(1)
        #expect(abs((group.position ?? 0) - 4) < 1e-9)
        try await group.pause()
        #expect(group.phase == .paused && p.allSatisfy(\.isPaused))
        play(1)
        #expect(abs((group.position ?? 0) - 4) < 1e-9)
        for player in p { #expect(abs((player.position ?? 0) - 4) < 1e-6) }
        #expect(group.correctiveSeeks == 0)                 // nobody drifted
        for player in p { await player.shutdown() }
    }

    @Test("each member's skew is measured on its frame changes as a multi-view's members' are (MemberSkew): in step, near zero over every frame; a member that jumps 0.15 s shows it; a seek of the group starts the figures afresh")
    func memberSkews() async throws {
        let p = try players(2)
        let group = try SyncGroup(players: p, clock: clock)
        try await group.load(["a", "b"])
        #expect(group.skews.isEmpty)
        try await group.play()
        play(2)
        for player in p {
            let skew = try #require(group.skews[player.id])
            #expect(skew.samples >= 55 && skew.p99 < 0.001 && abs(skew.current) < 0.001, "\(skew)")
        }
        try await p[1].seek(to: (p[1].position ?? 0) + 0.15, precision: .exact)      // a jump the group did not make
        play(0.1)
        let jumped = try #require(group.skews[p[1].id])
        #expect(jumped.current > 0.1 && jumped.p99 > 0.1, "\(jumped)")
        #expect(group.skews.count == 2 && group.skews["stranger"] == nil)
        try await group.seek(to: 10)
        try await group.play()
        play(0.5)
        let afresh = try #require(group.skews[p[1].id])
        #expect(afresh.samples <= 16 && afresh.p99 < 0.001, "\(afresh)")
        group.invalidate()
        for player in p { await player.shutdown() }
    }

    @Test("the group's correction is the multi-view's: a member 20 ms ahead is slowed down, not paused; one 0.15 s ahead is held on its frame until the clock reaches it (fell behind, realigned); one 3 s ahead is seeked to the clock; drift is reported")
    func driftCorrection() async throws {
        let p = try players(2)
        let group = try SyncGroup(players: p, clock: clock)
        let log = EventLog(bus: bus, players: p.map(\.id))
        try await group.load(["a", "b"])
        try await group.play()
        play(1)
        #expect(log.features(SyncEvent.self, of: p[1].id).contains { if case .aligned = $0 { true } else { false } })
        try await p[1].seek(to: (p[1].position ?? 0) + 0.02, precision: .exact)      // a jump the group did not make
        play(1)
        // Trimmed by a speed correction (no speedChanged for the app); the group's speed is 1.
        let speeds = p[1].commands.compactMap { command -> Double? in
            if case .setSpeedCorrection(let factor) = command { return factor } else { return nil }
        }
        #expect(speeds.contains { $0 < 1 && $0 >= 0.95 }, "\(speeds)")
        #expect(group.correctiveSeeks == 0)
        #expect(!log.features(SyncEvent.self, of: p[1].id).isEmpty)
        play(2)
        let before = p[1].commands.count
        try await p[1].seek(to: (p[1].position ?? 0) + 0.15, precision: .exact)
        play(1)
        let held = p[1].commands.dropFirst(before)
        #expect(held.contains(.pause) && held.contains(.play), "\(Array(held))")
        #expect(log.features(SyncEvent.self, of: p[1].id).contains(.fellBehind(.drift)))
        #expect(log.features(SyncEvent.self, of: p[1].id).contains { if case .realigned(_, .drift) = $0 { true } else { false } })
        #expect(abs(try #require(group.skews[p[1].id]).current) < 0.005)
        try await p[0].seek(to: (p[0].position ?? 0) + 3, precision: .exact)
        play(1)
        #expect(group.correctiveSeeks >= 2)
        #expect(abs((p[0].position ?? 0) - (group.position ?? 0)) < 0.05)
        for player in p { await player.shutdown() }
    }

    @Test("a member that stalls (4 s) holds the group: the other pauses, both go on together from where it is once its data flows, and it reports fellBehind(stall) then realigned(stall) within 1 s; two stalls in a row likewise")
    func stalls() async throws {
        let p = try players(2)
        let group = try SyncGroup(players: p, clock: clock)
        let log = EventLog(bus: bus, players: p.map(\.id))
        try await group.load(["a", "b"])
        try await group.play()
        play(1)
        for round in 0..<2 {
            p[1].stall(for: .seconds(4))
            #expect(await eventually { group.phase == .waitingForMember(p[1].id) }, "round \(round)")
            #expect(await eventually { p[0].state == .paused }, "round \(round)")
            play(4)
            let flowing = clock.now
            // The group seeks both to where the stalled member is and plays them (a task of the
            // group's; a fake's seek lands on the clock): the clock moves a frame at a time
            // until it has, for at most 10 s of clock time.
            var frames = 0
            while group.phase != .playing, frames < 300 {
                clock.advance(by: .seconds(1.0 / 30))
                frames += 1
                _ = await eventually(timeout: .milliseconds(20)) { group.phase == .playing }
            }
            #expect(group.phase == .playing, "round \(round): \(group.phase)")
            play(1)
            #expect(abs((p[0].position ?? 0) - (p[1].position ?? -1)) < 0.005, "round \(round)")
            let realigned = log.all.filter { record in
                guard record.playerID == p[1].id, record.time >= flowing,
                      case .realigned(_, .stall)? = record.event.feature(SyncEvent.self) else { return false }
                return true
            }
            #expect(!realigned.isEmpty, "round \(round): \(log.features(SyncEvent.self, of: p[1].id))")
        }
        #expect(log.features(SyncEvent.self, of: p[1].id).contains(.fellBehind(.stall)))
        group.invalidate()
        for player in p { await player.shutdown() }
    }

    @Test("offsets and clock drifts given with the settings are the group's from the start (offsets were ignored by seeks before): a member 2.5 s later and 100 ppm fast is seeked and played on that scale, an hour in; the settings come back from JSON, 1.1.0's form without drifts too")
    func savedOffsetsAndClockDrifts() async throws {
        let p = try players(2, media: .init(duration: 7200))
        var saved = SyncSettings.onDemand
        saved.mediaOffsets[p[1].id] = .milliseconds(2500)  // B's recording began 2.5 s earlier: 2.5 s further into its media
        saved.clockDrifts[p[1].id] = 100                   // and its recorder's clock ran 100 ppm fast
        let group = try SyncGroup(players: p, settings: saved, clock: clock)
        #expect(group.settings.mediaOffsets == [p[1].id: .milliseconds(2500)] && group.settings.clockDrifts[p[1].id].map { abs($0 - 100) < 1e-6 } == true)
        try await group.load(["a", "b"])
        try await group.seek(to: 3600)
        #expect(abs((p[0].position ?? 0) - 3600) < 1e-6)
        #expect(abs((p[1].position ?? 0) - (3600 * 1.0001 + 2.5)) < 1e-6, "\(p[1].position ?? -1)")
        try await group.play()
        #expect(abs((p[0].snapshot.speed ?? 0) - 1) < 1e-12 && abs((p[1].snapshot.speed ?? 0) - 1.0001) < 1e-12)
        play(10)
        // In step on that scale: no correction was needed.
        #expect(group.correctiveSeeks == 0)
        #expect(abs(try #require(group.skews[p[1].id]).current) < 0.001)
        #expect(abs((p[1].position ?? 0) - ((group.position ?? 0) * 1.0001 + 2.5)) < 0.002)
        try await group.setSpeed(2)
        #expect(abs((p[1].snapshot.speed ?? 0) - 2.0002) < 1e-12)
        // Saved and given back.
        let data = try JSONEncoder().encode(group.settings)
        let back = try JSONDecoder().decode(SyncSettings.self, from: data)
        #expect(back == saved)
        var older = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        older.removeValue(forKey: "clockDrifts")
        let fromOlder = try JSONDecoder().decode(SyncSettings.self, from: JSONSerialization.data(withJSONObject: older))
        #expect(fromOlder.clockDrifts.isEmpty && fromOlder.mediaOffsets == saved.mediaOffsets)
        // 1.x saved `offsets`, the group's time minus the member's media time: read negated.
        older.removeValue(forKey: "mediaOffsets")
        older["offsets"] = try JSONSerialization.jsonObject(with: JSONEncoder().encode([p[1].id: Duration.milliseconds(-2500)]))
        let from1x = try JSONDecoder().decode(SyncSettings.self, from: JSONSerialization.data(withJSONObject: older))
        #expect(from1x.mediaOffsets == [p[1].id: .milliseconds(2500)])
        group.invalidate()
        for player in p { await player.shutdown() }
    }

    @Test("a clock drift set while playing changes the member's speed at once; nil takes it off; a drift that is not finite, too large, or for a stranger is refused by name")
    func clockDriftWhilePlaying() async throws {
        let p = try players(2)
        let group = try SyncGroup(players: p, clock: clock)
        try await group.load(["a", "b"])
        try await group.play()
        play(1)
        try await group.setClockDrift(-250, for: p[1].id)
        #expect(await eventually { abs((p[1].snapshot.speed ?? 0) - 0.99975) < 1e-12 })
        #expect(group.settings.clockDrifts == [p[1].id: -250])
        try await group.setClockDrift(nil, for: p[1].id)
        #expect(await eventually { p[1].snapshot.speed == 1 })
        #expect(group.settings.clockDrifts.isEmpty)
        await refusesBadClockDrifts(group, member: p[1].id)
        var bad = SyncSettings.onDemand
        bad.clockDrifts[p[0].id] = .infinity
        #expect(throws: PlayerError.self) { try SyncGroup(players: p, settings: bad, clock: clock) }
        play(1)
        #expect(group.phase == .playing && p.allSatisfy { $0.state == .playing })
        group.invalidate()
        for player in p { await player.shutdown() }
    }

    /// The refusals of ``SyncGroup/setClockDrift(_:for:)``.
    private func refusesBadClockDrifts(_ group: SyncGroup, member: PlayerID) async {
        let reason = "must be a finite number of parts per million within ±10000 (1%)"
        await #expect(throws: PlayerError.invalidArgument(name: "sync setting clockDrifts[\(member.rawValue)]", value: "nan", reason: reason)) {
            try await group.setClockDrift(.nan, for: member)
        }
        await #expect(throws: PlayerError.invalidArgument(name: "sync setting clockDrifts[\(member.rawValue)]", value: "20000.0", reason: reason)) {
            try await group.setClockDrift(20_000, for: member)
        }
        await #expect(throws: PlayerError.invalidArgument(name: "sync group member", value: "not-a-member", reason: "is not a member of this group")) {
            try await group.setClockDrift(10, for: "not-a-member")
        }
    }

    @Test("a member that fails mid-seek is dropped and the seek goes on with the others (dropMember)")
    func memberFailsMidSeek() async throws {
        let p = try players(3)
        let group = try SyncGroup(players: p, clock: clock)
        try await group.load(["a", "b", "c"])
        p[1].replyDelay = .milliseconds(100)
        let seek = Task { try await group.seek(to: 2) }
        #expect(await eventually { p[1].commandsInFlight == 1 })           // its pause
        clock.advance(by: .milliseconds(100))
        #expect(await eventually { p[1].commandsInFlight == 1 && p[0].commands.contains(.seek(to: 2, precision: .exact)) })
        p[1].failCurrentItem(with: .playbackFailed(source: "b", MPVError(code: -13, message: "decoder gave up")))
        clock.advance(by: .milliseconds(100))
        try await seek.value
        #expect(group.members.map(\.id) == [p[0].id, p[2].id])
        #expect(p[0].position == 2 && p[2].position == 2)
        try await group.play()
        #expect(p[0].state == .playing && p[2].state == .playing)
        for player in p { await player.shutdown() }
    }

    @Test("with stopGroup, a member's failure mid-seek fails the seek and pauses the group")
    func memberFailsMidSeekStopGroup() async throws {
        let p = try players(2)
        let group = try SyncGroup(players: p, onMemberFailure: .stopGroup, clock: clock)
        try await group.load(["a", "b"])
        try await group.play()
        p[1].replyDelay = .milliseconds(100)
        let seek = Task { try await group.seek(to: 2) }
        #expect(await eventually { p[1].commandsInFlight == 1 })
        p[1].failCurrentItem(with: .playbackFailed(source: "b", MPVError(code: -13, message: "decoder gave up")))
        clock.advance(by: .milliseconds(100))
        await #expect(throws: PlayerError.noMediaLoaded(operation: "seek")) { try await seek.value }
        #expect(group.phase == .paused && p[0].isPaused)
        #expect(group.members.count == 2)
        for player in p { await player.shutdown() }
    }

    @Test("a member whose item cannot load is dropped at the load (dropMember), or fails the load naming its error and leaves the group paused (stopGroup)")
    func memberFailsAtLoad() async throws {
        let media = ["broken.mp4": FakePlayer.Media.unplayable(source: "broken.mp4")]
        let p = try (0..<3).map { _ in try FakePlayer(clock: clock, bus: bus, media: media, defaultMedia: .init(duration: 60)) }
        let dropping = try SyncGroup(players: p, onMemberFailure: .dropMember, clock: clock)
        try await dropping.load(["a.mp4", "b.mp4", "broken.mp4"])
        #expect(dropping.members.map(\.id) == [p[0].id, p[1].id])
        try await dropping.play()
        #expect(p[0].state == .playing && p[1].state == .playing && p[2].state == .failed)
        try await dropping.pause()
        dropping.invalidate()
        let stopping = try SyncGroup(players: p, onMemberFailure: .stopGroup, clock: clock)
        do {
            try await stopping.load(["a.mp4", "b.mp4", "broken.mp4"])
            Issue.record("the load succeeded with a member that cannot load")
        } catch {
            guard case .loadFailed(source: "broken.mp4", _) = error else { Issue.record("not the member's load error: \(error)"); return }
        }
        #expect(stopping.members.count == 3 && stopping.phase == .paused)
        stopping.invalidate()
        for player in p { await player.shutdown() }
    }

    @Test("every group takes any number of members (2.0's one rule): a group of one plays as its member does, a group of none does nothing and says nothing; a load that no member could do throws the first member's error, each failed member dropped")
    func anyNumberOfMembers() async throws {
        let media = ["broken.mp4": FakePlayer.Media.unplayable(source: "broken.mp4"), "worse.mp4": .unplayable(source: "worse.mp4")]
        let p = try (0..<3).map { _ in try FakePlayer(clock: clock, bus: bus, media: media, defaultMedia: .init(duration: 60)) }
        let none = try SyncGroup(players: [], clock: clock)
        try await none.load([])
        try await none.play()
        try await none.seek(to: 1)
        #expect(none.members.isEmpty && none.skews.isEmpty)
        let one = try SyncGroup(players: [p[0]], clock: clock)
        try await one.load(["a.mp4"])
        try await one.play()
        play(1)
        #expect(p[0].state == .playing && abs((p[0].position ?? 0) - 1) < 0.05)
        #expect(await eventually { one.skews[p[0].id] != nil })
        one.invalidate()
        let heard = Locked<[PlayerEventRecord]>([])
        let subscription = bus.subscribe(to: .all, kinds: [.sync], delivery: .immediate) { record in heard.withLock { $0.append(record) } }
        defer { subscription.cancel() }
        let nobody = try SyncGroup(players: [p[1], p[2]], clock: clock)
        do {
            try await nobody.load(["broken.mp4", "worse.mp4"])
            Issue.record("a load that no member could do succeeded")
        } catch {
            guard case .loadFailed(source: "broken.mp4", _) = error else { Issue.record("not the first member's error: \(error)"); return }
        }
        #expect(nobody.members.isEmpty)
        #expect(drops(of: p[1], heard).count == 1 && drops(of: p[2], heard).count == 1)
        nobody.invalidate()
        for player in p { await player.shutdown() }
    }

    @Test("a member whose item fails while the group plays is dropped and the others play on (dropMember), or the group pauses (stopGroup)")
    func memberFailsWhilePlaying() async throws {
        let p = try players(4)
        let dropping = try SyncGroup(players: [p[0], p[1]], onMemberFailure: .dropMember, clock: clock)
        let stopping = try SyncGroup(players: [p[2], p[3]], onMemberFailure: .stopGroup, clock: clock)
        try await dropping.load(["a", "b"])
        try await stopping.load(["c", "d"])
        try await dropping.play()
        try await stopping.play()
        play(1)
        let failure = PlayerError.playbackFailed(source: "fake", MPVError(code: -13, message: "decoder gave up"))
        p[1].failCurrentItem(with: failure)
        p[3].failCurrentItem(with: failure)
        #expect(await eventually { dropping.members.map(\.id) == [p[0].id] })
        #expect(await eventually { stopping.phase == .paused && p[2].isPaused })
        play(1)
        #expect(p[0].state == .playing && p[0].position.map { $0 > 1.9 } == true)
        #expect(stopping.members.count == 2)
        dropping.invalidate()
        stopping.invalidate()
        for player in p { await player.shutdown() }
    }

    /// The sync events a member heard from its group's drops.
    private func drops(of player: FakePlayer, _ heard: Locked<[PlayerEventRecord]>) -> [SyncEvent.DropReason] {
        heard.withLock { $0 }.filter { $0.playerID == player.id }.compactMap { record in
            if case .dropped(let reason)? = record.event.feature(SyncEvent.self) { return reason }
            return nil
        }
    }

    @Test("every group publishes dropped: a member dropped at its load hears dropped(failed) with its load error, one whose item fails while playing dropped(failed) with that error, one that shuts down dropped(shutDown) before its shutDown")
    func droppedIsPublished() async throws {
        let media = ["broken.mp4": FakePlayer.Media.unplayable(source: "broken.mp4")]
        let p = try (0..<4).map { _ in try FakePlayer(clock: clock, bus: bus, media: media, defaultMedia: .init(duration: 60)) }
        let heard = Locked<[PlayerEventRecord]>([])
        let subscription = bus.subscribe(to: .all, kinds: [.sync, .shutDown], delivery: .immediate) { record in
            heard.withLock { $0.append(record) }
        }
        defer { subscription.cancel() }
        let group = try SyncGroup(players: p, onMemberFailure: .dropMember, clock: clock)
        try await group.load(["a.mp4", "b.mp4", "c.mp4", "broken.mp4"])
        guard case .failed(.loadFailed(source: "broken.mp4", _))? = drops(of: p[3], heard).first else {
            Issue.record("the member that could not load heard \(drops(of: p[3], heard))"); return
        }
        try await group.play()
        play(1)
        let failure = PlayerError.playbackFailed(source: "fake", MPVError(code: -13, message: "decoder gave up"))
        p[1].failCurrentItem(with: failure)
        #expect(await eventually { group.members.map(\.id) == [p[0].id, p[2].id] })
        #expect(drops(of: p[1], heard) == [.failed(failure)])
        await p[2].shutdown()
        #expect(await eventually { group.members.map(\.id) == [p[0].id] })
        let last = heard.withLock { $0 }.filter { $0.playerID == p[2].id }.map { record -> String in
            record.event == .shutDown ? "shutDown" : (record.event.feature(SyncEvent.self) == .dropped(.shutDown) ? "dropped" : "other")
        }
        #expect(last.suffix(2) == ["dropped", "shutDown"], "\(last)")
        #expect(drops(of: p[0], heard).isEmpty)
        group.invalidate()
        for player in p { await player.shutdown() }
    }

    @Test("invalidate ends the group's per-frame observations and subscriptions; the members play on")
    func invalidate() async throws {
        let p = try players(2)
        let before = bus.subscriptionCount
        let group = try SyncGroup(players: p, clock: clock)
        #expect(p.allSatisfy { $0.frameObservationCount == 1 })
        #expect(bus.subscriptionCount == before + 2)
        try await group.load(["a", "b"])
        try await group.play()
        group.invalidate()
        #expect(p.allSatisfy { $0.frameObservationCount == 0 })
        #expect(bus.subscriptionCount == before)
        play(1)
        #expect(p.allSatisfy { $0.state == .playing })
        for player in p { await player.shutdown() }
    }
}
