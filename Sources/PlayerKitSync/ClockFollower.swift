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
public final class ClockFollower: Sendable {
    /// The members, their watches and the correction machine.
    private let engine: SyncEngine
    /// Where the clock stopped (a clock set with `running: false`; nil: unknown, or it runs).
    private let stoppedAt = Locked<Double?>(nil)

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
        // Each frame change reported when the frame is due, not when it is queued (up to 50 ms
        // early, at random): what the correction measures. Sent, never waiting.
        engine = SyncEngine(machine: SyncMachine(settings: settings, clock: .set),
                            rules: SyncEngine.Rules(joinCommands: [.setPositionTiming(.whenDue)]), clock: clock)
        for player in players { engine.add(player) }
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
        engine.step { machine in
            machine.setClock(running ? position : nil, speed: speed, speedsGiven: false, at: time)
        }
        stoppedAt.withLock { $0 = running ? nil : position }
    }

    /// Brings every player to the clock now, as a room does when it starts, stops or jumps: a
    /// player further than `tolerance` from where the clock is (its media offset and clock drift
    /// applied) is seeked there exactly (nil: none is seeked; `.zero`: every one), then each
    /// plays while the clock runs, or pauses while it is stopped. Sent, not awaited (each
    /// command with ``/PlayerKitCore/MediaPlayer/send(_:)``); a stopped clock of unknown
    /// position pauses the players where they are.
    public func moveMembers(seekingBeyond tolerance: Duration?) {
        let now = engine.clock.now
        let players = engine.members
        let stopped = stoppedAt.withLock { $0 }
        let plan = engine.read { machine -> (running: Bool, targets: [(any MediaPlayer, Double?)]) in
            let running = machine.clock(at: now) != nil && !machine.isPaused
            let timeline = machine.clock(at: now) ?? stopped
            return (running, players.map { player in
                (player, timeline.flatMap { machine.mediaTime(of: player.id, atTimeline: $0) })
            })
        }
        for (player, target) in plan.targets {
            if let tolerance, let target {
                let off = player.position.map { abs($0 - target) } ?? .infinity
                if off >= tolerance.inSeconds { try? player.send(.seek(to: max(0, target), precision: .exact)) }
            }
            try? player.send(plan.running ? .play : .pause)
        }
    }

    /// The clock's position at `time` (nil while stopped).
    func position(at time: ContinuousClock.Instant) -> Double? {
        engine.read { $0.clock(at: time) }
    }

    // MARK: Figures

    /// The players followed, in the order given.
    var members: [any MediaPlayer] { engine.members }

    /// How far each measured player is from the clock, measured on its frame changes since the
    /// clock was last set: its latest skew, the percentiles over ``SyncSettings/skewWindow`` and
    /// its drift as the correction judges it. A player appears after its first measured frame.
    public var skews: [PlayerID: MemberSkew] { engine.skews }

    /// How many corrective seeks the follower made (trims and holds do not count): a figure for
    /// tests.
    var correctiveSeeks: Int { engine.correctiveSeeks }

    // MARK: Lifetime

    /// Stops following: cancels the subscriptions and observations. The players stay as they
    /// are. Idempotent; called when the follower is released.
    public func invalidate() {
        engine.invalidate()
    }
}
