import PlayerKitCore
import PlayerKitDisplay
import PlayerKitSupport
import PlayerKitTesting
import Testing

@Suite("FullscreenPolicy's rule, on fake players", .timeLimit(.minutes(1)))
struct FullscreenPolicyLogicTests {
    let bus = PlayerEventBus(label: "fullscreen-logic")
    let clock = ManualClock()

    @Test("only the owner goes fullscreen: a member's own request is refused naming the owner, and so is the policy's")
    func refusals() async throws {
        let policy = FullscreenPolicy()
        let a = try FakePlayer(clock: clock, bus: bus)
        let b = try FakePlayer(clock: clock, bus: bus)
        try policy.add(b)
        try policy.enterFullscreen(a)
        #expect(policy.owner == a.id && a.isFullscreen == true && policy.isFullscreen)
        #expect(throws: PlayerError.fullscreenRefused(b.id, reason: "player \"\(a.id)\" owns the fullscreen policy")) {
            try b.setFullscreen(true)
        }
        #expect(throws: FullscreenPolicyError.ownedByAnotherPlayer(owner: a.id, requester: b.id)) { try policy.enterFullscreen(b) }
        #expect(b.isFullscreen == false)
        try policy.transfer(from: a, to: b)
        #expect(policy.owner == b.id && a.isFullscreen == false)
        await a.shutdown()
        await b.shutdown()
    }

    @Test("a member made fullscreen by a path nobody can refuse is taken out again and told why")
    func undo() async throws {
        let policy = FullscreenPolicy()
        let a = try FakePlayer(clock: clock, bus: bus)
        let b = try FakePlayer(clock: clock, bus: bus)
        let log = EventLog(bus: bus, players: [b.id])
        try policy.claim(a)
        try policy.add(b)
        b.changeFullscreenExternally(true)                        // a key in mpv's window
        #expect(await eventually { b.isFullscreen == false })
        #expect(await eventually { log.features(FullscreenEvent.self).contains(.fullscreenUndone(owner: a.id)) })
        #expect(policy.owner == a.id)
        await a.shutdown()
        await b.shutdown()
    }

    @Test("while the policy is free, a member that goes fullscreen becomes the owner; an owner that shuts down frees it at once")
    func ownershipFollows() async throws {
        let policy = FullscreenPolicy()
        let a = try FakePlayer(clock: clock, bus: bus)
        let b = try FakePlayer(clock: clock, bus: bus)
        try policy.add(a)
        try policy.add(b)
        a.changeFullscreenExternally(true)
        #expect(await eventually { policy.owner == a.id })
        await a.shutdown()
        #expect(policy.owner == nil)                              // at once, before its last event is heard
        try b.setFullscreen(true)                                 // free again: allowed
        #expect(await eventually { policy.owner == b.id })
        await b.shutdown()
    }

    @Test("64 threads claiming at once leave exactly one owner and 63 typed errors naming it")
    func sixtyFourThreadRace() async throws {
        let policy = FullscreenPolicy()
        let contenders = try (0..<64).map { _ in try FakePlayer(clock: clock, bus: bus) }
        let outcomes = Locked<[Result<PlayerID, FullscreenPolicyError>]>([])
        await withTaskGroup(of: Void.self) { group in
            for player in contenders {
                group.addTask {
                    do throws(FullscreenPolicyError) {
                        try policy.claim(player)
                        outcomes.withLock { $0.append(.success(player.id)) }
                    } catch {
                        outcomes.withLock { $0.append(.failure(error)) }
                    }
                }
            }
        }
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

    @Test("a refused claim, fullscreen request, exit or release changes nothing for any player")
    func refusedRequests() async throws {
        let policy = FullscreenPolicy()
        let all = try (0..<3).map { _ in try FakePlayer(clock: clock, bus: bus) }
        let (owner, other) = (all[0], all[1])
        let log = EventLog(bus: bus, players: all.map(\.id))
        try policy.enterFullscreen(owner)
        #expect(policy.owner == owner.id && policy.isFullscreen && owner.isFullscreen == true)
        let before = log.all.count
        #expect(throws: FullscreenPolicyError.ownedByAnotherPlayer(owner: owner.id, requester: other.id)) { try policy.claim(other) }
        #expect(throws: FullscreenPolicyError.ownedByAnotherPlayer(owner: owner.id, requester: other.id)) { try policy.enterFullscreen(other) }
        #expect(throws: FullscreenPolicyError.notOwner(other.id, owner: owner.id)) { try policy.exitFullscreen(other) }
        #expect(throws: FullscreenPolicyError.notOwner(other.id, owner: owner.id)) { try policy.release(other) }
        #expect(policy.owner == owner.id && policy.isFullscreen)
        #expect(all.map(\.isFullscreen) == [true, false, false])
        #expect(!other.commands.contains(.setFullscreen(true)) && all[2].commands.isEmpty)
        // No event for anyone: the refusals changed nothing.
        #expect(log.all.count == before, "\(log.all.suffix(log.all.count - before))")
        #expect(log.features(FullscreenEvent.self, of: owner.id).contains(.fullscreenChanged(true)))
        try policy.claim(owner)                                     // again, as the owner: fine
        for player in all { await player.shutdown() }
    }

    @Test("orientation controls fullscreen for the owner only; entering fullscreen in portrait asks for landscape")
    func switches() async throws {
        final class Log: FullscreenPolicyDelegate {
            let events = Locked<[FullscreenPolicyEvent]>([])
            func fullscreenPolicy(_ policy: FullscreenPolicy, didEmit event: FullscreenPolicyEvent) {
                events.withLock { $0.append(event) }
            }
        }
        let delegate = Log()
        let policy = FullscreenPolicy(orientationControlsFullscreen: true, fullscreenControlsOrientation: true)
        policy.delegate = delegate
        let all = try (0..<3).map { _ in try FakePlayer(clock: clock, bus: bus) }
        let owner = all[0]
        let log = EventLog(bus: bus, players: all.map(\.id))
        for player in all { try policy.add(player) }
        policy.setOrientation(.portrait)
        try policy.claim(owner)
        policy.setOrientation(.landscapeRight)
        #expect(policy.isFullscreen && all.map(\.isFullscreen) == [true, false, false])
        policy.setOrientation(.portrait)
        #expect(!policy.isFullscreen && all.map(\.isFullscreen) == [false, false, false])
        try policy.enterFullscreen(owner)
        #expect(log.features(FullscreenEvent.self, of: owner.id).contains(.orientationChanged(.portrait)))
        #expect(await eventually { delegate.events.withLock { $0.contains(.orientationRequested(.landscapeLeft, player: owner.id)) } })
        #expect(delegate.events.withLock { $0.contains(.ownershipChanged(from: nil, to: owner.id)) })
        // Nobody but the owner heard of the orientation.
        #expect(log.features(FullscreenEvent.self, of: all[1].id).isEmpty && log.features(FullscreenEvent.self, of: all[2].id).isEmpty)
        for player in all { await player.shutdown() }
    }

    @Test("a transfer while fullscreen: the old owner leaves it, the new one enters when the switches say so")
    func transferWhileFullscreen() async throws {
        let policy = FullscreenPolicy(orientationControlsFullscreen: true)
        let first = try FakePlayer(clock: clock, bus: bus)
        let second = try FakePlayer(clock: clock, bus: bus)
        let log = EventLog(bus: bus, players: [first.id, second.id])
        try policy.claim(first)
        policy.setOrientation(.landscapeLeft)
        try policy.enterFullscreen(first)
        #expect(policy.isFullscreen)
        try policy.transfer(from: first, to: second)
        #expect(policy.owner == second.id && first.isFullscreen == false && second.isFullscreen == true)
        #expect(log.features(FullscreenEvent.self, of: first.id).suffix(2) == [.fullscreenChanged(false), .ownershipChanged(owner: second.id)])
        #expect(log.features(FullscreenEvent.self, of: second.id).suffix(2) == [.ownershipChanged(owner: second.id), .fullscreenChanged(true)])
        #expect(throws: FullscreenPolicyError.notOwner(first.id, owner: second.id)) { try policy.transfer(from: first, to: second) }
        // Without the switch the new owner stays as it was.
        policy.orientationControlsFullscreen = false
        try policy.transfer(from: second, to: first)
        #expect(!policy.isFullscreen && first.isFullscreen == false && second.isFullscreen == false)
        await first.shutdown()
        await second.shutdown()
    }

    @Test("an owner shut down while fullscreen frees the policy, and so does a dropped owner; a shut-down player cannot claim")
    func ownerGoesAway() async throws {
        let policy = FullscreenPolicy()
        let owner = try FakePlayer(clock: clock, bus: bus)
        let next = try FakePlayer(clock: clock, bus: bus)
        try policy.enterFullscreen(owner)
        await owner.shutdown()
        #expect(policy.owner == nil && !policy.isFullscreen)
        #expect(throws: FullscreenPolicyError.playerShutDown(owner.id)) { try policy.claim(owner) }
        try policy.claim(next)
        try policy.release(next)
        do {
            let dropped = try FakePlayer(clock: clock, bus: bus)
            try policy.enterFullscreen(dropped)
            #expect(policy.owner == dropped.id)
        }
        #expect(policy.owner == nil)                                // held weakly: gone with the player
        try policy.claim(next)
        #expect(policy.owner == next.id)
        await next.shutdown()
    }

    @Test("a player belongs to one policy at most; a fullscreen player added beside a fullscreen owner is taken out; remove lets it go")
    func membership() async throws {
        let first = FullscreenPolicy()
        let second = FullscreenPolicy()
        let (a, b, c) = (try FakePlayer(clock: clock, bus: bus), try FakePlayer(clock: clock, bus: bus), try FakePlayer(clock: clock, bus: bus))
        try first.add(a)
        #expect(throws: FullscreenPolicyError.governedByAnotherPolicy(a.id)) { try second.add(a) }
        #expect(throws: FullscreenPolicyError.governedByAnotherPolicy(a.id)) { try second.claim(a) }
        #expect(first.members == [a.id])
        try first.enterFullscreen(a)
        try c.setFullscreen(true)                                   // before the policy knew it
        try first.add(c)
        #expect(c.isFullscreen == false && a.isFullscreen == true && first.owner == a.id && first.isFullscreen)
        try first.add(b)
        #expect(throws: PlayerError.fullscreenRefused(b.id, reason: "player \"\(a.id)\" owns the fullscreen policy")) {
            try b.setFullscreen(true)
        }
        #expect(first.members == [a.id, b.id, c.id].sorted())
        first.remove(a)
        #expect(first.owner == nil && !first.isFullscreen && a.isFullscreen == false && a.fullscreenArbiter == nil)
        try second.add(a)
        #expect(second.members == [a.id] && first.members == [b.id, c.id].sorted())
        await b.shutdown()
        #expect(first.members == [c.id])
        #expect(throws: FullscreenPolicyError.playerShutDown(b.id)) { try second.add(b) }
        await a.shutdown()
        await c.shutdown()
    }
}
