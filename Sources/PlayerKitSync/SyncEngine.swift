import DequeModule
import PlayerKitCore
import PlayerKitSupport

/// The one owner of a correction machine (``SyncMachine``) and of the players it keeps
/// together: it watches every member, steps the machine with what they report, carries out
/// what it decides, keeps the figures and invalidates. ``SyncGroup``, ``MultiView`` and
/// ``ClockFollower`` are fronts over one each: what differs between them is data (the
/// machine's clock and the ``Rules`` below), and what a front adds (a group's transport, a
/// multi-view's loads) it does through the engine.
///
/// **Threading.** Any thread. The state is one lock around the machine and the members. A step
/// changes the machine under the lock and appends its actions to an outbox; whoever finds the
/// outbox idle drains it after releasing the lock, so actions leave in the order the steps
/// decided them, even when a member's event steps while another thread drains (that step only
/// appends). Running an action never waits: commands are sent (``/PlayerKitCore/MediaPlayer/send(_:)``),
/// events published, wake-ups scheduled. No app code runs under the lock; the front's handler
/// runs after the engine's own step, on the thread that delivered the event.
final class SyncEngine: Sendable {
    /// What a front asks the engine to do with each member beyond what it does with every one
    /// (follow its frames, buffer, seeks, state and speed).
    struct Rules: Sendable {
        /// Which reported positions are frames the machine measures.
        enum Frames: Sendable {
            /// Every position change.
            case everyPosition
            /// Only once the member's item showed its first frame (the 0 a player reports
            /// while it loads is not a frame), until it loads another.
            case onceShowing
        }

        /// Which clock each member's video follows.
        enum VideoClocks: Sendable {
            /// The engine leaves it as the app set it.
            case untouched
            /// The member heard loudest (alone, or above every other) keeps its video on its
            /// audio, for lip sync; every other one's runs on its own clock
            /// (``/PlayerKitCore/VideoClock/independent``), so speed trims do not move its frames.
            case followLoudest
        }

        /// Commands sent to each player as it joins (sent, never waiting).
        var joinCommands: [PlayerCommand] = []
        var frames: Frames = .everyPosition
        var videoClocks: VideoClocks = .untouched
        /// The member events the front handles itself, after the engine's own step.
        var frontKinds: Set<PlayerEventKind> = []
    }

    /// A front's handler of its members' events (of ``Rules/frontKinds`` and the engine's own).
    typealias FrontHandler = @Sendable (PlayerEventRecord, PlayerID) -> Void

    private struct Member: Sendable {
        let player: any MediaPlayer
        /// Its frame changes, buffer and events, followed while it is a member.
        var watch: MemberWatch?
        /// Whether its item has shown its first frame (``Rules/Frames/onceShowing``).
        var showing = false
        /// Its volume (100 until known) and mute, as its events last said.
        var volume: Double
        var muted: Bool
        /// How loud it is heard (0: muted or silent).
        var loudness: Double { muted ? 0 : max(0, volume) }
        /// The video clock it was last given (``Rules/VideoClocks/followLoudest``).
        var videoClock: VideoClock = .independent
    }

    /// An action decided under the lock, with the member it names as it was then.
    private struct Pending: Sendable {
        let action: SyncMachine.Action
        let player: (any MediaPlayer)?
    }

    private struct State: Sendable {
        var machine: SyncMachine
        var members: [Member] = []
        var outbox = Deque<Pending>()
        var draining = false
        var invalidated = false
        var front: FrontHandler?
        /// The spread of the members' latest skews, each time every member had one: a figure
        /// for tests and the benchmark.
        var spreads = Deque<Double>()

        func player(_ id: PlayerID?) -> (any MediaPlayer)? { id.flatMap { id in members.first { $0.player.id == id }?.player } }

        mutating func enqueue(_ actions: [SyncMachine.Action]) {
            for action in actions { outbox.append(Pending(action: action, player: player(action.member))) }
        }

        /// Whether the caller is to drain (the outbox has work and nobody drains it).
        mutating func claimDrain() -> Bool {
            guard !draining, !outbox.isEmpty else { return false }
            draining = true
            return true
        }

