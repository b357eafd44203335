import Dispatch
import PlayerKitCore
import PlayerKitSupport

/// Players that share one clock, for side-by-side comparison: they start together, pause, seek
/// and change speed together, and drift is corrected while they play.
///
/// ```swift
/// let group = try SyncGroup(players: [left, right])
/// try await group.load(["with-esc.mp4", "without-esc.mp4"])   // each paused on its first frame
/// try await group.play()                                       // released at once
/// try await group.seek(to: 12)                                 // all land on 12 s, then go on
/// ```
///
/// **The clock.** When the group starts, every member is paused on a decoded frame at the same
/// position; they are then released one right after another and the group's clock starts:
/// position = start + elapsed time × speed, on the group's monotonic clock (the clock it was given:
/// `ContinuousClock` unless a test gives a `ManualClock`; a stepped system clock changes nothing). Every frame of every member (the group holds a
/// ``/PlayerKitCore/Player/observeEveryFrame()`` observation on each) is compared with the clock at the
/// record's monotonic time (``/PlayerKitCore/PlayerEventRecord/time``); the difference is the member's drift
/// (positive: ahead).
///
/// **Correction.** The same machine that keeps a ``MultiView``'s angles together corrects the
/// members, here on the group's own clock (``SyncSettings``, given as `settings`): a member
/// within ``SyncSettings/holdThreshold`` of the clock gets a speed a little above or below
/// the group's (at most ``SyncSettings/maximumSpeedTrim`` off, proportional to its skew,
/// within ``/PlayerKitCore/PlayerCommand/speedRange``), so it closes the gap without a visible
/// jump; a member further ahead is paused on its frame until the clock reaches it, and one
/// further behind than ``SyncSettings/realignThreshold`` (or ahead by more than that) is
/// seeked exactly to where the clock will be and released there. Each step is published on the
/// member's ID as a ``SyncEvent`` (joined, aligned, fell behind, realigned), and each
/// member reports ``SyncEvent/drift(_:)`` about once per
/// ``SyncSettings/driftReportInterval``.
///
/// **Stalls and failures.** A member that starts buffering holds the group: the others pause
/// until it plays again, then the clock restarts from where they all are. A member whose item
/// fails is dropped from the group or stops it, as ``FailurePolicy`` says. With
/// ``FailurePolicy/dropMember``, a member that fails during a call of the group (its item fails
/// mid-seek) is dropped and the call goes on with the others.
///
/// Written, as every PlayerKit feature, against the core's public API only.
///
/// **Threading.** Methods may be called from any thread or task. Every public call that
/// changes the group (``load(_:looping:)``, ``play()``, ``pause()``, ``seek(to:)``,
/// ``setSpeed(_:)``) is serialized with the others, in call order, and suspends (with
/// ``/PlayerKitCore/Player/perform(_:timeout:)``) instead of blocking a thread while mpv answers. The group's state is
/// one lock, changed in single steps; what a step decides (a correction, a hold) runs after the
/// lock is released. It follows its members in `.immediate` bus handlers, on the thread that
/// delivers their events, taking the lock for one step and correcting with
/// ``/PlayerKitCore/Player/send(_:)``, which never waits. ``invalidate()`` (or releasing the group)
/// cancels its subscriptions, observations and tasks.
public final class SyncGroup: Sendable {
    /// What happens when a member's item fails.
    public enum FailurePolicy: Sendable, Hashable {
        /// The member leaves the group; the others go on.
        case dropMember
        /// The whole group pauses.
        case stopGroup
    }


    /// What the group is doing.
    ///
    /// `@nonexhaustive`: a `switch` over it outside PlayerKit needs `@unknown default`.
    @nonexhaustive
    public enum Phase: Sendable, Hashable {
        /// Not started, or paused.
        case paused
        /// Playing on the clock.
        case playing
        /// Held while a member buffers.
        case waitingForMember(PlayerID)
    }

