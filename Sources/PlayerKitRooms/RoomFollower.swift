import Foundation
import Logging
import PlayerKitCore
import PlayerKitSupport
import PlayerKitSync

/// Keeps local players on a Syncplay room's clock: they start, pause and seek when anyone in
/// the room does, and drift is corrected continuously, frame by frame, by a
/// ``/PlayerKitSync/ClockFollower`` on the room's clock (the correction a
/// ``/PlayerKitSync/SyncGroup`` and a ``/PlayerKitSync/MultiView`` run):
/// small speed trims, a player a little ahead held until the clock reaches its frame, and one
/// further off than the `correction` settings' threshold seeked to where the clock will be.
///
/// ```swift
/// let room = try RoomClient(.init(host: "127.0.0.1", room: "demo", name: "left"))
/// try await player.preload("clip.mp4")               // paused on its first frame
/// let follower = try RoomFollower(room: room, players: [player])
/// try await room.join()
/// follower.start()
/// try await follower.play()                            // every member of the room starts
/// ```
///
/// **The clock.** The follower keeps the room's clock itself, on the monotonic clock it is
/// given (`ContinuousClock` unless a test gives a `ManualClock`): a position as of an instant,
/// moving on at speed 1 while the room plays.
/// It sets the clock from the room when the room is paused, started or seeked (by anyone), when
/// it first hears from the room (a late joiner catches up to the room's position), and when the
/// room's periodic state stays more than `resynchronizationThreshold` away from it.
/// A room's position reached us a one-way delay after the server sent it: the follower
/// adds the delay the client measured (``RoomClient/roundTrip(waitingUpTo:)`` / 2) while the room plays. It
/// answers the server's requests for its state with its clock, so every follower in a room
/// reports the same clock.
///
/// **Faults.** When the connection ends, the players go on with the local clock. After a
/// reconnection (a server restart makes a new, paused room at 0), the follower tells the room
/// where it is, so the room resumes from there rather than the players jumping back.
///
/// **Events.** Each player gets the room's changes as ``RoomPlayerEvent/room(_:)`` (not the
/// periodic state), and the correction's ``/PlayerKitSync/SyncEvent``s, as every group's members
/// do: its drift about once a second (``/PlayerKitSync/SyncEvent/drift(_:)``), joined, aligned,
/// fell behind, realigned; through its own event path: delegate, bus by player ID, async
/// sequences.
///
/// **Threading.** Methods may be called from any thread. The follower keeps its state behind one
/// lock, changed in single steps; what a step decides runs after the lock is released
/// (Architecture.md, "Features: one concurrency model"). It reads the room's events on a task of
/// its own and takes the players' frames where they are delivered (`.immediate`: on a player's
/// pump), for one step each, and commands the players with
/// ``/PlayerKitCore/MediaPlayer/send(_:)``, which does not wait for mpv. ``invalidate()`` (or
/// releasing the follower) stops it; the players stay as they are.
public final class RoomFollower: Sendable {
    /// Tuning of the follower (the initializer's `resynchronizationThreshold`).
    struct Settings: Sendable, Hashable {
        var resynchronizationThreshold: Double = 0.5
    }

    /// The follower's view of the room's clock (shown to the app as a ``RoomState``).
    struct Clock: Sendable, Hashable {
        /// The position (seconds) at `time`.
        var position: Double
        /// The monotonic instant `position` refers to.
        var time: ContinuousClock.Instant
        /// Whether the room plays (the position moves on at speed 1).
        var playing: Bool

        /// The clock's position at `instant`, before `time` too (a frame rendered before the
        /// clock was set is measured against where the clock was then).
        func position(at instant: ContinuousClock.Instant) -> Double {
            playing ? position + instant.seconds(since: time) : position
        }
    }

    private struct State: Sendable {
        let players: [any MediaPlayer]
        var clock: Clock?
        /// Periodic states in a row that were off the clock by more than the threshold.
        var offStates = 0
        /// A seek someone made: the next state sets the clock.
        var seekPending = false
        /// Reconnected: our clock was told to the room; its states are not taken until one
        /// agrees with it (or a few went by).
        var rejoinStates: Int?
        var started = false
        var invalidated = false
        var task: Task<Void, Never>?
        /// Messages to the room the follower sends itself (our clock, after a rejoin or a local
        /// change): kept until they end, cancelled by `invalidate()`.
        var tellTasks: [UInt64: Task<Void, Never>] = [:]
        var lastTellTask: UInt64 = 0
    }