        /// The clock each member's video should follow: its audio's for the member heard
        /// loudest, above every other; its own for every other.
        func videoClocks() -> [PlayerID: VideoClock] {
            let loudest = members.map(\.loudness).max() ?? 0
            let heard = members.filter { $0.loudness == loudest && loudest > 0 }
            return Dictionary(uniqueKeysWithValues: members.map { member in
                (member.player.id, heard.count == 1 && heard[0].player.id == member.player.id ? .audio : .independent)
            })
        }
    }

    /// How many spreads ``spreads`` keeps: ten minutes of two 60 fps members.
    static let spreadHistoryLimit = 36_000

    /// The clock the machine's instants and wake-ups are on.
    let clock: any MonotonicClock
    private let rules: Rules
    private let state: Locked<State>

    /// An engine over `machine` (members it already joined are not watched: join them with
    /// ``add(_:)``), following members by `rules`, on `clock`.
    init(machine: SyncMachine, rules: Rules, clock: any MonotonicClock) {
        self.clock = clock
        self.rules = rules
        state = Locked(State(machine: machine))
    }

    deinit {
        invalidate()
    }

    /// The front's handler of member events; set once, before the first member is added.
    func setFrontHandler(_ handler: @escaping FrontHandler) {
        state.withLock { $0.front = handler }
    }

    // MARK: Members

    /// The members, in the order they joined.
    var members: [any MediaPlayer] { state.withLock { $0.members.map(\.player) } }

    /// Whether `id` is a member now.
    func isMember(_ id: PlayerID) -> Bool { state.withLock { state in state.members.contains { $0.player.id == id } } }

    /// Makes `player` a member: it joins the machine now, is sent ``Rules/joinCommands`` and
    /// is watched. Returns false (and does nothing) for a member or once invalidated.
    @discardableResult
    func add(_ player: any MediaPlayer) -> Bool {
        let id = player.id
        let now = clock.now
        let sound = rules.videoClocks == .followLoudest ? player.snapshot : nil
        let added = state.withLock { state -> Bool in
            guard !state.invalidated, !state.members.contains(where: { $0.player.id == id }) else { return false }
            state.members.append(Member(player: player, volume: sound?.volume ?? 100, muted: sound?.isMuted ?? false))
            state.enqueue(state.machine.join(id, at: now))
            return true
        }
        guard added else { return false }
        for command in rules.joinCommands { try? player.send(command) }
        var kinds: Set<PlayerEventKind> = [.positionChanged, .seekCompleted, .stateChanged, .bufferedMediaChanged, .speedChanged]
        if rules.frames == .onceShowing { kinds.insert(.firstFrame) }
        if rules.videoClocks == .followLoudest { kinds.formUnion([.volumeChanged, .muteChanged]) }
        kinds.formUnion(rules.frontKinds)
        let watch = MemberWatch(player, kinds: kinds) { [weak self] record in
            self?.handle(record, from: id)
        }
        let kept = state.withLock { state -> Bool in
            guard !state.invalidated, let index = state.members.firstIndex(where: { $0.player.id == id }) else { return false }
            state.members[index].watch = watch
            return true
        }
        if !kept { watch.cancel() }
        drain()
        followSound()
        return true
    }

    /// Takes member `id` out: the machine forgets it (publishing ``SyncEvent/dropped(_:)`` with
    /// `reason`; nil: no event, the app removed it) and it is no longer watched. It plays on as
    /// it is. Returns whether it was a member.
    @discardableResult
    func drop(_ id: PlayerID, reason: SyncEvent.DropReason?) -> Bool {
        let now = clock.now
        let member = state.withLock { state -> Member? in
            guard let index = state.members.firstIndex(where: { $0.player.id == id }) else { return nil }
            let member = state.members.remove(at: index)
            for action in state.machine.drop(id, reason: reason, at: now) {
                // The member's own event names a player no longer in the table.
                state.outbox.append(Pending(action: action, player: action.member == id ? member.player : state.player(action.member)))
            }
            return member
        }
        guard let member else { return false }
        member.watch?.cancel()
        drain()
        // The member heard may have left: another may now be heard loudest.
        followSound()
        return true
    }

    /// The clock member `id`'s video follows under ``Rules/VideoClocks/followLoudest``.
    func videoClock(for id: PlayerID) -> VideoClock {
        state.withLock { $0.members.first { $0.player.id == id }?.videoClock } ?? .independent
    }

