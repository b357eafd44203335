import Foundation
import PlayerKitCore
@testable import PlayerKitDisplay
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
        try await policy.enterFullscreen(a)
        #expect(policy.owner == a.id && a.snapshot.isFullscreen == true && policy.isFullscreen)
        await #expect(throws: PlayerError.fullscreenRefused(b.id, reason: "player \"\(a.id)\" owns the fullscreen policy")) {
            try await b.perform(.setFullscreen(true))
        }
        await #expect(throws: FullscreenPolicyError.ownedByAnotherPlayer(owner: a.id, requester: b.id)) { try await policy.enterFullscreen(b) }
        #expect(b.snapshot.isFullscreen == false)
        try await policy.transfer(from: a, to: b)
        #expect(policy.owner == b.id && a.snapshot.isFullscreen == false)
        await a.shutdown()
        await b.shutdown()
    }

    @Test("a member made fullscreen by a path nobody can refuse is taken out again and told why")
    func undo() async throws {
        let policy = FullscreenPolicy()
        let a = try FakePlayer(clock: clock, bus: bus)
        let b = try FakePlayer(clock: clock, bus: bus)
        let log = EventLog(bus: bus, players: [b.id])
        try await policy.claim(a)
        try policy.add(b)
        b.changeFullscreenExternally(true)                        // a key in mpv's window
        #expect(await eventually { b.snapshot.isFullscreen == false })
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
        try await b.perform(.setFullscreen(true))                                 // free again: allowed
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
                        try await policy.claim(player)
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
        try await policy.enterFullscreen(owner)
        #expect(policy.owner == owner.id && policy.isFullscreen && owner.snapshot.isFullscreen == true)
        let before = log.all.count
        await #expect(throws: FullscreenPolicyError.ownedByAnotherPlayer(owner: owner.id, requester: other.id)) { try await policy.claim(other) }
        await #expect(throws: FullscreenPolicyError.ownedByAnotherPlayer(owner: owner.id, requester: other.id)) { try await policy.enterFullscreen(other) }
        await #expect(throws: FullscreenPolicyError.notOwner(other.id, owner: owner.id)) { try await policy.exitFullscreen(other) }
        await #expect(throws: FullscreenPolicyError.notOwner(other.id, owner: owner.id)) { try await policy.release(other) }
        #expect(policy.owner == owner.id && policy.isFullscreen)
        #expect(all.map(\.snapshot.isFullscreen) == [true, false, false])
        #expect(!other.commands.contains(.setFullscreen(true)) && all[2].commands.isEmpty)
        // No event for anyone: the refusals changed nothing.
        #expect(log.all.count == before, "\(log.all.suffix(log.all.count - before))")
        #expect(log.features(FullscreenEvent.self, of: owner.id).contains(.fullscreenChanged(true)))
        try await policy.claim(owner)                                     // again, as the owner: fine
        for player in all { await player.shutdown() }
    }

    @Test("orientation controls fullscreen for the owner only; entering fullscreen in portrait asks for landscape")
    func switches() async throws {
        let policy = FullscreenPolicy(orientationControlsFullscreen: true, fullscreenControlsOrientation: true)
        let all = try (0..<3).map { _ in try FakePlayer(clock: clock, bus: bus) }
        let owner = all[0]
        let log = EventLog(bus: bus, players: all.map(\.id))
        for player in all { try policy.add(player) }
        await policy.setOrientation(.portrait)
        try await policy.claim(owner)
        await policy.setOrientation(.landscapeRight)
        #expect(policy.isFullscreen && all.map(\.snapshot.isFullscreen) == [true, false, false])
        await policy.setOrientation(.portrait)
        #expect(!policy.isFullscreen && all.map(\.snapshot.isFullscreen) == [false, false, false])
        try await policy.enterFullscreen(owner)
        #expect(log.features(FullscreenEvent.self, of: owner.id).contains(.orientationChanged(.portrait)))
        #expect(log.features(FullscreenEvent.self, of: owner.id).suffix(2) == [.fullscreenChanged(true), .orientationRequested(.landscapeLeft)])
        #expect(log.features(FullscreenEvent.self, of: owner.id).first == .ownershipChanged(owner: owner.id))
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
        try await policy.claim(first)
        await policy.setOrientation(.landscapeLeft)
        try await policy.enterFullscreen(first)
        #expect(policy.isFullscreen)
        try await policy.transfer(from: first, to: second)
        #expect(policy.owner == second.id && first.snapshot.isFullscreen == false && second.snapshot.isFullscreen == true)
        #expect(log.features(FullscreenEvent.self, of: first.id).suffix(2) == [.fullscreenChanged(false), .ownershipChanged(owner: second.id)])
        #expect(log.features(FullscreenEvent.self, of: second.id).suffix(2) == [.ownershipChanged(owner: second.id), .fullscreenChanged(true)])
        await #expect(throws: FullscreenPolicyError.notOwner(first.id, owner: second.id)) { try await policy.transfer(from: first, to: second) }
        // Without the switch the new owner stays as it was.
        policy.orientationControlsFullscreen = false
        try await policy.transfer(from: second, to: first)
        #expect(!policy.isFullscreen && first.snapshot.isFullscreen == false && second.snapshot.isFullscreen == false)
        await first.shutdown()
        await second.shutdown()
    }

    @Test("an owner shut down while fullscreen frees the policy, and so does a dropped owner; a shut-down player cannot claim")
    func ownerGoesAway() async throws {
        let policy = FullscreenPolicy()
        let owner = try FakePlayer(clock: clock, bus: bus)
        let next = try FakePlayer(clock: clock, bus: bus)
        try await policy.enterFullscreen(owner)
        await owner.shutdown()
        #expect(policy.owner == nil && !policy.isFullscreen)
        await #expect(throws: FullscreenPolicyError.playerShutDown(owner.id)) { try await policy.claim(owner) }
        try await policy.claim(next)
        try await policy.release(next)
        do {
            let dropped = try FakePlayer(clock: clock, bus: bus)
            try await policy.enterFullscreen(dropped)
            #expect(policy.owner == dropped.id)
        }
        #expect(policy.owner == nil)                                // held weakly: gone with the player
        try await policy.claim(next)
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
        await #expect(throws: FullscreenPolicyError.governedByAnotherPolicy(a.id)) { try await second.claim(a) }
        #expect(first.members == [a.id])
        try await first.enterFullscreen(a)
        try await c.perform(.setFullscreen(true))                                   // before the policy knew it
        try first.add(c)
        #expect(c.snapshot.isFullscreen == false && a.snapshot.isFullscreen == true && first.owner == a.id && first.isFullscreen)
        try first.add(b)
        await #expect(throws: PlayerError.fullscreenRefused(b.id, reason: "player \"\(a.id)\" owns the fullscreen policy")) {
            try await b.perform(.setFullscreen(true))
        }
        #expect(first.members == [a.id, b.id, c.id].sorted())
        await first.remove(a)
        #expect(first.owner == nil && !first.isFullscreen && a.snapshot.isFullscreen == false && a.fullscreenArbiter == nil)
        try second.add(a)
        #expect(second.members == [a.id] && first.members == [b.id, c.id].sorted())
        await b.shutdown()
        #expect(first.members == [c.id])
        #expect(throws: FullscreenPolicyError.playerShutDown(b.id)) { try second.add(b) }
        await a.shutdown()
        await c.shutdown()
    }

    @Test("8 tasks racing every call and every unrefusable path, on 6 members: once quiet, only the owner is fullscreen, and each player's events alternate in order",
          arguments: [UInt64(1), 2, 3])
    func everythingRacing(seed: UInt64) async throws {
        let policy = FullscreenPolicy(orientationControlsFullscreen: true, fullscreenControlsOrientation: true)
        let players = try (0..<6).map { _ in try FakePlayer(clock: clock, bus: bus) }
        let log = EventLog(bus: bus, players: players.map(\.id))
        for player in players { try policy.add(player) }
        let orientations: [Orientation] = [.landscapeLeft, .portrait, .landscapeRight, .portraitUpsideDown]
        await withTaskGroup(of: Void.self) { group in
            for task in 0..<8 {
                group.addTask {
                    var random = SeededGenerator(seed: seed &* 1_000 &+ UInt64(task))
                    for _ in 0..<400 {
                        let player = players[Int(random.next() % 6)]
                        let other = players[Int(random.next() % 6)]
                        switch random.next() % 9 {
                        case 0: try? await policy.enterFullscreen(player)
                        case 1: try? await policy.exitFullscreen(player)
                        case 2: try? await policy.release(player)
                        case 3: try? await policy.claim(player)
                        case 4: player.changeFullscreenExternally(random.next() % 2 == 0)   // mpv's window, the window manager
                        case 5: try? await policy.transfer(from: player, to: other)
                        case 6: await policy.setOrientation(orientations[Int(random.next() % 4)])
                        case 7: try? player.send(.setFullscreen(random.next() % 2 == 0))
                        default: try? await player.perform(.setFullscreen(random.next() % 2 == 0))
                        }
                    }
                }
            }
        }
        // Quiet: the rule holds, whatever interleaving the threads took.
        let fullscreen = players.filter { $0.snapshot.isFullscreen == true }.map(\.id)
        #expect(fullscreen.count <= 1, "fullscreen: \(fullscreen), owner: \(policy.owner.map(\.rawValue) ?? "none")")
        if let only = fullscreen.first { #expect(policy.owner == only) }
        #expect(policy.isFullscreen == !fullscreen.isEmpty)
        for player in players {
            // Announced in the order decided: in and out of fullscreen alternate, starting with in.
            let changes = log.features(FullscreenEvent.self, of: player.id).compactMap { event -> Bool? in
                if case .fullscreenChanged(let value) = event { return value }
                return nil
            }
            #expect(zip(changes, [true, false].cycle(changes.count)).allSatisfy { $0 == $1 }, "\(player.id): \(changes)")
            // The last announcement is the owner's real state; everyone else's last one is "out".
            if policy.owner == player.id {
                #expect((changes.last ?? false) == (player.snapshot.isFullscreen == true), "\(player.id): \(changes)")
            } else {
                #expect(changes.last != true, "\(player.id): \(changes)")
            }
        }
        for player in players { await player.shutdown() }
        #expect(policy.owner == nil && policy.members.isEmpty)
    }

    @Test("a player put back in fullscreen by the window manager while it is being released or handed over ends as the rule says",
          arguments: ["release", "transfer"])
    func reenteredWhileLeaving(call: String) async throws {
        let policy = FullscreenPolicy()
        let a = try FakePlayer(clock: clock, bus: bus)
        let b = try FakePlayer(clock: clock, bus: bus)
        try policy.add(b)
        try await policy.enterFullscreen(a)
        // The moment `a` leaves fullscreen, the window manager puts it back.
        let bounced = Locked(false)
        let windowManager = bus.subscribe(to: a.id, kinds: [.fullscreenStateChanged], delivery: .immediate) { record in
            guard record.event == .fullscreenStateChanged(false), !bounced.withLock({ let was = $0; $0 = true; return was }) else { return }
            a.changeFullscreenExternally(true)
        }
        defer { windowManager.cancel() }
        if call == "release" {
            try await policy.release(a)
            // Back in fullscreen with the policy free: by the free policy's rule it owns it again.
            #expect(bounced.withLock { $0 } && a.snapshot.isFullscreen == true && policy.owner == a.id && policy.isFullscreen)
        } else {
            try await policy.transfer(from: a, to: b)
            // Back in fullscreen without owning the policy: taken out again.
            #expect(bounced.withLock { $0 } && a.snapshot.isFullscreen == false && policy.owner == b.id)
        }
        await a.shutdown()
        await b.shutdown()
    }
}


private extension Array where Element == Bool {
    /// `self` repeated to `count` elements.
    func cycle(_ count: Int) -> [Bool] { (0..<count).map { self[$0 % self.count] } }
}
