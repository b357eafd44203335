import Foundation
import Testing
import PlayerKit

/// A player's own event stream finishes after its `shutDown` (issue 41, what a new user hit: a
/// `for await` loop over `player.events()` never finished once the player was shut down).
@Suite("A player's event stream ends with the player", .timeLimit(.minutes(2)))
struct PlayerEventStreamEndTests {
    /// Iterates `stream` to its end; returns the events seen, or nil when the iteration did not
    /// end within `timeout` (``within(_:_:)``).
    private func drain(_ stream: EventStream<PlayerEventRecord>, timeout: Duration = .seconds(20)) async -> [PlayerEvent]? {
        await within(timeout) {
            var seen: [PlayerEvent] = []
            for await record in stream { seen.append(record.event) }
            return seen
        }
    }

    @Test("for await over player.events() finishes after shutDown, which it delivers")
    func streamEndsAfterShutDown() async throws {
        let (player, _) = try await Fixtures.player(id: Fixtures.uniqueID("stream-end"))
        let all = player.events()
        let positionsOnly = player.events(kinds: [.positionChanged])
        try await player.load(.file(Fixtures.clipA), startPaused: true)
        async let seenAll = drain(all)
        async let seenPositions = drain(positionsOnly)
        await player.shutdown()
        let events = await seenAll
        #expect(events?.last == .shutDown, "the stream did not end after shutDown: \(String(describing: events?.suffix(3)))")
        #expect(events?.contains { if case .mediaLoaded = $0 { return true } else { return false } } == true)
        // Filtered without shutDown: it ends too, without delivering it.
        let positions = await seenPositions
        #expect(positions != nil, "a stream filtered to positions did not end")
        #expect(positions?.contains(.shutDown) == false)
        // Made after the shutdown: ends at once.
        #expect(await drain(player.events(), timeout: .seconds(5)) == [])
    }

    @Test("a bus subscription by ID goes on after the player's shutdown (it hears a later player with the ID)")
    func busStreamByIDContinues() async throws {
        let bus = PlayerEventBus(label: "by-id")
        var configuration = Fixtures.headless
        configuration.eventBus = bus
        let id = Fixtures.uniqueID("by-id")
        let byID = bus.events(for: id)
        let (first, _) = try await Fixtures.player(id: id, configuration: configuration)
        await first.shutdown()
        let (second, _) = try await Fixtures.player(id: id, configuration: configuration)
        await second.shutdown()
        var shutDowns = 0
        let heard = await byID.first(timeout: .seconds(10)) { record in
            if record.event == .shutDown { shutDowns += 1 }
            return shutDowns == 2
        }
        #expect(heard != nil, "the bus stream by ID did not hear the second player")
    }
}
