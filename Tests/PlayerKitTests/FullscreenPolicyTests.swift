import Dispatch
import Foundation
import Testing
import PlayerKit

/// The fullscreen policy on real players: the core's arbiter refusing a member's own request,
/// mpv-side changes (a property or a command, as a key in mpv's window makes) undone or followed,
/// and an owner freed as its shutdown returns. The rule's decisions (races, refusals, switches,
/// transfers, owners going away, membership) are tested on fake players in
/// FullscreenPolicyLogicTests.
@Suite("Fullscreen policy", .timeLimit(.minutes(4)), .tags(.timingPass))
struct FullscreenPolicyTests {
    private func players(_ count: Int) async throws -> [(Player, EventRecorder)] {
        var made: [(Player, EventRecorder)] = []
        for _ in 0..<count { made.append(try await Fixtures.player()) }
        return made
    }

    @Test("an owner's shutdown frees the policy as soon as shutdown() returns, before its last event reaches the policy")
    func freedAtOnce() async throws {
        let policy = FullscreenPolicy()
        for _ in 0..<5 {
            let (owner, _) = try await Fixtures.player()
            let (next, _) = try await Fixtures.player()
            try await policy.enterFullscreen(owner)
            await owner.shutdown()
            // No waiting: the policy's handler for the owner's last event may not have run yet.
            #expect(policy.owner == nil && !policy.isFullscreen)
            try await policy.claim(next)
            #expect(policy.owner == next.id)
            await next.shutdown()
        }
    }

    // MARK: One owner, whatever path fullscreen takes (issue 25)

    /// mpv's own `fullscreen` property of each player.
    private static func mpvFullscreen(_ players: [Player]) async -> [PlayerID: Bool] {
        var fullscreen: [PlayerID: Bool] = [:]
        for player in players { fullscreen[player.id] = (try? await player.property("fullscreen")) == .flag(true) }
        return fullscreen
    }

    /// The rule, checked against mpv itself: at most `expected` is fullscreen, and the policy's
    /// owner and isFullscreen say the same as the players.
    private static func holds(_ policy: FullscreenPolicy, _ players: [Player], fullscreen expected: PlayerID?, owner: PlayerID?) async -> Bool {
        let truth = await mpvFullscreen(players)
        let fullscreen = truth.filter(\.value).map(\.key)
        return fullscreen == (expected.map { [$0] } ?? []) && policy.owner == owner
            && policy.isFullscreen == (owner.map { truth[$0] == true } ?? false)
    }

    /// Expects the rule (``holds(_:_:fullscreen:owner:)``), now or within `limit`, naming what
    /// mpv and the policy said when it does not hold.
    private static func check(
        _ policy: FullscreenPolicy, _ players: [Player], fullscreen expected: PlayerID?, owner: PlayerID?,
        within limit: Duration? = nil, sourceLocation: SourceLocation = #_sourceLocation
    ) async {
        var held = await holds(policy, players, fullscreen: expected, owner: owner)
        if !held, let limit {
            held = await eventually(timeout: limit) { await holds(policy, players, fullscreen: expected, owner: owner) }
        }
        if !held { Issue.record("\(await describe(policy, players))", sourceLocation: sourceLocation) }
    }

    private static func describe(_ policy: FullscreenPolicy, _ players: [Player]) async -> String {
        "mpv: \(await mpvFullscreen(players).sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }), "
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
        try await policy.enterFullscreen(a)
        await Self.check(policy, players, fullscreen: a.id, owner: a.id)

        do {
            try await b.perform(.setFullscreen(true))
            Issue.record("b.perform(.setFullscreen(true)) was accepted while a owns fullscreen")
        } catch {
            #expect(error.description.contains(b.id.rawValue) && error.description.contains(a.id.rawValue), "\(error)")
        }
        #expect(throws: PlayerError.self) { try c.send(.setFullscreen(true)) }
        await Self.check(policy, players, fullscreen: a.id, owner: a.id)
        // Nothing was sent to mpv: no change is on its way either.
        let mark = all[1].1.mark
        try await b.perform(.setVolume(50))  // a later request that does reach mpv, as a marker
        #expect(await all[1].1.waitFor(after: mark) { $0.event == .volumeChanged(50) } != nil)
        #expect(!all[1].1.events.contains { $0.description == "fullscreenStateChanged(true)" })
        await Self.check(policy, players, fullscreen: a.id, owner: a.id)
        // Leaving fullscreen is never refused; the owner may do it through its player.
        try await b.perform(.setFullscreen(false))
        try await a.perform(.setFullscreen(false))
        await Self.check(policy, players, fullscreen: nil, owner: a.id, within: .seconds(15))
    }

