@testable import PlayerKitCore
import Dispatch
import Foundation
import Testing
import PlayerKit
import PlayerKitSupport
import PlayerKitTesting
import Synchronization

/// No PlayerKit lock around an app's handler: subscriptions that cancel and release each other
/// from inside their handlers, on every delivery path, never deadlock, and `cancel()` keeps its
/// promise (no call starts after it returned; called from ordinary code, none is running).
///
/// The events come from `PlayerEventEmitter`s, which hand them to the bus exactly as a player's
/// pump does, each on the thread that emits (so two emitters on two threads deliver at once, as
/// two players' pumps do). Every wait here is bounded: a deadlock fails by name, not by hanging.
@Suite("Cancelling subscriptions from handlers", .timeLimit(.minutes(3)))
struct SubscriptionCancelTests {
    /// Waits on a plain thread, so a deadlocked handler cannot hold the test's task.
    private func wait(_ semaphore: DispatchSemaphore, timeout: Duration) async -> Bool {
        await withCheckedContinuation { continuation in
            Thread {
                continuation.resume(returning: semaphore.wait(timeout: .now() + timeout.inSeconds) == .success)
            }.start()
        }
    }

    /// One round: two players, a subscription to each; both handlers are inside at once (each
    /// waits, bounded, for the other to enter), then each cancels the other's subscription.
    /// Returns false when a handler did not return within `timeout` (a deadlock).
    private func mutualCancelRound(_ round: Int, delivery: SubscriptionDelivery, timeout: Duration) async -> Bool {
        let bus = PlayerEventBus(label: "mutual-\(round)")
        let left = PlayerEventEmitter(playerID: Fixtures.uniqueID("left"), bus: bus)
        let right = PlayerEventEmitter(playerID: Fixtures.uniqueID("right"), bus: bus)
        let tokens = Locked<[String: PlayerSubscription]>([:])
        let leftEntered = DispatchSemaphore(value: 0)
        let rightEntered = DispatchSemaphore(value: 0)
        let returned = DispatchSemaphore(value: 0)
        let calls = Locked(0)
        let leftToken = bus.subscribe(to: left.playerID, delivery: delivery) { _ in
            calls.withLock { $0 += 1 }
            leftEntered.signal()
            _ = rightEntered.wait(timeout: .now() + 10)
            tokens.withLock { $0["right"] }?.cancel()
            returned.signal()
        }
        let rightToken = bus.subscribe(to: right.playerID, delivery: delivery) { _ in
            calls.withLock { $0 += 1 }
            rightEntered.signal()
            _ = leftEntered.wait(timeout: .now() + 10)
            tokens.withLock { $0["left"] }?.cancel()
            returned.signal()
        }
        tokens.withLock { $0 = ["left": leftToken, "right": rightToken] }
        // Each player's event on a thread of its own, as two pumps deliver.
        Thread { left.emit(.positionChanged(1)) }.start()
        Thread { right.emit(.positionChanged(1)) }.start()
        let first = await wait(returned, timeout: timeout)
        let second = await wait(returned, timeout: timeout)
        guard first, second else { return false }
        // Both cancelled, both gone from the bus, and later events reach neither handler.
        #expect(leftToken.isCancelled && rightToken.isCancelled, "round \(round)")
        #expect(bus.subscriptionCount == 0, "round \(round)")
        let witness = SubscriberLog()
        let witnessToken = bus.subscribe(delivery: .immediate) { witness.append($0) }
        left.emit(.positionChanged(2))
        right.emit(.positionChanged(2))
        // An emitter thread still finishing its own delivery may deliver these for the test.
        #expect(await eventually { witness.count == 2 }, "round \(round)")
        witnessToken.cancel()
        #expect(calls.withLock { $0 } == 2, "round \(round)")
        return true
    }

    @Test("two handlers that cancel each other's subscriptions, queue delivery: 100 rounds, no deadlock")
    func mutualCancelQueue() async {
        for round in 0..<100 {
            let finished = await mutualCancelRound(round, delivery: .queue(nil), timeout: .seconds(30))
            #expect(finished, "round \(round): a handler did not return within 30 s (deadlock)")
            if !finished { return }
        }
    }

    @Test("two handlers that cancel each other's subscriptions, immediate delivery: 100 rounds, no deadlock")
    func mutualCancelImmediate() async {
        for round in 0..<100 {
            let finished = await mutualCancelRound(round, delivery: .immediate, timeout: .seconds(30))
            #expect(finished, "round \(round): a handler did not return within 30 s (deadlock)")
            if !finished { return }
        }
    }

