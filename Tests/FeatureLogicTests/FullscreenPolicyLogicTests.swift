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
}
