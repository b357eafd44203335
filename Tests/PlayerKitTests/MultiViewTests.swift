import Foundation
import PlayerKit
import PlayerKitHLS
import PlayerKitSupport
@testable import PlayerKitSync
import Testing

/// Frame changes of players, recorded apart from the group (its own per-frame observation and
/// bus subscription): media time and moment of each new frame. The spread between members is
/// computed from these, independently of the group's own measurement.
final class FrameLog: Sendable {
    private let frames = Locked<[PlayerID: [(media: Double, time: ContinuousClock.Instant)]]>([:])
    private let subscriptions = Locked<[PlayerSubscription]>([])
    private let observations = Locked<[PropertyObservation]>([])

    func follow(_ player: Player) {
        let id = player.id
        observations.withLock { $0.append(player.observeEveryFrame()) }
        let subscription = player.eventBus.subscribe(to: id, kinds: [.positionChanged], delivery: .immediate) { [frames] record in
            guard case .positionChanged(let media) = record.event else { return }
            frames.withLock { $0[id, default: []].append((media, record.time)) }
        }
        subscriptions.withLock { $0.append(subscription) }
    }

    func stop() {
        subscriptions.withLock { $0 }.forEach { $0.cancel() }
        observations.withLock { $0 }.forEach { $0.cancel() }
    }

    /// For each frame change of `reference` in `window`, the spread of the moments the members
    /// show that media time: each member's moment is interpolated between its two frame changes
    /// around that media time (members playing at a trimmed speed included). Seconds.
    /// `offsets`: added to a member's media times to put them on the reference's timeline.
    func spreads(of ids: [PlayerID], reference: PlayerID, from start: ContinuousClock.Instant, to end: ContinuousClock.Instant,
                 offsets: [PlayerID: Double] = [:]) -> [Double] {
        let all = frames.withLock { frames in
            frames.mapValues { _ in [(media: Double, time: ContinuousClock.Instant)]() }.merging(frames.map { id, list in
                (id, list.map { (media: $0.media + offsets[id, default: 0], time: $0.time) })
            }, uniquingKeysWith: { _, shifted in shifted })
        }
        guard let referenceFrames = all[reference] else { return [] }
        var spreads: [Double] = []
        for frame in referenceFrames where frame.time >= start && frame.time <= end {
            var moments: [Double] = []
            for id in ids {
                guard let list = all[id], let after = list.firstIndex(where: { $0.media >= frame.media - 1e-6 }), after > 0 else { break }
                let (a, b) = (list[after - 1], list[after])
                guard b.media - a.media < 0.1, b.time.seconds(since: a.time) < 0.1 else { break }  // no pause or jump in between
                let fraction = (frame.media - a.media) / (b.media - a.media)
                moments.append(a.time.seconds(since: start) + fraction * b.time.seconds(since: a.time))
            }
            if moments.count == ids.count, let low = moments.min(), let high = moments.max() { spreads.append(high - low) }
        }
        return spreads
    }

    /// The floor under any spread: how unevenly one player's own frames come, apart from any
    /// group. For each pair of consecutive frame changes of `id` in `window` (no pause or jump
    /// between them), how far the time between them is from the media time between them, at
    /// `speed`; its p99, in seconds. If each player's frame moments scatter around their due
    /// times independently, the moments two players show one frame scatter about as much: a
    /// group cannot keep its members closer than this.
    func intervalJitter(of id: PlayerID, from start: ContinuousClock.Instant, to end: ContinuousClock.Instant,
                        speed: Double = 1) -> Double? {
        let list = frames.withLock { $0[id] ?? [] }.filter { $0.time >= start && $0.time <= end }
        guard list.count > 2 else { return nil }
        var deviations: [Double] = []
        for (a, b) in zip(list, list.dropFirst()) {
            let media = b.media - a.media, wall = b.time.seconds(since: a.time)
            guard media > 0, media < 0.1, wall < 0.1 else { continue }
            deviations.append(abs(wall - media / speed))
        }
        return Statistics.percentile(0.99, of: deviations)
    }
}

