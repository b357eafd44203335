// The code blocks of Documentation/UsingPlayers.md, compiled by `make test` (the DocSnippets test target builds them;
// Scripts/check-snippets.py checks that each block shown is the region here). Not run.
import Foundation
import Logging
import PlayerKit
import PlayerKitCache
import PlayerKitRooms
import PlayerKitTesting
import CGLHost

func snippet_creating() async throws {
    // snippet: creating
    let main = try await Player.create(id: "main")                                   // custom ID
    let other = try await Player.create(configuration: .init(videoOutput: .window)) // random ID, mpv's own window
    // end snippet
}

func snippet_creatingSync() throws {
    // snippet: creating-sync
    let main = try Player(id: "main")       // synchronous code only: blocks for the core's creation
    // end snippet
}

func snippet_readyAtLaunch() async throws {
    // snippet: ready-at-launch
    var feed = PlayerConfiguration(videoOutput: .frames)
    feed.readyCores = 2                                   // a feed that makes players two at a time
    try await Player.prepareReadyCores(for: feed)         // at launch: even the first player takes one
    // end snippet
}

func snippet_live(player: Player) async throws {
    // snippet: live
    let info = try await player.load("https://cameras.example/lobby/live.m3u8")
    if info.isLive { /* no duration, no durationKnown; its source is reconnected when lost */ }
    for await record in player.events(kinds: [.error, .stateChanged]) {
        switch record.event {
        case .stateChanged(_, .buffering): break             // waiting for the source (a loss, too)
        case .error(.networkFailed(let source, let cause, let after)):
            print("\(source) is gone (\(cause)), after \(after) of trying")  // .connectionRefused, .httpStatus(404, ...), .timedOut, ...
        default: break
        }
    }
    // end snippet
}

func snippet_loading(player: Player) async throws {
    // snippet: sources
    let path: String = CommandLine.arguments.last ?? "clip.mp4"    // a String variable
    try await player.load(MediaSource(path))                       // "scheme://..." is a URL, anything else a path
    try await player.load(.file("/videos/clip.mp4"))               // a local file, whatever its name
    try await player.load(.url(URL(string: "https://example.com/live.m3u8")!))  // a URL (file:// becomes a file)
    try await player.load(.joined(["intro.mp4", "main.mp4"], repeated: 2))      // one seamless timeline
    // end snippet

    // snippet: loading
    let media = try await player.load("clip.mp4")                  // file path
    try await player.load(.url(URL(string: "https://example.com/a.mp4")!))
    try await player.load("av://lavfi:testsrc", startPaused: true)  // state .ready
    try await player.append("next.mp4"); try await player.perform(.next); try await player.perform(.previous); try await player.command(["playlist-clear"])
    try await player.play(); try await player.pause(); try await player.stop()
    try await player.seek(to: 12.5, precision: .exact); try await player.perform(.seekBy(-5, precision: .keyframe))
    try await player.perform(.setVolume(80)); try await player.perform(.setMuted(true)); try await player.perform(.setSpeed(1.25))
    try await player.perform(.setLoop(.forever))            // .off, .forever, .playCount(n)
    try await player.perform(.setHardwareDecoding(true)); try await player.perform(.setFullscreen(true))
    try await player.saveFrame(to: "poster.png")   // the frame on screen, video only
    player.releaseMedia()                    // unload: decoder, buffers and cache freed, heap trimmed
    try player.send(.setSpeed(1.02))         // the same commands, checked the same way, without waiting
    try await player.perform(.seek(to: 3, precision: .exact))  // the same, suspending until mpv answered
    let frames = player.observeEveryFrame()  // positionChanged with every frame while `frames` lives
    let idle = try player.observeProperty("core-idle")  // any mpv property: propertyChanged(name:value:) while `idle` lives
    // end snippet
}
