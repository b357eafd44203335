// The code blocks of Documentation/Desktop.md, compiled by `make test` (the DocSnippets test target builds them;
// Scripts/check-snippets.py checks that each block shown is the region here). Not run.
import Foundation
import PlayerKit
import PlayerKitMPRIS

func snippet_desktop(left: Player, right: Player) async throws {
    // snippet: publish
    let mpris = try MPRISService(configuration: MPRISConfiguration(appName: "myapp", identity: "My App"))
    try mpris.publish(left)                        // org.mpris.MediaPlayer2.myapp.instance_left
    try mpris.publish(right, options: MPRISPlayerOptions(controls: [.playback, .volume]))
    try mpris.setMediaKeysPlayer(left.id)          // also org.mpris.MediaPlayer2.myapp
    // end snippet

    // snippet: requests
    let requests = PlayerEventBus.shared.subscribe(to: .players([left.id, right.id]), kinds: [.mpris]) { record in
        guard case .requested(let request, let client, let outcome)? = record.event.feature(MPRISEvent.self) else { return }
        print("\(record.playerID): \(request) from \(client): \(outcome)")
        // "left: Pause from playerctl (pid 4242, :1.9): applied pause"
        if request == .raise, case .forwardedToApp = outcome { /* bring the player's window forward */ }
    }
    // end snippet
    _ = requests

    // snippet: artwork
    var options = MPRISPlayerOptions()   // what `left` was published with
    options.artworkURL = URL(fileURLWithPath: "/home/me/.cache/myapp/posters/item-3.png")
    try mpris.setOptions(options, for: left.id)
    // end snippet

    // snippet: shutdown
    await mpris.shutdown()         // every name leaves the bus; each player hears why
    // end snippet
}
