import Dispatch
import Foundation
import Testing
import PlayerKit

@Suite("Fullscreen policy", .timeLimit(.minutes(4)))
struct FullscreenPolicyTests {
    private func players(_ count: Int) async throws -> [(Player, EventRecorder)] {
        var made: [(Player, EventRecorder)] = []
        for _ in 0..<count { made.append(try await Fixtures.player()) }
        return made
    }

    @Test("64 threads claiming at once leave exactly one owner and 63 typed errors")
    func sixtyFourThreadRace() async throws {
        let policy = FullscreenPolicy()
        // Made off the cooperative pool: 64 cores take a while, and other tests await meanwhile.
        let contenders = try await offPool { try (0..<64).map { _ in try Player(configuration: Fixtures.headless) } }
        let outcomes = Locked<[Result<PlayerID, FullscreenPolicyError>]>([])
        let group = DispatchGroup()
        let start = DispatchSemaphore(value: 0)
        for player in contenders {
            group.enter()
            Thread {
                start.wait()
                do throws(FullscreenPolicyError) {
                    try policy.claim(player)
                    outcomes.withLock { $0.append(.success(player.id)) }
                } catch {
                    outcomes.withLock { $0.append(.failure(error)) }
                }
                group.leave()
            }.start()
        }
        for _ in contenders { start.signal() }
        try await offPool { group.wait() }
        let results = outcomes.withLock { $0 }
        let winners = results.compactMap { try? $0.get() }
        #expect(winners.count == 1)
        let owner = try #require(winners.first)
        #expect(policy.owner == owner)
        let refusals = results.compactMap { result -> FullscreenPolicyError? in
            if case .failure(let error) = result { return error }
            return nil
        }
        #expect(refusals.count == 63)
        #expect(refusals.allSatisfy { if case .ownedByAnotherPlayer(let named, _) = $0 { return named == owner }; return false })
        for player in contenders { await player.shutdown() }
        #expect(policy.owner == nil)
    }

    @Test("a refused claim or fullscreen request changes nothing for any player")
    func refusedRequests() async throws {
        let policy = FullscreenPolicy()
        let all = try await players(3)
        let (owner, ownerEvents) = all[0]
        let (other, otherEvents) = all[1]
        defer { Task { for (player, _) in all { await player.shutdown() } } }
        try policy.enterFullscreen(owner)
        #expect(policy.owner == owner.id && policy.isFullscreen)
        #expect(try owner.property("fullscreen") == .flag(true))
        let otherMark = otherEvents.mark

        #expect(throws: FullscreenPolicyError.ownedByAnotherPlayer(owner: owner.id, requester: other.id)) { try policy.claim(other) }
        #expect(throws: FullscreenPolicyError.ownedByAnotherPlayer(owner: owner.id, requester: other.id)) { try policy.enterFullscreen(other) }
        #expect(throws: FullscreenPolicyError.notOwner(other.id, owner: owner.id)) { try policy.exitFullscreen(other) }
        #expect(throws: FullscreenPolicyError.notOwner(other.id, owner: owner.id)) { try policy.release(other) }
        #expect(policy.owner == owner.id && policy.isFullscreen)
        #expect(try owner.property("fullscreen") == .flag(true))
        #expect(try other.property("fullscreen") == .flag(false))
        #expect(try all[2].0.property("fullscreen") == .flag(false))
        #expect(await ownerEvents.waitFor { $0.event.feature(FullscreenEvent.self) == .fullscreenChanged(true) } != nil)
        #expect(!otherEvents.records.contains { $0.sequenceNumber > otherMark && $0.event.kind == .fullscreenChanged })
        // Claiming again as the owner is fine.
        try policy.claim(owner)
    }