    @Test("a handler that drops the last reference to another subscription (its deinit cancels) does not wait for it")
    func releaseFromHandler() async {
        let bus = PlayerEventBus(label: "release")
        let left = PlayerEventEmitter(playerID: Fixtures.uniqueID("left"), bus: bus)
        let right = PlayerEventEmitter(playerID: Fixtures.uniqueID("right"), bus: bus)
        // Each handler holds the other subscription's only reference and drops it.
        let held = Locked<[String: PlayerSubscription]>([:])
        let leftEntered = DispatchSemaphore(value: 0)
        let rightEntered = DispatchSemaphore(value: 0)
        let returned = DispatchSemaphore(value: 0)
        held.withLock { initial in
            initial["left"] = bus.subscribe(to: left.playerID) { _ in
                leftEntered.signal()
                _ = rightEntered.wait(timeout: .now() + 10)
                let dropped = held.withLock { $0.removeValue(forKey: "right") }
                _ = dropped   // released here, inside the handler
                returned.signal()
            }
            initial["right"] = bus.subscribe(to: right.playerID) { _ in
                rightEntered.signal()
                _ = leftEntered.wait(timeout: .now() + 10)
                let dropped = held.withLock { $0.removeValue(forKey: "left") }
                _ = dropped
                returned.signal()
            }
        }
        Thread { left.emit(.positionChanged(1)) }.start()
        Thread { right.emit(.positionChanged(1)) }.start()
        #expect(await wait(returned, timeout: .seconds(30)), "a handler did not return (deadlock)")
        #expect(await wait(returned, timeout: .seconds(30)), "a handler did not return (deadlock)")
        #expect(await eventually { bus.subscriptionCount == 0 })
    }

    @Test("a delegate method that cancels a subscription whose handler is running does not wait for it")
    func cancelFromDelegateDoesNotWait() async throws {
        // A delegate is app code that PlayerKit runs: cancel() there does not wait for a handler
        // running on another thread, which may itself be waiting for the delegate.
        let bus = PlayerEventBus(label: "delegate")
        let emitter = PlayerEventEmitter(playerID: Fixtures.uniqueID("busy"), bus: bus)
        let handlerEntered = DispatchSemaphore(value: 0)
        let releaseHandler = DispatchSemaphore(value: 0)
        let token = bus.subscribe(to: emitter.playerID) { _ in
            handlerEntered.signal()
            _ = releaseHandler.wait(timeout: .now() + 10)
        }
        Thread { emitter.emit(.positionChanged(1)) }.start()
        #expect(await wait(handlerEntered, timeout: .seconds(10)))
        // What a delegate's thread does: cancel inside PlayerKit's app-code mark.
        let cancelReturned = DispatchSemaphore(value: 0)
        Thread { AppCodeMark.calling { token.cancel() }; cancelReturned.signal() }.start()
        #expect(await wait(cancelReturned, timeout: .seconds(5)), "cancel() from app code waited for the running handler")
        releaseHandler.signal()
        // From ordinary code, cancel() waits for a running call (already tested by
        // EventBusEmitterTests.cancelDuringDelivery); here the handler has been released.
        #expect(token.isCancelled)
    }

    /// What the stress test checks about one subscription.
    private final class Watched: Sendable {
        let number: Int
        /// Set after an ordinary `cancel()` returned: no call may start after.
        let strictlyCancelled = Atomic<Bool>(false)
        /// Set after a `cancel()` from inside a handler returned: calls already admitted on
        /// other threads (at most one per delivering thread) may still start.
        let cancelledFromHandler = Atomic<Bool>(false)
        let callsAfterStrictCancel = Atomic<Int>(0)
        let callsAfterHandlerCancel = Atomic<Int>(0)

        init(number: Int) { self.number = number }

        func entered() {
            if strictlyCancelled.load(ordering: .acquiring) { callsAfterStrictCancel.add(1, ordering: .relaxed) }
            if cancelledFromHandler.load(ordering: .acquiring) { callsAfterHandlerCancel.add(1, ordering: .relaxed) }
        }
    }

    /// The stress test's shared state: live subscriptions, the generator, what was watched.
    private final class Arena: Sendable {
        struct State {
            var random: SeededGenerator
            var live: [Int: (PlayerSubscription, Watched)] = [:]
            var all: [Watched] = []
            var next = 0
            var operations = 0
        }
        let state: Locked<State>
        let bus: PlayerEventBus
        let ids: [PlayerID]
        let budget: Int

        init(seed: UInt64, bus: PlayerEventBus, ids: [PlayerID], budget: Int) {
            state = Locked(State(random: SeededGenerator(seed: seed)))
            self.bus = bus
            self.ids = ids
            self.budget = budget
        }

