import Foundation
import PlayerKit
import PlayerKitHLS
import PlayerKitSupport
@testable import PlayerKitSync
import Testing

/// Multi-view behaviours judged by their events, not by timing: they run in the parallel pass
/// (MultiViewTests, which measure spreads, run one at a time).
@Suite("Multi-view events: drops, unrelated timestamps, the 33-bit wrap, the live edge (real libmpv, a loopback origin)", .timeLimit(.minutes(3)), .tags(.livePass))
struct MultiViewEventTests {
    private static func event(_ record: PlayerEventRecord) -> SyncEvent? { MultiViewTests.event(record) }
    private static func players(_ count: Int) async throws -> [(player: Player, recorder: EventRecorder)] {
        try await MultiViewTests.players(count)
    }
    private static let originArguments = MultiViewTests.originArguments

    @Test("an angle that ends, and one that goes away (404), are dropped with a typed reason; the audio focus moves on; the others play on")
    func endedAndGoneAnglesAreDropped() async throws {
        let origin = try await LiveOrigin.start(Self.originArguments)
        defer { origin.stop() }
        // Players with a sound output (mpv's null one, chosen by the app): a player with none
        // is heard by nobody, and its video keeps its own clock whatever the group asks.
        var configuration = Fixtures.headless
        configuration.extraOptions["ao"] = "null"
        // A live angle that goes away is reconnected for up to networkTimeout (issue 66): 3 s
        // here, so the angle answered 404 fails (networkFailed) within seconds.
        configuration.networkTimeout = .seconds(3)
        var made: [(player: Player, recorder: EventRecorder)] = []
        for index in 0..<3 { made.append(try await Fixtures.player(id: Fixtures.uniqueID("angle\(index)"), configuration: configuration)) }
        let players = made
        defer { for (player, _) in players { Task { await player.shutdown() } } }
        let view = try MultiView(players: players.map(\.player))
        defer { view.invalidate() }
        try await view.load(players.indices.map { MediaSource(origin.angles[$0]) })
        for (player, recorder) in players {
            #expect(await recorder.waitFor(timeout: .seconds(30)) { if case .aligned = Self.event($0) { true } else { false } } != nil, "\(player.id)")
        }
        // Before any focus, every member's video runs on its own clock (mpv's video-sync), so a
        // speed trim does not pull it after its audio.
        for (player, _) in players { #expect(try await player.property("video-sync") == .string("desync"), "\(player.id)") }
        // One angle heard (the app's AudioPolicy): its video follows its audio again; the muted
        // ones' stay on their own.
        let audio = try AudioPolicy(mode: .solo, players: players.map(\.player))
        try await audio.focus(players[0].player)
        #expect(players[0].player.snapshot.isMuted == false)
        #expect(players[1].player.snapshot.isMuted == true)
        #expect(await eventually { (try? await players[0].player.property("video-sync")) == .string("audio") })
        #expect(try await players[1].player.property("video-sync") == .string("desync"))
        // Angle 0 (heard) ends: dropped as ended.
        try await origin.control("end", angle: 0)
        let ended = await players[0].recorder.waitFor(timeout: .seconds(30)) { if case .dropped = Self.event($0) { true } else { false } }
        #expect(ended.flatMap(Self.event) == .dropped(.ended))
        // The app gives the focus to another angle: its video now follows its audio.
        try await audio.focus(players[1].player)
        #expect(await eventually { players[1].player.snapshot.isMuted == false })
        #expect(await eventually { (try? await players[1].player.property("video-sync")) == .string("audio") })
        // Angle 2 goes away: every request answered 404.
        try await origin.control("gone", angle: 2)
        let gone = await players[2].recorder.waitFor(timeout: .seconds(60)) { if case .dropped = Self.event($0) { true } else { false } }
        let reason = gone.flatMap(Self.event)
        #expect({ if case .dropped(.failed(.networkFailed(_, .httpStatus(404, _), _))) = reason { true } else { false } }(), "\(String(describing: reason))")
        // The last member plays on.
        #expect(view.members.map(\.id) == [players[1].player.id])
        // The group trimmed its members' speeds all along with speed corrections: no app heard a
        // speed change (issue 66: 306 speedChanged in 40 s for four angles).
        for (player, recorder) in players {
            #expect(!recorder.events.contains { if case .speedChanged = $0 { true } else { false } }, "\(player.id)")
        }
        let before = players[1].player.position ?? 0
        #expect(await eventually(timeout: .seconds(5)) { (players[1].player.position ?? 0) > before + 0.5 })
    }

    @Test("an angle whose timestamps run 5 s ahead of the others', given no offset, is dropped with unrelatedTimestamps (about +5 s) rather than aligned 5 s off; the other plays on")
    func unrelatedTimestampsAreDropped() async throws {
        let origin = try await LiveOrigin.start(["--angles", "2", "--size", "160x90", "--fps", "30", "--seconds", "40", "--segment", "1",
                                                 "--pts-offsets", "0,5"])
        defer { origin.stop() }
        let players = try await Self.players(2)
        defer { for (player, _) in players { Task { await player.shutdown() } } }
        let view = try MultiView(players: players.map(\.player))
        defer { view.invalidate() }
        try await view.load(origin.angles.map { MediaSource($0) })
        let dropped = await players[1].recorder.waitFor(timeout: .seconds(30)) { if case .dropped = Self.event($0) { true } else { false } }
        guard case .dropped(.unrelatedTimestamps(let offset)) = dropped.flatMap(Self.event) else {
            Issue.record("expected dropped(unrelatedTimestamps), got \(String(describing: dropped.flatMap(Self.event)))")
            return
        }
        #expect(abs(offset.inSeconds - 5) < 1.2, "\(offset)")
        #expect(view.members.map(\.id) == [players[0].player.id])
        #expect(!players[0].recorder.records.contains { if case .dropped = Self.event($0) { true } else { false } })
        let before = players[0].player.position ?? 0
        #expect(await eventually(timeout: .seconds(5)) { (players[0].player.position ?? 0) > before + 0.5 })
    }

    /// One encoder 5.3 s before its 33-bit MPEG-TS clock wraps (26.5 hours after its start),
    /// packaged twice: as fMP4 (64-bit timestamps, which go on past the wrap) and as MPEG-TS (its
    /// muxer starts 1.4 s later, so the fMP4 angle's offset is 1.4 s larger: one clock).
    static let wrapArguments = ["--angles", "2", "--size", "160x90", "--fps", "30", "--seconds", "40", "--segment", "1",
                                "--formats", "fmp4,ts", "--pts-offsets", "95438.4,95437"]

    @Test("the 33-bit MPEG-TS clock wraps: an fMP4 angle (95442 s and on), a TS angle joined before the wrap (FFmpeg makes its times negative, -1.4 s and on) and one joined after it (4 s and on) are aligned, and show the same frame within a frame")
    func timestampWrap() async throws {
        let origin = try await LiveOrigin.start(Self.wrapArguments)
        defer { origin.stop() }
        let started = ContinuousClock.now
        let players = try await Self.players(3)
        defer { for (player, _) in players { Task { await player.shutdown() } } }
        let log = FrameLog()
        defer { log.stop() }
        for (player, _) in players { log.follow(player) }
        let view = try MultiView(players: [])
        defer { view.invalidate() }
        let (fmp4, early, late) = (players[0].player, players[1].player, players[2].player)
        try await view.load(MediaSource(origin.angles[0]), on: fmp4)
        try await view.load(MediaSource(origin.angles[1]), on: early)
        // After the wrap in the TS angle's window: its player starts about three segments
        // behind the newest, past 95443.7 s.
        try await Task.sleep(until: started + .seconds(6))
        try await view.load(MediaSource(origin.angles[1]), on: late)
        // What each member went through, for a failure's message.
        let history: @Sendable () -> String = {
            players.map { player, recorder in
                "\(player.id): " + recorder.records.compactMap { record in
                    Self.event(record).map { String(format: "%.2f ", (record.time - started).inSeconds) + "\($0)" }
                }.joined(separator: ", ")
            }.joined(separator: "; ")
        }
        for (player, recorder) in players {
            #expect(await recorder.waitFor(timeout: .seconds(20)) { if case .aligned = Self.event($0) { true } else { false } } != nil,
                    "\(player.id): \(history())")
        }
        // The premise: the angles' own timestamps are a wrap apart.
        let wrap = Double(1 << 33) / 90_000
        let fmp4Position = try #require(fmp4.position)
        let latePosition = try #require(late.position)
        #expect(fmp4Position > 95_443.8, "\(fmp4Position)")
        #expect(latePosition > 0 && latePosition < 60, "\(latePosition)")
        // Measured apart from the group, the fMP4 angle's times a wrap earlier.
        let start = ContinuousClock.now
        try await Task.sleep(for: .seconds(3))
        let ids = players.map(\.player.id)
        let spreads = log.spreads(of: ids, reference: ids[1], from: start, to: ContinuousClock.now, offsets: [fmp4.id: -wrap])
        let positions = "positions: fMP4 \(fmp4.position ?? .nan), TS before the wrap \(early.position ?? .nan), after \(late.position ?? .nan); skews \(view.skews)"
        #expect(spreads.count > 50, "\(positions); \(history())")
        let p50 = Statistics.percentile(0.5, of: spreads) ?? 1
        let p99 = Statistics.percentile(0.99, of: spreads) ?? 1
        #expect(p50 < 0.010, "spread p50 \(p50 * 1000) ms; \(positions)")
        #expect(p99 < 0.033, "spread p99 \(p99 * 1000) ms")
        #expect(view.members.count == 3)
        for (player, recorder) in players {
            #expect(!recorder.records.contains { if case .dropped = Self.event($0) { true } else { false } }, "\(player.id)")
        }
    }

