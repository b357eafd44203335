import PlayerKitCore
import PlayerKitSupport

/// Keeps players on a clock the app sets: its own timeline, a server's, a room's. The same
/// correction a ``SyncGroup`` and a ``MultiView`` run, for a clock that is neither a group's
/// transport nor a member's (PlayerKitRooms' `RoomFollower` is built on it).
///
/// ```swift
/// let follower = try ClockFollower(players: [left, right])
/// try follower.setClock(12.0, at: .now)     // the timeline is at 12 s now, moving at speed 1
/// follower.moveMembers(seekingBeyond: .milliseconds(40))   // each player there, playing
/// // ... later, the timeline paused at 20 s:
/// try follower.setClock(20.0, running: false, at: .now)   // nothing is corrected until it runs again
/// follower.moveMembers(seekingBeyond: .zero)               // each player paused on 20 s
/// ```
///
/// **The clock** is `position` (seconds, in the players' positions) at the monotonic instant
/// given, moving on at `speed` while it runs. Each ``setClock(_:speed:running:at:)`` forgets what the
/// correction was doing and measures afresh, and gives every player the clock's speed (times its
/// clock drift; a trim left on it is taken away): the follower is the one writer of its players'
/// speeds. ``moveMembers(seekingBeyond:)`` seeks, starts or pauses the players with the clock,
/// or the app does.
///
/// **Correction.** Each player's frame changes are compared with the clock at the moment they
/// changed (the player reports a frame when it is due: the follower sets
/// ``/PlayerKitCore/PositionTiming/whenDue``). A player within
/// ``SyncSettings/holdThreshold`` is trimmed by speed; one further ahead is paused on its
/// frame until the clock reaches it; one behind beyond ``SyncSettings/realignThreshold``, or
/// ahead beyond it, is paused, seeked exactly to where the clock will be (within what it has in
/// memory) and released there. Each step is published on the player's ID as a ``SyncEvent``
/// (joined, aligned, fell behind, realigned; its drift once per
/// ``SyncSettings/driftReportInterval``).
///
/// Written, as every PlayerKit feature, against the core's public API only.
///
/// **Threading.** Methods may be called from any thread. The follower's state is one lock around
/// the correction machine; the players' events are handled in `.immediate` bus handlers, one step
/// under the lock each, and the commands a step decides are sent after the lock is released, with
/// ``/PlayerKitCore/MediaPlayer/send(_:)``, which never waits. ``invalidate()`` (or releasing the
/// follower) cancels its subscriptions and observations; the players stay as they are.
public final class ClockFollower: Sendable, CorrectionMachineOwner {
    private struct Member: Sendable {
        let player: any MediaPlayer
        /// Its frame changes, buffer and events, followed while it is a member.
        var watch: MemberWatch?
    }

    private struct State: Sendable {
        var machine: SyncMachine
        var members: [Member]
        /// Where the clock stopped (a clock set with `running: false`; nil: unknown, or it runs).
        var stoppedAt: Double?
        var invalidated = false
    }

    private let state: Locked<State>
    private let clock: any MonotonicClock

    /// A follower of `players` (one or more, no player twice), corrected as `settings` say (the
    /// settings every group takes; offsets, clock drifts and live-edge settings do not apply), on `clock` (a
    /// test may give a `ManualClock`). The players are followed at once; the clock is stopped
    /// until ``setClock(_:speed:running:at:)``.
    /// - Throws: ``/PlayerKitCore/PlayerError/invalidArgument(name:value:reason:)`` for a
    ///   player twice (any number of players, none included, makes a follower), or a setting that makes no sense (`validate()`).
    public init(players: [any MediaPlayer], settings: SyncSettings = SyncSettings(),
                clock: any MonotonicClock = ContinuousClock()) throws(PlayerError) {
        try settings.validate()
        let ids = players.map(\.id)
        guard Set(ids).count == ids.count else {
            throw .invalidArgument(name: "clock follower", value: ids.map(\.rawValue).joined(separator: ", "), reason: "lists a player twice")
        }
        self.clock = clock
        var machine = SyncMachine(settings: settings, clock: .set)
        let now = clock.now
        for id in ids { _ = machine.join(id, at: now) }
        state = Locked(State(machine: machine, members: players.map { Member(player: $0) }))
        for player in players { watch(player) }
    }

    deinit {
        invalidate()
    }

    // MARK: The clock

    /// Sets the clock: `position` (seconds) at `time`, moving on at `speed` (within
    /// ``/PlayerKitCore/PlayerCommand/speedRange``) while `running`; stopped (not `running`, or a
    /// nil position: unknown), nothing is measured or corrected. Call it whenever the timeline
    /// starts, stops, jumps or changes speed; then ``moveMembers(seekingBeyond:)``, or move the
    /// players yourself. Every player is given the clock's speed (times its clock drift) where it
    /// has another, and a trim left on it is taken away: sent, never waiting.
    /// - Throws: ``/PlayerKitCore/PlayerError/invalidArgument(name:value:reason:)`` for a position
    ///   that is not finite, or a speed outside the range.
    public func setClock(_ position: Double?, speed: Double = 1, running: Bool = true, at time: ContinuousClock.Instant) throws(PlayerError) {
        if let position, !position.isFinite {
            throw .invalidArgument(name: "clock position", value: "\(position)", reason: "must be a finite number of seconds")
        }
        try PlayerCommand.setSpeed(speed).validate()
        step { machine in
            machine.setClock(running ? position : nil, speed: speed, speedsGiven: false, at: time)
        }
        state.withLock { state in state.stoppedAt = running ? nil : position }
    }