@Suite("Multi-view of live HLS angles on a loopback origin (real libmpv)", .serialized, .timeLimit(.minutes(5)), .tags(.timingPass))
struct MultiViewTests {
    static let originArguments = ["--angles", "4", "--size", "320x180", "--fps", "30", "--seconds", "60", "--segment", "1", "--window", "6"]

    static func event(_ record: PlayerEventRecord) -> SyncEvent? { record.event.feature(SyncEvent.self) }

    static func players(_ count: Int) async throws -> [(player: Player, recorder: EventRecorder)] {
        var players: [(Player, EventRecorder)] = []
        for index in 0..<count { players.append(try await Fixtures.player(id: Fixtures.uniqueID("angle\(index)"))) }
        return players
    }

    @Test("four live angles joined 0, 0.7, 1.5 and 3 s apart: each is aligned soon after the last join, and they show the same frame within milliseconds")
    func fourAnglesJoinedApart() async throws {
        let origin = try await LiveOrigin.start(Self.originArguments)
        defer { origin.stop() }
        let players = try await Self.players(4)
        defer { for (player, _) in players { Task { await player.shutdown() } } }
        let log = FrameLog()
        defer { log.stop() }
        for (player, _) in players { log.follow(player) }
        let view = try MultiView(players: [])
        defer { view.invalidate() }
        var lastJoin = ContinuousClock.now
        var elapsed = 0.0
        for (index, at) in [(0, 0.0), (3, 0.7), (1, 1.5), (2, 3.0)] {
            try await Task.sleep(for: .seconds(at - elapsed))
            elapsed = at
            lastJoin = ContinuousClock.now
            try await view.load(MediaSource(origin.angles[index]), on: players[index].player)
        }
        var alignedAt: [ContinuousClock.Instant] = []
        for (player, recorder) in players {
            let aligned = await recorder.waitFor(timeout: .seconds(30)) { if case .aligned = Self.event($0) { true } else { false } }
            #expect(aligned != nil, "\(player.id) was never aligned")
            if let aligned { alignedAt.append(aligned.time) }
        }
        // Aligned within 2 s of the last join, the target (issue 50). Alone (this suite runs in
        // the serial pass) it took 0.71 s in 4 runs of 4 (2026-11-28); the bound was 8 s.
        let lastAligned = try #require(alignedAt.max())
        #expect(lastAligned - lastJoin < .seconds(2), "aligned \(lastAligned - lastJoin) after the last join")
        // Four seconds of playing together, measured apart from the group.
        let start = ContinuousClock.now
        try await Task.sleep(for: .seconds(4))
        let ids = players.map(\.player.id)
        let spreads = log.spreads(of: ids, reference: ids[0], from: start, to: ContinuousClock.now)
        #expect(spreads.count > 80)
        let p50 = Statistics.percentile(0.5, of: spreads) ?? 1
        let p99 = Statistics.percentile(0.99, of: spreads) ?? 1
        #expect(p50 < 0.010, "spread p50 \(p50 * 1000) ms")
        #expect(p99 < 0.030, "spread p99 \(p99 * 1000) ms")
        // The group's own figures agree, member by member.
        for id in ids {
            let skew = try #require(view.skews[id])
            #expect(skew.p50 < 0.010 && skew.samples > 50, "\(id): \(skew)")
        }
        // Every member is still in the group, none fell behind.
        #expect(view.members.count == 4)
        for (player, recorder) in players {
            #expect(!recorder.records.contains { if case .fellBehind = Self.event($0) { true } else { false } }, "\(player.id)")
        }
    }