    // MARK: Steps

    /// Reads the machine under the lock.
    func read<Result>(_ body: (SyncMachine) -> Result) -> Result {
        state.withLock { body($0.machine) }
    }

    /// One step of the machine under the lock; its actions after it, in order (nothing once
    /// invalidated).
    func step(_ body: (inout SyncMachine) -> [SyncMachine.Action]) {
        let drains = state.withLock { state -> Bool in
            guard !state.invalidated else { return false }
            state.enqueue(body(&state.machine))
            return state.claimDrain()
        }
        if drains { drainClaimed() }
    }

    /// One step of the machine under the lock, its commands performed and awaited: each
    /// member's in the order decided, the members at the same time; the step's other actions
    /// (events, drops, wake-ups) leave through the outbox first. Returns once every member
    /// answered (each within ``/PlayerKitCore/MediaPlayer/perform(_:timeout:)``'s bound).
    /// - Throws: the first refusal, in the order the step named the members, of a member that
    ///   is still a member; one that left meanwhile is not a failure.
    func perform(_ body: (inout SyncMachine) -> [SyncMachine.Action]) async throws(PlayerError) {
        var order: [PlayerID] = []
        var commands: [PlayerID: (player: any MediaPlayer, list: [PlayerCommand])] = [:]
        let drains = state.withLock { state -> Bool in
            guard !state.invalidated else { return false }
            var others: [SyncMachine.Action] = []
            for action in body(&state.machine) {
                guard case .send(let id, let command) = action, let player = state.player(id) else { others.append(action); continue }
                if commands[id] == nil {
                    order.append(id)
                    commands[id] = (player, [])
                }
                commands[id]?.list.append(command)
            }
            state.enqueue(others)
            return state.claimDrain()
        }
        if drains { drainClaimed() }
        let work = order.compactMap { id in commands[id].map { (id, $0.player, $0.list) } }
        let failures = await withTaskGroup(of: (PlayerID, PlayerError?).self) { group in
            for (id, player, list) in work {
                group.addTask {
                    do throws(PlayerError) {
                        for command in list { try await player.perform(command) }
                        return (id, nil)
                    } catch {
                        return (id, error)
                    }
                }
            }
            var failures: [PlayerID: PlayerError] = [:]
            for await (id, error) in group { if let error { failures[id] = error } }
            return failures
        }
        for id in order {
            if let error = failures[id], isMember(id) { throw error }
        }
    }

    /// Drains the outbox if nobody does.
    private func drain() {
        if state.withLock({ $0.claimDrain() }) { drainClaimed() }
    }

    /// Runs the outbox's actions until it is empty (the caller claimed the drain).
    private func drainClaimed() {
        while let batch = state.withLock({ state -> [Pending]? in
            guard !state.outbox.isEmpty else {
                state.draining = false
                return nil
            }
            defer { state.outbox.removeAll(keepingCapacity: true) }
            return Array(state.outbox)
        }) {
            for pending in batch { run(pending) }
        }
    }

    /// Carries out one action, never waiting.
    private func run(_ pending: Pending) {
        switch pending.action {
        case .send(_, let command):
            try? pending.player?.send(command)
        case .publish(_, let event):
            pending.player?.publish(event)
        case .drop(let id, let reason):
            drop(id, reason: reason)
        case .wake(let instant):
            let clock = clock
            clock.runOnce(at: instant) { [weak self] in
                let now = clock.now
                self?.step { $0.wake(at: now) }
            }
        }
    }

    // MARK: Figures

    /// Every measured member's skew figures.
    var skews: [PlayerID: MemberSkew] { state.withLock { $0.machine.skews } }

    /// The spreads of the members' latest skews, oldest first (at most ``spreadHistoryLimit``).
    var spreads: [Double] { state.withLock { Array($0.spreads) } }

    /// How many corrective seeks the machine made.
    var correctiveSeeks: Int { state.withLock { $0.machine.correctiveSeeks } }

    /// The settings now: those the machine was made with, and the offsets and drifts set since.
    var settings: SyncSettings { state.withLock { $0.machine.settings } }

    // MARK: Lifetime