    /// The members, in order (members that failed and were dropped are gone).
    public var members: [any MediaPlayer] { engine.members }
    /// What the group is doing now.
    public var phase: Phase { state.withLock { $0.phase } }
    /// The group's speed.
    var speed: Double { state.withLock { $0.speed } }
    /// The group clock's position now, in seconds, when known.
    public var position: Double? {
        let now = clock.now
        return state.withLock { $0.clockPosition(at: now) }
    }
    /// How far each measured member is from the group's clock, measured on its frame changes
    /// while the group plays, since the clock last started (a play, a seek, a speed change): its
    /// latest skew, the percentiles over the last 10 s and its drift as the correction judges it,
    /// as a ``MultiView`` reports its members'. A member appears after its first measured frame.
    public var skews: [PlayerID: MemberSkew] { engine.skews }

    /// The spread between members, one figure per measured frame of any member while playing
    /// (from its third frame after each start, as ``skews`` are measured): the largest minus the
    /// smallest member's latest skew (unsmoothed), in seconds. Holds the latest 36,000 figures
    /// (about 10 minutes of two 30 fps members). For tests; an app computes the spread from
    /// ``skews``.
    var spreads: [Double] { engine.spreads }

    /// How many seeks the group made to correct members since it was created (nudges by speed
    /// do not count): a figure for tests and diagnostics.
    var correctiveSeeks: Int { engine.correctiveSeeks }

    /// The policy for failing members.
    let failurePolicy: FailurePolicy
    /// The correction settings it was made with.
    let alignment: SyncSettings
    /// The clock the group plays on and measures drift with.
    let clock: any MonotonicClock
    /// The members, their watches and the correction machine (on the group's clock: set at
    /// each start, stopped at each pause or hold).
    let engine: SyncEngine

    /// The group's transport.
    struct State: Sendable {
        var phase: Phase = .paused
        var speed: Double = 1
        /// The clock: `anchorPosition` at `anchorTime`, advancing at `speed` while playing.
        var anchorPosition: Double?
        var anchorTime: ContinuousClock.Instant
        /// Tasks the group started itself (a resume after a stall), cancelled by `invalidate()`.
        var tasks: [UInt64: Task<Void, Never>] = [:]
        var nextTask: UInt64 = 0
        var invalidated = false
        /// The group's time after the latest frame step or frame seek; nil once the members
        /// moved otherwise (a load, a seek, playing).
        var frameTime: Double?

        func clockPosition(at time: ContinuousClock.Instant) -> Double? {
            guard let anchorPosition else { return nil }
            guard phase == .playing else { return anchorPosition }
            return anchorPosition + time.seconds(since: anchorTime) * speed
        }
    }

    /// The group's state, changed in single steps under its lock.
    let state: Locked<State>
    /// Serializes the public calls that change the group.
    let operations = AsyncSerialGate()
    /// How often a looping group's source is repeated in its member's timeline
    /// (``load(_:looping:)`` with `looping: true` plays each source as one seamless timeline of
    /// this many copies). So a looping member reports a duration, and a position, of that
    /// timeline: its source's duration is `duration / loopRepeats`, and the position within the
    /// current pass is the position modulo that.
    public static let loopRepeats = 500
    /// How long a seek of the group waits for each member to land (``seek(to:)``).
    static let seekLandingTimeout: Duration = .seconds(30)