    @Test("two local files loaded together start together: from their first frames on they show the same frame within a few milliseconds (measured on frame changes apart from the group), and nobody is seeked or falls out of step")
    func localFilesStartTogether() async throws {
        let players = try await Self.players(2)
        defer { for (player, _) in players { Task { await player.shutdown() } } }
        let log = FrameLog()
        defer { log.stop() }
        for (player, _) in players { log.follow(player) }
        let view = try MultiView(players: players.map(\.player))
        defer { view.invalidate() }
        try await view.load(players.map { _ in .file(Fixtures.fixture("long.mp4")) })
        #expect(players.allSatisfy { $0.player.state == .playing }, "\(players.map(\.player.state))")
        let start = ContinuousClock.now
        try await Task.sleep(for: .seconds(3))
        let ids = players.map(\.player.id)
        let spreads = log.spreads(of: ids, reference: ids[0], from: start, to: ContinuousClock.now)
        #expect(spreads.count > 60)
        // Loaded one by one, each started as its own load ended, 1-6 ms apart, and the first
        // second's spread was that until trimmed away (issue 50).
        let firstSecond = log.spreads(of: ids, reference: ids[0], from: start, to: start + .seconds(1))
        let steady = log.spreads(of: ids, reference: ids[0], from: start + .seconds(1), to: ContinuousClock.now)
        let p99 = Statistics.percentile(0.99, of: steady) ?? 1
        let firstWorst = firstSecond.max() ?? 1
        // Started together: 0.86-1.12 ms over the three seconds in a debug build, alone; started
        // one by one, 0.93-3.18 ms (2026-11-29). Under ThreadSanitizer every frame is later, and
        // less evenly (3.3 ms once): a third of a frame there.
        // No group keeps its members closer than their own frames come evenly: on a machine
        // whose CPUs are taken from it now and then (a VM's steal time: 2026-12-02, the same
        // build's spread p99 2.7-9.4 ms in 9 runs of this test, 6 over 2.5 ms), each player's
        // frame intervals scatter by as much. So once started (after the first second) the bound
        // is 2.5 ms or that floor plus 0.5 ms, whichever is larger (issue 67, item 6: sync at the
        // floor). The first second holds the start: each member starts as its own load ends, 1-6
        // ms apart, trimmed away within it (issue 50; 4.1 ms once on 2026-12-02, with a floor of
        // 1.1 ms): at worst a quarter of a frame there.
        let floor = ids.compactMap { log.intervalJitter(of: $0, from: start, to: ContinuousClock.now) }.max() ?? 0
        let bound = max(Fixtures.underSanitizer ? 0.011 : 0.0025, floor + 0.0005)
        #expect(p99 < bound, "spread p99 \(p99 * 1000) ms after the first second, the players' own frame-interval jitter p99 \(floor * 1000) ms")
        #expect(firstWorst < (Fixtures.underSanitizer ? 0.016 : 0.0083), "in the first second, at worst \(firstWorst * 1000) ms")
        for (player, recorder) in players {
            #expect(!recorder.records.contains { if case .fellBehind = Self.event($0) { true } else { false } }, "\(player.id)")
        }
    }

    /// Three angles loaded together, each aligned.
    /// Checks that no member but `faulty` fell out of step.
    static func othersStayedInStep(_ players: [(player: Player, recorder: EventRecorder)], except faulty: PlayerID) {
        for (player, recorder) in players where player.id != faulty {
            #expect(!recorder.records.contains { if case .fellBehind = Self.event($0) { true } else { false } }, "\(player.id)")
        }
    }

    static func alignedGroup(_ origin: LiveOrigin) async throws -> (MultiView, [(player: Player, recorder: EventRecorder)]) {
        let players = try await Self.players(3)
        let view = try MultiView(players: players.map(\.player))
        try await view.load(players.indices.map { MediaSource(origin.angles[$0]) })
        for (player, recorder) in players {
            #expect(await recorder.waitFor(timeout: .seconds(30)) { if case .aligned = Self.event($0) { true } else { false } } != nil, "\(player.id)")
        }
        return (view, players)
    }

