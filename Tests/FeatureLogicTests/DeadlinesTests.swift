import Foundation
import PlayerKitSupport
import Testing

/// The timeouts that bound PlayerKit's waits (`Deadlines`, `Expiry`): they fire in deadline
/// order, and a cancelled one lets go of what it holds at once, never at its deadline.
@Suite("Deadlines: timeouts that fire in order and release what they hold when withdrawn", .timeLimit(.minutes(1)))
struct DeadlinesTests {
    /// Something a timeout's action holds, to see when it is released.
    final class Held: Sendable {}

    /// Records what ran, in order.
    final class Log: Sendable {
        let entries = Locked<[Int]>([])
        func add(_ entry: Int) { entries.withLock { $0.append(entry) } }
        var all: [Int] { entries.withLock { $0 } }
    }

    @Test("deadlines fire in deadline order, whatever order they were scheduled in")
    func fireInOrder() async {
        let deadlines = Deadlines(label: "test.deadlines.order")
        let log = Log()
        for (index, milliseconds) in [60, 20, 40, 10, 30].enumerated() {
            _ = deadlines.schedule(after: .milliseconds(milliseconds)) { log.add(index) }
        }
        #expect(await eventually(timeout: .seconds(20)) { log.all.count == 5 })
        #expect(log.all == [3, 1, 4, 2, 0])
        #expect(deadlines.pendingCount == 0)
    }

    @Test("a cancelled timeout never runs, and what its action held is released at once")
    func cancelledIsReleased() async {
        let deadlines = Deadlines(label: "test.deadlines.cancel")
        let log = Log()
        weak var released: Held?
        let token: Deadlines.Token = {
            let held = Held()
            released = held
            return deadlines.schedule(after: .milliseconds(20)) { _ = held; log.add(1) }
        }()
        #expect(released != nil, "the pending action holds its captures")
        deadlines.cancel(token)
        #expect(released == nil, "cancelling released the action's captures before its deadline")
        // A later deadline on the same timer: when it has run, the cancelled one's time has
        // passed too, and the timer runs deadlines in order.
        _ = deadlines.schedule(after: .milliseconds(40)) { log.add(2) }
        #expect(await eventually(timeout: .seconds(20)) { log.all.contains(2) })
        #expect(log.all == [2])
        deadlines.cancel(token)
        #expect(deadlines.pendingCount == 0)
    }

    @Test("cancelled timeouts do not pile up: the heap stays proportional to those pending")
    func heapStaysBounded() {
        let deadlines = Deadlines(label: "test.deadlines.bound")
        let kept = deadlines.schedule(after: .seconds(600)) {}
        for _ in 0..<10_000 {
            deadlines.cancel(deadlines.schedule(after: .seconds(120)) {})
        }
        #expect(deadlines.pendingCount == 1)
        #expect(deadlines.heapCount <= 65, "heap entries: \(deadlines.heapCount)")
        deadlines.cancel(kept)
        #expect(deadlines.pendingCount == 0)
    }

    @Test("an expiry cancelled before it was armed is never armed; one armed and cancelled is withdrawn")
    func expiryOrder() async {
        let deadlines = Deadlines(label: "test.deadlines.expiry")
        let log = Log()
        let early = Expiry()
        early.cancel()
        early.arm(after: .milliseconds(1), on: deadlines) { log.add(1) }
        #expect(deadlines.pendingCount == 0, "the wait ended before its timer was set")

        let late = Expiry()
        late.arm(after: .seconds(60), on: deadlines) { log.add(2) }
        #expect(deadlines.pendingCount == 1)
        late.arm(after: .milliseconds(1), on: deadlines) { log.add(3) }
        #expect(deadlines.pendingCount == 1, "an expiry is armed once")
        late.cancel()
        #expect(deadlines.pendingCount == 0)

        let fired = Expiry()
        fired.arm(after: .milliseconds(5), on: deadlines) { log.add(4) }
        #expect(await eventually(timeout: .seconds(20)) { log.all == [4] })
        fired.cancel()
        #expect(log.all == [4])
    }

    @Test("a timeout already due when scheduled runs at once")
    func dueAtOnce() async {
        let deadlines = Deadlines(label: "test.deadlines.due")
        let log = Log()
        _ = deadlines.schedule(after: .zero) { log.add(1) }
        _ = deadlines.schedule(after: .milliseconds(-5)) { log.add(2) }
        #expect(await eventually(timeout: .seconds(20)) { log.all.count == 2 })
    }
}
