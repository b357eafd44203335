import Foundation
import PlayerKit
@testable import PlayerKitCore
import Testing

@Suite("Engine operations", .timeLimit(.minutes(4)))
struct EngineTests {
    @Test("a request mpv refuses after it was sent comes back as an error event naming it; the player stays usable")
    func sentRequestRefusedByMPV() async throws {
        let (player, recorder) = try await Fixtures.player()
        defer { Task { await player.shutdown() } }
        // No public command reaches mpv unchecked; the engine's escape-hatch operation does.
        try player.core.send(.setProperty(name: "no-such-property", value: 1))
        let refusal = await recorder.waitFor { if case .error = $0.event { return true }; return false }
        #expect(refusal?.event == .error(.propertyNotFound(name: "no-such-property")))
        try await player.load(.file(Fixtures.clipA), startPaused: true)
        #expect(player.state == .ready)
    }

    @Test("a blocking operation updates the read-outs it owns before it returns")
    func blockingOperationUpdatesModel() async throws {
        let (player, _) = try await Fixtures.player()
        defer { Task { await player.shutdown() } }
        try await player.load(.file(Fixtures.clipA), startPaused: true)
        try player.play()
        #expect(!player.isPaused)
        try player.pause()
        #expect(player.isPaused)
        try player.setProperty("pause", to: false)
        #expect(!player.isPaused)
    }
}
