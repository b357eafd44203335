@testable import PlayerKitCore
import Dispatch
import Foundation
import Testing
import PlayerKit
import PlayerKitSupport

/// The bus's own promises, with the events of a player that is not backed by mpv: a
/// `PlayerEventEmitter` numbers them and hands them to the bus exactly as a player's pump does.
/// No mpv core, so these run in a fraction of a second; the channels of a real player (delegate,
/// streams, notifications, the pump's order) are EventBusTests'.
@Suite("Event bus, on an emitter (no mpv)", .timeLimit(.minutes(1)))
struct EventBusEmitterTests {
    /// `count` position reports from `emitter`, one call each.
    private func publish(_ count: Int, from emitter: PlayerEventEmitter, startingAt first: Double = 0) {
        for index in 0..<count { emitter.emit(.positionChanged(first + Double(index) / 30)) }
    }

    @Test("cancel from another thread while events are delivered: nothing reaches the handler after cancel returns")
    func cancelDuringDelivery() async throws {
        let bus = PlayerEventBus(label: "cancel")
        let emitter = PlayerEventEmitter(playerID: Fixtures.uniqueID("cancel"), bus: bus)
        let log = SubscriberLog()
        // The 21st delivery holds the handler until a thread is about to cancel, so the cancel
        // comes while the handler is busy and events are queued for it, whatever the machine's
        // speed; every delivery takes 1 ms.
        let cancelling = DispatchSemaphore(value: 0)
        let token = bus.subscribe { record in
            log.append(record)
            if record.sequenceNumber == 21 { _ = cancelling.wait(timeout: .now() + 10) }
            Thread.sleep(forTimeInterval: 0.001)
        }
        publish(200, from: emitter)
        #expect(await eventually { log.count >= 21 })
        // Cancel from a plain thread while the handler is busy and events are queued for it.
        let cancelled = DispatchSemaphore(value: 0)
        Thread { cancelling.signal(); token.cancel(); cancelled.signal() }.start()
        await withCheckedContinuation { continuation in
            DispatchQueue.global().async { cancelled.wait(); continuation.resume() }
        }
        // cancel() returned: whatever it let through before returning (a delivery already queued
        // ahead of it), nothing reaches the handler from now on.
        let countAtCancel = log.count
        #expect(countAtCancel >= 21)
        // More events: none reaches the handler. A subscription made after the cancel hears
        // them, so they were delivered.
        let after = SubscriberLog()
        let witness = bus.subscribe { after.append($0) }
        defer { witness.cancel() }
        publish(30, from: emitter, startingAt: 100)
        #expect(await eventually { after.count == 30 })
        #expect(log.count == countAtCancel)
        #expect(token.isCancelled && bus.subscriptionCount == 1)
    }

    @Test("a handler may cancel its own subscription: it hears one event, and none after")
    func handlerCancelsItself() async throws {
        let bus = PlayerEventBus(label: "self-cancel")
        let emitter = PlayerEventEmitter(playerID: Fixtures.uniqueID("self-cancel"), bus: bus)
        let log = SubscriberLog()
        let holder = Locked<PlayerSubscription?>(nil)
        let token = bus.subscribe { record in
            log.append(record)
            holder.withLock { $0 }?.cancel()
        }
        holder.withLock { $0 = token }
        emitter.emit(.created)
        publish(20, from: emitter)
        emitter.emit(.shutDown)
        #expect(await eventually { token.isCancelled })
        let witness = SubscriberLog()
        let late = bus.subscribe { witness.append($0) }
        defer { late.cancel() }
        publish(5, from: emitter)                 // after shutDown: dropped by the emitter
        #expect(log.count == 1 && log.records.first?.event == .created)
        #expect(emitter.lastSequenceNumber == 22 && witness.count == 0)
    }

    @Test("subscribe and cancel from 16 threads at once while a player publishes: no subscription is left, publishing goes on")
    func concurrentSubscribeAndCancel() async throws {
        let bus = PlayerEventBus(label: "churn")
        let id = Fixtures.uniqueID("churn")
        let emitter = PlayerEventEmitter(playerID: id, bus: bus)
        let received = SubscriberLog()
        let group = DispatchGroup()
        // The publisher: 5,000 reports from a thread of its own, during the churn.
        group.enter()
        Thread {
            for index in 0..<5_000 { emitter.emit(.positionChanged(Double(index) / 30)) }
            group.leave()
        }.start()
        for thread in 0..<16 {
            group.enter()
            Thread {
                for round in 0..<50 {
                    if (thread + round).isMultiple(of: 2) {
                        let token = bus.subscribe(to: .player(id)) { received.append($0) }
                        token.cancel()
                    } else {
                        let stream = bus.events(for: id, bufferLimit: 4)
                        stream.cancel()
                    }
                }
                group.leave()
            }.start()
        }
        await withCheckedContinuation { continuation in
            group.notify(queue: .global()) { continuation.resume() }
        }
        #expect(bus.subscriptionCount == 0)
        #expect(emitter.lastSequenceNumber == 5_000)
        // Whatever a churned subscriber heard came in order.
        let heard = received.records.map(\.sequenceNumber)
        #expect(heard.allSatisfy { (1...5_000).contains($0) })
        // The bus still delivers.
        let after = SubscriberLog()
        let token = bus.subscribe(to: .player(id)) { after.append($0) }
        defer { token.cancel() }
        publish(5, from: emitter)
        #expect(await eventually { after.records.map(\.sequenceNumber) == Array(5_001...5_005) })
    }

    @Test("a slow stream overflows and reports its drops while the others stay on time")
    func slowStreamOverflows() async throws {
        let bus = PlayerEventBus(label: "slow")
        let id = Fixtures.uniqueID("slow")
        let slow = bus.events(for: id, bufferLimit: 8)  // never read until the end
        let fast = SubscriberLog()
        let lateness = Locked<[Double]>([])
        let token = bus.subscribe(to: id) { record in
            fast.append(record)
            lateness.withLock { $0.append(ContinuousClock.now.seconds(since: record.time)) }
        }
        defer { token.cancel() }
        let emitter = PlayerEventEmitter(playerID: id, bus: bus)
        publish(300, from: emitter)
        #expect(await eventually { fast.count == 300 })
        // The fast subscriber got everything, gapless, promptly.
        #expect(fast.records.map(\.sequenceNumber) == Array(1...300))
        let sorted = lateness.withLock { $0 }.sorted()
        let p99 = sorted[Int(Double(sorted.count - 1) * 0.99)]
        // A sanity bound, not a performance figure (sanitizer runs are slow): the slow stream
        // must not hold the fast subscriber back by anything like its backlog.
        #expect(p99 < 2, "p99 delivery lateness \(p99) s")
        // The slow one kept the 8 newest and says how many it missed.
        #expect(slow.droppedCount == 292)
        var iterator = slow.makeAsyncIterator()
        let first = try #require(await iterator.next())
        #expect(first.droppedBefore == 292 && first.sequenceNumber == 293)
        var previous = first.sequenceNumber
        for _ in 1..<8 {
            let next = try #require(await iterator.next())
            #expect(next.sequenceNumber == previous + 1)
            previous = next.sequenceNumber
        }
        slow.cancel()
    }
}