    /// Stops following the members: cancels every watch. The members play on as they are, and
    /// no step runs again. Idempotent.
    func invalidate() {
        let members = state.withLock { state -> [Member] in
            defer {
                state.invalidated = true
                state.members = []
                state.outbox.removeAll()
                state.front = nil
            }
            return state.invalidated ? [] : state.members
        }
        for member in members { member.watch?.cancel() }
    }

    // MARK: The members' side (on the thread that delivers their events)

    private func handle(_ record: PlayerEventRecord, from id: PlayerID) {
        switch record.event {
        case .positionChanged(let media):
            frame(id, media: media, at: record.time)
        case .firstFrame where rules.frames == .onceShowing:
            setShowing(id, true)
        case .seekCompleted(let position):
            step { $0.seekLanded(id, media: position, at: record.time) }
        case .bufferedMediaChanged(let media):
            // A member seeks only within what it has: one behind without the data to catch up
            // plays on (and stalls, or catches up once the data is in).
            step { $0.cached(id, upTo: media.cachedUntil, seekableTo: media.seekableUntil, at: record.time) }
        case .stateChanged(_, let to):
            if rules.frames == .onceShowing, to == .loading || to == .idle { setShowing(id, false) }
            step { $0.stateChanged(id, to: to, at: record.time) }
        case .speedChanged(let speed):
            step { machine in
                machine.speedChanged(id, to: speed)
                return []
            }
        case .volumeChanged(let volume) where rules.videoClocks == .followLoudest:
            soundChanged(id, volume: volume)
        case .muteChanged(let muted) where rules.videoClocks == .followLoudest:
            soundChanged(id, muted: muted)
        default:
            break
        }
        guard rules.frontKinds.contains(record.event.kind), let front = state.withLock({ $0.front }) else { return }
        front(record, id)
    }

    /// A member showed a frame: one step (once it shows frames, by the rules), and the spread
    /// of the members' latest skews noted.
    private func frame(_ id: PlayerID, media: Double, at time: ContinuousClock.Instant) {
        let drains = state.withLock { state -> Bool in
            guard !state.invalidated else { return false }
            if rules.frames == .onceShowing, !state.members.contains(where: { $0.player.id == id && $0.showing }) { return false }
            let measured = state.machine.measurements
            state.enqueue(state.machine.frame(id, media: media, at: time))
            if state.machine.measurements != measured, let spread = state.machine.latestSpread {
                state.spreads.append(spread)
                if state.spreads.count > Self.spreadHistoryLimit { state.spreads.removeFirst() }
            }
            return state.claimDrain()
        }
        if drains { drainClaimed() }
    }

    private func setShowing(_ id: PlayerID, _ showing: Bool) {
        state.withLock { state in
            if let index = state.members.firstIndex(where: { $0.player.id == id }) { state.members[index].showing = showing }
        }
    }

    // MARK: Sound (``Rules/VideoClocks/followLoudest``)

    /// A member's volume or mute changed: the clock each member's video follows may change.
    private func soundChanged(_ id: PlayerID, volume: Double? = nil, muted: Bool? = nil) {
        let changed = state.withLock { state -> Bool in
            guard let index = state.members.firstIndex(where: { $0.player.id == id }) else { return false }
            let before = state.members[index].loudness
            if let volume { state.members[index].volume = volume }
            if let muted { state.members[index].muted = muted }
            return state.members[index].loudness != before
        }
        if changed { followSound() }
    }

    /// Gives each member the video clock its sound calls for (sent, in order per player, so
    /// quick changes end on the last).
    private func followSound() {
        guard rules.videoClocks == .followLoudest else { return }
        let changes = state.withLock { state -> [(any MediaPlayer, VideoClock)] in
            guard !state.invalidated else { return [] }
            let clocks = state.videoClocks()
            return state.members.indices.compactMap { index in
                let wanted = clocks[state.members[index].player.id] ?? .independent
                guard wanted != state.members[index].videoClock else { return nil }
                state.members[index].videoClock = wanted
                return (state.members[index].player, wanted)
            }
        }
        for (player, clock) in changes { try? player.send(.setVideoClock(clock)) }
    }
}

extension SyncMachine.Action {
    /// The member the action names (nil: a wake-up).
    var member: PlayerID? {
        switch self {
        case .send(let id, _), .publish(let id, _), .drop(let id, _): id
        case .wake: nil
        }
    }
}
