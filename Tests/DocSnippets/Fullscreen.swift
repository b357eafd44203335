// The code blocks of Documentation/Fullscreen.md, compiled by `make test` (the DocSnippets test target builds them;
// Scripts/check-snippets.py checks that each block shown is the region here). Not run.
import Foundation
import Logging
import PlayerKit
import PlayerKitCache
import PlayerKitRooms
import PlayerKitTesting
import CGLHost

func snippet_policy(main: Player, thumbnail: Player, detail: Player) async throws {
    // snippet: policy
    let policy = FullscreenPolicy(orientationControlsFullscreen: true)   // one per screen, kept by the app
    for player in [main, thumbnail, detail] { try policy.add(player) }   // the players on this screen
    try await policy.claim(main)                       // main owns the policy
    try await policy.claim(thumbnail)                  // throws .ownedByAnotherPlayer(owner: "main", requester: ...)
    await policy.setOrientation(.landscapeLeft)        // main enters fullscreen; the others do not move
    await policy.setOrientation(.portrait)             // main leaves fullscreen
    try await policy.transfer(from: main, to: detail)  // main leaves fullscreen; detail enters it in landscape
    try await policy.release(detail)                   // nobody owns it
    // end snippet
}

func snippet_orientation(policy: FullscreenPolicy) async throws {
    // snippet: orientation
    let following = policy.follow(RandROrientationSource())            // DISPLAY, or display: ":0"
    let now = try RandROrientationSource().currentOrientation()          // a one-off read
    // end snippet
}

func snippet_events(record: PlayerEventRecord) async throws {
    // snippet: events
    final class Screen: PlayerDelegate {
        func player(_ player: any MediaPlayer, didEmit record: PlayerEventRecord) {
            if case .fullscreenChanged(let on)? = record.event.feature(FullscreenEvent.self) { print(player.id, on) }
        }
    }
    if case .fullscreenChanged(let on)? = record.event.feature(FullscreenEvent.self) { print(record.playerID, on) }
    // end snippet
}