    @Test("a missing segment moves one angle: it falls out of step (missing segment, or a stall when mpv waits for the next one) and is realigned; the others stay in step")
    func missingSegment() async throws {
        let origin = try await LiveOrigin.start(Self.originArguments)
        defer { origin.stop() }
        let (view, players) = try await Self.alignedGroup(origin)
        defer { view.invalidate(); for (player, _) in players { Task { await player.shutdown() } } }
        let (faulty, recorder) = players[1]
        let mark = recorder.mark
        try await origin.control("drop", angle: 1)
        // mpv shows a missing segment as a jump ahead, a frozen frame, or a wait for the network.
        let fell = await recorder.waitFor(timeout: .seconds(20), after: mark) { if case .fellBehind = Self.event($0) { true } else { false } }
        let reason: SyncEvent.Reason? = if case .fellBehind(let reason) = fell.flatMap(Self.event) { reason } else { nil }
        #expect(reason == .missingSegment || reason == .stall, "\(String(describing: reason))")
        let realigned = await recorder.waitFor(timeout: .seconds(40), after: fell?.sequenceNumber ?? mark) {
            if case .realigned(_, let back) = Self.event($0) { back == reason } else { false }
        }
        #expect(realigned != nil)
        Self.othersStayedInStep(players, except: faulty.id)
        let skew = try #require(view.skews[faulty.id])
        #expect(abs(skew.current) < 0.030, "\(skew)")
    }

    @Test("two stalls in a row (two segments of one angle each answered 4 s late): once its data flows again for good, the angle is back in step within 1 s; the others play on in step")
    func twoStalls() async throws {
        let origin = try await LiveOrigin.start(Self.originArguments)
        defer { origin.stop() }
        let (view, players) = try await Self.alignedGroup(origin)
        defer { view.invalidate(); for (player, _) in players { Task { await player.shutdown() } } }
        let (faulty, recorder) = players[1]
        let mark = recorder.mark
        try await origin.control("delay", angle: 1, seconds: 4, count: 2)
        @Sendable func delaysAnswered() async -> Int? {
            guard let state = try? await origin.control("state", angle: 0),
                  let object = try? JSONSerialization.jsonObject(with: Data(state.utf8)) as? [String: Any],
                  let angles = object["angles"] as? [[String: Any]], angles.count > 1 else { return nil }
            return angles[1]["delays_answered"] as? Int
        }
        #expect(await eventually(timeout: .seconds(40)) { await delaysAnswered() == 2 }, "the origin never answered both delayed segments")
        @Sendable func leftBuffering(_ record: PlayerEventRecord) -> Bool {
            if case .stateChanged(.buffering, let to) = record.event { to != .buffering } else { false }
        }
        @Sendable func enteredBuffering(_ record: PlayerEventRecord) -> Bool {
            if case .stateChanged(let from, .buffering) = record.event { from != .buffering } else { false }
        }
        @Sendable func realignedAfterStall(_ record: PlayerEventRecord) -> Bool {
            if case .realigned(_, .stall) = Self.event(record) { true } else { false }
        }
        // Back in step after the last time its data flowed again.
        let settled = await eventually(timeout: .seconds(20)) {
            let records = recorder.records.filter { $0.sequenceNumber > mark }
            guard let last = records.lastIndex(where: leftBuffering) else { return false }
            return faulty.state != .buffering && records[last...].contains(where: realignedAfterStall)
        }
        let records = recorder.records.filter { $0.sequenceNumber > mark }
        let trace = records.filter { $0.event.kind != .positionChanged }.map { "\($0.time) \($0.event)" }.joined(separator: "\n")
        #expect(settled, "never back in step after its last stall:\n\(trace)")
        #expect(records.contains { Self.event($0) == .fellBehind(.stall) }, "no stall seen:\n\(trace)")
        var measured: [Duration] = []
        for exit in records.filter(leftBuffering) {
            // Data flowing again for good at `exit` (no stall after it; after the first delayed
            // segment only that one is in, and the member cannot be brought to the clock before
            // the next arrives): back in step within 1 s.
            guard !records.contains(where: { $0.time > exit.time && enteredBuffering($0) }) else { continue }
            let back = records.first { $0.time >= exit.time && realignedAfterStall($0) }
            let took = back.map { $0.time - exit.time }
            #expect(took.map { $0 <= .seconds(1) } == true, "back in step \(String(describing: took)) after its data flowed again:\n\(trace)")
            if let took { measured.append(took) }
        }
        #expect(!measured.isEmpty, "\(trace)")
        Self.othersStayedInStep(players, except: faulty.id)
    }

