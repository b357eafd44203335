import PlayerKitCore
import PlayerKitSupport

/// A clock that moves only when a test tells it to: ``advance(by:)``.
/// Give it to a feature (`clock:`) and to ``FakePlayer``s, and a test decides when time passes:
/// a budget waiter's timeout, a sync group's drift, a player reaching the end of its item.
///
/// ```swift
/// let clock = ManualClock()
/// let player = try FakePlayer(id: "a", clock: clock)
/// try await player.load("clip.mp4")         // a fake load takes no clock time by default
/// clock.advance(by: .seconds(2))            // the fake plays two seconds
/// #expect(player.position == 2)
/// ```
///
/// Its instants are `ContinuousClock.Instant`s (the type of ``/PlayerKitCore/PlayerEventRecord/time``), starting from
/// the real `ContinuousClock.now` when it is made and moving only by ``advance(by:)``.
///
/// **Ordering.** An advance runs everything due, sleepers and ``runOnce(at:_:)`` actions, in
/// deadline order (ties in the order they were scheduled), and sets ``now`` to each deadline
/// as it goes, so a fake player that reaches its end at 4 s sees `now` = 4 s even when the
/// clock was advanced by 10 s. Actions run on the advancing thread with no lock held. A
/// sleeping task resumes on Swift's pool after that; wait for its effect (an event) with a
/// timeout, or for it to sleep again with ``waitForSleepers(_:timeout:)``.
///
/// **Threading.** Safe from any thread and task.
public final class ManualClock: MonotonicClock {

    private enum Action {
        case resume(CheckedContinuation<Void, any Error>)
        /// `awaited`: a task waits for it (a fake player's load, reply or preload timeout), so
        /// it counts in ``sleeperCount``.
        case run(@Sendable () -> Void, awaited: Bool)
    }

    private struct Alarm {
        let id: UInt64
        let deadline: Instant
        let action: Action
    }

    private struct State {
        var now: Instant
        var lastID: UInt64 = 0
        var alarms: [Alarm] = []
        /// Sleepers cancelled before they were registered.
        var cancelledEarly: Set<UInt64> = []
    }

    private let state: Locked<State>
    /// When the clock was made.
    let start: Instant

    /// Creates a clock whose ``now`` is the real `ContinuousClock.now` at this moment.
    public init() {
        let start = ContinuousClock.now
        self.start = start
        self.state = Locked(State(now: start))
    }

    /// The clock's current instant.
    public var now: Instant { state.withLock { $0.now } }

    /// How far the clock has been advanced since it was made.
    var elapsed: Duration { now - start }

    /// The smallest step: one nanosecond.
    public var minimumResolution: Duration { .nanoseconds(1) }

    /// How many tasks wait on this clock now: tasks sleeping on it, and a ``FakePlayer``'s
    /// pending loads, replies and preloads (each waits for the clock to reach its time).
    var sleeperCount: Int {
        state.withLock {
            $0.alarms.count {
                switch $0.action {
                case .resume: true
                case .run(_, let awaited): awaited
                }
            }
        }
    }

