// The code blocks of Documentation/Events.md, compiled by `make test` (the DocSnippets test target builds them;
// Scripts/check-snippets.py checks that each block shown is the region here). Not run.
import Foundation
import Logging
import PlayerKit
import PlayerKitCache
import PlayerKitRooms
import PlayerKitTesting
import CGLHost

func snippet_customEvent(other: Player, started: PlayerID) async throws {
    // snippet: customEvent
    enum ExclusivePlaybackEvent: PlayerFeatureEvent {
        case pausedBecauseOf(PlayerID)
        var kind: PlayerEventKind { "myapp.exclusivePlaybackPaused" }     // prefix your own kinds
        var description: String {
            switch self { case .pausedBecauseOf(let other): "pausedBecauseOf(\(other))" }
        }
    }
    other.publish(ExclusivePlaybackEvent.pausedBecauseOf(started))    // next sequence number, every channel
    // end snippet
}

func snippet_streams(bus: PlayerEventBus, player: Player) async throws {
    // snippet: streams
    for await record in bus.events(for: "main", kinds: [.stateChanged]) {
        if record.droppedBefore > 0 { /* fell behind: that many events were dropped before this one */ }
    }

    // Waiting for one event with a timeout (subscribe first, then act, so it cannot slip by):
    let landings = player.events(kinds: [.seekCompleted])
    try await player.seek(to: 12)
    let landed = await landings.first(timeout: .seconds(5)) { _ in true }   // nil: timed out
    // end snippet
}

