import Foundation
@testable import PlayerKitCore
import Testing
import PlayerKit

@Suite("Playback with real libmpv", .timeLimit(.minutes(4)))
struct PlaybackTests {
    @Test("two players at once, each gets only its own events")
    func twoPlayersOwnEvents() async throws {
        let (main, mainEvents) = try await Fixtures.player(id: Fixtures.uniqueID("main"))
        let (other, otherEvents) = try await Fixtures.player()
        defer { Task { await main.shutdown(); await other.shutdown() } }
        // Looping, so both still play when checked, however slow the machine is.
        try await main.perform(.setLoop(.forever))
        try await other.perform(.setLoop(.forever))

        async let loadedMain = main.load(.file(Fixtures.clipA))
        async let loadedOther = other.load(.file(Fixtures.clipB))
        let (infoA, infoB) = try await (loadedMain, loadedOther)
        #expect(infoA.title == "PlayerKit clip A")
        #expect(infoB.title == "PlayerKit clip B")

        #expect(await mainEvents.waitForState(.playing))
        #expect(await otherEvents.waitForState(.playing))
        // Both play at the same time: wait until each has moved past 0.5 s.
        for recorder in [mainEvents, otherEvents] {
            let moved = await recorder.waitFor { if case .positionChanged(let p) = $0.event { return p > 0.5 }; return false }
            #expect(moved != nil)
        }
        #expect(main.state == .playing && other.state == .playing)

        for (player, recorder) in [(main, mainEvents), (other, otherEvents)] {
            #expect(!recorder.deliveries.isEmpty)
            for delivery in recorder.deliveries {
                #expect(delivery.record.playerID == player.id)
                #expect(delivery.receiverID == player.id)
                #expect(delivery.onDelegateQueue)
            }
            let sources = recorder.events.compactMap { if case .mediaLoaded(let info) = $0 { return info.source } else { return nil } }
            #expect(sources == [player === main ? Fixtures.clipA : Fixtures.clipB])
        }
        #expect(mainEvents.specificCalls > 0)
    }

    @Test("per-player order: gapless sequence numbers and a consistent state chain")
    func perPlayerOrder() async throws {
        let (player, recorder) = try await Fixtures.player()
        defer { Task { await player.shutdown() } }
        // Loaded paused, so the item cannot run out before the test drives it (slow machines,
        // sanitizers).
        try await player.load(.file(Fixtures.clipA), startPaused: true)
        #expect(player.state == .ready, "after load: \(recorder.events)")
        try await player.seek(to: 1, precision: .exact)
        #expect(await recorder.waitFor { if case .seekCompleted = $0.event { return true }; return false } != nil)
        // A quarter speed: the 3 s left last 12 s, so the pause below comes before the end
        // even when a sanitizer run keeps this test waiting for seconds.
        try await player.perform(.setSpeed(0.25))
        try await player.play()
        #expect(await recorder.waitForState(.playing))
        try await player.pause()
        #expect(await recorder.waitForState(.paused))
        try await player.play()
        #expect(await recorder.waitForState(.ended, timeout: .seconds(30)))

        let records = recorder.records
        #expect(records.map(\.sequenceNumber) == Array(1...UInt64(records.count)))
        #expect(zip(records, records.dropFirst()).allSatisfy { $0.timestamp <= $1.timestamp })
        var current = PlayerState.idle
        for case .stateChanged(let from, let to) in recorder.events {
            #expect(from == current)
            #expect(from != to)
            current = to
        }
        #expect(recorder.states == [.loading, .ready, .playing, .paused, .playing, .ended])
        // The media is loaded before its end, and the end is reported before the state says so.
        let names = recorder.events.map(\.kind.rawValue)
        let loaded = try #require(names.firstIndex(of: "mediaLoaded"))
        let ended = try #require(names.firstIndex(of: "itemEnded"))
        #expect(loaded < ended)
        #expect(recorder.events.contains(.itemEnded(.finished)))
    }