    @Test("liveEdge(latency: 3 s): three angles joined apart are aligned about 3 s behind the origin's live edge, and stay there")
    func followsTheLiveEdge() async throws {
        let origin = try await LiveOrigin.start(Self.originArguments)
        defer { origin.stop() }
        let players = try await Self.players(3)
        defer { for (player, _) in players { Task { await player.shutdown() } } }
        let view = try MultiView(players: [], leader: .liveEdge(latency: .seconds(3)))
        defer { view.invalidate() }
        for (index, (player, _)) in players.enumerated() {
            try await view.load(MediaSource(origin.angles[index]), on: player)
            try await Task.sleep(for: .milliseconds(700))
        }
        for (player, recorder) in players {
            #expect(await recorder.waitFor(timeout: .seconds(30)) { if case .aligned = Self.event($0) { true } else { false } } != nil, "\(player.id)")
        }
        #expect(view.leader == nil)
        // The origin's edge: the newest segment listed, which ends at segment 0's start plus
        // (number + 1) seconds.
        let base = try PlaylistClockTests.ffprobeTime(origin, angle: 0, sequence: 0)
        for _ in 0..<2 {
            let state = try await origin.control("state", angle: 0)
            let edge = try #require(((try JSONSerialization.jsonObject(with: Data(state.utf8)) as? [String: Any])?["angles"] as? [[String: Any]])?.first?["edge"] as? Int)
            let position = try #require(view.position)
            let behind = base + Double(edge + 1) - position
            // 3 s behind, within a segment (when each player reloads its playlist is its own).
            #expect(behind > 2 && behind < 4.2, "\(behind) s behind the edge")
            try await Task.sleep(for: .milliseconds(500))
        }
        #expect(view.members.count == 3)
    }