    /// The room followed.
    let room: any RoomSession
    /// The settings given at creation.
    let tuning: Settings
    /// The players' correction, on the room's clock (set whenever the clock is; stopped while
    /// the room is paused): it follows the players from creation, and it alone moves them and
    /// gives them their speed.
    private let correction: ClockFollower
    private let state: Locked<State>
    private let time: any MonotonicClock
    private let logger: Logger

    /// A follower of `room` (a ``RoomClient``, or a test's own ``RoomSession``) for `players`
    /// (any number, none twice; several are kept in lockstep with each other too), keeping the room's clock
    /// on `clock`, whose instants the room's states and the players' events must be on. Load
    /// their media before the room plays; ``start()`` begins following.
    /// - Throws: ``RoomError/invalidArgument(name:value:reason:)`` for a player
    ///   listed twice, a threshold that is not above 0, or `settings` that
    ///   `validate()` refuses (the error names the setting).
    /// - Parameters:
    ///   - room: the room to follow.
    ///   - players: the local players to keep on the room's clock.
    ///   - settings: how each player is corrected toward the clock: PlayerKit's one sync
    ///     settings type, as for ``/PlayerKitSync/SyncGroup`` and ``/PlayerKitSync/MultiView``;
    ///     ``/PlayerKitSync/SyncSettings/onDemand`` by default (speed trims within ``/PlayerKitSync/SyncSettings/maximumSpeedTrim``, a seek past
    ///     ``/PlayerKitSync/SyncSettings/realignThreshold``).
    ///   - resynchronizationThreshold: how far the room's periodic state may be from
    ///     the follower's clock, twice in a row, before the clock is set from the room. Default
    ///     0.5 s: the room's periodic positions carry the server's delay estimates, which are
    ///     coarse; starts, pauses and seeks set the clock at once whatever this says.
    ///   - clock: the monotonic clock the room's clock is kept on.
    ///   - logger: where the follower logs.
    public init(room: any RoomSession, players: [any MediaPlayer],
                settings: SyncSettings = .onDemand, resynchronizationThreshold: Duration = .milliseconds(500),
                clock: any MonotonicClock = ContinuousClock(),
                logger: Logger = Logger(label: "PlayerKit.rooms")) throws(RoomError) {
        let ids = players.map(\.id.rawValue)
        guard Set(ids).count == ids.count else {
            throw .invalidArgument(name: "players", value: ids.joined(separator: ", "), reason: "lists a player twice")
        }
        guard resynchronizationThreshold > .zero else {
            throw .invalidArgument(name: "resynchronizationThreshold", value: "\(resynchronizationThreshold)", reason: "must be above 0")
        }
        do throws(PlayerError) {
            correction = try ClockFollower(players: players, settings: settings, clock: clock)
        } catch {
            if case .invalidArgument(let name, let value, let reason) = error {
                throw .invalidArgument(name: "settings \(name)", value: value, reason: reason)
            }
            throw .invalidArgument(name: "settings", value: "\(settings)", reason: "\(error)")
        }
        self.room = room
        self.tuning = Settings(resynchronizationThreshold: resynchronizationThreshold.inSeconds)
        self.time = clock
        self.logger = logger
        state = Locked(State(players: players))
    }

    deinit {
        invalidate()
    }

    // MARK: Read-outs

    /// The follower's clock (nil until the room or a local call set it).
    var clock: RoomState? {
        state.withLock { $0.clock }.map { RoomState(position: $0.position, paused: !$0.playing, time: $0.time) }
    }
    /// The players followed.
    var players: [any MediaPlayer] { state.withLock { $0.players } }
    /// How far each measured player is from the room's clock, measured on its frame changes
    /// since the clock last moved (a start, a pause, a seek from the room or the app): its latest
    /// skew, the percentiles over the last 10 s and its drift as the correction judges it, the
    /// figure every PlayerKit group reports (``/PlayerKitSync/MemberSkew``). A player appears
    /// after its first measured frame.
    public var skews: [PlayerID: MemberSkew] { correction.skews }

    // MARK: Following

    /// Begins following: the room's events, each player's frames, and answering the server's
    /// requests for our state with the clock. Idempotent.
    public func start() {
        let go = state.withLock { state -> Bool in
            guard !state.started, !state.invalidated else { return false }
            state.started = true
            return true
        }
        guard go else { return }
        room.reportLocalState { [weak self] in
            guard let self, let clock = self.state.withLock({ $0.clock }) else { return nil }
            return (clock.position(at: self.time.now), !clock.playing)
        }
        // The correction on the clock as it is now (the app may have started the room before it
        // started following).
        if let clock = state.withLock({ $0.invalidated ? nil : $0.clock }) { setCorrectionClock(clock) }
        let events: EventStream<RoomEvent> = room.events(bufferLimit: EventStream<RoomEvent>.defaultBufferLimit)
        let task = Task { [weak self] in
            for await event in events {
                    guard let self else { return }
                    self.handle(event)
                }
        }
        let kept = state.withLock { state -> Bool in
            guard !state.invalidated else { return false }
            state.task = task
            return true
        }
        if !kept { task.cancel() }
    }

