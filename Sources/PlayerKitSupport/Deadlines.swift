import Dispatch

/// One-shot timeouts on the monotonic clock that let go of what they hold the moment the wait
/// they bound has ended.
///
/// Every awaited command, read, load and shutdown is bounded by a timeout that almost never
/// fires. A `DispatchQueue.asyncAfter` block cannot be withdrawn: it keeps its captures (the
/// caller's continuation, the operation's description) until its deadline, which for a load is
/// 120 s. A feed that loads a few items a second, or an app sending commands back to back, then
/// holds thousands of finished waits. Here a cancelled timeout frees its action at once; one
/// Dispatch timer serves them all, armed for the earliest deadline still pending.
///
/// Cancelled deadlines leave a 16-byte entry in the heap until it reaches the top or the heap
/// is rebuilt (when more than three quarters of it is cancelled), so memory stays proportional
/// to the timeouts pending, and the work per timeout is O(log n) amortized.
///
/// **Threading.** Safe from any thread. Actions run on the timer's serial queue, one after
/// another, outside the lock; an action must not block. (`@unchecked`: the one stored value that
/// is not `Sendable` is the Dispatch timer, whose calls libdispatch makes safe from any thread;
/// it is only rescheduled under the lock.)
package final class Deadlines: @unchecked Sendable {
    /// The process's timeouts (PlayerKit's waits).
    package static let shared = Deadlines(label: "PlayerKit.deadlines")

    /// A scheduled timeout, for ``cancel(_:)``.
    package struct Token: Hashable, Sendable {
        fileprivate let number: UInt64
    }

    private struct Entry {
        var deadline: UInt64
        var number: UInt64
    }

    private struct State {
        var heap: [Entry] = []
        var actions: [UInt64: @Sendable () -> Void] = [:]
        var nextNumber: UInt64 = 0
        /// The deadline the timer is armed for; nil when it is idle.
        var armed: UInt64?
    }

    private let state = Locked(State())
    private let timer: any DispatchSourceTimer
    /// How long the timer sleeps with nothing pending.
    private static let idleCheck: DispatchTimeInterval = .seconds(3600)

    package init(label: String) {
        let queue = DispatchQueue(label: label, qos: .userInitiated)
        timer = DispatchSource.makeTimerSource(queue: queue)
        timer.setEventHandler { [weak self] in self?.fire() }
        timer.schedule(deadline: .now() + Self.idleCheck)
        timer.activate()
    }

    deinit {
        timer.cancel()
    }

    /// Runs `action` once `delay` has passed on the monotonic clock, unless ``cancel(_:)`` came
    /// first.
    package func schedule(after delay: Duration, _ action: @escaping @Sendable () -> Void) -> Token {
        let nanoseconds = max(0, delay.components.seconds) * 1_000_000_000 + max(0, delay.components.attoseconds) / 1_000_000_000
        let deadline = DispatchTime.now().uptimeNanoseconds &+ UInt64(clamping: nanoseconds)
        return state.withLock { state in
            let number = state.nextNumber
            state.nextNumber += 1
            state.actions[number] = action
            Self.push(Entry(deadline: deadline, number: number), onto: &state.heap)
            if state.armed.map({ deadline < $0 }) ?? true {
                state.armed = deadline
                // Under the lock, so two threads cannot arm the timer out of order; this only
                // hands the new time to Dispatch and never waits.
                timer.schedule(deadline: DispatchTime(uptimeNanoseconds: deadline), leeway: .milliseconds(1))
            }
            return Token(number: number)
        }
    }

    /// Withdraws a timeout that has not fired: its action is released now and will not run.
    /// Nothing happens for one that already ran or was cancelled.
    package func cancel(_ token: Token) {
        let released = state.withLock { state -> (@Sendable () -> Void)? in
            let action = state.actions.removeValue(forKey: token.number)
            if state.heap.count > 64, state.heap.count > 4 * state.actions.count { Self.rebuild(&state) }
            return action
        }
        // The action (and what it captured) is released here, outside the lock.
        _ = released
    }

    /// How many timeouts are pending (scheduled, neither fired nor cancelled).
    package var pendingCount: Int { state.withLock { $0.actions.count } }

    /// How many entries the heap holds, cancelled ones included (for tests of its bound).
    package var heapCount: Int { state.withLock { $0.heap.count } }

    /// The timer's handler: takes every action whose deadline has passed, arms the timer for
    /// the next one, and runs the actions outside the lock.
    private func fire() {
        let due = state.withLock { state -> [@Sendable () -> Void] in
            let now = DispatchTime.now().uptimeNanoseconds
            var due: [@Sendable () -> Void] = []
            while let top = state.heap.first {
                guard let action = state.actions[top.number] else {
                    Self.popTop(&state.heap)
                    continue
                }
                guard top.deadline <= now else { break }
                Self.popTop(&state.heap)
                state.actions[top.number] = nil
                due.append(action)
            }
            if let next = state.heap.first {
                state.armed = next.deadline
                timer.schedule(deadline: DispatchTime(uptimeNanoseconds: next.deadline), leeway: .milliseconds(1))
            } else {
                state.armed = nil
                // Idle: a check now and then, which finds nothing due and comes back here.
                timer.schedule(deadline: .now() + Self.idleCheck)
            }
            return due
        }
        for action in due { action() }
    }

    // MARK: Binary min-heap on (deadline, number)

    private static func less(_ a: Entry, _ b: Entry) -> Bool {
        a.deadline != b.deadline ? a.deadline < b.deadline : a.number < b.number
    }

    private static func push(_ entry: Entry, onto heap: inout [Entry]) {
        heap.append(entry)
        var child = heap.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard less(heap[child], heap[parent]) else { break }
            heap.swapAt(child, parent)
            child = parent
        }
    }

    private static func popTop(_ heap: inout [Entry]) {
        let last = heap.removeLast()
        guard !heap.isEmpty else { return }
        heap[0] = last
        siftDown(&heap, from: 0)
    }

    private static func siftDown(_ heap: inout [Entry], from start: Int) {
        var parent = start
        while true {
            let left = 2 * parent + 1
            guard left < heap.count else { return }
            var smallest = left
            if left + 1 < heap.count, less(heap[left + 1], heap[left]) { smallest = left + 1 }
            guard less(heap[smallest], heap[parent]) else { return }
            heap.swapAt(smallest, parent)
            parent = smallest
        }
    }

    /// Drops the cancelled entries and restores the heap order (Floyd's bottom-up build: linear).
    private static func rebuild(_ state: inout State) {
        state.heap.removeAll { state.actions[$0.number] == nil }
        var index = state.heap.count / 2
        while index > 0 {
            index -= 1
            siftDown(&state.heap, from: index)
        }
    }
}