    /// A group of `players` (any number, none twice: a group of one or none does what its members
    /// do), on `clock`, corrected as `settings` say
    /// (PlayerKit's one sync settings type, as a ``MultiView`` and a room's follower take it;
    /// ``SyncSettings/onDemand`` by default; its live-edge settings do not apply, and offsets can
    /// also be set later with ``setMediaOffset(_:for:)``).
    /// - Throws: ``/PlayerKitCore/PlayerError/invalidArgument(name:value:reason:)`` for the same player twice, or a setting that makes no sense (`validate()`).
    public init(players: [any MediaPlayer], onMemberFailure: FailurePolicy = .dropMember, settings: SyncSettings = .onDemand,
                clock: any MonotonicClock = ContinuousClock()) throws(PlayerError) {
        try settings.validate()
        let ids = players.map(\.id)
        guard Set(ids).count == ids.count else {
            throw .invalidArgument(name: "sync group", value: ids.map(\.rawValue).joined(separator: ", "), reason: "lists a player twice")
        }
        failurePolicy = onMemberFailure
        self.alignment = settings
        self.clock = clock
        self.state = Locked(State(anchorTime: clock.now))
        // Each frame change reported when the frame is due, not when it is queued (up to 50 ms
        // early, at random): what the correction measures. Sent, never waiting. Offsets and
        // clock drifts saved with the settings are the machine's from each member's join.
        engine = SyncEngine(machine: SyncMachine(settings: settings, clock: .set),
                            rules: SyncEngine.Rules(joinCommands: [.setPositionTiming(.whenDue)],
                                                    frontKinds: [.stateChanged, .itemEnded, .shuttingDown]),
                            clock: clock)
        engine.setFrontHandler { [weak self] record, id in self?.memberEvent(record, from: id) }
        for player in players { engine.add(player) }
    }

    deinit {
        invalidate()
    }

    /// Stops following the members: cancels the group's subscriptions, per-frame observations
    /// and tasks. The members keep playing as they are and stay usable; the group's calls do
    /// nothing after this. Called when the group is released. Idempotent.
    public func invalidate() {
        let tasks = state.withLock { state -> [Task<Void, Never>] in
            defer {
                state.invalidated = true
                state.tasks.removeAll()
                state.phase = .paused
            }
            return Array(state.tasks.values)
        }
        engine.invalidate()
        for task in tasks { task.cancel() }
    }

    // MARK: Control

    /// Loads one source per member, each paused on its first frame at 0. The members load at
    /// the same time, so a group loads in about the time of its slowest member. A member whose
    /// source fails is dropped (``FailurePolicy/dropMember``; its error is on its own events) or
    /// fails the whole load (``FailurePolicy/stopGroup``: the first failure in member order is
    /// thrown once every member's load has ended).
    /// - Parameters:
    ///   - sources: one source per member, in member order.
    ///   - looping: repeat each source seamlessly (joined into one timeline with
    ///     ``/PlayerKitCore/MediaSource/joined(_:repeated:)``), so positions keep counting up and no loop restarts
    ///     a member.
    /// - Throws: ``/PlayerKitCore/PlayerError/invalidArgument(name:value:reason:)`` when the counts differ; the
    ///   errors of ``/PlayerKitCore/Player/preload(_:timeout:)``: with ``FailurePolicy/stopGroup``
    ///   the first in member order; with ``FailurePolicy/dropMember`` (the failed members dropped,
    ///   each publishing ``SyncEvent/dropped(_:)``) the first only when no member could load.
    public func load(_ sources: [MediaSource], looping: Bool = false) async throws(PlayerError) {
        let players = members
        guard sources.count == players.count else {
            throw .invalidArgument(name: "sync group sources", value: "\(sources.count)", reason: "needs one source per member (\(players.count))")
        }
        try await operations.run { () async throws(PlayerError) in
            let now = clock.now
            change { state in
                state.phase = .paused
                state.anchorPosition = 0
                state.frameTime = nil
            }
            stopCorrecting(at: now)
            let speeds = memberSpeeds(players)
            let failures = await Self.onEveryMember(Array(zip(players, sources))) { member async throws(PlayerError) in
                let (player, source) = member
                try await player.perform(.setSpeed(speeds[player.id] ?? 1))
                if looping {
                    try await player.perform(.setLoop(.forever))
                    try await player.preload(.joined([source], repeated: Self.loopRepeats))
                } else {
                    try await player.preload(source)
                }
            }
            let inOrder = failures.sorted { $0.0 < $1.0 }
            if failurePolicy == .stopGroup, let (_, first) = inOrder.first { throw first }
            for (index, error) in inOrder { remove(players[index].id, reason: .failed(error)) }
            // Nobody could load: the first failure, in member order.
            if !players.isEmpty, inOrder.count == players.count, let (_, first) = inOrder.first { throw first }
        }
    }