    /// Suspends until the clock has been advanced to `deadline` (at once when it has been
    /// already). Throws `CancellationError` when the task is cancelled first.
    public func sleep(until deadline: Instant, tolerance: Duration? = nil) async throws {
        try Task.checkCancellation()
        let id = state.withLock { state -> UInt64 in
            state.lastID += 1
            return state.lastID
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                enum Outcome { case due, cancelled, waiting }
                let outcome = state.withLock { state -> Outcome in
                    if state.cancelledEarly.remove(id) != nil { return .cancelled }
                    if deadline <= state.now { return .due }
                    state.alarms.append(Alarm(id: id, deadline: deadline, action: .resume(continuation)))
                    return .waiting
                }
                switch outcome {
                case .due: continuation.resume()
                case .cancelled: continuation.resume(throwing: CancellationError())
                case .waiting: break
                }
            }
        } onCancel: {
            let alarm = state.withLock { state -> Alarm? in
                guard let index = state.alarms.firstIndex(where: { $0.id == id }) else {
                    state.cancelledEarly.insert(id)
                    return nil
                }
                return state.alarms.remove(at: index)
            }
            if case .resume(let continuation)? = alarm?.action { continuation.resume(throwing: CancellationError()) }
        }
        // A sleep that completed normally may have left its early-cancel mark unused.
        state.withLock { _ = $0.cancelledEarly.remove(id) }
    }

    /// A scheduled action: ``cancel()`` withdraws it if it has not run yet.
    struct ScheduledAction: Sendable {
        fileprivate let id: UInt64
        fileprivate let clock: ManualClock

        /// Withdraws the action; returns whether it had not run yet.
        @discardableResult
        func cancel() -> Bool {
            // The alarm (and the action it holds) is released after the lock: what the action
            // captured may run a deinit.
            let removed = clock.state.withLock { state -> Alarm? in
                guard let index = state.alarms.firstIndex(where: { $0.id == id }) else { return nil }
                return state.alarms.remove(at: index)
            }
            return removed != nil
        }
    }

    /// Runs `action` when the clock is advanced to `deadline` (at the next advance when it is
    /// past already), on the advancing thread, in deadline order with everything else due.
    /// What ``FakePlayer`` times its loads, positions and ends with.
    @discardableResult
    func schedule(at deadline: Instant, _ action: @escaping @Sendable () -> Void) -> ScheduledAction {
        schedule(at: deadline, awaited: false, action)
    }

    /// An action a task waits for (a fake player's pending load, reply
    /// or preload timeout): it counts in ``sleeperCount`` until it runs or is cancelled.
    func schedule(at deadline: Instant, awaited: Bool, _ action: @escaping @Sendable () -> Void) -> ScheduledAction {
        let id = state.withLock { state -> UInt64 in
            state.lastID += 1
            state.alarms.append(Alarm(id: state.lastID, deadline: deadline, action: .run(action, awaited: awaited)))
            return state.lastID
        }
        return ScheduledAction(id: id, clock: self)
    }

    /// The ``/PlayerKitCore/MonotonicClock`` one-shot timer,
    /// run on the advancing thread when the clock reaches `deadline`.
    public func runOnce(at deadline: Instant, _ action: @escaping @Sendable () -> Void) {
        schedule(at: deadline, action)
    }

    /// Moves the clock forward by `duration`, running what falls due on the way (see
    /// ``ManualClock`` for the order). A negative duration does nothing.
    public func advance(by duration: Duration) {
        advance(to: now.advanced(by: duration))
    }

    /// Moves the clock forward to `deadline` (never back), running what falls due on the way.
    func advance(to deadline: Instant) {
        while true {
            let due = state.withLock { state -> Alarm? in
                let index = state.alarms.indices
                    .filter { state.alarms[$0].deadline <= deadline }
                    .min { (state.alarms[$0].deadline, state.alarms[$0].id) < (state.alarms[$1].deadline, state.alarms[$1].id) }
                guard let index else {
                    if deadline > state.now { state.now = deadline }
                    return nil
                }
                let alarm = state.alarms.remove(at: index)
                if alarm.deadline > state.now { state.now = alarm.deadline }
                return alarm
            }
            guard let due else { return }
            switch due.action {
            case .resume(let continuation): continuation.resume()
            case .run(let action, _): action()
            }
        }
    }

    /// Suspends until at least `count` tasks wait on this clock (tasks asleep on it,
    /// and a fake player's pending loads, replies and preloads), or `timeout` of real time (on
    /// `ContinuousClock`) has passed; returns whether they do. A test calls it before
    /// ``advance(by:)`` to know that the code under test has reached its wait.
    @discardableResult
    public func waitForSleepers(_ count: Int = 1, timeout: Duration = .seconds(5)) async -> Bool {
        let deadline = ContinuousClock.now.advanced(by: timeout)
        while sleeperCount < count {
            guard ContinuousClock.now < deadline, !Task.isCancelled else { return false }
            try? await Task.sleep(for: .milliseconds(1))
        }
        return true
    }
}
