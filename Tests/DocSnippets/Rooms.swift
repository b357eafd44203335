// The code blocks of Documentation/Rooms.md, compiled by `make test` (the DocSnippets test target builds them;
// Scripts/check-snippets.py checks that each block shown is the region here). Not run.
import Foundation
import Logging
import PlayerKit
import PlayerKitCache
import PlayerKitRooms
import PlayerKitTesting
import CGLHost

func snippet_follow() async throws {
    // snippet: follow
    let player = try await Player.create(id: "left", configuration: PlayerConfiguration(videoOutput: .window))
    try await player.preload("talk.mp4")                  // paused on its first frame

    let room = try RoomClient(.init(host: "watch.example.org", port: 8999, room: "demo", name: "left"))
    let follower = try RoomFollower(room: room, players: [player])
    follower.start()
    try await room.join()
    try await room.announceFile(name: "talk.mp4", duration: player.snapshot.duration ?? 0, size: 0)

    try await follower.play()     // every member of the room starts; pause() and seek(to:) likewise
    // end snippet
}
