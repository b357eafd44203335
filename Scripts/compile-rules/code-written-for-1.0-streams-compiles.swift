// expect-ok
// expect-warning: 'PlayerEventStream' is deprecated
// expect-warning: 'VideoFrameSequence' is deprecated
// expect-warning: 'events(bufferLimit:)' is deprecated
// expect-warning: 'serviceEvents(bufferLimit:)' is deprecated
// expect-warning: 'posters(for:)' is deprecated
// App code written for 1.0's stream types compiles against 1.1, with deprecation warnings that
// name EventStream: 1.0's names are typealiases, and the features' 1.0 methods that returned an
// AsyncStream still do when the app asks for one. A RoomSession written for 1.0 (it implements
// the AsyncStream form) still conforms. Code that only iterates gets EventStream, silently.
import PlayerKitCache
import PlayerKitCore
import PlayerKitMPRIS
import PlayerKitPosters
import PlayerKitRooms

func oldNames(player: Player, output: FrameOutput) async {
    let events: PlayerEventStream = player.events()
    let frames: VideoFrameSequence = output.frames
    for await record in events { _ = record.playerID }
    for await frame in frames { _ = frame.info.framesMissed }
}

func oldReturnTypes(cache: MediaCache, room: RoomClient, mpris: MPRISService, posters: PosterMaker, requests: [PosterRequest]) async {
    let cacheEvents: AsyncStream<MediaCacheEvent> = cache.events()
    let roomEvents: AsyncStream<RoomEvent> = room.events(bufferLimit: 16)
    let serviceEvents: AsyncStream<MPRISServiceEvent> = mpris.serviceEvents()
    let results: AsyncStream<PosterResult> = posters.posters(for: requests)
    _ = (cacheEvents, roomEvents, serviceEvents, results)
}

func iteratingOnly(cache: MediaCache, room: RoomClient, posters: PosterMaker, requests: [PosterRequest]) async {
    for await event in cache.events() { _ = event }
    for await event in room.events() { _ = event }
    let results: EventStream<PosterResult> = posters.posters(for: requests)
    for await result in results { _ = result.index }
}

final class RoomFrom10: RoomSession {
    func events(bufferLimit: Int) -> AsyncStream<RoomEvent> { AsyncStream { $0.finish() } }
    func reportLocalState(_ provider: @escaping @Sendable () -> (position: Double, paused: Bool)?) {}
    func roundTrip(waitingUpTo limit: Duration) async -> Double? { nil }
    func pause(at position: Double) async throws(RoomError) {}
    func seek(to position: Double, paused: Bool) async throws(RoomError) {}
    func beginChange(position: Double, paused: Bool, seeking: Bool) -> PendingRoomChange { PendingRoomChange {} }
}