    @Test("a live group pauses as a whole (clock and frames stop) and resumes where it paused (as much further behind the edge as it was paused), then at the live edge (as far behind it as before); in step each time")
    func pauseAndResume() async throws {
        let origin = try await LiveOrigin.start(Self.originArguments)
        defer { origin.stop() }
        let (view, players) = try await MultiViewTests.alignedGroup(origin)
        defer { view.invalidate(); for (player, _) in players { Task { await player.shutdown() } } }
        // The clock's media time against the monotonic time: constant while the group plays a
        // live source in real time; a pause of D seconds resumed where paused lowers it by D.
        let start = ContinuousClock.now
        func lag() -> Double? { view.position.map { $0 - (ContinuousClock.now - start).inSeconds } }
        func inStep() async -> Bool {
            await eventually(timeout: .seconds(10)) {
                players.allSatisfy { abs(view.skews[$0.player.id]?.current ?? 1) < 0.02 }
            }
        }
        func pause(for seconds: Double) async throws -> (positions: [Double], paused: Double) {
            try await view.pause()
            let pausedAt = ContinuousClock.now
            #expect(view.isPaused)
            for (player, _) in players { #expect(await eventually { player.state == .paused }, "\(player.id)") }
            let stopped = view.position
            let positions = players.map { $0.player.position ?? .nan }
            try await Task.sleep(for: .seconds(seconds))
            #expect(view.position == stopped, "the clock moved while paused")
            for (index, (player, _)) in players.enumerated() {
                #expect(abs((player.position ?? .nan) - positions[index]) < 0.05, "\(player.id) moved while paused")
            }
            return (positions, (ContinuousClock.now - pausedAt).inSeconds)
        }
        #expect(await inStep())
        let before = try #require(lag())

        let (positions, paused) = try await pause(for: 2)
        try await view.resume()
        #expect(await eventually { players.allSatisfy { $0.player.state == .playing } })
        for (index, (player, _)) in players.enumerated() {
            // Where it paused: on from the frame it showed, not at the edge.
            #expect(await eventually { (player.position ?? 0) > positions[index] }, "\(player.id)")
            #expect((player.position ?? .nan) < positions[index] + 1.5, "\(player.id) jumped from \(positions[index]) to \(player.position ?? .nan)")
        }
        #expect(await inStep(), "\(view.skews)")
        let later = try #require(lag())
        #expect(abs(before - later - paused) < 0.2, "paused \(paused) s: the clock went from \(before) to \(later)")

        _ = try await pause(for: 2)
        try await view.resume(from: .liveEdge)
        #expect(await eventually { players.allSatisfy { $0.player.state == .playing } })
        #expect(await inStep(), "\(view.skews)")
        let back = try #require(lag())
        #expect(abs(back - later) < 0.2, "at the live edge the clock is as far behind it as before the pause: \(later), now \(back)")
        #expect(view.members.count == 3)
    }

}
