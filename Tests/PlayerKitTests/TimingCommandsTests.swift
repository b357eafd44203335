import Foundation
import PlayerKit
import PlayerKitSupport
import Testing

/// The core's typed commands for players kept on one clock (``PlayerCommand/setTimestampOrigin(_:)``,
/// ``PlayerCommand/setPositionTiming(_:)``, ``PlayerCommand/setVideoClock(_:)``,
/// ``PlayerCommand/setBufferAfterStall(_:)``) and its buffered-media reports, on real libmpv:
/// what a feature used to reach for with mpv's names.
@Suite("Typed timing commands and buffered media (real libmpv)", .timeLimit(.minutes(2)))
struct TimingCommandsTests {
    /// A one-second MPEG-TS clip whose timestamps start at 10 s (a piece of a longer recording),
    /// made with ffmpeg in a folder of the test's own.
    static func clipStartingAt10() async throws -> URL {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("playerkit-ts-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let clip = folder.appendingPathComponent("from-10.ts")
        let result = try await ChildProcess.runToEnd(URL(fileURLWithPath: "/usr/bin/ffmpeg"), [
            "-hide_banner", "-loglevel", "error", "-f", "lavfi", "-i", "testsrc=size=64x36:rate=30", "-t", "1",
            "-c:v", "libx264", "-preset", "ultrafast", "-output_ts_offset", "10", "-muxdelay", "0", "-muxpreload", "0", "-y", clip.path,
        ])
        #expect(result.status == 0, "ffmpeg: \(result.errors)")
        return clip
    }

    @Test("positions count from the item's start by default and in the source's own timestamps with .source; the next load takes it")
    func timestampOrigin() async throws {
        let clip = try await Self.clipStartingAt10()
        defer { try? FileManager.default.removeItem(at: clip.deletingLastPathComponent()) }
        let (player, _) = try await Fixtures.player()
        try await player.preload(.file(clip.path))
        let fromStart = try #require(player.position)
        #expect(fromStart < 0.1, "\(fromStart)")
        try await player.perform(.setTimestampOrigin(.source))
        try await player.preload(.file(clip.path))
        let fromSource = try #require(player.position)
        #expect(fromSource > 9.9 && fromSource < 10.1, "\(fromSource)")
        try await player.perform(.setTimestampOrigin(.itemStart))
        try await player.preload(.file(clip.path))
        let again = try #require(player.position)
        #expect(again < 0.1, "\(again)")
        await player.shutdown()
    }

    @Test("position timing, the video's clock and the buffer after a stall reach mpv as set; a negative buffer is refused by name and the player stays usable")
    func settingsReachTheCore() async throws {
        // A player whose sound goes to an output the app chose (mpv's null output, named in
        // extraOptions): its video may follow its audio.
        var configuration = Fixtures.headless
        configuration.extraOptions["ao"] = "null"
        let (player, _) = try await Fixtures.player(configuration: configuration)
        try await player.perform(.setPositionTiming(.whenDue))
        #expect(try await player.property("video-timing-offset").doubleValue == 0)
        try await player.perform(.setPositionTiming(.whenQueued))
        #expect(try await player.property("video-timing-offset").doubleValue == 0.05)
        try await player.perform(.setVideoClock(.independent))
        #expect(try await player.property("video-sync") == .string("desync"))
        try await player.perform(.setVideoClock(.audio))
        #expect(try await player.property("video-sync") == .string("audio"))
        try await player.perform(.setBufferAfterStall(.milliseconds(200)))
        // mpv keeps it as a float: 0.2 within a float's precision.
        #expect(abs((try await player.property("cache-pause-wait").doubleValue ?? 0) - 0.2) < 1e-6)
        await #expect(throws: PlayerError.invalidArgument(name: "buffer after stall", value: "-1.0 seconds", reason: "must be between 0 and 1 hour")) {
            try await player.perform(.setBufferAfterStall(.seconds(-1)))
        }
        #expect(abs((try await player.property("cache-pause-wait").doubleValue ?? 0) - 0.2) < 1e-6)
        try await player.load(.file(Fixtures.clipA), startPaused: true)
        #expect(player.state == .ready)
        await player.shutdown()
    }