    /// Runs `body` for every item at the same time (children of one task group) and waits for
    /// them all; returns the failures by item index, in item order. Cancelling the caller
    /// cancels the children.
    private static func onEveryMember<Item: Sendable>(
        _ items: [Item], _ body: @escaping @Sendable (Item) async throws(PlayerError) -> Void
    ) async -> [(Int, PlayerError)] {
        await withTaskGroup(of: (Int, PlayerError?).self) { group in
            for (index, item) in items.enumerated() {
                group.addTask {
                    do throws(PlayerError) {
                        try await body(item)
                        return (index, nil)
                    } catch {
                        return (index, error)
                    }
                }
            }
            var failures: [(Int, PlayerError)] = []
            for await (index, error) in group {
                if let error { failures.append((index, error)) }
            }
            return failures.sorted { $0.0 < $1.0 }
        }
    }

    /// Performs `command` on every player at once (``/PlayerKitCore/Player/perform(each:timeout:pacing:)``:
    /// handed to all before any answer is awaited) and waits for every answer; throws the first
    /// refusal in member order. With ``FailurePolicy/dropMember``, a member whose item failed
    /// (or that shut down) is dropped instead and its refusal ignored. Returns the players that
    /// carried the command out.
    @discardableResult
    private func performOnEvery(_ players: [any MediaPlayer], _ command: PlayerCommand) async throws(PlayerError) -> [any MediaPlayer] {
        var carried: [any MediaPlayer] = []
        for (player, result) in zip(players, await Player.perform(each: players.map { ($0, command) })) {
            switch result {
            case .success:
                carried.append(player)
            case .failure(let error):
                guard failurePolicy == .dropMember, player.isShutDown || player.state == .failed else { throw error }
                remove(player.id, reason: player.isShutDown ? .shutDown : .failed(error))
            }
        }
        return carried
    }

    /// Each member's speed: the group's times its clock rate (``clockDrifts``).
    private func memberSpeeds(_ players: [any MediaPlayer]) -> [PlayerID: Double] {
        let speed = speed
        return engine.read { machine in
            Dictionary(uniqueKeysWithValues: players.map { ($0.id, speed * (machine.rate(of: $0.id) ?? 1)) })
        }
    }

    /// Stops the machine's clock (the group paused, or holds for a member).
    private func stopCorrecting(at time: ContinuousClock.Instant) {
        let speed = speed
        engine.step { $0.setClock(nil, speed: speed, at: time) }
    }

    /// Gives every member its speed (``memberSpeeds(_:)``), all at once; a member whose item
    /// failed is dropped as ``performOnEvery(_:_:)`` drops it.
    private func setMemberSpeeds(_ players: [any MediaPlayer]) async throws(PlayerError) {
        let speeds = memberSpeeds(players)
        let commands = players.map { ($0, PlayerCommand.setSpeed(min(max(speeds[$0.id] ?? 1, PlayerCommand.speedRange.lowerBound), PlayerCommand.speedRange.upperBound))) }
        for ((player, _), result) in zip(commands, await Player.perform(each: commands)) {
            switch result {
            case .success:
                break
            case .failure(let error):
                guard failurePolicy == .dropMember, player.isShutDown || player.state == .failed else { throw error }
                remove(player.id, reason: player.isShutDown ? .shutDown : .failed(error))
            }
        }
    }

    /// Starts every member at once from the group's position.
    /// - Throws: the errors of ``/PlayerKitCore/PlayerCommand/setSpeed(_:)`` (through ``/PlayerKitCore/MediaPlayer/perform(_:timeout:)``) and ``/PlayerKitCore/MediaPlayer/play()``.
    public func play() async throws(PlayerError) {
        try await operations.run { () async throws(PlayerError) in try await playMembers() }
    }

    /// Pauses every member and the clock.
    /// - Throws: the errors of ``/PlayerKitCore/MediaPlayer/pause()``.
    public func pause() async throws(PlayerError) {
        try await operations.run { () async throws(PlayerError) in try await pauseMembers() }
    }

