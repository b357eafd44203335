import PlayerKitCore
import PlayerKitSupport

/// One member's frames on the group's time line: frame `k` of the member is on screen from
/// group time `(k / rate - offset) / clockRate` until the next one starts.
struct FrameGrid: Sendable, Hashable {
    /// Frames per second.
    let rate: Double
    /// The member's media time minus the group's time, at the group's time 0.
    let offset: Double
    /// Seconds of the member's media per second of the group's time (its clock drift).
    let clockRate: Double
    /// The last frame's number, when the item's duration is known.
    let lastFrame: Int?

    /// Tolerance for times that should fall on a frame's start (container time bases round).
    static let epsilon = 1e-6

    init(rate: Double, offset: Double, clockRate: Double = 1, duration: Double?) {
        self.rate = rate
        self.offset = offset
        self.clockRate = clockRate
        lastFrame = duration.map { max(Int(($0 * rate - Self.epsilon).rounded(.up)) - 1, 0) }
    }

    /// The frame on screen at group time `time` (the first frame before the member's start,
    /// the last after its end).
    func frame(at time: Double) -> Int {
        let raw = Int(((time * clockRate + offset) * rate + Self.epsilon * rate).rounded(.down))
        return clamp(raw)
    }

    func clamp(_ frame: Int) -> Int { min(max(frame, 0), lastFrame ?? Int.max) }

    /// The group time at which frame `frame` starts.
    func start(of frame: Int) -> Double { (Double(frame) / rate - offset) / clockRate }

    /// The member's media time of frame `frame`.
    func mediaTime(of frame: Int) -> Double { Double(frame) / rate }

    /// The number of the frame at media time `time` (a reported position).
    func frameNumber(atMediaTime time: Double) -> Int { clamp(Int((time * rate).rounded())) }

    /// The first moment after `time` at which this member's picture changes, if any.
    func nextChange(after time: Double) -> Double? {
        let next = frame(at: time) + 1
        guard next <= (lastFrame ?? Int.max) else { return nil }
        return start(of: next)
    }

    /// The last moment before `time` at which this member's picture changed, if any (its first
    /// frame is on screen from the start of time, so it never "changes" into frame 0).
    func previousChange(before time: Double) -> Double? {
        let shown = frame(at: time)
        if shown >= 1, start(of: shown) < time - Self.epsilon { return start(of: shown) }
        guard shown - 1 >= 1 else { return nil }
        return start(of: shown - 1)
    }
}

/// The alignment rule as arithmetic, apart from any player: where a step goes and which frame
/// each member shows there.
enum FramePlan {
    /// The next moment any member's picture changes: the group's next time, or nil at the end.
    static func forward(from time: Double, grids: [FrameGrid]) -> Double? {
        grids.compactMap { $0.nextChange(after: time) }.min()
    }

    /// The latest moment before `time` any member's picture changed; when none changed before,
    /// the beginning (the earliest start of a first frame, where every member shows frame 0);
    /// nil when every member shows its first frame already.
    static func back(from time: Double, grids: [FrameGrid]) -> Double? {
        if let latest = grids.compactMap({ $0.previousChange(before: time) }).max() { return latest }
        guard grids.contains(where: { $0.frame(at: time) != 0 }) else { return nil }
        return grids.map { $0.start(of: 0) }.min()
    }

    /// The group's time for members showing `frames`: the latest start among them, so that
    /// each member's frame is on screen then (when they are aligned at all).
    static func time(showing frames: [Int], grids: [FrameGrid]) -> Double {
        zip(frames, grids).map { frame, grid in grid.start(of: frame) }.max() ?? 0
    }
}

extension SyncGroup {
    /// How long a frame step or frame seek waits for each member to show its new frame, on the
    /// monotonic clock (``stepFrame()``, ``stepFrameBack()``, ``seek(toFrame:of:)``).
    static let frameStepTimeout: Duration = .seconds(10)

