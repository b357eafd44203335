import DequeModule
import Foundation

/// Players that share one clock, for side-by-side comparison: they start together, pause, seek
/// and change speed together, and drift is corrected while they play.
///
/// ```swift
/// let group = try SyncGroup(players: [left, right])
/// try await group.load(["with-esc.mp4", "without-esc.mp4"])   // each paused on its first frame
/// try group.play()                                             // released at once
/// try await group.seek(to: 12)                                 // all land on 12 s, then go on
/// ```
///
/// **The clock.** When the group starts, every member is paused on a decoded frame at the same
/// position; they are then released one right after another and the group's clock starts:
/// position = start + elapsed wall time × speed. Every frame of every member (the group asks
/// each for per-frame positions) is compared with the clock at the moment it was observed;
/// the difference is the member's drift (positive: ahead).
///
/// **Correction.** A member off by less than ``Settings/seekThreshold`` gets a speed a little
/// above or below the group's (at most ``Settings/maximumSpeedCorrection`` off, proportional to
/// its smoothed drift), so it closes the gap in about a second without a visible jump; a member
/// further off is seeked to the clock. Each member reports ``PlayerEvent/syncDrift(_:)`` about
/// once per ``Settings/driftReportInterval``.
///
/// **Stalls and failures.** A member that starts buffering holds the group: the others pause
/// until it plays again, then the clock restarts from where they all are. A member whose item
/// fails is dropped from the group or stops it, as ``FailurePolicy`` says.
///
/// **Threading.** Methods may be called from any thread or task; calls are serialized.
public final class SyncGroup: Sendable {
    /// What happens when a member's item fails.
    public enum FailurePolicy: Sendable, Hashable {
        /// The member leaves the group; the others go on.
        case dropMember
        /// The whole group pauses.
        case stopGroup
    }

    /// Tuning of the drift correction.
    public struct Settings: Sendable, Hashable {
        /// Drift (seconds) beyond which a member is seeked instead of nudged. Default 0.25.
        public var seekThreshold: Double = 0.25
        /// The largest relative speed change used to nudge a member. Default 0.05 (±5%).
        public var maximumSpeedCorrection: Double = 0.05
        /// How often each member reports its drift. Default 1 s.
        public var driftReportInterval: Duration = .seconds(1)
        /// Whether drift is corrected (default) or only measured and reported.
        public var correctsDrift = true

        /// The defaults.
        public init() {}
    }

    /// What the group is doing.
    public enum Phase: Sendable, Hashable {
        /// Not started, or paused.
        case paused
        /// Playing on the clock.
        case playing
        /// Held while a member buffers.
        case waitingForMember(PlayerID)
    }

    /// The members, in order (members that failed and were dropped are gone).
    public var members: [Player] { state.withLock { $0.members.map(\.player) } }
    /// What the group is doing now.
    public var phase: Phase { state.withLock { $0.phase } }
    /// The group's speed.
    public var speed: Double { state.withLock { $0.speed } }
    /// The group clock's position now, in seconds, when known.
    public var position: Double? { state.withLock { $0.clockPosition(at: Date()) } }
    /// Each member's latest smoothed drift in seconds (positive: ahead).
    public var drifts: [PlayerID: Double] {
        state.withLock { state in
            Dictionary(uniqueKeysWithValues: state.members.compactMap { member in member.smoothedDrift.map { (member.player.id, $0) } })
        }
    }

    /// The spread between members, one figure per measured frame of any member while playing:
    /// the largest minus the smallest member drift (unsmoothed), in seconds. What
    /// "drift between members" means in the benchmark and the `ab-compare` example. Holds the
    /// latest ``spreadHistoryLimit`` figures (about 10 minutes of two 30 fps members).
    public var spreads: [Double] { state.withLock { Array($0.spreads) } }

    /// How many spread figures ``spreads`` keeps.
    public static let spreadHistoryLimit = 36_000

    /// The policy for failing members.

    public let failurePolicy: FailurePolicy
    /// The correction settings.
    public let settings: Settings

    private struct Member: Sendable {
        let player: Player
        var subscription: PlayerSubscription?
        var smoothedDrift: Double?
        var rawDrift: Double?
        var appliedSpeed: Double = 1
        var lastReport: Date = .distantPast
        var correctingUntil: Date = .distantPast
    }

    private struct State: Sendable {
        var members: [Member] = []
        var phase: Phase = .paused
        var speed: Double = 1
        /// The clock: `anchorPosition` at `anchorTime`, advancing at `speed` while playing.
        var anchorPosition: Double?
        var anchorTime = Date()
        var spreads = Deque<Double>()

        func clockPosition(at time: Date) -> Double? {
            guard let anchorPosition else { return nil }
            guard phase == .playing else { return anchorPosition }
            return anchorPosition + time.timeIntervalSince(anchorTime) * speed
        }
    }

    private let state = Locked(State())
    private let operations = AsyncSerialGate()
    /// How often a looping source is repeated in its timeline.
    static let loopRepeats = 500

