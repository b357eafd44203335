// The 2.0 side of every row of Documentation/Migrating.md, compiled by `make test` (the
// DocSnippets test target builds them; Scripts/check-snippets.py checks that each row's 2.0 code
// is here, and that each block shown is the region here). Not run.
import Foundation
import PlayerKit
import PlayerKitAnalysis
import PlayerKitCache
import PlayerKitHLS
import PlayerKitMPRIS
import PlayerKitPosters
import PlayerKitRooms
import PlayerKitTesting

func snippet_migratingStreams(player: Player, output: FrameOutput, cache: MediaCache, room: RoomClient, mpris: MPRISService,
                              posters: PosterMaker, requests: [PosterRequest]) async {
    // snippet: streams
    let events: EventStream<PlayerEventRecord> = player.events()
    let frames: EventStream<VideoFrame> = output.frames
    var iterator: EventStream<VideoFrame>.AsyncIterator = frames.makeAsyncIterator()
    let cacheEvents: EventStream<MediaCacheEvent> = cache.events()
    let roomEvents: EventStream<RoomEvent> = room.events(bufferLimit: 16)
    let serviceEvents: EventStream<MPRISServiceEvent> = mpris.serviceEvents()
    let results: EventStream<PosterResult> = posters.posters(for: requests)
    // end snippet
    _ = (events, await iterator.next(), cacheEvents, roomEvents, serviceEvents, results)
}

// snippet: session
final class MySession: RoomSession {
    func events(bufferLimit: Int) -> EventStream<RoomEvent> { EventStream.makeStream(bufferLimit: bufferLimit).stream }
    func reportLocalState(_ provider: @escaping @Sendable () -> (position: Double, paused: Bool)?) {}
    func roundTrip(waitingUpTo limit: Duration) async -> Double? { nil }
    func pause(at position: Double) async throws(RoomError) {}
    func seek(to position: Double, paused: Bool) async throws(RoomError) {}
    func beginChange(position: Double, paused: Bool, seeking: Bool) -> PendingRoomChange { PendingRoomChange {} }
}
// end snippet

func snippet_migratingSettings(players: [Player], room: RoomClient, clockPosition: Double) throws {
    // snippet: settings
    var settings = SyncSettings.onDemand
    settings.realignThreshold = .milliseconds(500)
    settings.maximumSpeedTrim = 0.02
    settings.correctsSkew = false
    settings.driftReportInterval = .seconds(2)
    let group = try SyncGroup(players: players, settings: settings)
    let follower = try RoomFollower(room: room, players: players, settings: settings)
    let patient = try RoomFollower(room: room, players: players, settings: settings, resynchronizationThreshold: .seconds(1))
    let live: SyncSettings = SyncSettings()
    let own = try ClockFollower(players: players, settings: settings)
    try own.setClock(clockPosition, speed: 1, at: .now)
    // end snippet
    _ = (group, follower, patient, live)
}

func snippet_migratingFigures(group: SyncGroup, own: ClockFollower, id: PlayerID, player: Player, source: MediaSource) async throws {
    // snippet: figures
    let skew = group.skews[id]
    let drift = group.skews[id]?.drift
    let drifts = group.skews.values.map(\.drift)
    let spread = (drifts.max() ?? 0) - (drifts.min() ?? 0)
    let followed = own.members
    let single = try SyncGroup(players: [player])
    let empty = try ClockFollower(players: [])
    try await single.load([source])
    // end snippet
    _ = (skew, drift, spread, followed, empty)
}

func snippet_migratingOffsets(group: SyncGroup, view: MultiView, id: PlayerID, found: [PlayerID: RecordingOffset],
                              clocks: [PlaylistClock], playlists: [PlayerID: URL], o: Duration) async throws {
    var settings = SyncSettings()
    // snippet: offsets
    let mediaOffset = group.settings.mediaOffsets[id]
    try await group.setMediaOffset(.seconds(2), for: id)
    let drifts = group.settings.clockDrifts
    try await group.setClockDrift(150, for: id)
    await group.apply(found)
    try await view.setMediaOffset(.seconds(1.4), for: id)
    try await view.pause()
    try await view.resume(from: .liveEdge)
    settings.mediaOffsets[id] = .seconds(2)
    let angles = try PlaylistClock.mediaOffsets(clocks)
    let aligned = try await view.alignTimestamps(ofPlaylists: playlists)
    try await view.setMediaOffset(o, for: id)
    // end snippet
    _ = (mediaOffset, drifts, angles, aligned, settings)
}

func snippet_migratingClock(follower: ClockFollower, start: ContinuousClock.Instant) throws {
    // snippet: clock
    try follower.setClock(95, running: false, at: .now)
    follower.moveMembers(seekingBeyond: .zero)
    try follower.setClock(0, at: start)
    follower.moveMembers(seekingBeyond: .milliseconds(40))
    try follower.setClock(0, speed: 2, at: start)
    // end snippet
}

func snippet_migratingFewer(settings: SyncSettings, snapshot: DecoderBudget.Snapshot, sequencer: ClipSequencer,
                            clip: SequenceClip, index: Int) throws {
    // snippet: fewer
    let media = FakePlayer.Media(duration: 60, sourceStart: 1_000, audioTracks: 2)
    let checked = try ClockFollower(players: [], settings: settings)
    let free = snapshot.limit - snapshot.holders.count
    try sequencer.insert(clip, at: index + 1)
    try sequencer.remove(at: index)
    // end snippet
    _ = (media, checked, free)
}