    /// Stops following: the players stay as they are and usable. Idempotent; called when the
    /// follower is released.
    public func invalidate() {
        let tasks = state.withLock { state -> [Task<Void, Never>] in
            defer {
                state.invalidated = true
                state.task = nil
                state.tellTasks = [:]
            }
            return [state.task].compactMap { $0 } + Array(state.tellTasks.values)
        }
        for task in tasks { task.cancel() }
        correction.invalidate()
    }

    // MARK: Changing the room from here

    /// Starts the room (and the local players) from the clock's position, or the first player's.
    /// Right after joining, waits first (up to 3 s) until the path to the server was measured,
    /// as ``pause()`` and ``seek(to:)`` do: without that, the others would start late by our
    /// one-way delay.
    /// - Throws: ``RoomError/closed`` while not connected; ``RoomError/invalidArgument(name:value:reason:)``
    ///   before anything is loaded (no position to start from).
    public func play() async throws(RoomError) {
        await measured()
        let position = try currentPosition()
        // The client hears of the change before the clock does (``RoomClient/beginChange(_:)``):
        // a state the server sent before it cannot reach the clock stamped after it.
        let change = room.beginChange(position: position, paused: false, seeking: false)
        apply(Clock(position: position, time: time.now, playing: true), seek: false)
        try await change.send()
    }

    /// Pauses the room (and the local players) at the clock's position.
    /// - Throws: ``RoomError/closed`` while not connected.
    public func pause() async throws(RoomError) {
        await measured()
        let position = try currentPosition()
        let change = room.beginChange(position: position, paused: true, seeking: false)
        apply(Clock(position: position, time: time.now, playing: false), seek: true)
        try await change.send()
    }

    /// Seeks the room (and the local players) to `position`, playing on if it plays.
    /// - Throws: ``RoomError/invalidArgument(name:value:reason:)`` for a NaN, infinite or negative
    ///   position; ``RoomError/closed`` while not connected.
    public func seek(to position: Double) async throws(RoomError) {
        guard position.isFinite, position >= 0 else {
            throw .invalidArgument(name: "position", value: "\(position)", reason: "is not a position")
        }
        await measured()
        let playing = state.withLock { $0.clock }?.playing ?? false
        let change = room.beginChange(position: position, paused: !playing, seeking: true)
        apply(Clock(position: position, time: time.now, playing: playing), seek: true)
        try await change.send()
    }

    /// Waits (up to 3 s) until the path to the server was measured once: the server adds its
    /// estimate of our message's age to the position of a start, and has none before that.
    private func measured() async {
        _ = await room.roundTrip(waitingUpTo: .seconds(3))
    }

    private func currentPosition() throws(RoomError) -> Double {
        if let clock = state.withLock({ $0.clock }) { return max(0, clock.position(at: time.now)) }
        if let position = players.first?.position { return position }
        throw .invalidArgument(name: "position", value: "none", reason: "nothing is loaded and the room has not said where it is")
    }

    // MARK: The room's side

    /// One event of the room, in the order the client published it (internal for the tests,
    /// which hand over an event late, as a slow delivery would).
    func handle(_ event: RoomEvent) {
        switch event {
        case .state(let room):
            take(room)
            return
        case .seeked:
            state.withLock { $0.seekPending = true }
        case .joined:
            rejoined()
        default:
            break
        }
        for player in players { player.publish(RoomPlayerEvent.room(event)) }
    }