    /// The group's settings now: those it was made with, and the media offsets and clock drifts
    /// set since (``setMediaOffset(_:for:)``, ``setClockDrift(_:for:)``). Save them (they are
    /// `Codable`) to make the same group again: ``init(players:onMemberFailure:settings:clock:)``
    /// takes them, offsets and drifts included.
    public var settings: SyncSettings { engine.settings }

    /// Sets member `id`'s media offset: its media time minus the group's time (nil: none), the
    /// sign of ``SyncSettings/mediaOffsets``. A member whose content begins 2 s into its file,
    /// compared with one whose content begins at once, gets +2 s; a `RecordingOffset` found by
    /// PlayerKitAnalysis is given as it is. Runs after the group's earlier calls; from then on
    /// every seek, frame step and the correction place the member there (while playing, the
    /// correction brings it there as any member that fell out of step). Kept in ``settings``.
    /// - Throws: ``/PlayerKitCore/PlayerError/invalidArgument(name:value:reason:)`` for a player that
    ///   is not a member.
    public func setMediaOffset(_ offset: Duration?, for id: PlayerID) async throws(PlayerError) {
        try await operations.run { () throws(PlayerError) in
            guard engine.isMember(id) else {
                throw .invalidArgument(name: "sync group member", value: id.rawValue, reason: "is not a member of this group")
            }
            change { $0.frameTime = nil }
            let now = clock.now
            engine.step { $0.setOffset(offset, for: id, at: now) }
        }
    }

    /// Sets member `id`'s clock drift against the group's timeline, in parts per million (nil:
    /// none): from now on it plays at the group's speed times `1 + ppm × 1e-6`, and seeks, frame
    /// steps and the correction place it on that scale. For recordings whose devices' clocks
    /// ran apart (PlayerKitAnalysis's `RecordingOffset/drift` measures it); kept in ``settings``.
    /// Runs after the group's earlier calls; a playing member gets its new speed at once.
    /// - Throws: ``/PlayerKitCore/PlayerError/invalidArgument(name:value:reason:)`` for a player that
    ///   is not a member or a drift that is not finite or beyond ±10,000 ppm.
    public func setClockDrift(_ ppm: Double?, for id: PlayerID) async throws(PlayerError) {
        if let ppm { try SyncSettings.validateClockDrift(ppm, for: id) }
        try await operations.run { () throws(PlayerError) in
            guard engine.isMember(id) else {
                throw .invalidArgument(name: "sync group member", value: id.rawValue, reason: "is not a member of this group")
            }
            change { $0.frameTime = nil }
            let now = clock.now
            engine.step { $0.setClockDrift(ppm, for: id, at: now) }
        }
    }

    /// Shows the next frame on every member, in lockstep, paused there, and returns once every
    /// member shows it (each within 10 s).
    ///
    /// **The rule.** The group has one time; each member shows the frame on screen at that time
    /// plus its media offset (``SyncSettings/mediaOffsets``). A step goes to the next moment at which any member's
    /// picture changes. Members with the same frame rate and offset all step one frame each
    /// time (mpv's `frame-step`); with different rates, each step shows the next change, so no
    /// frame of any member is skipped, and a member whose frame is still on screen holds it
    /// (``MemberFrame/moved`` is false). A member at its last frame holds it. A playing group
    /// is paused first. Frame numbers come from each item's frame rate
    /// (``/PlayerKitCore/Track/frameRate``), so they are exact for constant-frame-rate media.
    /// - Returns: the group's new time and every member's frame.
    /// - Throws: ``FrameStepError``: ``FrameStepError/nothingLoaded(_:)``,
    ///   ``FrameStepError/frameRateUnknown(_:)``, ``FrameStepError/atLastFrame`` (nothing
    ///   changed), ``FrameStepError/memberFailed(_:_:)``, ``FrameStepError/timedOut(_:after:)``.
    @discardableResult
    public func stepFrame() async throws(FrameStepError) -> GroupFrame {
        try await moveFrames { time, grids throws(FrameStepError) in
            guard let next = FramePlan.forward(from: time, grids: grids) else { throw .atLastFrame }
            return next
        }
    }