    /// Seeks every member to `seconds` (exactly) and waits until all have landed, each for at
    /// most 30 s (on the monotonic clock): a member that has not landed by then
    /// is not waited for further, and the group goes on from `seconds`. A playing group plays
    /// on from there together.
    /// - Throws: ``/PlayerKitCore/PlayerError/invalidArgument(name:value:reason:)`` for a NaN or negative
    ///   position; the errors of ``/PlayerKitCore/MediaPlayer/seek(to:precision:)``.
    public func seek(to seconds: Double) async throws(PlayerError) {
        try PlayerCommand.seek(to: seconds, precision: .exact).validate()
        try await operations.run { () async throws(PlayerError) in
            let wasPlaying = phase == .playing
            try await seekMembers(to: seconds)
            if wasPlaying { try await playMembers() }
        }
    }

    /// Sets the group's speed (within ``/PlayerKitCore/PlayerCommand/speedRange``) for every member and the clock.
    /// - Throws: ``/PlayerKitCore/PlayerError/invalidArgument(name:value:reason:)`` outside the range.
    public func setSpeed(_ speed: Double) async throws(PlayerError) {
        try PlayerCommand.setSpeed(speed).validate()
        try await operations.run { () async throws(PlayerError) in
            let now = clock.now
            let anchor = change { state -> Double? in
                state.anchorPosition = state.clockPosition(at: now)
                state.anchorTime = now
                state.speed = speed
                return state.phase == .playing ? state.anchorPosition : nil
            }
            engine.step { $0.setClock(anchor, speed: speed, at: now) }
            try await setMemberSpeeds(members)
        }
    }

    // MARK: Operations (inside `operations`)

    /// Sets every member's speed (all at once), then starts the members in turn, each once mpv
    /// has started the one before (``/PlayerKitCore/CommandPacing/inTurn``: handed over by the
    /// pump that read the answer, so nothing waits in between).
    /// Of the ways measured (`playerkit-bench sync-load`, Performance.md) this start is the
    /// tightest: handing `play` to every member at once spread four members' starts wider (the
    /// woken cores compete for two CPUs), and so did awaiting each member's `perform` in turn (a
    /// task hop per member).
    private func playMembers() async throws(PlayerError) {
        let players = members
        let speed = speed
        try await setMemberSpeeds(players)
        for result in await Player.perform(each: players.map { ($0, .play) }, pacing: .inTurn) { try result.get() }
        let now = clock.now
        let anchor = state.withLock { state -> Double? in
            guard !state.invalidated else { return nil }
            state.anchorPosition = state.anchorPosition ?? players.first?.position ?? 0
            state.anchorTime = now
            state.phase = .playing
            state.frameTime = nil
            return state.anchorPosition
        }
        let begun = anchor != nil
        if let anchor { engine.step { $0.setClock(anchor, speed: speed, at: now) } }
        // A member that began buffering while the others were being started was not yet
        // held for (the group was not playing when its state change arrived): hold now.
        if begun, let buffering = players.first(where: { $0.state == .buffering }) {
            hold(for: buffering.id)
        }
    }

    func pauseMembers() async throws(PlayerError) {
        let now = clock.now
        change { state in
            state.anchorPosition = state.clockPosition(at: now)
            state.phase = .paused
        }
        stopCorrecting(at: now)
        try await performOnEvery(members, .pause)
    }

