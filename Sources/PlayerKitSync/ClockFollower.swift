import PlayerKitCore
import PlayerKitSupport

/// Keeps players on a clock the app sets: its own timeline, a server's, a room's. The same
/// correction a ``SyncGroup`` and a ``MultiView`` run, for a clock that is neither a group's
/// transport nor a member's (PlayerKitRooms' `RoomFollower` is built on it).
///
/// ```swift
/// let follower = try ClockFollower(players: [left, right])
/// try await left.play(); try await right.play()
/// try follower.setClock(12.0, at: .now)     // the timeline is at 12 s now, moving at speed 1
/// // ... later, the timeline paused: the app pauses the players, then
/// try follower.setClock(nil, at: .now)      // nothing is corrected until it runs again
/// ```
///
/// **The clock** is `position` (seconds, in the players' positions) at the monotonic instant
/// given, moving on at `speed`; nil: stopped. The app moves the players with the clock (play,
/// pause, seek, speed: the follower does not); each ``setClock(_:speed:at:)`` forgets what the
/// correction was doing and measures afresh.
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
        var machine: LiveAlignment
        var members: [Member]
        var invalidated = false
    }

    private let state: Locked<State>
    private let clock: any MonotonicClock

    /// A follower of `players` (one or more, no player twice), corrected as `settings` say (the
    /// settings every group takes; offsets, clock drifts and live-edge settings do not apply), on `clock` (a
    /// test may give a `ManualClock`). The players are followed at once; the clock is stopped
    /// until ``setClock(_:speed:at:)``.
    /// - Throws: ``/PlayerKitCore/PlayerError/invalidArgument(name:value:reason:)`` for a
    ///   player twice (any number of players, none included, makes a follower), or a setting that makes no sense (``SyncSettings/validate()``).
    public init(players: [any MediaPlayer], settings: SyncSettings = SyncSettings(),
                clock: any MonotonicClock = ContinuousClock()) throws(PlayerError) {
        try settings.validate()
        let ids = players.map(\.id)
        guard Set(ids).count == ids.count else {
            throw .invalidArgument(name: "clock follower", value: ids.map(\.rawValue).joined(separator: ", "), reason: "lists a player twice")
        }
        self.clock = clock
        var machine = LiveAlignment(settings: settings, clock: .set)
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
    /// ``/PlayerKitCore/PlayerCommand/speedRange``); nil stops it (nothing is measured or
    /// corrected). Call it whenever the timeline starts, stops, jumps or changes speed, after
    /// (or as) the app moves the players there.
    /// - Throws: ``/PlayerKitCore/PlayerError/invalidArgument(name:value:reason:)`` for a position
    ///   that is not finite, or a speed outside the range.
    public func setClock(_ position: Double?, speed: Double = 1, at time: ContinuousClock.Instant) throws(PlayerError) {
        if let position, !position.isFinite {
            throw .invalidArgument(name: "clock position", value: "\(position)", reason: "must be a finite number of seconds")
        }
        try PlayerCommand.setSpeed(speed).validate()
        state.withLock { state in
            guard !state.invalidated else { return }
            state.machine.setClock(position, speed: speed, at: time)
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
        let watch = MemberWatch(player, kinds: [.positionChanged, .seekCompleted, .stateChanged, .bufferedMediaChanged]) { [weak self] record in
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
        default:
            break
        }
    }

    /// Step the machine under the lock (``CorrectionMachineOwner``).
    func machineStep(_ body: (inout LiveAlignment) -> [LiveAlignment.Action]) -> (actions: [LiveAlignment.Action], players: [PlayerID: any MediaPlayer]) {
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