/// The timeout of one wait, armed once the wait has begun and cancelled when it ends, in either
/// order: cancelling first makes a later ``arm(after:on:_:)`` do nothing, so a wait that ended
/// before its timer was set never gets one.
package final class Expiry: Sendable {
    private enum Stage {
        case idle
        case armed(Deadlines.Token, Deadlines)
        case ended
    }

    private let stage = Locked<Stage>(.idle)

    package init() {}

    /// Schedules `action` after `delay`, unless the wait already ended (``cancel()``) or this
    /// expiry was armed before.
    package func arm(after delay: Duration, on deadlines: Deadlines = .shared, _ action: @escaping @Sendable () -> Void) {
        stage.withLock { stage in
            guard case .idle = stage else { return }
            // Scheduling takes the deadlines' lock: a different lock, never the other way round.
            stage = .armed(deadlines.schedule(after: delay, action), deadlines)
        }
    }

    /// Ends the wait: the timeout, if armed, is withdrawn and its action released.
    package func cancel() {
        let armed = stage.withLock { stage -> (Deadlines.Token, Deadlines)? in
            defer { stage = .ended }
            if case .armed(let token, let deadlines) = stage { return (token, deadlines) }
            return nil
        }
        if let (token, deadlines) = armed { deadlines.cancel(token) }
    }
}
