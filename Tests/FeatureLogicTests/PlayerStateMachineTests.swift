import PlayerKitCore
import PlayerKitTesting
import Testing

/// The state derivation every player shares (`Player` and `FakePlayer` both drive it): its rules
/// on their own, then a fake driven through a whole item, whose state sequence is what the
/// machine says it must be.
@Suite("PlayerStateMachine: one derivation of a player's state", .timeLimit(.minutes(1)))
struct PlayerStateMachineTests {
    @Test("each phase, pause and wait for the network gives the documented state; an unchanged state gives no event")
    func rules() {
        var machine = PlayerStateMachine()
        #expect(machine.state == .idle && machine.refresh() == nil)
        machine.phase = .loading
        #expect(machine.refresh() == .stateChanged(from: .idle, to: .loading))
        machine.phase = .loaded
        machine.isPaused = true
        #expect(machine.refresh() == .stateChanged(from: .loading, to: .ready))      // not played yet
        machine.isPaused = false
        #expect(machine.refresh() == .stateChanged(from: .ready, to: .playing))
        machine.isWaitingForCache = true
        #expect(machine.refresh() == .stateChanged(from: .playing, to: .buffering))
        machine.isWaitingForCache = false
        machine.isPaused = true
        #expect(machine.refresh() == .stateChanged(from: .buffering, to: .paused))  // it has played
        #expect(machine.refresh() == nil)
        machine.phase = .ended
        #expect(machine.refresh() == .stateChanged(from: .paused, to: .ended))
        machine.phase = .failed
        #expect(machine.refresh() == .stateChanged(from: .ended, to: .failed))
        machine.phase = .idle
        #expect(machine.refresh() == .stateChanged(from: .failed, to: .idle))
    }

    @Test("a new item has not played: paused after a load is ready, not paused, even if the one before played")
    func newItemResets() {
        var machine = PlayerStateMachine()
        machine.phase = .loaded
        #expect(machine.refresh() == .stateChanged(from: .idle, to: .playing))
        machine.phase = .loading
        machine.isPaused = true
        #expect(machine.refresh() == .stateChanged(from: .playing, to: .loading))
        machine.phase = .loaded
        #expect(machine.refresh() == .stateChanged(from: .loading, to: .ready))
        // Changes within one batch: only the state at the refresh counts.
        machine.isPaused = false
        machine.isPaused = true
        #expect(machine.refresh() == nil)
        #expect(machine.state == .ready)
    }

    @Test("a fake's states through load (paused), play, pause, play and the end are the machine's, as a real player's are")
    func fakeFollowsTheMachine() async throws {
        let clock = ManualClock()
        let bus = PlayerEventBus(label: "state-machine")
        let player = try FakePlayer(clock: clock, bus: bus, media: ["a.mp4": .init(duration: 2)])
        let log = EventLog(bus: bus, players: [player.id])
        try await player.load("a.mp4", startPaused: true)
        try await player.play()
        clock.advance(by: .milliseconds(500))
        try await player.pause()
        try await player.play()
        clock.advance(by: .seconds(3))
        let states = log.events(of: player.id).compactMap { event -> PlayerState? in
            if case .stateChanged(_, let to) = event { return to } else { return nil }
        }
        // The sequence PlaybackTests asserts for a real player over the same calls.
        #expect(states == [.loading, .ready, .playing, .paused, .playing, .ended])
        await player.shutdown()
    }
}
