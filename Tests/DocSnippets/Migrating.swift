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
    let single = try SyncGroup(players: [player])
    let empty = try ClockFollower(players: [])
    try await single.load([source])
    // end snippet
    _ = (skew, drift, spread, empty)
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
    var edited = sequencer.clips
    edited[index] = clip
    try sequencer.setClips(edited)
    // end snippet
    _ = (media, checked, free)
}

func snippet_migratingCore(player: Player, output: FrameOutput, frame: VideoFrame, record: PlayerEventRecord, bus: PlayerEventBus,
                           other: PlayerID, path: String, x: Int, y: Int) async throws {
    let rendered = output.latestFrame?.info.sequenceNumber
    let title = player.snapshot.mediaInfo?.title
    try await player.load(MediaSource(path))
    if case .itemEnded(let reason) = record.event { print(reason) }
    if case .error(let error) = record.event { print(error) }
    if record.event == .shutDown { print("shut down") }
    if let event = record.event.feature(FullscreenEvent.self) { print(event) }
    let subscription = bus.subscribe(to: .players(["main", other])) { record in print(record) }
    try await player.command(["playlist-clear"])
    let green = frame.withUnsafeBytes { $0[y * frame.info.stride + x * 4 + frame.info.format.pixelFormat.greenOffset] }
    _ = (rendered, title, subscription, green)
}

func snippet_migratingNet(event: RoomEvent, published: MPRISEvent, clocks: [PlaylistClock], host: String, port: Int,
                          password: String?, address: String) throws {
    var last: RoomState?
    if case .state(let latest) = event { last = latest }
    if case .paused(_, let by) = event { _ = by }
    let configuration = RoomClient.Configuration(host: host, port: port, room: "demo", name: "left", password: password)
    if case .published(let busName) = published { _ = busName }
    let mprisConfiguration = MPRISConfiguration(appName: "myapp", identity: "My App", busAddress: address)
    let options = MPRISPlayerOptions(identity: "Left", appHandles: [.playback, .seeking])
    let offsets = try PlaylistClock.mediaOffsets(clocks)
    _ = (last, configuration, mprisConfiguration, options, offsets)
}

func snippet_migratingFeatures(budget: DecoderBudget, record: PlayerEventRecord, source: MediaSource, sources: [MediaSource],
                               makePlayer: @escaping @Sendable (Int) async throws(PlayerError) -> any MediaPlayer, index: Int,
                               sequencer: ClipSequencer, clip: SequenceClip, player: Player, view: MultiView) async throws {
    let holders = budget.snapshot.holders
    var unplayable = Set<Int>()
    if case .clipUnplayable(let index, _)? = record.event.feature(ClipEvent.self) { unplayable.insert(index) }
    let item = PrefetchWindow.Item(source, speed: 2, direction: .backward)
    let window = try PrefetchWindow(items: sources.map { PrefetchWindow.Item($0) }, radius: 1, makePlayer: makePlayer)
    try await window.move(to: 0).play()
    try await window.player(for: index + 1)?.play()
    try await window.move(to: index + 1)
    var clips = sequencer.clips
    clips.insert(clip, at: index)
    try sequencer.setClips(clips)
    // The 2.0 side of the row `try sequencer.replace(at: index, with: clip)` (insert and remove are gone):
    var edited = sequencer.clips
    edited[index] = clip
    try sequencer.setClips(edited)
    do {
        let source = clip.source
        _ = source
    }
    let policy = FullscreenPolicy()
    let syncEvents = player.events(kinds: [.sync])
    if case .drift(let seconds)? = record.event.feature(SyncEvent.self) { _ = seconds }
    try await view.load(source, on: player)
    _ = (holders, unplayable, item, policy, syncEvents)
}

func snippet_migratingMedia(entry: MediaCacheEntry) throws {
    let configuration = PosterMaker.Configuration(width: 320, height: 180, concurrency: 4, timeoutPerItem: .seconds(10))
    let complete = entry.size == entry.cachedBytes
    _ = (configuration, complete)
}

// For Tests/DocSnippets/Migrating.swift (after snippet_migratingMedia): the 2.0 side of the
// "Fewer declarations" rows of NEW-01, -02, -03, -04, -06, -14, -15, -18, -20, -21, and of the
// replaced `follower.players` row (NEW-10). Public API only; not run.
func snippet_migratingFewerCore(source: MediaSource, pixelFormat: PixelFormat, bus: PlayerEventBus, id: PlayerID,
                                position: Double, speed: Double, running: Bool, time: ContinuousClock.Instant,
                                setAt: ContinuousClock.Instant, players: [Player], series: QualitySeries, pair: FramePairScore,
                                clock: ManualClock, m: FakePlayer.Media, fake: FakePlayer, d: any PlayerDelegate,
                                player: Player, frame: VideoFrame) async throws {
    if case .url(let url) = source.location { print(url.prefix(while: { $0 != ":" }).lowercased()) }
    let name = pixelFormat.description
    let subscription = bus.subscribe(to: id) { record in print(record) }
    let events = bus.events(for: id)
    let selection: PlayerSelection = .players([id])
    let reading: Double? = running ? position + speed * ((time - setAt) / .seconds(1)) : nil
    let own = try ClockFollower(players: players)
    let pairs = series.pairs.count
    let referenceTime = pair.referenceTime
    let made = try FakePlayer(clock: clock, media: ["a.mp4": m])
    let token = fake.eventBus.subscribe(d, to: fake)
    let device = try await player.property("audio-device")
    let rowBytes = frame.info.stride
    _ = (name, subscription, events, selection, reading, own, pairs, referenceTime, made, token, device, rowBytes)
}

func snippet_migratingFewerFeatures(boundary: SequenceBoundary, sequencer: ClipSequencer, clip: SequenceClip, source: MediaSource,
                                    index: Int, flips: [String: VideoFlip], frame: SequencedFrame, files: [URL], result: PosterResult,
                                    event: RoomEvent, record: PlayerEventRecord, cache: MediaCache, next: MediaSource,
                                    audio: AudioPolicy, player: Player) async throws {
    let gap = boundary.gap
    let incoming = boundary.firstFrameOfIncoming
    var edited = sequencer.clips
    edited[index] = .video(source, id: clip.id, speed: 2, direction: .backward, flip: .horizontal)
    try sequencer.setClips(edited)
    let flip = flips[frame.clipID, default: []]
    let file = files[result.index]
    var clock: RoomState?
    if case .state(let room) = event { clock = room }
    if case .published(let busName)? = record.event.feature(MPRISEvent.self) { print(busName) }
    let warming = Task { try await cache.precache(next, .seconds(3)) }
    warming.cancel()
    var focused: PlayerID?
    try await audio.focus(player)
    focused = player.id
    _ = (gap, incoming, flip, file, clock, focused)
}
