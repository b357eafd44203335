// expect-ok
// expect-warning: 'PlayerEventStream' is deprecated
// expect-warning: 'VideoFrameSequence' is deprecated
// expect-warning: 'events(bufferLimit:)' is deprecated
// expect-warning: 'serviceEvents(bufferLimit:)' is deprecated
// expect-warning: 'posters(for:)' is deprecated
// expect-warning: 'DriftCorrector' is deprecated
// expect-warning: 'Settings' is deprecated: renamed to 'SyncSettings'
// expect-warning: 'init(room:players:correction:resynchronizationThreshold:clock:logger:)' is deprecated
// expect-warning: 'init(players:onMemberFailure:settings:clock:)' is deprecated
// App code written for 1.0's stream types and sync settings compiles against 1.1, with deprecation warnings that
// name EventStream: 1.0's names are typealiases, and the features' 1.0 methods that returned an
// AsyncStream still do when the app asks for one. A RoomSession written for 1.0 (it implements
// the AsyncStream form) still conforms. Code that only iterates gets EventStream, silently.
import PlayerKitCache
import PlayerKitCore
import PlayerKitMPRIS
import PlayerKitPosters
import PlayerKitRooms
import PlayerKitSync

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

func oldSyncSettings(room: RoomClient, a: Player, b: Player) throws {
    var settings = DriftCorrector.Settings()
    settings.seekThreshold = 0.5
    _ = try SyncGroup(players: [a, b], settings: settings)
    _ = try RoomFollower(room: room, players: [a], correction: settings)
    let live = MultiView.Settings()
    _ = live
    _ = try SyncGroup(players: [a, b])          // 1.1's: alignment SyncSettings.onDemand, no warning
}