    /// Brings every player to the clock now, as a room does when it starts, stops or jumps: a
    /// player further than `tolerance` from where the clock is (its media offset and clock drift
    /// applied) is seeked there exactly (nil: none is seeked; `.zero`: every one), then each
    /// plays while the clock runs, or pauses while it is stopped. Sent, not awaited (each
    /// command with ``/PlayerKitCore/MediaPlayer/send(_:)``); a stopped clock of unknown
    /// position pauses the players where they are.
    public func moveMembers(seekingBeyond tolerance: Duration?) {
        let now = clock.now
        let plan = state.withLock { state -> (running: Bool, targets: [(any MediaPlayer, Double?)])? in
            guard !state.invalidated else { return nil }
            let running = state.machine.clock(at: now) != nil && !state.machine.isPaused
            let timeline = state.machine.clock(at: now) ?? state.stoppedAt
            return (running, state.members.map { member in
                (member.player, timeline.flatMap { state.machine.mediaTime(of: member.player.id, atTimeline: $0) })
            })
        }
        guard let plan else { return }
        for (player, target) in plan.targets {
            if let tolerance, let target {
                let off = player.position.map { abs($0 - target) } ?? .infinity
                if off >= tolerance.inSeconds { try? player.send(.seek(to: max(0, target), precision: .exact)) }
            }
            try? player.send(plan.running ? .play : .pause)
        }
    }

    /// The clock's position at `time` (nil while stopped).
    public func position(at time: ContinuousClock.Instant) -> Double? {
        state.withLock { $0.machine.clock(at: time) }
    }

    // MARK: Figures

    /// The players followed, in the order given.
    public var members: [any MediaPlayer] { state.withLock { $0.members.map(\.player) } }

    /// How far each measured player is from the clock, measured on its frame changes since the
    /// clock was last set: its latest skew, the percentiles over ``SyncSettings/skewWindow`` and
    /// its drift as the correction judges it. A player appears after its first measured frame.
    public var skews: [PlayerID: MemberSkew] { state.withLock { $0.machine.skews } }

    /// How many corrective seeks the follower made (trims and holds do not count): a figure for
    /// tests.
    var correctiveSeeks: Int { state.withLock { $0.machine.correctiveSeeks } }

    // MARK: Lifetime

    /// Stops following: cancels the subscriptions and observations. The players stay as they
    /// are. Idempotent; called when the follower is released.
    public func invalidate() {
        let members = state.withLock { state -> [Member] in
            defer { state.invalidated = true }
            return state.invalidated ? [] : state.members
        }
        for member in members {
            member.watch?.cancel()
        }
    }

    // MARK: The players' side (where their events are delivered)

    private func watch(_ player: any MediaPlayer) {
        let id = player.id
        // Each frame change reported when the frame is due, not when it is queued (up to 50 ms
        // early, at random): what the correction measures. Sent, never waiting.
        try? player.send(.setPositionTiming(.whenDue))
        let watch = MemberWatch(player, kinds: [.positionChanged, .seekCompleted, .stateChanged, .bufferedMediaChanged, .speedChanged]) { [weak self] record in
            self?.handle(record, from: id)
        }
        let kept = state.withLock { state -> Bool in
            guard !state.invalidated, let index = state.members.firstIndex(where: { $0.player.id == id }) else { return false }
            state.members[index].watch = watch
            return true
        }
        if !kept { watch.cancel() }
    }

    private func handle(_ record: PlayerEventRecord, from id: PlayerID) {
        switch record.event {
        case .positionChanged(let position):
            step { $0.frame(id, media: position, at: record.time) }
        case .seekCompleted(let position):
            step { $0.seekLanded(id, media: position, at: record.time) }
        case .bufferedMediaChanged(let media):
            // A player seeks only within what it has: one behind without the data to catch up
            // plays on (and stalls, or catches up once the data is in).
            step { $0.cached(id, upTo: media.cachedUntil, seekableTo: media.seekableUntil, at: record.time) }
        case .stateChanged(_, let to):
            step { $0.stateChanged(id, to: to, at: record.time) }
        case .speedChanged(let speed):
            step { machine in
                machine.speedChanged(id, to: speed)
                return []
            }
        default:
            break
        }
    }

    /// Step the machine under the lock (``CorrectionMachineOwner``).
    func machineStep(_ body: (inout SyncMachine) -> [SyncMachine.Action]) -> (actions: [SyncMachine.Action], players: [PlayerID: any MediaPlayer]) {
        state.withLock { state in
            guard !state.invalidated else { return ([], [:]) }
            let actions = body(&state.machine)
            guard !actions.isEmpty else { return ([], [:]) }
            return (actions, Dictionary(uniqueKeysWithValues: state.members.map { ($0.player.id, $0.player) }))
        }
    }

    /// Only a live edge's judgement drops a member; an outside clock has none.
    func machineDropped(_ id: PlayerID, reason: SyncEvent.DropReason?) {}

    var correctionClock: any MonotonicClock { clock }
}