    /// A group of at least two different players.
    /// - Throws: ``PlayerError/invalidArgument(name:value:reason:)`` for fewer than two players
    ///   or the same player twice.
    public init(players: [Player], onMemberFailure: FailurePolicy = .dropMember, settings: Settings = Settings()) throws(PlayerError) {
        guard players.count >= 2 else {
            throw .invalidArgument(name: "sync group", value: "\(players.count) player(s)", reason: "needs at least two players")
        }
        let ids = players.map(\.id)
        guard Set(ids).count == ids.count else {
            throw .invalidArgument(name: "sync group", value: ids.map(\.rawValue).joined(separator: ", "), reason: "lists a player twice")
        }
        failurePolicy = onMemberFailure
        self.settings = settings
        state.withLock { $0.members = players.map { Member(player: $0) } }
        for player in players { watch(player) }
    }

    deinit {
        for member in state.withLock({ $0.members }) {
            member.subscription?.cancel()
            member.player.core.observeEveryPosition(false)
        }
    }

    // MARK: Control

    /// Loads one source per member (in member order), each paused on its first frame at 0.
    /// A member whose source fails is dropped (``FailurePolicy/dropMember``; its error is on
    /// its own events) or fails the whole load (``FailurePolicy/stopGroup``).
    /// - Parameter looping: repeat each source seamlessly (joined into one timeline, as
    ///   ``ClipLoop`` does), so positions keep counting up and no loop restarts a member.
    /// - Throws: ``PlayerError/invalidArgument(name:value:reason:)`` when the counts differ; the
    ///   errors of ``Player/preload(_:timeout:)`` with ``FailurePolicy/stopGroup``, or when
    ///   fewer than two members are left.
    public func load(_ sources: [MediaSource], looping: Bool = false) async throws(PlayerError) {
        let players = members
        guard sources.count == players.count else {
            throw .invalidArgument(name: "sync group sources", value: "\(sources.count)", reason: "needs one source per member (\(players.count))")
        }
        await operations.enter()
        defer { operations.leave() }
        state.withLock { state in
            state.phase = .paused
            state.anchorPosition = 0
            for index in state.members.indices { state.members[index].smoothedDrift = nil }
        }
        for (player, source) in zip(players, sources) {
            do throws(PlayerError) {
                try player.setSpeed(speed)
                if looping {
                    try player.setProperty("loop-file", to: "inf")
                    try await player.preload(.joined([source], repeated: Self.loopRepeats))
                } else {
                    try await player.preload(source)
                }
            } catch {
                guard failurePolicy == .dropMember else { throw error }
                remove(player.id)
            }
        }
        let left = members.count
        guard left >= 2 else {
            throw .invalidArgument(name: "sync group sources", value: sources.map(\.description).joined(separator: ", "),
                                   reason: "only \(left) member(s) could load; a group needs two")
        }
    }

    /// Starts every member at once from the group's position.
    public func play() throws(PlayerError) {
        let players = members
        let speed = speed
        for player in players { try player.setSpeed(speed) }
        for player in players { try player.play() }
        state.withLock { state in
            state.anchorPosition = state.anchorPosition ?? players.first?.position ?? 0
            state.anchorTime = Date()
            state.phase = .playing
            for index in state.members.indices {
                state.members[index].smoothedDrift = nil
                state.members[index].rawDrift = nil
                state.members[index].appliedSpeed = speed
            }
        }
    }

    /// Pauses every member and the clock.
    public func pause() throws(PlayerError) {
        state.withLock { state in
            state.anchorPosition = state.clockPosition(at: Date())
            state.phase = .paused
        }
        for player in members { try player.pause() }
    }

    /// Seeks every member to `seconds` (exactly) and waits until all have landed; a playing
    /// group plays on from there together.
    /// - Throws: ``PlayerError/invalidArgument(name:value:reason:)`` for a NaN or negative
    ///   position; the errors of ``Player/seek(to:precision:)``.
    public func seek(to seconds: Double) async throws(PlayerError) {
        guard seconds.isFinite, seconds >= 0 else {
            throw .invalidArgument(name: "seek position", value: "\(seconds)", reason: "must be a finite number of seconds, 0 or more")
        }
        await operations.enter()
        defer { operations.leave() }
        let wasPlaying = phase == .playing
        try pause()
        let players = members
        let landings = players.map { $0.events(kinds: [.seekCompleted], bufferLimit: 4) }
        for player in players { try player.seek(to: seconds, precision: .exact) }
        await withTaskGroup(of: Void.self) { group in
            for landing in landings {
                group.addTask {
                    for await _ in landing { break }
                }
            }
        }
        for landing in landings { landing.cancel() }
        state.withLock { $0.anchorPosition = seconds }
        if wasPlaying { try play() }
    }

    /// Sets the group's speed (within ``Player/speedRange``) for every member and the clock.
    /// - Throws: ``PlayerError/invalidArgument(name:value:reason:)`` outside the range.
    public func setSpeed(_ speed: Double) throws(PlayerError) {
        guard speed.isFinite, Player.speedRange.contains(speed) else {
            throw .invalidArgument(name: "speed", value: "\(speed)", reason: "must be between 0.25 and 4")
        }
        state.withLock { state in
            let now = Date()
            state.anchorPosition = state.clockPosition(at: now)
            state.anchorTime = now
            state.speed = speed
            for index in state.members.indices { state.members[index].appliedSpeed = speed }
        }
        for player in members { try player.setSpeed(speed) }
    }