    /// Shows the previous frame on every member, in lockstep, paused there (the rule of
    /// ``stepFrame()``, backwards: the latest earlier moment at which any member's picture
    /// changed). mpv steps back by seeking to the frame (`frame-back-step`), which is slower
    /// than a step forward.
    /// - Returns: the group's new time and every member's frame.
    /// - Throws: ``FrameStepError``: ``FrameStepError/cannotStepBack(_:reason:)`` for a member whose
    ///   item cannot be seeked, ``FrameStepError/atFirstFrame``, and the errors of ``stepFrame()``.
    @discardableResult
    public func stepFrameBack() async throws(FrameStepError) -> GroupFrame {
        try await moveFrames(backward: true) { time, grids throws(FrameStepError) in
            guard let previous = FramePlan.back(from: time, grids: grids) else { throw .atFirstFrame }
            return previous
        }
    }

    /// Seeks every member to the same frame: frame `frame` of the reference member (the first
    /// member unless `reference` names another), and on every other member the frame on screen
    /// at that moment (by the rule of ``stepFrame()``: members with the same frame rate and
    /// offset show the same frame number). Paused there; returns once every member shows it.
    /// - Throws: ``FrameStepError/invalidFrame(_:of:reason:)`` for a frame before 0 or after
    ///   the reference's last, or a reference that is not a member; the errors of
    ///   ``stepFrame()``.
    @discardableResult
    public func seek(toFrame frame: Int, of reference: PlayerID? = nil) async throws(FrameStepError) -> GroupFrame {
        let referenceID = reference ?? members.first?.id
        return try await moveFrames { _, grids throws(FrameStepError) in
            let ids = self.members.map(\.id)
            guard let referenceID else { throw .groupInvalidated }
            guard let index = ids.firstIndex(of: referenceID) else {
                throw .invalidFrame(frame, of: referenceID, reason: "the reference is not a member of the group")
            }
            let grid = grids[index]
            guard frame >= 0 else { throw .invalidFrame(frame, of: referenceID, reason: "frames are numbered from 0") }
            if let last = grid.lastFrame, frame > last {
                throw .invalidFrame(frame, of: referenceID, reason: "its item's last frame is \(last)")
            }
            return grid.start(of: frame)
        }
    }

    /// The common path of frame steps and frame seeks: checks every member, works out the
    /// group's current time (the one left by the last frame operation if every member still
    /// shows it, else from their positions), asks `target` for the new time, moves each member
    /// whose frame changes (a step for one frame, an exact seek for more), and waits until each
    /// shows its frame.
    private func moveFrames(
        backward: Bool = false, _ target: @escaping @Sendable (Double, [FrameGrid]) throws(FrameStepError) -> Double
    ) async throws(FrameStepError) -> GroupFrame {
        try await operations.run { () async throws(FrameStepError) -> GroupFrame in
            try await moveFramesNow(backward: backward, target)
        }
    }