    private func seekMembers(to seconds: Double) async throws(PlayerError) {
        try await pauseMembers()
        let players = members
        let targets = engine.read { machine in players.map { machine.mediaTime(of: $0.id, atTimeline: seconds) ?? seconds } }
        let landings = players.map { $0.events(kinds: [.seekCompleted], bufferLimit: 4) }
        defer { for landing in landings { landing.cancel() } }
        // Each member to the group's time plus its offset (before its start: its first frame).
        var carried: [PlayerID] = []
        for (player, result) in zip(players, await Player.perform(each: zip(players, targets).map { player, target in
            (player, PlayerCommand.seek(to: max(target, 0), precision: .exact))
        })) {
            switch result {
            case .success:
                carried.append(player.id)
            case .failure(let error):
                guard failurePolicy == .dropMember, player.isShutDown || player.state == .failed else { throw error }
                remove(player.id, reason: player.isShutDown ? .shutDown : .failed(error))
            }
        }
        // A member dropped meanwhile lands nowhere: only the others are waited for.
        for (player, landing) in zip(players, landings) where carried.contains(player.id) {
            _ = await landing.first(timeout: Self.seekLandingTimeout) { _ in true }
        }
        change { state in
            state.anchorPosition = seconds
            state.frameTime = nil
        }
    }

    // MARK: Following the members (on the thread that delivers their events)

    /// What the group does itself on a member's event, after the engine's step: a member that
    /// waits for the network holds the group, one that plays again after it regroups it; a
    /// failed or shut down member is handled by the failure policy.
    private func memberEvent(_ record: PlayerEventRecord, from id: PlayerID) {
        switch record.event {
        case .stateChanged(_, let to):
            if to == .buffering { hold(for: id) }
            if to == .playing { resumeIfHeld(by: id) }
        case .itemEnded(.error(let error)):
            memberFailed(id, error)
        case .shuttingDown where failurePolicy == .dropMember:
            // Its last words: the group's dropped(shutDown) comes before its shutDown.
            remove(id, reason: .shutDown)
        default:
            break
        }
    }

    private func hold(for id: PlayerID) {
        let now = clock.now
        let held = state.withLock { state -> Bool in
            guard state.phase == .playing else { return false }
            state.anchorPosition = state.clockPosition(at: now)
            state.phase = .waitingForMember(id)
            return true
        }
        guard held else { return }
        stopCorrecting(at: now)
        for player in members where player.id != id { try? player.send(.pause) }
    }

    /// The buffering member plays again: everyone goes on together from where it is (it is
    /// the one behind, and it has data there).
    private func resumeIfHeld(by id: PlayerID) {
        let held = state.withLock { state -> Bool in
            guard state.phase == .waitingForMember(id) else { return false }
            state.phase = .paused
            return true
        }
        guard held, let member = members.first(where: { $0.id == id }) else { return }
        try? member.send(.pause)
        let position = member.position ?? state.withLock { $0.anchorPosition } ?? 0
        // The seek waits for every member to land: it runs as a task of the group (cancelled by
        // `invalidate()`), serialized with the public calls, not on the delivering thread.
        track { [weak self] in
            guard let self else { return }
            try? await self.operations.run { () async throws(PlayerError) in
                guard !Task.isCancelled else { return }
                try await self.seekMembers(to: position)
                guard !Task.isCancelled else { return }
                try await self.playMembers()
            }
        }
    }

    private func memberFailed(_ id: PlayerID, _ error: PlayerError) {
        switch failurePolicy {
        case .stopGroup:
            let now = clock.now
            state.withLock { state in
                state.anchorPosition = state.clockPosition(at: now)
                state.phase = .paused
            }
            stopCorrecting(at: now)
            for player in members { try? player.send(.pause) }
        case .dropMember:
            remove(id, reason: .failed(error))
        }
    }

    /// Takes a member out of the group, and tells it why (``SyncEvent/dropped(_:)``, published on
    /// the member after the lock, as every group does).
    private func remove(_ id: PlayerID, reason: SyncEvent.DropReason) {
        engine.drop(id, reason: reason)
    }

    /// Starts a task of the group's own; `invalidate()` cancels it.
    private func track(_ body: @escaping @Sendable () async -> Void) {
        state.withLock { state in
            guard !state.invalidated else { return }
            state.nextTask += 1
            let number = state.nextTask
            state.tasks[number] = Task { [weak self] in
                await body()
                self?.state.withLock { _ = $0.tasks.removeValue(forKey: number) }
            }
        }
    }

    /// One step of the group's state, under its lock.
    func change<Result>(_ body: (inout State) -> Result) -> Result {
        state.withLock(body)
    }
}