    // MARK: Following the members

    private func watch(_ player: Player) {
        player.core.observeEveryPosition(true)
        let id = player.id
        let subscription = player.eventBus.subscribe(
            to: id, kinds: [.positionChanged, .stateChanged, .itemEnded], delivery: .immediate
        ) { [weak self] record in
            self?.handle(record, from: id)
        }
        state.withLock { state in
            if let index = state.members.firstIndex(where: { $0.player.id == id }) { state.members[index].subscription = subscription }
        }
    }

    private func handle(_ record: PlayerEventRecord, from id: PlayerID) {
        switch record.event {
        case .positionChanged(let position):
            measure(position, at: record.timestamp, of: id)
        case .stateChanged(_, .buffering):
            hold(for: id)
        case .stateChanged(_, .playing):
            resumeIfHeld(by: id)
        case .itemEnded(.error):
            memberFailed(id)
        default:
            break
        }
    }

    /// One frame of one member: its drift, smoothed; a nudge or a seek when needed; a report
    /// now and then.
    private func measure(_ position: Double, at time: Date, of id: PlayerID) {
        enum Action { case none, speed(Double), seek(Double) }
        let (player, action, report) = state.withLock { state -> (Player?, Action, Double?) in
            guard state.phase == .playing, let clock = state.clockPosition(at: time),
                  let index = state.members.firstIndex(where: { $0.player.id == id }) else { return (nil, .none, nil) }
            var member = state.members[index]
            defer { state.members[index] = member }
            let drift = position - clock
            member.rawDrift = drift
            state.members[index].rawDrift = drift
            let raws = state.members.compactMap(\.rawDrift)
            if raws.count == state.members.count, let low = raws.min(), let high = raws.max() {
                state.spreads.append(high - low)
                if state.spreads.count > SyncGroup.spreadHistoryLimit { state.spreads.removeFirst() }
            }
            // Smooth over about ten frames; a seek in progress is not measured.
            guard time >= member.correctingUntil else { return (member.player, .none, nil) }
            let smoothed = member.smoothedDrift.map { $0 * 0.9 + drift * 0.1 } ?? drift
            member.smoothedDrift = smoothed
            var report: Double?
            if time.timeIntervalSince(member.lastReport) >= settings.driftReportInterval.timeInterval {
                member.lastReport = time
                report = smoothed
            }
            guard settings.correctsDrift else { return (member.player, .none, report) }
            if abs(smoothed) > settings.seekThreshold {
                member.correctingUntil = time.addingTimeInterval(0.5)
                member.smoothedDrift = nil
                return (member.player, .seek(clock + 0.1 * state.speed), report)
            }
            // Close the gap in about a second: ahead -> slower, behind -> faster.
            let correction = max(-settings.maximumSpeedCorrection, min(settings.maximumSpeedCorrection, -smoothed))
            let wanted = state.speed * (1 + correction)
            guard abs(wanted - member.appliedSpeed) > 0.002 else { return (member.player, .none, report) }
            member.appliedSpeed = wanted
            return (member.player, .speed(wanted), report)
        }
        guard let player else { return }
        switch action {
        case .none: break
        case .speed(let speed): try? player.setProperty("speed", to: .double(speed))
        case .seek(let target): try? player.seek(to: target, precision: .exact)
        }
        if let report { player.emit([.syncDrift(report)]) }
    }

    /// A member buffers: the others wait, and the clock stops where it is.
    private func hold(for id: PlayerID) {
        let others = state.withLock { state -> [Player] in
            guard state.phase == .playing else { return [] }
            state.anchorPosition = state.clockPosition(at: Date())
            state.phase = .waitingForMember(id)
            return state.members.map(\.player).filter { $0.id != id }
        }
        for player in others { try? player.pause() }
    }

    /// The buffering member plays again: everyone goes on together from where it is (it is
    /// the one behind, and it has data there).
    private func resumeIfHeld(by id: PlayerID) {
        let (held, member) = state.withLock { state -> (Bool, Player?) in
            guard state.phase == .waitingForMember(id) else { return (false, nil) }
            state.phase = .paused
            return (true, state.members.first { $0.player.id == id }?.player)
        }
        guard held, let member else { return }
        try? member.pause()
        let position = member.position ?? state.withLock { $0.anchorPosition } ?? 0
        Task {
            try? await seek(to: position)
            try? play()
        }
    }

    private func memberFailed(_ id: PlayerID) {
        switch failurePolicy {
        case .stopGroup:
            try? pause()
        case .dropMember:
            remove(id)
        }
    }

    /// Takes a member out of the group.
    private func remove(_ id: PlayerID) {
        let removed = state.withLock { state -> Member? in
            guard let index = state.members.firstIndex(where: { $0.player.id == id }) else { return nil }
            return state.members.remove(at: index)
        }
        removed?.subscription?.cancel()
        removed?.player.core.observeEveryPosition(false)
    }
}
