// The code blocks of Documentation/Caching.md, compiled by `make test` (the DocSnippets test target builds them;
// Scripts/check-snippets.py checks that each block shown is the region here). Not run.
import Foundation
import Logging
import PlayerKit
import PlayerKitCache
import PlayerKitRooms
import PlayerKitTesting
import CGLHost

func snippet_usingIt() async throws {
    // snippet: usingIt
    let cache = try MediaCache()                      // ~/.cache/playerkit/media, 1 GiB
    var configuration = PlayerConfiguration()
    configuration.streamProviders = [cache.streamProvider]

    let player = try await Player.create(id: "post-17", configuration: configuration)
    let video = try cache.source(for: URL(string: "https://cdn.example/v/17.mp4?sig=abc")!, key: "video-17")
    _ = try await player.load(video)                  // the first frame comes while the rest downloads

    // The next item: its first seconds, before it scrolls into view.
    let next = try cache.source(for: URL(string: "https://cdn.example/v/18.mp4?sig=def")!, key: "video-18")
    let warming = Task { try await cache.precache(next, .seconds(3)) }
    // ... it scrolled away after all:
    warming.cancel()                                  // ends it; the download stops unless a player reads it

    await cache.shutdown()                            // when the app is done with it
    // end snippet
}
