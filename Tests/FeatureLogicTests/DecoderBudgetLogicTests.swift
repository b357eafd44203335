import PlayerKitCore
@testable import PlayerKitResources
import PlayerKitSupport
@testable import PlayerKitTesting
import Testing

@Suite("DecoderBudget's decisions, on fake players and a manual clock", .timeLimit(.minutes(1)))
struct DecoderBudgetLogicTests {
    let bus = PlayerEventBus(label: "budget-logic")
    let clock = ManualClock()

    func players(_ count: Int, media: [String: FakePlayer.Media] = [:]) throws -> [FakePlayer] {
        try (0..<count).map { _ in try FakePlayer(clock: clock, bus: bus, media: media) }
    }

    @Test("a limit of 0 or less is refused by name; a player refused by a full budget stays usable outside it")
    func badLimitAndRefusedPlayer() async throws {
        #expect(throws: DecoderBudgetError.invalidLimit(0)) { try DecoderBudget(limit: 0, clock: clock) }
        #expect(throws: DecoderBudgetError.invalidLimit(-3)) { try DecoderBudget(limit: -3, clock: clock) }
        let budget = try DecoderBudget(limit: 1, clock: clock)
        let p = try players(2)
        try await budget.load("a.mp4", into: p[0], startPaused: true)
        await #expect(throws: DecoderBudgetError.full(limit: 1, holders: [p[0].id])) { try await budget.load("b.mp4", into: p[1]) }
        #expect(p[1].commands.isEmpty && p[0].state == .ready && budget.snapshot.holders == [p[0].id])
        _ = try await p[1].load("b.mp4", startPaused: true)
        #expect(p[1].state == .ready && budget.snapshot.holders == [p[0].id])
        for player in p { await player.shutdown() }
    }

