// The code blocks of Documentation/Sync.md, compiled by `make test` (the DocSnippets test target builds them;
// Scripts/check-snippets.py checks that each block shown is the region here). Not run.
import Foundation
import Logging
import PlayerKit
import PlayerKitCache
import PlayerKitRooms
import PlayerKitHLS
import PlayerKitTesting
import CGLHost

func snippet_group(left: Player, right: Player, paths: [String]) async throws {
    // snippet: group
    let group = try SyncGroup(players: [left, right])              // a player twice: invalidArgument
    try await group.load(["with-esc.mp4", "without-esc.mp4"], looping: true)
    try await group.load(paths.map { MediaSource($0) })            // paths in a [String]: each made a MediaSource
    try await group.play()
    try await group.seek(to: 12)                                    // all land on 12 s, then play on together
    try await group.setSpeed(0.5)                                   // 0.25...4, all members and the clock
    try await group.pause()
    group.invalidate()                                              // stop following (also when released)
    // end snippet
}

func snippet_multiview(main: Player, onboard: Player, aerial: Player, pit: Player) async throws {
    // snippet: multiview
    let view = try MultiView(players: [main, onboard, aerial])      // the same player twice: invalidArgument
    try await view.load(["https://live.example/main.m3u8", "https://live.example/onboard.m3u8",
                         "https://live.example/aerial.m3u8"])       // all start together
    try await view.load("https://live.example/pit.m3u8", on: pit)   // a late join: aligned like the others
    try await AudioPolicy(mode: .solo, players: view.members).focus(main)   // main heard; its video on its audio
    for await record in onboard.events(kinds: [.sync]) {       // joined, aligned, fellBehind, realigned, dropped, drift
        print(record.event, view.skews[onboard.id]?.description ?? "none yet")  // "+0.4 ms (p50 0.3, p95 1.1, p99 1.6 ms over 300 frames)"
    }
    // end snippet
}

func snippet_clockFollower(left: Player, right: Player, showStart: ContinuousClock.Instant) async throws {
    // snippet: clock-follower
    let follower = try ClockFollower(players: [left, right])       // a player twice: invalidArgument
    try follower.setClock(0, at: showStart)                         // your timeline: 0 s at showStart, speed 1
    follower.moveMembers(seekingBeyond: .milliseconds(40))          // each player there and playing (or move them yourself)
    for await record in right.events(kinds: [.sync]) {              // joined, aligned, fellBehind, realigned, drift
        print(record.event, follower.skews[right.id]?.description ?? "none yet")
    }
    try follower.setClock(95, running: false, at: .now)             // stopped at 95 s: nothing is corrected
    follower.moveMembers(seekingBeyond: .zero)                      // each player paused on 95 s
    // end snippet
}

func snippet_multiviewPause(view: MultiView) async throws {
    // snippet: multiview-pause
    try await view.pause()                // every member and the clock stop where they are
    try await view.resume()               // .wherePaused: on from the same frames, together
    try await view.pause()
    try await view.resume(from: .liveEdge)   // as far behind the live edge as before the pause
    // end snippet
}

func snippet_multiviewClocks(main: Player, onboard: Player, settingsFile: URL) async throws {
    // snippet: multiview-clocks
    let view = try MultiView(players: [main, onboard])
    let playlists = [main.id: URL(string: "https://a.example/main.m3u8")!,       // separate encoders,
                     onboard.id: URL(string: "https://b.example/onboard.m3u8")!] // each with PROGRAM-DATE-TIME
    let offsets = try await view.alignTimestamps(ofPlaylists: playlists)  // PlayerKitHLS; PlaylistClockError
    try await view.load(["https://a.example/main.m3u8", "https://b.example/onboard.m3u8"])
    let found = offsets[onboard.id] ?? .zero                              // onboard's media time minus main's
    try await view.setMediaOffset(found + .milliseconds(40), for: onboard.id)   // nudged by eye, live
    try JSONEncoder().encode(view.settings).write(to: settingsFile)       // offsets saved with the settings
    print(found)                                                          // e.g. "1.4 seconds"
    // end snippet
}

func snippet_feed(player17: Player) async throws {
    // snippet: feed
    let coordinator = try AutoplayCoordinator(budget: try DecoderBudget(limit: 3))
    try coordinator.add("post-17", player: player17, source: "post-17.mp4")   // top to bottom
    // as the feed scrolls:
    try coordinator.reportVisibility(0.92, of: "post-17")                     // 0...1; NaN or outside: invalidArgument
    for await record in player17.events(kinds: [.autoplayDecision]) {         // on each item's player, every channel
        print(record.event)                                                   // "play post-17: most visible (0.92 >= 0.85) ..."
    }
    // end snippet
}

func snippet_audio(main: Player, preview: Player, background: Player) async throws {
    // snippet: audio
    let audio = try AudioPolicy(mode: .duck(volume: 20), players: [main, preview, background])
    try await audio.focus(main)       // main as it was; the others at volume 20
    try await audio.clearFocus()      // everyone back to their own volume and mute
    // end snippet
}

func snippet_frames(left: Player, right: Player) async throws {
    // snippet: frames
    let group = try SyncGroup(players: [left, right])
    try await group.load(["with-esc.mp4", "without-esc.mp4"])
    var frame = try await group.seek(toFrame: 300)          // frame 300 of the first member, on both
    frame = try await group.stepFrame()                      // both on 301, paused
    frame = try await group.stepFrameBack()                  // both back on 300
    for member in frame.members { print(member) }            // "left: frame 300 (10.000 s)"
    try await group.setMediaOffset(.seconds(2), for: right.id)   // right's content starts 2 s into its file
    do {
        try await group.stepFrameBack()
    } catch .atFirstFrame {
        // every member shows its first frame already
    } catch {
        print(error)                                         // FrameStepError, naming the member
    }
    // end snippet
}