    /// The room's state, about once a second and after every change.
    private func take(_ room: RoomState) {
        let now = time.now
        let roomClock = Clock(position: room.position, time: room.time, playing: !room.paused)
        enum Decision { case keep, adopt(seek: Bool), tell(Clock) }
        let decision = state.withLock { state -> Decision in
            guard let clock = state.clock else { return .adopt(seek: true) }
            // Received before the clock was last set here (its event was on its way while the
            // app started, paused or seeked): it says nothing about the room now, and adopting
            // it would undo the app's change, then tell the room so. (A seek in the same message
            // is as old.)
            if room.time < clock.time {
                state.seekPending = false
                return .keep
            }
            let off = abs(roomClock.position(at: now) - clock.position(at: now))
            if let seen = state.rejoinStates {
                // Reconnected: the room should now say what we told it.
                if roomClock.playing == clock.playing && off <= tuning.resynchronizationThreshold || seen >= 3 {
                    state.rejoinStates = nil
                } else {
                    state.rejoinStates = seen + 1
                    return seen == 1 ? .tell(clock) : .keep
                }
            }
            if state.seekPending {
                state.seekPending = false
                return .adopt(seek: true)
            }
            if roomClock.playing != clock.playing {
                // Paused: every player lands on the room's frame. Started: from where they are
                // when the room's position is that of the clock (a pause seeked them there).
                return .adopt(seek: !roomClock.playing || off > 0.05)
            }
            if off > (roomClock.playing ? tuning.resynchronizationThreshold : 0.01) {
                state.offStates += 1
                return state.offStates >= 2 || !roomClock.playing ? .adopt(seek: true) : .keep
            }
            state.offStates = 0
            return .keep
        }
        switch decision {
        case .keep:
            break
        case .adopt(let seek):
            logger.debug("clock set from the room", metadata: ["position": "\(room.position)", "paused": "\(room.paused)"])
            apply(roomClock, seek: seek)
        case .tell(let clock):
            let position = clock.position(at: now)
            tell(clock, at: position)
        }
    }

    /// Joined again after the connection ended: tell the room where we are, as the server may
    /// have forgotten (a restarted server makes a new room, paused at 0).
    private func rejoined() {
        let clock = state.withLock { state -> Clock? in
            guard let clock = state.clock else { return nil }
            state.rejoinStates = 0
            return clock
        }
        guard let clock else { return }
        let position = clock.position(at: time.now)
        tell(clock, at: position)
    }

    /// Tells the room our clock, on a task the follower keeps until it ends (`invalidate()`
    /// cancels it).
    private func tell(_ clock: Clock, at position: Double) {
        let room = room
        state.withLock { state in
            guard !state.invalidated else { return }
            state.lastTellTask += 1
            let number = state.lastTellTask
            state.tellTasks[number] = Task { [weak self] in
                try? await clock.playing ? room.seek(to: position, paused: false) : room.pause(at: position)
                self?.state.withLock { _ = $0.tellTasks.removeValue(forKey: number) }
            }
        }
    }

    /// Sets the clock and brings the players to it: seeked exactly to its position (when
    /// `seek`), then paused or started.
    private func apply(_ clock: Clock, seek: Bool) {
        state.withLock { state in
            state.clock = clock
            state.offStates = 0
            state.seekPending = false
        }
        setCorrectionClock(clock)
        // A player already there is not seeked when the room starts: a seek would delay its
        // start by a decode, which the room's other members do not have. Paused, it is always
        // seeked: a playing player's position lies between frames, and pausing stops it on the
        // next one, not on the room's.
        correction.moveMembers(seekingBeyond: seek ? (clock.playing ? .milliseconds(40) : .zero) : nil)
    }

    /// The room's clock, mapped onto the correction's: the room plays at speed 1.
    private func setCorrectionClock(_ clock: Clock) {
        do {
            try correction.setClock(clock.position, speed: 1, running: clock.playing, at: clock.time)
        } catch {
            // A room's position is checked when its message is parsed: a refusal is a bug.
            logger.error("the room's clock was refused by the correction", metadata: ["error": "\(error)", "position": "\(clock.position)"])
        }
    }
}

/// What a ``RoomFollower`` tells each of its players, through the player's own event path: to
/// its delegate (``/PlayerKitCore/PlayerDelegate/player(_:didEmit:)``), to bus subscribers of its ID, and to async
/// sequences.
///
/// `@nonexhaustive`: a `switch` over it outside PlayerKit needs `@unknown default`.
@nonexhaustive
public enum RoomPlayerEvent: PlayerFeatureEvent {
    /// Something happened in the room the player follows (every ``RoomEvent`` but the periodic
    /// ``RoomEvent/state(_:)``).
    case room(RoomEvent)

    /// ``PlayerKitCore/PlayerEventKind/room``.
    public var kind: PlayerEventKind { .room }

    /// E.g. "room(paused(position: 4.0, by: "left"))".
    public var description: String {
        switch self {
        case .room(let event): return "room(\(event))"
        }
    }

}

extension PlayerEventKind {
    /// ``RoomPlayerEvent/room(_:)``.
    public static let room: PlayerEventKind = "room"
}