    private func moveFramesNow(
        backward: Bool, _ target: (Double, [FrameGrid]) throws(FrameStepError) -> Double
    ) async throws(FrameStepError) -> GroupFrame {
        let (invalidated, remembered) = state.withLock { ($0.invalidated, $0.frameTime) }
        guard !invalidated else { throw .groupInvalidated }
        let players = self.members
        let members = engine.read { machine in
            players.map { (player: $0, offset: machine.offset(of: $0.id) ?? 0, clockRate: machine.rate(of: $0.id) ?? 1) }
        }
        var grids: [FrameGrid] = []
        var current: [Int] = []
        for member in members {
            let player = member.player
            guard !player.isShutDown else { throw .memberFailed(player.id, .playerShutDown(player.id)) }
            guard let position = player.position, player.state != .idle, player.state != .loading else {
                throw .nothingLoaded(player.id)
            }
            guard player.state != .failed else { throw .nothingLoaded(player.id) }
            guard let rate = player.snapshot.frameRate, rate > 0 else { throw .frameRateUnknown(player.id) }
            if backward, player.snapshot.duration == nil {
                throw .cannotStepBack(player.id, reason: "its item has no duration, so mpv cannot seek in it (a live or piped stream)")
            }
            let grid = FrameGrid(rate: rate, offset: member.offset, clockRate: member.clockRate, duration: player.snapshot.duration)
            grids.append(grid)
            current.append(grid.frameNumber(atMediaTime: position))
        }
        // The group's time now: the last frame operation's, while every member still shows the
        // frame it put there; otherwise the latest start among the frames shown.
        let now: Double
        if let remembered, zip(grids, current).allSatisfy({ grid, frame in grid.frame(at: remembered) == frame }) {
            now = remembered
        } else {
            now = FramePlan.time(showing: current, grids: grids)
        }
        let time = try target(now, grids)
        let frames = grids.map { $0.frame(at: time) }

        do throws(PlayerError) {
            if phase != .paused { try await pauseMembers() }
        } catch {
            throw .memberFailed(members.first { $0.player.isShutDown || $0.player.state == .failed }?.player.id ?? members[0].player.id, error)
        }

        // Each moving member: a step for one frame either way, an exact seek for more.
        var moves: [(index: Int, command: PlayerCommand)] = []
        for (index, (from, to)) in zip(current, frames).enumerated() where from != to {
            let command: PlayerCommand
            switch to - from {
            case 1: command = .stepFrame
            case -1: command = .stepFrameBack
            default: command = .seek(to: grids[index].mediaTime(of: to), precision: .exact)
            }
            moves.append((index, command))
        }
        // Subscribed before the commands go out, so no new frame slips by.
        let arrivals = moves.map { move in members[move.index].player.events(kinds: [.positionChanged], bufferLimit: 64) }
        defer { for arrival in arrivals { arrival.cancel() } }
        let results = await Player.perform(each: moves.map { (members[$0.index].player, $0.command) }, timeout: Self.frameStepTimeout)
        for (move, result) in zip(moves, results) {
            if case .failure(let error) = result { throw .memberFailed(members[move.index].player.id, error) }
        }
        var reported = current.enumerated().map { index, frame in members[index].player.position ?? grids[index].mediaTime(of: frame) }
        // Every moving member's arrival, at once (one task each), within the timeout.
        let arrived = await withTaskGroup(of: (Int, Double?).self) { group in
            for (move, arrival) in zip(moves, arrivals) {
                let grid = grids[move.index]
                let expected = grid.mediaTime(of: frames[move.index])
                // At an item's last frame mpv reports the item's end (its audio may run a little
                // longer than its video), not the frame's start.
                let isLast = frames[move.index] == grid.lastFrame
                group.addTask {
                    let record = await arrival.first(timeout: Self.frameStepTimeout) { record in
                        guard case .positionChanged(let position) = record.event else { return false }
                        return abs(position - expected) < 0.5 / grid.rate || (isLast && position > expected)
                    }
                    guard case .positionChanged(let position)? = record?.event else { return (move.index, nil) }
                    return (move.index, position)
                }
            }
            var all: [(Int, Double?)] = []
            for await result in group { all.append(result) }
            return all
        }
        for (index, position) in arrived.sorted(by: { $0.0 < $1.0 }) {
            guard let position else { throw .timedOut(members[index].player.id, after: Self.frameStepTimeout) }
            reported[index] = position
        }
        change { state in
            state.frameTime = time
            state.anchorPosition = time
        }
        let moved = Set(moves.map(\.index))
        return GroupFrame(time: time, members: members.indices.map { index in
            MemberFrame(player: members[index].player.id, frameNumber: grids[index].frameNumber(atMediaTime: reported[index]),
                        time: reported[index], moved: moved.contains(index))
        })
    }
}