    @Test("order holds when API calls on many threads and the pump produce events at once")
    func orderUnderConcurrentCalls() async throws {
        let (player, recorder) = try await Fixtures.player()
        defer { Task { await player.shutdown() } }
        try await player.perform(.setLoop(.forever))
        try await player.load(.file(Fixtures.clipA))
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<4 {
                group.addTask {
                    for _ in 0..<100 { try? await player.perform(player.isPaused ? .play : .pause) }
                }
            }
        }
        try await player.perform(.setVolume(42))  // a last, recognisable event
        #expect(await recorder.waitFor { $0.event == .volumeChanged(42) } != nil)
        let records = recorder.records
        #expect(records.map(\.sequenceNumber) == Array(1...UInt64(records.count)))
        var current = PlayerState.idle
        for case .stateChanged(let from, let to) in records.map(\.event) {
            #expect(from == current, "\(from) -> \(to) after \(current)")
            current = to
        }
        #expect(current == player.state)
    }

    @Test("an exact seek lands within one frame")
    func exactSeek() async throws {
        let (player, recorder) = try await Fixtures.player()
        defer { Task { await player.shutdown() } }
        let info = try await player.load(.file(Fixtures.clipA), startPaused: true)
        #expect(player.state == .ready)
        // Loaded paused, the player still presents the first frame (and reports it once).
        #expect(await recorder.waitFor { $0.event == .firstFrame } != nil)
        #expect(info.duration.map { abs($0 - 4) < 0.05 } == true)
        #expect(info.videoSize == VideoSize(width: 320, height: 240))
        #expect(info.tracks.contains { $0.kind == .video && $0.codec == "h264" })
        #expect(info.tracks.contains { $0.kind == .audio })

        for target in [2.0, 0.5, 3.3] {
            let mark = recorder.mark
            try await player.seek(to: target, precision: .exact)
            let done = await recorder.waitFor(after: mark) {
                if case .seekCompleted = $0.event { return true }
                return false
            }
            #expect(done != nil)
            let landed = try await #require(player.property("time-pos").doubleValue)
            #expect(abs(landed - target) <= 1.0 / 30.0, "seek to \(target) landed at \(landed)")
        }
        #expect(recorder.events.filter { $0 == .firstFrame }.count == 1)
        // The frame counter of testsrc2 makes the landing checkable from the decoded frame too.
        #expect(player.state == .ready)
    }

    @Test("a speed correction plays faster or slower without a speed change for the app: mpv's speed is the speed times the correction, the read-out and speedChanged stay the app's; a speed set keeps the correction away; refused outside its range (issue 66)")
    func speedCorrection() async throws {
        let (player, recorder) = try await Fixtures.player()
        defer { Task { await player.shutdown() } }
        try await player.perform(.setLoop(.forever))
        try await player.load(.file(Fixtures.clipA))
        #expect(await recorder.waitForState(.playing))
        let mark = recorder.mark
        for factor in [1.04, 0.97, 1.02, 0.995] {
            try await player.perform(.setSpeedCorrection(factor))
            await #expect(try player.property("speed") == .double(factor))
            #expect(player.snapshot.speed == 1)
        }
        try await player.perform(.setSpeed(1.5))
        #expect(await recorder.waitFor(after: mark) { $0.event == .speedChanged(1.5) } != nil)
        await #expect(try player.property("speed") == .double(1.5))  // the correction went with the new speed
        try await player.perform(.setSpeedCorrection(1.02))
        await #expect(try player.property("speed") == .double(PlaybackModel.mpvSpeed(1.5, correction: 1.02)))
        #expect(player.snapshot.speed == 1.5)
        try await player.perform(.setSpeedCorrection(1))
        await #expect(try player.property("speed") == .double(1.5))
        // Only the app's own speed change was published.
        let speeds = recorder.records.filter { $0.sequenceNumber > mark }.compactMap { if case .speedChanged(let s) = $0.event { s } else { nil } }
        #expect(speeds == [1.5], "\(speeds)")
        await #expect(throws: PlayerError.self) { try await player.perform(.setSpeedCorrection(3)) }
        #expect(throws: PlayerError.self) { try player.send(.setSpeedCorrection(.nan)) }
    }

    @Test("transport, audio, speed, loop, hardware decoding and read-outs")
    func controlsAndReadOuts() async throws {
        let (player, recorder) = try await Fixtures.player()
        defer { Task { await player.shutdown() } }
        try await player.perform(.setLoop(.forever))
        let info = try await player.load(.file(Fixtures.clipA), startPaused: true)
        #expect(info.title == "PlayerKit clip A")
        #expect(player.isPaused)
        #expect(player.snapshot.duration.map { abs($0 - 4) < 0.05 } == true)
        // The read-out follows mpv's observed `media-title`, which can name the file for a moment.
        #expect(await eventually { player.model(\.mediaTitle) == "PlayerKit clip A" })
        #expect(player.tracks.count == 2)

        try await player.perform(player.isPaused ? .play : .pause)
        #expect(await recorder.waitForState(.playing))
        #expect(await recorder.waitFor { if case .positionChanged(let p) = $0.event { return p > 0.2 }; return false } != nil)
        // Known (the looping clip may just be wrapping to 0 on a busy machine).
        #expect(player.position.map { $0 >= 0 } == true)
        #expect(player.videoSize == VideoSize(width: 320, height: 240))

        try await player.perform(.setVolume(40))
        try await player.perform(.setMuted(true))
        try await player.perform(.setSpeed(1.5))
        #expect(await recorder.waitFor { $0.event == .volumeChanged(40) } != nil)
        #expect(await recorder.waitFor { $0.event == .muteChanged(true) } != nil)
        #expect(await recorder.waitFor { $0.event == .speedChanged(1.5) } != nil)
        #expect(player.snapshot.volume == 40 && player.snapshot.isMuted == true && player.snapshot.speed == 1.5)

        // Paused for the loop modes: playing at 1.5x the clip wraps every 2.7 s, and a wrap
        // counts a play count down (or, looping off, ends the item) between a set and its read.
        try await player.pause()
        try await player.perform(.setLoop(.playCount(3)))
        await #expect(try player.property("loop-file") == .int(2))
        try await player.perform(.setLoop(.off))
        await #expect(try player.property("loop-file") == .flag(false))
        try await player.perform(.setLoop(.forever))
        await #expect(try player.property("loop-file") == .string("inf"))

        try await player.perform(.setHardwareDecoding(true))
        await #expect(try player.property("hwdec") == .string("auto-safe"))
        try await player.perform(.setHardwareDecoding(false))
        await #expect(try player.property("hwdec") == .string("no"))

        try await player.stop()
        #expect(await recorder.waitFor { $0.event == .itemEnded(.stopped) } != nil)
        #expect(await recorder.waitForState(.idle))
    }

    @Test("a loop plays the item again without an end")
    func loopPlaysAgain() async throws {
        let (player, recorder) = try await Fixtures.player()
        defer { Task { await player.shutdown() } }
        try await player.perform(.setLoop(.playCount(2)))
        try await player.load(.file(Fixtures.clipB))
        // Past the first play (4 s) the position goes back to the start, then the item finishes.
        #expect(await recorder.waitFor(timeout: .seconds(20)) { $0.event == .itemEnded(.finished) } != nil)
        let positions = recorder.events.compactMap { if case .positionChanged(let p) = $0 { return p } else { return nil } }
        // (A position report at least 1.5 s past the next one: a busy machine may report late.)
        let wrapped = zip(positions, positions.dropFirst()).contains { $0 - $1 > 1.5 }
        #expect(wrapped, "positions: \(positions)")
        #expect(recorder.events.filter { $0 == .itemEnded(.finished) }.count == 1)
    }

    @Test("playlist queue: append, next, previous, clear")
    func playlist() async throws {
        let (player, recorder) = try await Fixtures.player()
        defer { Task { await player.shutdown() } }
        try await player.load(.file(Fixtures.clipA), startPaused: true)
        try await player.append(.file(Fixtures.clipB))
        await #expect(try player.property("playlist-count").intValue == 2)

        try await player.perform(.next)
        #expect(await recorder.waitFor { $0.event == .itemEnded(.replaced) } != nil)
        #expect(await recorder.waitFor {
            if case .mediaLoaded(let info) = $0.event { return info.source == Fixtures.clipB }
            return false
        } != nil)

        let mark = recorder.mark
        try await player.perform(.previous)
        #expect(await recorder.waitFor(after: mark) {
            if case .mediaLoaded(let info) = $0.event { return info.source == Fixtures.clipA }
            return false
        } != nil)

        try await player.clearPlaylist()
        await #expect(try player.property("playlist-count").intValue == 1)
        await #expect(throws: PlayerError.self) { try await player.perform(.next) }
        #expect(player.state.hasMedia)
    }

    @Test("playlistChanged follows the playlist (append, next sent without waiting, previous, clear) and the read-out agrees")
    func playlistEvents() async throws {
        let (player, recorder) = try await Fixtures.player()
        defer { Task { await player.shutdown() } }
        try await player.load(.file(Fixtures.clipA), startPaused: true)
        #expect(await recorder.waitFor { $0.event == .playlistChanged(PlaylistPosition(index: 0, count: 1)) } != nil)
        #expect(player.snapshot.playlist?.hasNext == false && player.snapshot.playlist?.hasPrevious == false)
        try await player.append(.file(Fixtures.clipB))
        #expect(await recorder.waitFor { $0.event == .playlistChanged(PlaylistPosition(index: 0, count: 2)) } != nil)
        #expect(player.snapshot.playlist?.hasNext == true)
        try player.send(.next)
        #expect(await recorder.waitFor { $0.event == .playlistChanged(PlaylistPosition(index: 1, count: 2)) } != nil)
        #expect(await recorder.waitFor { $0.event == .itemEnded(.replaced) } != nil)
        #expect(player.snapshot.playlist?.hasPrevious == true && player.snapshot.playlist?.hasNext == false)
        // At the end of the list, mpv refuses a next: the awaited form throws it.
        await #expect(throws: PlayerError.self) { try await player.perform(.next) }
        var mark = recorder.mark
        try await player.perform(.previous)
        #expect(await recorder.waitFor(after: mark) { $0.event == .playlistChanged(PlaylistPosition(index: 0, count: 2)) } != nil)
        mark = recorder.mark
        try await player.clearPlaylist()
        #expect(await recorder.waitFor(after: mark) { $0.event == .playlistChanged(PlaylistPosition(index: 0, count: 1)) } != nil)
        #expect(player.snapshot.playlist == PlaylistPosition(index: 0, count: 1))
    }

    @Test("loopModeChanged reports each change of the loop, by any path; the initial value is not reported")
    func loopModeEvents() async throws {
        let (player, recorder) = try await Fixtures.player()
        defer { Task { await player.shutdown() } }
        try await player.load(.file(Fixtures.clipA), startPaused: true)
        #expect(player.snapshot.loopMode == .off)
        try await player.perform(.setLoop(.forever))
        #expect(await recorder.waitFor { $0.event == .loopModeChanged(.forever) } != nil)
        try await player.setProperty("loop-file", to: .int(2))
        #expect(await recorder.waitFor { $0.event == .loopModeChanged(.playCount(3)) } != nil)
        try await player.perform(.setLoop(.off))
        #expect(await recorder.waitFor { $0.event == .loopModeChanged(.off) } != nil)
        let changes = recorder.events.filter { $0.kind == .loopModeChanged }
        #expect(changes == [.loopModeChanged(.forever), .loopModeChanged(.playCount(3)), .loopModeChanged(.off)], "\(changes)")
    }

    @Test("mpv URLs and an http URL on a loopback server")
    func urls() async throws {
        let (player, recorder) = try await Fixtures.player()
        defer { Task { await player.shutdown() } }
        let lavfi = try await player.load("av://lavfi:testsrc=size=160x120:rate=25:duration=1")
        #expect(lavfi.videoSize == VideoSize(width: 160, height: 120))
        let fileURL = try await player.load(.url(URL(fileURLWithPath: Fixtures.clipA)), startPaused: true)
        #expect(fileURL.source == Fixtures.clipA)
        #expect(MediaSource("file://\(Fixtures.clipB)").location == .file(path: Fixtures.clipB))

        let server = try LoopbackHTTPServer(root: Fixtures.repository.appendingPathComponent("Media"))
        defer { server.stop() }
        let url = "http://127.0.0.1:\(server.port)/clip-b.mp4"
        try await player.perform(.setSpeed(0.25))  // 16 s of playing: the item must not end before the checks below
        let info = try await player.load(MediaSource(url))
        #expect(info.source == url)
        #expect(info.duration.map { abs($0 - 4) < 0.05 } == true)
        #expect(await recorder.waitFor { if case .positionChanged(let p) = $0.event { return p > 0.3 }; return false } != nil)
        #expect(server.requestCount > 0)
        // Position and cache are read together; after one more position report the cache
        // answer of the earlier read has been applied too.
        let mark = recorder.mark
        #expect(await recorder.waitFor(after: mark) { if case .positionChanged = $0.event { return true }; return false } != nil)
        #expect(player.cacheDuration != nil)
    }

    @Test("a slow network makes the player buffer, with progress, then play on")
    func bufferingOnSlowNetwork() async throws {
        // clip-a needs about 30 kB/s; the server sends 12 kB/s, so the cache runs dry.
        let server = try LoopbackHTTPServer(root: Fixtures.repository.appendingPathComponent("Media"), bytesPerSecond: 12_000)
        defer { server.stop() }
        var configuration = Fixtures.headless
        configuration.extraOptions = ["cache-pause-wait": "0.5"]
        let (player, recorder) = try await Fixtures.player(configuration: configuration)
        defer { Task { await player.shutdown() } }
        try await player.load(MediaSource("http://127.0.0.1:\(server.port)/clip-a.mp4"))
        #expect(await recorder.waitForState(.buffering, timeout: .seconds(30)))
        #expect(await recorder.waitFor(timeout: .seconds(30)) { if case .bufferingProgress = $0.event { return true }; return false } != nil)
        // Buffering ends by going back to playing, not by failing.
        #expect(await recorder.waitFor(timeout: .seconds(30)) { $0.event == .stateChanged(from: .buffering, to: .playing) } != nil)
        #expect(!recorder.events.contains { $0.kind.rawValue == "error" })
    }

    @Test("fullscreenStateChanged reports mpv's fullscreen property changing by any path; a FullscreenArbiter refuses the player's own requests")
    func fullscreenStateAndArbiter() async throws {
        final class Refuser: FullscreenArbiter {
            func refusal(ofFullscreen fullscreen: Bool, for player: any MediaPlayer) -> String? { fullscreen ? "not now" : nil }
        }
        let (player, recorder) = try await Fixtures.player()
        defer { Task { await player.shutdown() } }
        try await player.perform(.setFullscreen(true))
        #expect(player.snapshot.isFullscreen == true)
        #expect(await recorder.waitFor { $0.event == .fullscreenStateChanged(true) } != nil)
        var mark = recorder.mark
        try await player.command(["cycle", "fullscreen"])  // as a key bound in mpv's window would
        #expect(await recorder.waitFor(after: mark) { $0.event == .fullscreenStateChanged(false) } != nil)
        #expect(player.snapshot.isFullscreen == false)
        mark = recorder.mark
        try await player.setProperty("fullscreen", to: .flag(true))
        #expect(await recorder.waitFor(after: mark) { $0.event == .fullscreenStateChanged(true) } != nil)
        try await player.perform(.setFullscreen(false))

        let refuser = Refuser()
        #expect(player.setFullscreenArbiter(refuser, replacing: nil))
        #expect(!player.setFullscreenArbiter(Refuser(), replacing: nil))  // one arbiter at a time
        #expect(player.fullscreenArbiter === refuser)
        let refused = PlayerError.fullscreenRefused(player.id, reason: "not now")
        await #expect(throws: refused) { try await player.perform(.setFullscreen(true)) }
        #expect(throws: refused) { try player.send(.setFullscreen(true)) }
        #expect(refused.description.contains(player.id.rawValue) && refused.description.contains("not now"))
        try await player.perform(.setFullscreen(false))  // allowed
        await #expect(try player.property("fullscreen") == .flag(false))
        #expect(player.setFullscreenArbiter(nil, replacing: refuser))
        try await player.perform(.setFullscreen(true))
        await #expect(try player.property("fullscreen") == .flag(true))
    }
}
