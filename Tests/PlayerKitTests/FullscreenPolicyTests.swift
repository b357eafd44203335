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

    // MARK: One owner, whatever path fullscreen takes (issue 25)

    /// mpv's own `fullscreen` property of each player.
    private static func mpvFullscreen(_ players: [Player]) -> [PlayerID: Bool] {
        Dictionary(uniqueKeysWithValues: players.map { ($0.id, (try? $0.property("fullscreen")) == .flag(true)) })
    }

    /// The rule, checked against mpv itself: at most `expected` is fullscreen, and the policy's
    /// owner and isFullscreen say the same as the players.
    private static func holds(_ policy: FullscreenPolicy, _ players: [Player], fullscreen expected: PlayerID?, owner: PlayerID?) -> Bool {
        let truth = mpvFullscreen(players)
        let fullscreen = truth.filter(\.value).map(\.key)
        return fullscreen == (expected.map { [$0] } ?? []) && policy.owner == owner
            && policy.isFullscreen == (owner.map { truth[$0] == true } ?? false)
    }

    private static func describe(_ policy: FullscreenPolicy, _ players: [Player]) -> String {
        "mpv: \(mpvFullscreen(players).sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }), "
            + "policy: owner \(policy.owner?.rawValue ?? "none"), isFullscreen \(policy.isFullscreen)"
    }

    @Test("a member that is not the owner cannot enter fullscreen through its own player: setFullscreen and send are refused by name")
    func playerPathRefused() async throws {
        let policy = FullscreenPolicy()
        let all = try await players(3)
        defer { Task { for (player, _) in all { await player.shutdown() } } }
        let players = all.map(\.0)
        let (a, b, c) = (players[0], players[1], players[2])
        for player in players { try policy.add(player) }
        try policy.enterFullscreen(a)
        #expect(Self.holds(policy, players, fullscreen: a.id, owner: a.id), "\(Self.describe(policy, players))")

        do {
            try b.setFullscreen(true)
            Issue.record("b.setFullscreen(true) was accepted while a owns fullscreen")
        } catch {
            #expect(error.description.contains(b.id.rawValue) && error.description.contains(a.id.rawValue), "\(error)")
        }
        #expect(throws: PlayerError.self) { try c.send(.setFullscreen(true)) }
        #expect(Self.holds(policy, players, fullscreen: a.id, owner: a.id), "\(Self.describe(policy, players))")
        // Nothing was sent to mpv: no change is on its way either.
        let mark = all[1].1.mark
        try b.setVolume(50)  // a later request that does reach mpv, as a marker
        #expect(await all[1].1.waitFor(after: mark) { $0.event == .volumeChanged(50) } != nil)
        #expect(!all[1].1.events.contains { $0.description == "fullscreenStateChanged(true)" })
        #expect(Self.holds(policy, players, fullscreen: a.id, owner: a.id), "\(Self.describe(policy, players))")
        // Leaving fullscreen is never refused; the owner may do it through its player.
        try b.setFullscreen(false)
        try a.setFullscreen(false)
        #expect(await eventually { Self.holds(policy, players, fullscreen: nil, owner: a.id) }, "\(Self.describe(policy, players))")
    }

    @Test("mpv's side (a property set or a command, as a key in mpv's window or the window manager makes) on a non-owner is undone",
          arguments: ["set", "property", "cycle"])
    func mpvSideUndone(path: String) async throws {
        final class Log: FullscreenPolicyDelegate {
            let events = Locked<[FullscreenPolicyEvent]>([])
            func fullscreenPolicy(_ policy: FullscreenPolicy, didEmit event: FullscreenPolicyEvent) {
                events.withLock { $0.append(event) }
            }
        }
        let log = Log()
        let policy = FullscreenPolicy()
        policy.delegate = log
        let all = try await players(3)
        defer { Task { for (player, _) in all { await player.shutdown() } } }
        let players = all.map(\.0)
        let (a, b) = (players[0], players[1])
        for player in players { try policy.add(player) }
        try policy.enterFullscreen(a)

        let started = ContinuousClock.now
        switch path {
        case "set": try b.command(["set", "fullscreen", "yes"])
        case "property": try b.setProperty("fullscreen", to: .flag(true))
        default: try b.command(["cycle", "fullscreen"])
        }
        // mpv took it: b is fullscreen for a moment, then the policy takes it out again.
        #expect(await eventually(timeout: .seconds(5)) { Self.holds(policy, players, fullscreen: a.id, owner: a.id) },
                "\(Self.describe(policy, players))")
        let settled = ContinuousClock.now - started
        #expect(settled < .seconds(2), "the rule came back after \(settled)")
        #expect(await all[1].1.waitFor { $0.event.name == "fullscreenUndone" } != nil)
        #expect(await eventually { log.events.withLock { $0.contains { $0.description.hasPrefix("fullscreenUndone(\(b.id)") } } })
        // The owner never moved.
        #expect(!all[0].1.events.contains { $0.description == "fullscreenStateChanged(false)" })
        #expect(Self.holds(policy, players, fullscreen: a.id, owner: a.id), "\(Self.describe(policy, players))")
    }

    @Test("the owner's own mpv-side changes are followed, and a free policy's first fullscreen member becomes its owner, by any path")
    func ownerAndFreePolicyFollowMPV() async throws {
        let policy = FullscreenPolicy()
        let all = try await players(3)
        defer { Task { for (player, _) in all { await player.shutdown() } } }
        let players = all.map(\.0)
        let (a, b, c) = (players[0], players[1], players[2])
        let (aEvents, bEvents) = (all[0].1, all[1].1)
        for player in players { try policy.add(player) }
        try policy.enterFullscreen(a)

        // The owner leaves fullscreen in mpv's window (or the window manager takes it out).
        var mark = aEvents.mark
        try a.command(["set", "fullscreen", "no"])
        #expect(await eventually { Self.holds(policy, players, fullscreen: nil, owner: a.id) }, "\(Self.describe(policy, players))")
        #expect(await aEvents.waitFor(after: mark) { $0.event.feature(FullscreenEvent.self) == .fullscreenChanged(false) } != nil)
        // ... and goes back in the same way.
        mark = aEvents.mark
        try a.command(["cycle", "fullscreen"])
        #expect(await eventually { Self.holds(policy, players, fullscreen: a.id, owner: a.id) }, "\(Self.describe(policy, players))")
        #expect(await aEvents.waitFor(after: mark) { $0.event.feature(FullscreenEvent.self) == .fullscreenChanged(true) } != nil)

        // A free policy: the member that goes fullscreen from mpv's side owns it.
        try policy.release(a)
        #expect(Self.holds(policy, players, fullscreen: nil, owner: nil), "\(Self.describe(policy, players))")
        mark = bEvents.mark
        try b.command(["set", "fullscreen", "yes"])
        #expect(await eventually { Self.holds(policy, players, fullscreen: b.id, owner: b.id) }, "\(Self.describe(policy, players))")
        #expect(await bEvents.waitFor(after: mark) { $0.event.feature(FullscreenEvent.self) == .ownershipChanged(owner: b.id) } != nil)
        #expect(throws: PlayerError.self) { try c.setFullscreen(true) }
        #expect(throws: PlayerError.self) { try a.setFullscreen(true) }
        #expect(Self.holds(policy, players, fullscreen: b.id, owner: b.id), "\(Self.describe(policy, players))")

        // ... and through its own player too.
        try policy.release(b)
        try c.setFullscreen(true)
        #expect(await eventually { Self.holds(policy, players, fullscreen: c.id, owner: c.id) }, "\(Self.describe(policy, players))")
    }

    @Test("a player belongs to one policy at most; a fullscreen player added beside a fullscreen owner is taken out; remove lets it go")
    func membership() async throws {
        let first = FullscreenPolicy()
        let second = FullscreenPolicy()
        let all = try await players(3)
        defer { Task { for (player, _) in all { await player.shutdown() } } }
        let (a, b, c) = (all[0].0, all[1].0, all[2].0)
        try first.add(a)
        #expect(throws: FullscreenPolicyError.governedByAnotherPolicy(a.id)) { try second.add(a) }
        #expect(throws: FullscreenPolicyError.governedByAnotherPolicy(a.id)) { try second.claim(a) }
        #expect(first.members == [a.id])
        try first.enterFullscreen(a)
        // c went fullscreen before the policy knew it: adding it restores the rule at once.
        try c.setFullscreen(true)
        try first.add(c)
        #expect(try c.property("fullscreen") == .flag(false))
        #expect(try a.property("fullscreen") == .flag(true) && first.owner == a.id && first.isFullscreen)
        try first.add(b)
        #expect(throws: PlayerError.fullscreenRefused(b.id, reason: "player \"\(a.id)\" owns the fullscreen policy")) {
            try b.setFullscreen(true)
        }
        #expect(first.members == [a.id, b.id, c.id].sorted())
        // Removing the owner releases the policy first; the player is free to join another.
        first.remove(a)
        #expect(first.owner == nil && !first.isFullscreen)
        #expect(try a.property("fullscreen") == .flag(false))
        #expect(a.fullscreenArbiter == nil)
        try second.add(a)
        #expect(second.members == [a.id] && first.members == [b.id, c.id].sorted())
        await b.shutdown()
        #expect(first.members == [c.id])
        #expect(throws: FullscreenPolicyError.playerShutDown(b.id)) { try second.add(b) }
    }
}
