// expect-ok
// 1.x app code that only iterates a feature's stream, or names EventStream, compiles unchanged in
// 2.0: every stream is an EventStream, and the 1.x AsyncStream forms are gone (Migrating.md).
import PlayerKitCache
import PlayerKitCore
import PlayerKitPosters
import PlayerKitRooms

func iteratingOnly(player: Player, output: FrameOutput, cache: MediaCache, room: RoomClient, posters: PosterMaker,
                   requests: [PosterRequest]) async {
    let events: EventStream<PlayerEventRecord> = player.events()
    for await record in events { _ = record.playerID }
    for await frame in output.frames { _ = frame.info.framesMissed }
    for await event in cache.events() { _ = event }
    for await event in room.events() { _ = event }
    let results: EventStream<PosterResult> = posters.posters(for: requests)
    for await result in results { _ = result.index }
}

final class RoomFrom11: RoomSession {
    func events(bufferLimit: Int) -> EventStream<RoomEvent> { EventStream.makeStream(bufferLimit: bufferLimit).stream }
    func reportLocalState(_ provider: @escaping @Sendable () -> (position: Double, paused: Bool)?) {}
    func roundTrip(waitingUpTo limit: Duration) async -> Double? { nil }
    func pause(at position: Double) async throws(RoomError) {}
    func seek(to position: Double, paused: Bool) async throws(RoomError) {}
    func beginChange(position: Double, paused: Bool, seeking: Bool) -> PendingRoomChange { PendingRoomChange {} }
}
