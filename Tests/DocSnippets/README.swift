// The code blocks of README.md, compiled by `make test` (the DocSnippets test target builds them;
// Scripts/check-snippets.py checks that each block shown is the region here). Not run.
import Foundation
import Logging
import PlayerKit
import PlayerKitCache
import PlayerKitMPRIS
import PlayerKitRooms
import PlayerKitTesting
import CGLHost

func snippet_bus() async throws {
    // snippet: bus
    let subscription = PlayerEventBus.shared.subscribe(to: "main", kinds: [.stateChanged]) { record in
        print(record.playerID, record.event)               // on a serial queue of the subscription's own
    }
    for await record in PlayerEventBus.shared.events(for: "main") { print(record) }  // bounded buffer, reports drops
    PlayerEventBus.shared.startPostingNotifications()      // NotificationCenter bridge, off by default
    // end snippet
}

func snippet_fullscreen(main: Player, thumbnail: Player) async throws {
    // snippet: fullscreen
    let policy = FullscreenPolicy(orientationControlsFullscreen: true)
    for player in [main, thumbnail] { try policy.add(player) }  // the players on this screen
    try await policy.claim(main)                                  // another player's claim now throws, naming "main"
    // thumbnail.perform(.setFullscreen(true)) throws fullscreenRefused; from mpv's window, it is undone
    policy.follow(RandROrientationSource())                 // the X11 screen's rotation (RandR)
    // end snippet
}

func snippet_resources(main: Player, next: Player, background: Player) async throws {
    // snippet: resources
    let budget = try DecoderBudget(limit: 4)                // beyond 4: a typed error, or wait for a slot
    try await budget.load("clip.mp4", into: main, whenFull: .wait(timeout: .seconds(5)))
    try budget.release(main)                                // unloads: decoder and buffers are freed
    try await next.preload("next.mp4")                      // paused on its first frame; play() starts at once
    let loop = try ClipLoop(player: background, clips: ["a.mp4", "b.mp4", "c.mp4"])
    try await loop.start()                                  // a seamless treadmill, with an event per seam
    // end snippet
}

func snippet_sync(left: Player, right: Player, budget: DecoderBudget) async throws {
    // snippet: sync
    let group = try SyncGroup(players: [left, right])       // one clock; drift corrected, reported per member
    try await group.load(["a.mp4", "b.mp4"], looping: true)
    try await group.play()
    let feed = try AutoplayCoordinator(budget: budget)     // the most visible item plays once scrolling settles
    try feed.reportVisibility(0.92, of: "post-17")
    // end snippet
}

func snippet_configuration() async throws {
    // snippet: configuration
    var configuration = PlayerConfiguration()
    configuration.audioDevice = "pulse/headphones"         // one of Player.audioDevices(); default: the system's
    configuration.logger = Logger(label: "app.video")      // swift-log; every line carries player=main
    configuration.mpvLogLevel = .info                       // how much of mpv's own log reaches that logger
    let player = try await Player.create(id: "main", configuration: configuration)
    try await player.load("film.mkv")
    try await player.perform(.selectTrack(.audio, id: 2))                // the read-out shows it when this returns
    try await player.addSubtitles(path: "film.en.srt", language: "eng")
    let decoder = player.videoDecoder                       // e.g. codec h264, hardwareAPI nil: software
    try await player.setAudioDevice("pulse/speakers")             // moves only this player, also while playing
    // end snippet
}

func snippet_cache(configuration: inout PlayerConfiguration, url: URL, nextURL: URL, player: Player, budget: DecoderBudget) async throws {
    // snippet: cache
    let cache = try MediaCache()                            // ~/.cache/playerkit/media, 1 GiB, LRU
    configuration.streamProviders = [cache.streamProvider]
    let video = try cache.source(for: url, key: "video-17") // a stable key for a signed URL
    _ = try await player.load(video)                        // plays while the rest downloads
    try await cache.precache(try cache.source(for: nextURL, key: "video-18"), .seconds(3))
    let feed = try AutoplayCoordinator(budget: budget, cache: cache) // precaches items near the viewport
    // end snippet
}

func snippet_rooms(player: Player) async throws {
    // snippet: rooms
    let room = try RoomClient(.init(host: "127.0.0.1", port: 8999, room: "demo", name: "left"))
    let follower = try RoomFollower(room: room, players: [player])   // player: preloaded, paused
    follower.start()
    try await room.join()
    try await follower.play()   // every member starts; pause() and seek(to:) likewise
    // end snippet
}

func snippet_mpris(left: Player, right: Player) throws {
    // snippet: mpris
    let mpris = try MPRISService(configuration: MPRISConfiguration(appName: "myapp", identity: "My App"))
    try mpris.publish(left)          // playerctl --player=myapp.instance_left play-pause
    try mpris.publish(right)
    try mpris.setMediaKeysPlayer(left.id)
    // end snippet
}