    @Test("mpv's side (a property set or a command, as a key in mpv's window or the window manager makes) on a non-owner is undone",
          arguments: ["set", "property", "cycle"])
    func mpvSideUndone(path: String) async throws {
        let policy = FullscreenPolicy()
        let all = try await players(3)
        defer { Task { for (player, _) in all { await player.shutdown() } } }
        let players = all.map(\.0)
        let (a, b) = (players[0], players[1])
        for player in players { try policy.add(player) }
        try await policy.enterFullscreen(a)

        let started = ContinuousClock.now
        switch path {
        case "set": try await b.command(["set", "fullscreen", "yes"])
        case "property": try await b.setProperty("fullscreen", to: .flag(true))
        default: try await b.command(["cycle", "fullscreen"])
        }
        // mpv took it: b is fullscreen for a moment, then the policy takes it out again.
        await Self.check(policy, players, fullscreen: a.id, owner: a.id, within: .seconds(5))
        let settled = ContinuousClock.now - started
        #expect(settled < .seconds(2), "the rule came back after \(settled)")
        let undone = await all[1].1.waitFor { if case .fullscreenUndone? = $0.event.feature(FullscreenEvent.self) { true } else { false } }
        #expect(undone?.event.feature(FullscreenEvent.self) == .fullscreenUndone(owner: a.id))
        // The owner never moved.
        #expect(!all[0].1.events.contains { $0.description == "fullscreenStateChanged(false)" })
        await Self.check(policy, players, fullscreen: a.id, owner: a.id)
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
        try await policy.enterFullscreen(a)

        // The owner leaves fullscreen in mpv's window (or the window manager takes it out).
        var mark = aEvents.mark
        try await a.command(["set", "fullscreen", "no"])
        await Self.check(policy, players, fullscreen: nil, owner: a.id, within: .seconds(15))
        #expect(await aEvents.waitFor(after: mark) { $0.event.feature(FullscreenEvent.self) == .fullscreenChanged(false) } != nil)
        // ... and goes back in the same way.
        mark = aEvents.mark
        try await a.command(["cycle", "fullscreen"])
        await Self.check(policy, players, fullscreen: a.id, owner: a.id, within: .seconds(15))
        #expect(await aEvents.waitFor(after: mark) { $0.event.feature(FullscreenEvent.self) == .fullscreenChanged(true) } != nil)

        // A free policy: the member that goes fullscreen from mpv's side owns it.
        try await policy.release(a)
        await Self.check(policy, players, fullscreen: nil, owner: nil)
        mark = bEvents.mark
        try await b.command(["set", "fullscreen", "yes"])
        await Self.check(policy, players, fullscreen: b.id, owner: b.id, within: .seconds(15))
        #expect(await bEvents.waitFor(after: mark) { $0.event.feature(FullscreenEvent.self) == .ownershipChanged(owner: b.id) } != nil)
        await #expect(throws: PlayerError.self) { try await c.perform(.setFullscreen(true)) }
        await #expect(throws: PlayerError.self) { try await a.perform(.setFullscreen(true)) }
        await Self.check(policy, players, fullscreen: b.id, owner: b.id)

        // ... and through its own player too.
        try await policy.release(b)
        try await c.perform(.setFullscreen(true))
        await Self.check(policy, players, fullscreen: c.id, owner: c.id, within: .seconds(15))
    }
}