    @Test("orientation controls fullscreen for the owner only; fullscreen requests landscape")
    func switches() async throws {
        final class Log: FullscreenPolicyDelegate {
            let events = Locked<[FullscreenPolicyEvent]>([])
            func fullscreenPolicy(_ policy: FullscreenPolicy, didEmit event: FullscreenPolicyEvent) {
                events.withLock { $0.append(event) }
            }
        }
        let log = Log()
        let policy = FullscreenPolicy(orientationControlsFullscreen: true, fullscreenControlsOrientation: true)
        policy.delegate = log
        let all = try await players(3)
        defer { Task { for (player, _) in all { await player.shutdown() } } }
        let (owner, ownerEvents) = all[0]
        policy.setOrientation(.portrait)
        try policy.claim(owner)
        policy.setOrientation(.landscapeRight)
        #expect(policy.isFullscreen)
        #expect(try owner.property("fullscreen") == .flag(true))
        #expect(all.dropFirst().allSatisfy { (try? $0.0.property("fullscreen")) == .flag(false) })
        policy.setOrientation(.portrait)
        #expect(!policy.isFullscreen)
        #expect(try owner.property("fullscreen") == .flag(false))
        // Entering fullscreen in portrait asks the app for landscape.
        try policy.enterFullscreen(owner)
        #expect(await ownerEvents.waitFor { $0.event.feature(FullscreenEvent.self) == .orientationChanged(.portrait) } != nil)
        #expect(await eventually { log.events.withLock { $0.contains(.orientationRequested(.landscapeLeft, player: owner.id)) } })
        #expect(log.events.withLock { $0.contains(.ownershipChanged(from: nil, to: owner.id)) })
    }

    @Test("a transfer while fullscreen: the old owner leaves it, the new one enters when the switches say so")
    func transferWhileFullscreen() async throws {
        let policy = FullscreenPolicy(orientationControlsFullscreen: true)
        let all = try await players(2)
        defer { Task { for (player, _) in all { await player.shutdown() } } }
        let (first, firstEvents) = all[0]
        let (second, secondEvents) = all[1]
        try policy.claim(first)
        policy.setOrientation(.landscapeLeft)
        try policy.enterFullscreen(first)
        #expect(policy.isFullscreen)

        try policy.transfer(from: first, to: second)
        #expect(policy.owner == second.id)
        #expect(try first.property("fullscreen") == .flag(false))
        #expect(try second.property("fullscreen") == .flag(true))  // landscape + orientation controls fullscreen
        #expect(await firstEvents.waitFor { $0.event.feature(FullscreenEvent.self) == .fullscreenChanged(false) } != nil)
        #expect(await firstEvents.waitFor { $0.event.feature(FullscreenEvent.self) == .ownershipChanged(owner: second.id) } != nil)
        #expect(await secondEvents.waitFor { $0.event.feature(FullscreenEvent.self) == .fullscreenChanged(true) } != nil)
        #expect(throws: FullscreenPolicyError.notOwner(first.id, owner: second.id)) { try policy.transfer(from: first, to: second) }

        // Without the switch the new owner stays as it was.
        policy.orientationControlsFullscreen = false
        try policy.transfer(from: second, to: first)
        #expect(!policy.isFullscreen)
        #expect(try first.property("fullscreen") == .flag(false))
    }

    @Test("the owner shut down while fullscreen frees the policy; a dropped owner too")
    func ownerGoesAway() async throws {
        let policy = FullscreenPolicy()
        let (owner, _) = try await Fixtures.player()
        let (next, _) = try await Fixtures.player()
        defer { Task { await next.shutdown() } }
        try policy.enterFullscreen(owner)
        await owner.shutdown()
        #expect(await eventually { policy.owner == nil })
        #expect(!policy.isFullscreen)
        #expect(throws: FullscreenPolicyError.playerShutDown(owner.id)) { try policy.claim(owner) }
        try policy.claim(next)
        #expect(policy.owner == next.id)
        try policy.release(next)

        do {
            let (dropped, _) = try await Fixtures.player()
            try policy.enterFullscreen(dropped)
        }
        #expect(await eventually { policy.owner == nil })
        try policy.claim(next)
        #expect(policy.owner == next.id)
    }

    @Test("an owner's shutdown frees the policy as soon as shutdown() returns, before its last event reaches the policy")
    func freedAtOnce() async throws {
        let policy = FullscreenPolicy()
        for _ in 0..<5 {
            let (owner, _) = try await Fixtures.player()
            let (next, _) = try await Fixtures.player()
            try policy.enterFullscreen(owner)
            await owner.shutdown()
            // No waiting: the policy's handler for the owner's last event may not have run yet.
            #expect(policy.owner == nil && !policy.isFullscreen)
            try policy.claim(next)
            #expect(policy.owner == next.id)
            await next.shutdown()
        }
    }
}