        /// Makes a subscription with a random selection, delivery and kinds.
        func subscribeOne() {
            let (number, selection, immediate) = state.withLock { state -> (Int, PlayerSelection, Bool) in
                state.next += 1
                let selection: PlayerSelection = Int.random(in: 0..<4, using: &state.random) == 0
                    ? .all : .player(ids[Int.random(in: 0..<ids.count, using: &state.random)])
                return (state.next, selection, Bool.random(using: &state.random))
            }
            let watched = Watched(number: number)
            let token = bus.subscribe(to: selection, delivery: immediate ? .immediate : .queue(nil)) { [self] _ in
                watched.entered()
                // A handler that takes a moment: calls on several threads overlap, as the
                // mutual cancels that deadlocked needed.
                usleep(20)
                act(inHandler: true)
            }
            state.withLock { state in
                state.live[number] = (token, watched)
                state.all.append(watched)
            }
        }

        /// One random operation: subscribe, cancel or release (drop the last reference).
        func act(inHandler: Bool) {
            enum Operation { case subscribe, cancel, release, nothing }
            var (operation, token, watched) = state.withLock { state -> (Operation, PlayerSubscription?, Watched?) in
                guard state.operations < budget else { return (.nothing, nil, nil) }
                state.operations += 1
                let roll = Int.random(in: 0..<10, using: &state.random)
                let operation: Operation = roll < 3 ? .subscribe : roll < 6 ? .cancel : roll < 8 ? .release : .nothing
                guard operation == .cancel || operation == .release else { return (operation, nil, nil) }
                guard let key = state.live.keys.randomElement(using: &state.random),
                      let (token, watched) = state.live.removeValue(forKey: key) else { return (.nothing, nil, nil) }
                return (operation, token, watched)
            }
            switch operation {
            case .subscribe:
                subscribeOne()
            case .cancel:
                token?.cancel()
            case .release:
                // Drop the only reference: its deinit cancels, here.
                token = nil
            case .nothing:
                return
            }
            _ = token
            guard let watched else { return }
            if inHandler {
                watched.cancelledFromHandler.store(true, ordering: .releasing)
            } else {
                watched.strictlyCancelled.store(true, ordering: .releasing)
            }
        }

        var operations: Int { state.withLock { $0.operations } }

        func cancelAll() -> [Watched] {
            let (live, all) = state.withLock { state in (Array(state.live.values), state.all) }
            state.withLock { $0.live.removeAll() }
            for (token, watched) in live {
                token.cancel()
                watched.strictlyCancelled.store(true, ordering: .releasing)
            }
            return all
        }
    }

    @Test("seeded stress: 8 players, random subscribe, cancel and release from inside handlers, no deadlock, no call after cancel")
    func seededStress() async {
        let seed = UInt64(ProcessInfo.processInfo.environment["PLAYERKIT_STRESS_SEED"] ?? "") ?? UInt64.random(in: 1...UInt64.max)
        let bus = PlayerEventBus(label: "stress")
        let emitters = (0..<8).map { PlayerEventEmitter(playerID: Fixtures.uniqueID("stress\($0)"), bus: bus) }
        let arena = Arena(seed: seed, bus: bus, ids: emitters.map(\.playerID), budget: 4_000)
        for _ in 0..<24 { arena.subscribeOne() }
        // Each player's pump: a thread emitting 400 events. The test's own thread (ordinary
        // code) makes random calls beside them.
        let done = DispatchSemaphore(value: 0)
        for emitter in emitters {
            Thread {
                for index in 0..<400 { emitter.emit(.positionChanged(Double(index) / 30)) }
                done.signal()
            }.start()
        }
        let driverDone = DispatchSemaphore(value: 0)
        Thread {
            for _ in 0..<400 { arena.act(inHandler: false) }
            driverDone.signal()
        }.start()
        var finished = await wait(driverDone, timeout: .seconds(60))
        for _ in emitters where finished { finished = await wait(done, timeout: .seconds(60)) }
        #expect(finished, "seed \(seed): a thread did not finish within 60 s (deadlock)")
        guard finished else { return }
        let all = arena.cancelAll()
        // Events after every cancel: none may reach a handler.
        for emitter in emitters { emitter.emit(.positionChanged(99)) }
        #expect(await eventually { bus.subscriptionCount == 0 }, "seed \(seed)")
        let strictViolations = all.filter { $0.callsAfterStrictCancel.load(ordering: .acquiring) > 0 }
        // A cancel from inside a handler does not wait for a call already admitted on another
        // thread: at most one per delivering thread (8 players) may start after it returned.
        let looseViolations = all.filter { $0.callsAfterHandlerCancel.load(ordering: .acquiring) > emitters.count }
        #expect(strictViolations.isEmpty, "seed \(seed): subscriptions \(strictViolations.map(\.number)) were called after an ordinary cancel() returned")
        #expect(looseViolations.isEmpty, "seed \(seed): subscriptions \(looseViolations.map(\.number)) kept being called after a cancel() from a handler")
        #expect(arena.operations > 100, "seed \(seed): only \(arena.operations) operations ran")
    }
}