    @Test("a player nobody hears (no audio output) runs its video on its own clock from the start and whatever it is told: its null output keeps the system's time anyway, and video that followed it came up to a millisecond off")
    func unheardPlayerKeepsItsOwnClock() async throws {
        let (player, _) = try await Fixtures.player()
        #expect(try await player.property("video-sync") == .string("desync"))
        try await player.perform(.setVideoClock(.audio))
        #expect(try await player.property("video-sync") == .string("desync"))
        try await player.load(.file(Fixtures.clipA), startPaused: true)
        try await player.perform(.setVideoClock(.audio))
        #expect(try await player.property("video-sync") == .string("desync"))
        // It plays, sound and all (the sound is decoded and timed, not played).
        try await player.play()
        let start = player.position ?? 0
        #expect(await eventually(timeout: .seconds(10)) { (player.position ?? 0) > start + 0.3 })
        // Its video runs on its own clock, so it does not wait for the sound's chain: under load
        // the video moved on before mpv had set up the audio (CI's parallel pass, 2026-12-03:
        // "audio-params/samplerate has no value right now" right after the position moved).
        #expect(await eventually(timeout: .seconds(10)) {
            ((try? await player.property("audio-params/samplerate"))?.doubleValue ?? 0) > 0
        }, "the sound was never decoded")
        await player.shutdown()
    }

    @Test("a player whose frames the app draws reports positions when due whatever it is told (its frames are handed over when due)")
    func framesPlayerStaysDue() async throws {
        var configuration = Fixtures.headless
        configuration.videoOutput = .frames
        let (player, _) = try await Fixtures.player(configuration: configuration)
        try await player.perform(.setPositionTiming(.whenQueued))
        #expect(try await player.property("video-timing-offset").doubleValue == 0)
        await player.shutdown()
    }

    @Test("buffered media is reported while observed, the current value first: a local file is in memory past its first seconds and seekable")
    func bufferedMedia() async throws {
        let (player, recorder) = try await Fixtures.player()
        try await player.load(.file(Fixtures.fixture("long.mp4")), startPaused: true)
        #expect(!recorder.records.contains { $0.event.kind == .bufferedMediaChanged })
        let observation = player.observeBufferedMedia()
        let report = await recorder.waitFor(timeout: .seconds(10)) {
            if case .bufferedMediaChanged(let media) = $0.event, let cached = media.cachedUntil { return cached > 1 }
            return false
        }
        let media = try #require(report?.event).description
        #expect(media.contains("cached until"), "\(media)")
        observation.cancel()
        await player.shutdown()
    }
}

/// A feature's last word about a player, published when it hears the player shutting down.
private struct LeftTheGroup: PlayerFeatureEvent {
    var kind: PlayerEventKind { "test.leftTheGroup" }
    var description: String { "leftTheGroup" }
}

@Suite("Shutting down: features' last events before shutDown (real libmpv)", .timeLimit(.minutes(2)))
struct ShuttingDownTests {
    @Test("shuttingDown comes first, commands are refused from then on, what a feature publishes on hearing it comes before shutDown, and nothing after shutDown")
    func lastWords() async throws {
        let (player, recorder) = try await Fixtures.player()
        try await player.load(.file(Fixtures.clipA), startPaused: true)
        let refused = Locked<PlayerError?>(nil)
        let subscription = player.eventBus.subscribe(to: player.id, kinds: [.shuttingDown], delivery: .immediate) { record in
            player.publish(LeftTheGroup())
            do throws(PlayerError) { try player.send(.play) } catch { refused.withLock { $0 = error } }
        }
        defer { subscription.cancel() }
        await player.shutdown()
        player.publish(LeftTheGroup())  // after shutDown: ignored
        // The recorder is the delegate, on its queue: its shutDown may come a moment later.
        #expect(await recorder.waitFor(timeout: .seconds(10)) { $0.event == .shutDown } != nil)
        let names = recorder.records.map(\.event.kind.rawValue).filter { ["shuttingDown", "test.leftTheGroup", "shutDown"].contains($0) }
        #expect(names == ["shuttingDown", "test.leftTheGroup", "shutDown"])
        #expect(recorder.records.last?.event == .shutDown)
        #expect(refused.withLock { $0 } == .playerShutDown(player.id))
    }

    @Test("a multi-view member shut down hears dropped(shutDown) before its shutDown, on real libmpv too")
    func multiViewMember() async throws {
        let (left, leftEvents) = try await Fixtures.player()
        let (right, _) = try await Fixtures.player()
        // Looping, so neither ends (and leaves the group) before the shutdown, however slow the
        // machine (the parallel pass took 27 s over this test once, and both clips ended).
        try await left.perform(.setLoop(.forever))
        try await right.perform(.setLoop(.forever))
        let view = try MultiView(players: [left, right])
        defer { view.invalidate() }
        try await view.load([.file(Fixtures.clipA), .file(Fixtures.clipA)])
        #expect(view.members.count == 2)
        await left.shutdown()
        #expect(await leftEvents.waitFor(timeout: .seconds(10)) { $0.event == .shutDown } != nil)
        let kinds = leftEvents.records.compactMap { record -> String? in
            if record.event == .shutDown { return "shutDown" }
            if record.event.feature(SyncEvent.self) == .dropped(.shutDown) { return "dropped" }
            return nil
        }
        #expect(kinds == ["dropped", "shutDown"])
        #expect(view.members.map(\.id) == [right.id])
        await right.shutdown()
    }
}