    @Test("a stall longer than an angle's buffer: it waits for the network (fellBehind(stall)), and is realigned once the origin goes on; the others play on in step")
    func stall() async throws {
        let origin = try await LiveOrigin.start(Self.originArguments)
        defer { origin.stop() }
        let (view, players) = try await Self.alignedGroup(origin)
        defer { view.invalidate(); for (player, _) in players { Task { await player.shutdown() } } }
        let (faulty, recorder) = players[1]
        let mark = recorder.mark
        try await origin.control("stall", angle: 1, seconds: 5)
        let stalled = await recorder.waitFor(timeout: .seconds(30), after: mark) { Self.event($0) == .fellBehind(.stall) }
        #expect(stalled != nil)
        let back = await recorder.waitFor(timeout: .seconds(30), after: stalled?.sequenceNumber ?? mark) {
            if case .realigned(_, .stall) = Self.event($0) { true } else { false }
        }
        #expect(back != nil)
        Self.othersStayedInStep(players, except: faulty.id)
        let skew = try #require(view.skews[faulty.id])
        #expect(abs(skew.current) < 0.030, "\(skew)")
    }

}

/// Angles of separate encoders aligned by PROGRAM-DATE-TIME: light (three players of 160x90), so
/// it runs in make test's live pass with the other light live-origin tests; its bound (a frame)
/// holds there.
@Suite("Multi-view by PROGRAM-DATE-TIME (real libmpv, a loopback origin)", .timeLimit(.minutes(3)), .tags(.livePass))
struct MultiViewClockTests {
    private static func event(_ record: PlayerEventRecord) -> SyncEvent? { MultiViewTests.event(record) }
    private static func players(_ count: Int) async throws -> [(player: Player, recorder: EventRecorder)] {
        try await MultiViewTests.players(count)
    }

    @Test("angles that share no clock (TS beside fMP4, and an encoder 7 s ahead) are aligned by their playlists' PROGRAM-DATE-TIME: they show the same moment within a frame, measured on frame changes against ffprobe's timestamps")
    func alignedByProgramDateTime() async throws {
        let origin = try await LiveOrigin.start(PlaylistClockTests.mixed)
        defer { origin.stop() }
        let players = try await Self.players(3)
        defer { for (player, _) in players { Task { await player.shutdown() } } }
        let log = FrameLog()
        defer { log.stop() }
        for (player, _) in players { log.follow(player) }
        let view = try MultiView(players: players.map(\.player))
        defer { view.invalidate() }
        let ids = players.map(\.player.id)
        let offsets = try await view.alignTimestamps(ofPlaylists: Dictionary(uniqueKeysWithValues: zip(ids, origin.angles.map { URL(string: $0)! })))
        #expect(view.settings.mediaOffsets == offsets)
        try await view.load(origin.angles.map { MediaSource($0) })
        for (player, recorder) in players {
            #expect(await recorder.waitFor(timeout: .seconds(30)) { if case .aligned = Self.event($0) { true } else { false } } != nil, "\(player.id)")
        }
        // The true offsets, from ffprobe (the same PROGRAM-DATE-TIME for the same segment).
        let reference = try PlaylistClockTests.ffprobeTime(origin, angle: 0, sequence: 3)
        var truth: [PlayerID: Double] = [:]
        for index in 0..<3 { truth[ids[index]] = reference - (try PlaylistClockTests.ffprobeTime(origin, angle: index, sequence: 3)) }
        let start = ContinuousClock.now
        try await Task.sleep(for: .seconds(3))
        let spreads = log.spreads(of: ids, reference: ids[0], from: start, to: ContinuousClock.now, offsets: truth)
        #expect(spreads.count > 50)
        let p50 = Statistics.percentile(0.5, of: spreads) ?? 1
        let p99 = Statistics.percentile(0.99, of: spreads) ?? 1
        // Within a frame (33 ms), on a loaded machine too.
        #expect(p50 < 0.010, "spread p50 \(p50 * 1000) ms")
        #expect(p99 < 0.033, "spread p99 \(p99 * 1000) ms")
        #expect(view.members.count == 3)
    }
}