    @Test("full fails at once naming the holders; a release unloads the player and frees its slot")
    func fullAndRelease() async throws {
        let budget = try DecoderBudget(limit: 2, clock: clock)
        let p = try players(3)
        try await budget.load("a.mp4", into: p[0])
        try await budget.load("b.mp4", into: p[1])
        try await budget.load("b2.mp4", into: p[1])                 // keeps its slot
        await #expect(throws: DecoderBudgetError.full(limit: 2, holders: [p[0].id, p[1].id])) {
            try await budget.load("c.mp4", into: p[2])
        }
        #expect(p[2].state == .idle)                                  // never loaded-but-black
        try budget.release(p[0])
        #expect(p[0].releaseCount == 1 && p[0].state == .idle)
        #expect(throws: DecoderBudgetError.notHolding(p[0].id)) { try budget.release(p[0]) }
        try await budget.load("c.mp4", into: p[2])
        #expect(budget.snapshot.holders == [p[1].id, p[2].id])
        for player in p { await player.shutdown() }
    }

    @Test("waiters get slots first come first served; a wait times out on the budget's clock, not before")
    func waitersAndTimeout() async throws {
        let budget = try DecoderBudget(limit: 1, clock: clock)
        let p = try players(3)
        try await budget.load("a.mp4", into: p[0])
        let second = Task { try await budget.load("b.mp4", into: p[1], whenFull: .wait(timeout: .seconds(30))) }
        #expect(await eventually { budget.waitingCount == 1 })
        let third = Task { try await budget.load("c.mp4", into: p[2], whenFull: .wait(timeout: .seconds(5))) }
        #expect(await eventually { budget.waitingCount == 2 })
        #expect(await clock.waitForSleepers(2))
        clock.advance(by: .milliseconds(4999))
        #expect(budget.waitingCount == 2)
        clock.advance(by: .milliseconds(1))
        await #expect(throws: DecoderBudgetError.timedOut(player: p[2].id, limit: 1, after: .seconds(5))) { try await third.value }
        #expect(budget.waitingCount == 1)
        try budget.release(p[0])
        _ = try await second.value
        #expect(budget.snapshot.holders == [p[1].id])
        #expect(clock.sleeperCount == 0)                              // the granted wait's timer is gone
        for player in p { await player.shutdown() }
    }

    @Test("the snapshot reads the slots, the holders in order and the loads waiting, first come first served")
    func snapshot() async throws {
        let budget = try DecoderBudget(limit: 2, clock: clock)
        let p = try players(4)
        #expect(budget.snapshot == DecoderBudget.Snapshot(limit: 2, holders: [], waiting: []))
        #expect(budget.snapshot.freeSlots == 2)
        try await budget.load("a.mp4", into: p[0])
        try await budget.load("b.mp4", into: p[1])
        let third = Task { try await budget.load("c.mp4", into: p[2], whenFull: .wait(timeout: .seconds(30))) }
        #expect(await eventually { budget.snapshot.waiting == [p[2].id] })
        let fourth = Task { try await budget.load("d.mp4", into: p[3], whenFull: .wait(timeout: .seconds(30))) }
        #expect(await eventually { budget.snapshot.waiting.count == 2 })
        #expect(budget.snapshot == DecoderBudget.Snapshot(limit: 2, holders: [p[0].id, p[1].id], waiting: [p[2].id, p[3].id]))
        #expect(budget.snapshot.freeSlots == 0)
        try budget.release(p[0])
        _ = try await third.value
        #expect(budget.snapshot == DecoderBudget.Snapshot(limit: 2, holders: [p[1].id, p[2].id], waiting: [p[3].id]))
        // A holder that shuts down frees its slot: the last waiter gets it.
        await p[1].shutdown()
        _ = try await fourth.value
        #expect(budget.snapshot == DecoderBudget.Snapshot(limit: 2, holders: [p[2].id, p[3].id], waiting: []))
        for player in p { await player.shutdown() }
    }

    @Test("a holder that shuts down frees its slot for the next waiter; a failing load frees its own")
    func shutdownAndFailure() async throws {
        let budget = try DecoderBudget(limit: 1, clock: clock)
        let p = try players(3, media: ["bad.mp4": .unplayable(source: "bad.mp4")])
        await #expect(throws: DecoderBudgetError.self) { try await budget.load("bad.mp4", into: p[0]) }
        #expect(budget.availableSlots == 1)
        try await budget.load("a.mp4", into: p[0])
        let waiter = Task { try await budget.load("b.mp4", into: p[1], whenFull: .wait(timeout: .seconds(30))) }
        #expect(await eventually { budget.waitingCount == 1 })
        await p[0].shutdown()
        _ = try await waiter.value
        #expect(budget.snapshot.holders == [p[1].id] && p[1].state == .playing)
        await #expect(throws: DecoderBudgetError.loadFailed(.playerShutDown(p[0].id))) { try await budget.load("a.mp4", into: p[0]) }
        for player in p { await player.shutdown() }
    }

    @Test("a waiter cancelled while a slot frees: it either gets the slot or throws, and no slot is lost (200 races)")
    func cancelRacesFree() async throws {
        for _ in 0..<200 {
            let budget = try DecoderBudget(limit: 1, clock: clock)
            let p = try players(2)
            try await budget.load("a.mp4", into: p[0])
            let waiter = Task { try await budget.load("b.mp4", into: p[1], whenFull: .wait(timeout: .seconds(30))) }
            #expect(await eventually { budget.waitingCount == 1 })
            async let release: Void = { try? budget.release(p[0]) }()
            waiter.cancel()
            await release
            switch await waiter.result {
            case .success:
                #expect(budget.snapshot.holders == [p[1].id])
            case .failure(let error):
                #expect(error as? DecoderBudgetError == .waitCancelled(p[1].id))
                #expect(budget.snapshot.holders.isEmpty && budget.availableSlots == 1)
            }
            #expect(budget.waitingCount == 0)
            for player in p { await player.shutdown() }
        }
    }

    @Test("preload through the budget: paused on the first frame, holding a slot; a failing preload gives its slot back, typed")
    func preload() async throws {
        let media = ["bad.mp4": FakePlayer.Media.unplayable(source: "bad.mp4")]
        let budget = try DecoderBudget(limit: 2, clock: clock)
        let p = try players(2, media: media)
        try await budget.preload("a.mp4", into: p[0])
        #expect(p[0].state == .ready && budget.holds(p[0]) && budget.availableSlots == 1)
        do {
            try await budget.preload("bad.mp4", into: p[1])
            Issue.record("an unplayable item preloaded")
        } catch {
            guard case .loadFailed(.loadFailed(source: "bad.mp4", _)) = error else { Issue.record("\(error)"); return }
        }
        #expect(!budget.holds(p[1]) && budget.availableSlots == 1 && budget.snapshot.holders == [p[0].id])
        for player in p { await player.shutdown() }
    }
}

