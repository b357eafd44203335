import Foundation
import PlayerKit
import Testing

@Suite("The pump never blocks", .timeLimit(.minutes(4)))
struct PumpRuleTests {
    /// No public method waits for mpv (every command is awaited or sent), so a handler on the
    /// pump cannot block it; what it may call (send, the read-outs) runs there.
    @Test("an .immediate handler sends a command and reads the read-outs on the pump")
    func sendOnThePumpIsAllowed() async throws {
        let bus = PlayerEventBus(label: "pump-rule")
        var configuration = Fixtures.headless
        configuration.eventBus = bus
        let (player, recorder) = try await Fixtures.player(configuration: configuration)
        defer { Task { await player.shutdown() } }
        // Once the item is ready, the volume's first observation (its baseline) has come: it was
        // queued before the item started loading.
        let subscription = bus.subscribe(to: player.id, kinds: [.stateChanged], delivery: .immediate) { record in
            guard case .stateChanged(_, .ready) = record.event else { return }
            _ = player.snapshot.volume
            try? player.send(.setVolume(60))
        }
        defer { subscription.cancel() }
        try await player.load(.file(Fixtures.clipA), startPaused: true)
        #expect(await recorder.waitFor { $0.event == .volumeChanged(60) } != nil)
    }
}
