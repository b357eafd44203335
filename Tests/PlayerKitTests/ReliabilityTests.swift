import ExampleSupport
import Foundation
import PlayerKit
@testable import PlayerKitCore
import Testing

/// What a new user hit (issue 14): playlist files, playlist entries that fail, cancelled loads,
/// read-outs right after their setters, streams cut short, over-long paths.
@Suite("Reliability: loads, read-outs and ends", .timeLimit(.minutes(4)))
struct ReliabilityTests {

    /// A folder of its own with a playlist file `list.m3u` holding `entries` (one per line).
    private func playlist(_ entries: [String], files: [String: String] = [:]) throws -> (folder: URL, list: String) {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("playerkit-playlist-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        for (name, source) in files {
            try FileManager.default.copyItem(atPath: source, toPath: folder.appendingPathComponent(name).path)
        }
        let list = folder.appendingPathComponent("list.m3u")
        try (["#EXTM3U"] + entries).joined(separator: "\n").appending("\n").write(to: list, atomically: true, encoding: .utf8)
        return (folder, list.path)
    }

    private func errors(_ recorder: EventRecorder) -> [PlayerError] {
        recorder.events.compactMap { if case .error(let error) = $0 { return error } else { return nil } }
    }

    @Test("a playlist file loads: load returns its first entry's information, and the entries play in turn")
    func playlistFile() async throws {
        let (folder, list) = try playlist(["short-a.mp4", "short-b.mp4"], files: [
            "short-a.mp4": Fixtures.fixture("short-a.mp4"), "short-b.mp4": Fixtures.fixture("short-b.mp4"),
        ])
        defer { try? FileManager.default.removeItem(at: folder) }
        let (player, recorder) = try await Fixtures.player()
        let info = try await player.load(.file(list))
        #expect(info.source.hasSuffix("short-a.mp4"))
        #expect(info.duration.map { abs($0 - 1) < 0.1 } == true)
        // Both entries play to their end; the playlist file itself is no item of its own.
        var after: UInt64 = 0
        for _ in 0..<2 {
            let end = await recorder.waitFor(timeout: .seconds(20), after: after) {
                if case .itemEnded = $0.event { return true } else { return false }
            }
            #expect(end?.event == .itemEnded(.finished))
            after = end?.sequenceNumber ?? UInt64.max - 1
        }
        let loaded = recorder.events.compactMap { if case .mediaLoaded(let info) = $0 { return info.source } else { return nil } }
        #expect(loaded.count == 2 && loaded.last?.hasSuffix("short-b.mp4") == true, "\(loaded)")
        #expect(errors(recorder).isEmpty)
        #expect(!recorder.events.contains(.itemEnded(.replaced)))
        await player.shutdown()
    }

    @Test("a playlist entry that fails is named (path and place in the list) with the cause mpv logged; the load returns the first entry that plays")
    func playlistEntryErrors() async throws {
        let (folder, list) = try playlist(["missing.mp4", "av://lavfi:testsrc=d=1", "short-a.mp4"], files: [
            "short-a.mp4": Fixtures.fixture("short-a.mp4"),
        ])
        defer { try? FileManager.default.removeItem(at: folder) }
        let (player, recorder) = try await Fixtures.player()
        let info = try await player.load(.file(list))
        #expect(info.source.hasSuffix("short-a.mp4"))
        let failures = errors(recorder)
        try #require(failures.count == 2, "\(failures)")
        guard case .loadFailed(let missingSource, let missingError) = failures[0],
              case .loadFailed(let unsafeSource, let unsafeError) = failures[1]
        else {
            Issue.record("not load failures: \(failures)")
            return
        }
        #expect(missingSource.hasSuffix("missing.mp4 (entry 1 of \(list))"), "\(missingSource)")
        #expect(missingError.reason?.contains("No such file or directory") == true, "\(missingError)")
        #expect(unsafeSource == "av://lavfi:testsrc=d=1 (entry 2 of \(list))", "\(unsafeSource)")
        #expect(unsafeError.reason?.contains("Refusing to load potentially unsafe URL from a playlist") == true, "\(unsafeError)")
        #expect(failures[1].description.contains("Refusing to load"))
        await player.shutdown()
    }

    @Test("a playlist file whose entries all fail: the load fails with the last entry's error; the player stays usable")
    func playlistAllFail() async throws {
        let (folder, list) = try playlist(["missing-1.mp4", "missing-2.mp4"])
        defer { try? FileManager.default.removeItem(at: folder) }
        let (player, _) = try await Fixtures.player()
        await #expect {
            try await player.load(.file(list))
        } throws: { error in
            guard case PlayerError.loadFailed(let source, let mpvError) = error else { return false }
            return source.hasSuffix("missing-2.mp4 (entry 2 of \(list))") && mpvError.reason?.contains("No such file") == true
        }
        let info = try await player.load(.file(Fixtures.fixture("short-a.mp4")))
        #expect(info.duration != nil)
        await player.shutdown()
    }

    @Test("cancelling the task awaiting a load ends it with loadCancelled, stops mpv's loading, and the player stays usable")
    func cancelledLoad() async throws {
        let server = LoopbackMediaServer(files: ["never.mp4": Data(repeating: 0, count: 1000)])
        server.setFault(.stall, for: "never.mp4")
        try server.start()
        defer { server.stop() }
        let (player, recorder) = try await Fixtures.player()
        let other = try await Fixtures.player()
        try await other.0.perform(.setLoop(.forever))
        try await other.0.load(.file(Fixtures.clipA))
        let url = server.url("never.mp4").absoluteString
        let task = Task { try await player.load(MediaSource(url)) }
        // Cancel once mpv is really opening it (the server has the request).
        let deadline = ContinuousClock.now + .seconds(10)
        while server.counts("never.mp4").requests == 0, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(10)) }
        #expect(server.counts("never.mp4").requests == 1)
        let cancelled = ContinuousClock.now
        task.cancel()
        let result = await task.result
        let waited = ContinuousClock.now - cancelled
        #expect(throws: PlayerError.loadCancelled(source: url)) { try result.get() }
        // No timing margin here (the suite runs loaded): TimingTests checks the 100 ms bound.
        #expect(waited < .seconds(15), "\(waited)")
        // mpv gave up opening it: the item ends as stopped, and the player loads the next one.
        #expect(await recorder.waitFor(timeout: .seconds(10)) { $0.event == .itemEnded(.stopped) } != nil)
        let info = try await player.load(.file(Fixtures.fixture("short-a.mp4")))
        #expect(info.duration != nil)
        // A cancelled load that another load already replaced does not stop the newer item.
        let replaced = Task { try await player.load(MediaSource(url)) }
        while server.counts("never.mp4").requests < 2, ContinuousClock.now < deadline + .seconds(10) {
            try await Task.sleep(for: .milliseconds(10))
        }
        let newer = Task { try await player.load(.file(Fixtures.clipA), startPaused: true) }
        _ = try await newer.value
        replaced.cancel()
        _ = await replaced.result
        #expect(player.state == .ready)
        #expect(other.0.state == .playing)
        await player.shutdown()
        await other.0.shutdown()
    }

    @Test("after every setter returns, its read-out already shows the value set", .timeLimit(.minutes(2)))
    func readOutsFollowSetters() async throws {
        let (player, recorder) = try await Fixtures.player()
        // The 20 s item: half the rounds play, with looping off a third of the time, and on a
        // loaded machine (or under a sanitizer) their play time adds up past the item's end,
        // which would leave nothing loaded for the seek below: 200 rounds took 43 s next to the
        // parallel pass on 2026-11-27 and ended the item. So every tenth round starts again
        // from 0 (ten rounds play at most 5 s at speed 2 and more only on a machine 4 times
        // slower).
        try await player.load(.file(Fixtures.fixture("long.mp4")), startPaused: true)
        var generator = SystemRandomNumberGenerator()
        for round in 0..<200 {
            if round % 10 == 0 { try await player.seek(to: 0) }
            let volume = Double(Int.random(in: 0...130, using: &generator))
            try await player.perform(.setVolume(volume))
            #expect(player.snapshot.volume == volume, "round \(round)")
            let muted = Bool.random(using: &generator)
            try await player.perform(.setMuted(muted))
            #expect(player.snapshot.isMuted == muted, "round \(round)")
            let speed = [0.5, 1, 1.25, 2][round % 4]
            try await player.perform(.setSpeed(speed))
            #expect(player.snapshot.speed == speed, "round \(round)")
            let loop: LoopMode = [.off, .forever, .playCount(3)][round % 3]
            try await player.perform(.setLoop(loop))
            #expect(player.snapshot.loopMode == loop, "round \(round)")
            if round % 2 == 0 { try await player.play() } else { try await player.pause() }
            #expect(player.isPaused == (round % 2 == 1), "round \(round)")
            let fullscreen = round % 5 == 0
            try await player.perform(.setFullscreen(fullscreen))
            #expect(player.snapshot.isFullscreen == fullscreen, "round \(round)")
            try await player.perform(.setHardwareDecoding(round % 7 == 0))
            #expect(player.isHardwareDecodingEnabled == (round % 7 == 0), "round \(round)")
            try await player.setProperty("volume", to: .double(42))
            #expect(player.snapshot.volume == 42, "round \(round)")
        }
        // And once mpv's own observations have all arrived, the read-outs still agree.
        try await player.perform(.setVolume(55))
        // A seek's completion comes after every observation mpv queued before it.
        let mark = recorder.mark
        try await player.seek(to: 1)
        #expect(await recorder.waitFor(timeout: .seconds(10), after: mark) {
            if case .seekCompleted = $0.event { return true } else { return false }
        } != nil)
        #expect(player.snapshot.volume == 55)
        await #expect(try player.property("volume").doubleValue == 55)
        // The change events came with the setters, in order: the last volume event says 55.
        let volumes = recorder.events.compactMap { if case .volumeChanged(let volume) = $0 { return volume } else { return nil } }
        #expect(volumes.last == 55)
        // The direction, with nothing loaded (libmpv 0.35 can abort on a change while an item
        // is loaded: Player.setPlaybackDirection says so).
        try await player.stop()
        #expect(await recorder.waitForState(.idle, after: mark))
        try await player.perform(.setPlaybackDirection(.backward))
        #expect(player.playbackDirection == .backward)
        try await player.perform(.setPlaybackDirection(.forward))
        #expect(player.playbackDirection == .forward)
        await player.shutdown()
    }

    @Test("AudioPolicy restores exactly the volume the app set, every time")
    func audioPolicyRestores() async throws {
        for run in 0..<10 {
            let (main, _) = try await Fixtures.player()
            let (preview, _) = try await Fixtures.player()
            try await main.load(.file(Fixtures.clipA), startPaused: true)
            try await preview.load(.file(Fixtures.clipB), startPaused: true)
            let policy = try AudioPolicy(mode: .duck(volume: 20), players: [main, preview])
            let own = Double(60 + run)
            try await preview.perform(.setVolume(own))
            try await policy.focus(main)
            #expect(preview.snapshot.volume == 20, "run \(run)")
            try await policy.focus(preview)
            #expect(preview.snapshot.volume == own, "run \(run)")
            await #expect(try preview.property("volume").doubleValue == own, "run \(run)")
            await main.shutdown()
            await preview.shutdown()
        }
    }

    @Test("a network stream cut short ends as truncated, saying how far it got; a complete one as finished")
    func truncatedStream() async throws {
        let clip = try Data(contentsOf: URL(fileURLWithPath: Fixtures.clipA))
        let server = LoopbackMediaServer(files: ["cut.mp4": clip, "whole.mp4": clip])
        // Reset a third of the way in, and every reconnection (mpv's ffmpeg retries) too.
        server.setFault(.truncateAt(offset: clip.count / 3), for: "cut.mp4")
        try server.start()
        defer { server.stop() }
        let (player, recorder) = try await Fixtures.player()
        let info = try await player.load(MediaSource(server.url("cut.mp4").absoluteString))
        #expect(info.duration.map { abs($0 - 4) < 0.1 } == true)
        let end = await recorder.waitFor(timeout: .seconds(30)) { if case .itemEnded = $0.event { return true } else { return false } }
        guard case .itemEnded(.truncated(let position, let duration))? = end?.event else {
            Issue.record("ended as \(String(describing: end?.event))")
            await player.shutdown()
            return
        }
        #expect(position < 2.5 && position > 0.3, "\(position)")
        #expect(abs(duration - 4) < 0.1)
        #expect(end?.event.description.contains("truncated at") == true)

        let mark = recorder.mark
        try await player.load(MediaSource(server.url("whole.mp4").absoluteString))
        let whole = await recorder.waitFor(timeout: .seconds(30), after: mark) { if case .itemEnded = $0.event { return true } else { return false } }
        #expect(whole?.event == .itemEnded(.finished))
        await player.shutdown()
    }

    @Test("hostile file names load as data: nothing in them runs or is parsed as a command or option")
    func hostileFileNames() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("playerkit-hostile-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        // A shell would create PWNED in the working directory or the folder; mpv never runs one.
        let markers = [folder.appendingPathComponent("PWNED").path, FileManager.default.currentDirectoryPath + "/PWNED"]
        let names = [
            "a'b.mp4", "a\"b.mp4", "new\nline.mp4", "semi;colon quit.mp4", "--start=3.mp4", "$(touch PWNED).mp4",
            "back`touch PWNED`tick.mp4", "\u{00FC}n\u{00EF}c\u{00F8}d\u{00E9} \u{540D}\u{524D}.mp4", "a,b=c,loop-file=inf.mp4",
        ]
        let (player, recorder) = try await Fixtures.player()
        for name in names {
            let path = folder.appendingPathComponent(name).path
            try FileManager.default.copyItem(atPath: Fixtures.fixture("short-a.mp4"), toPath: path)
            let info = try await player.load(.file(path), startPaused: true)
            #expect(info.source == path)
            #expect(info.duration.map { abs($0 - 1) < 0.1 } == true, "\(name)")
            #expect(player.snapshot.loopMode != .forever)
        }
        for marker in markers { #expect(!FileManager.default.fileExists(atPath: marker)) }
        #expect(!recorder.events.contains { if case .error = $0 { return true } else { return false } })
        await player.shutdown()
    }

    @Test("a path longer than the system accepts, to a file that exists, gets pathTooLong; the player stays usable")
    func overLongPath() async throws {
        // A chain of folders deeper than PATH_MAX (4096), made step by step from the inside.
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("playerkit-long-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: root) }
        let component = String(repeating: "d", count: 200)
        var path = root.path
        var folder = open(root.path, O_RDONLY | O_DIRECTORY)
        try #require(folder >= 0)
        for _ in 0..<22 {
            #expect(mkdirat(folder, component, 0o755) == 0)
            let inner = openat(folder, component, O_RDONLY | O_DIRECTORY)
            close(folder)
            folder = inner
            try #require(folder >= 0)
            path += "/" + component
        }
        let clip = try Data(contentsOf: URL(fileURLWithPath: Fixtures.fixture("short-a.mp4")))
        let file = openat(folder, "clip.mp4", O_WRONLY | O_CREAT, 0o644)
        try #require(file >= 0)
        let written = clip.withUnsafeBytes { write(file, $0.baseAddress, $0.count) }
        #expect(written == clip.count)
        close(file)
        close(folder)
        path += "/clip.mp4"
        #expect(path.utf8.count > 4096)
        let (player, _) = try await Fixtures.player()
        await #expect(throws: PlayerError.pathTooLong(path: path)) { try await player.load(.file(path)) }
        #expect(PlayerError.pathTooLong(path: path).description.contains("path too long"))
        // A component beyond NAME_MAX is refused the same way.
        let longName = root.path + "/" + String(repeating: "n", count: 300) + ".mp4"
        await #expect(throws: PlayerError.pathTooLong(path: longName)) { try await player.load(.file(longName)) }
        try await player.load(.file(Fixtures.fixture("short-a.mp4")))
        await player.shutdown()
    }
}

/// A sent setting is heard when it is handed over, not when the pump reads mpv's answer.
@Suite("Reliability: a sent setting, with the pump held", .timeLimit(.minutes(1)))
struct SentSettingTests {
    @Test("a volume set, then an app's own command that sets it back before mpv reads it again: mpv reports nothing, and the read-out still ends at mpv's value")
    func commandUndoesSetBeforeReport() async throws {
        var configuration = Fixtures.headless
        let bus = PlayerEventBus(label: "undone-setting-test")
        configuration.eventBus = bus
        let id = Fixtures.uniqueID("undone")
        let (player, _) = try await Fixtures.player(id: id, configuration: configuration)
        try await player.load(.file(Fixtures.clipA), startPaused: true)
        try await player.perform(.setVolume(100))
        #expect(await eventually { player.snapshot.volume == 100 })
        // Hold the pump, so that mpv carries out both requests before anything of theirs is read.
        let release = DispatchSemaphore(value: 0), holding = DispatchSemaphore(value: 0)
        let armed = Guarded(true)
        let hold = bus.subscribe(to: .player(id), kinds: [.seekCompleted], delivery: .immediate) { _ in
            guard armed.withLock({ armed in defer { armed = false }; return armed }) else { return }
            holding.signal()
            _ = release.wait(timeout: .now() + 30)
        }
        defer { hold.cancel() }
        try player.send(.seek(to: 1, precision: .exact))
        #expect(try await offPool { holding.wait(timeout: .now() + 10) == .success })
        try player.send(.setVolume(40))
        #expect(player.snapshot.volume == 40)
        let before = player.core.handOvers
        let command = Task { try await player.command(["set", "volume", "100"]) }
        // The command is in mpv's hands (the gate's count moves once its hand-over is done).
        #expect(await eventually { player.core.handOvers > before })
        release.signal()
        _ = try await command.value
        // mpv read 100 again after both, as it last reported: it reports nothing. The read-out
        // must not stay at the set's 40.
        #expect(try await player.property("volume").doubleValue == 100)
        #expect(await eventually(timeout: .seconds(5)) { player.snapshot.volume == 100 }, "read-out \(player.snapshot.volume as Any)")
        await player.shutdown()
    }

    @Test("send(.setVolume) shows in the read-out and is published at once, while the pump is held; mpv's answer then changes nothing")
    func sentSettingIsHeardAtHandOver() async throws {
        var configuration = Fixtures.headless
        let bus = PlayerEventBus(label: "sent-setting-test")
        configuration.eventBus = bus
        let id = Fixtures.uniqueID("sent")
        let (player, _) = try await Fixtures.player(id: id, configuration: configuration)
        try await player.load(.file(Fixtures.clipA), startPaused: true)
        try await player.perform(.setVolume(100))
        // Hold the pump: an immediate handler blocks on the first seek landing it sees.
        let release = DispatchSemaphore(value: 0), holding = DispatchSemaphore(value: 0)
        let armed = Guarded(true)
        let hold = bus.subscribe(to: .player(id), kinds: [.seekCompleted], delivery: .immediate) { _ in
            guard armed.withLock({ armed in defer { armed = false }; return armed }) else { return }
            holding.signal()
            _ = release.wait(timeout: .now() + 30)
        }
        defer { hold.cancel() }
        let heard = Guarded<[Double]>([])
        let volumes = bus.subscribe(to: .player(id), kinds: [.volumeChanged], delivery: .immediate) { record in
            if case .volumeChanged(let volume) = record.event { heard.withLock { $0.append(volume) } }
        }
        defer { volumes.cancel() }
        try player.send(.seek(to: 1, precision: .exact))
        #expect(try await offPool { holding.wait(timeout: .now() + 10) == .success })
        // The pump is held in the handler: nothing mpv answers is read now.
        try player.send(.setVolume(37))
        #expect(player.snapshot.volume == 37)
        release.signal()
        // The change was numbered when it was handed over; once the pump goes on, it is
        // delivered, once, and mpv's answer and observation do not move the read-out.
        #expect(await eventually { heard.withLock { $0.contains(37) } })
        let settled = try await player.property("volume")
        #expect(settled.doubleValue == 37 && player.snapshot.volume == 37)
        #expect(heard.withLock { $0.filter { $0 == 37 }.count } == 1, "\(heard.withLock { $0 })")
        await player.shutdown()
    }

    @Test("settings sent in a tight loop coalesce: 5,000 sends with the pump held take one place in mpv's queue at a time, none is refused, mpv ends with the last")
    func tightLoopCoalesces() async throws {
        var configuration = Fixtures.headless
        let bus = PlayerEventBus(label: "coalesce-test")
        configuration.eventBus = bus
        let id = Fixtures.uniqueID("coalesce")
        let (player, _) = try await Fixtures.player(id: id, configuration: configuration)
        try await player.load(.file(Fixtures.clipA), startPaused: true)
        let release = DispatchSemaphore(value: 0), holding = DispatchSemaphore(value: 0)
        let armed = Guarded(true)
        let hold = bus.subscribe(to: .player(id), kinds: [.seekCompleted], delivery: .immediate) { _ in
            guard armed.withLock({ armed in defer { armed = false }; return armed }) else { return }
            holding.signal()
            _ = release.wait(timeout: .now() + 30)
        }
        defer { hold.cancel() }
        try player.send(.seek(to: 1, precision: .exact))
        #expect(try await offPool { holding.wait(timeout: .now() + 10) == .success })
        // mpv's queue holds 1000 events; without coalescing the sends below fill it.
        var refusal: PlayerError?
        for index in 0..<5000 {
            do throws(PlayerError) {
                try player.send(.setVolume(Double(index % 100)))
            } catch {
                refusal = error
                break
            }
        }
        #expect(refusal == nil, "\(String(describing: refusal))")
        #expect(player.snapshot.volume == 99)
        release.signal()
        #expect(await eventually { (try? await player.property("volume"))?.doubleValue == 99 })
        #expect(player.snapshot.volume == 99)
        await player.shutdown()
    }
}

/// mpv's event queue really overflowing (1000 events), with the pump held up on purpose.
@Suite("Reliability: lost events", .timeLimit(.minutes(4)))
struct LostEventsTests {
    @Test("after mpv's event queue overflows, the player re-reads its state and every channel hears eventsLost with it")
    func queueOverflow() async throws {
        var configuration = Fixtures.headless
        let bus = PlayerEventBus(label: "overflow-test")
        configuration.eventBus = bus
        let id = Fixtures.uniqueID("overflow")
        let (player, recorder) = try await Fixtures.player(id: id, configuration: configuration)
        let stream = player.events(kinds: [.eventsLost])
        let notifications = NotificationCenter()
        bus.startPostingNotifications(to: notifications)
        let posted = Guarded<[PlayerSnapshot]>([])
        let postedSignal = DispatchSemaphore(value: 0)
        let observer = notifications.addObserver(forName: PlayerNotification.name(for: .eventsLost), object: nil, queue: nil) { note in
            if let record = note.userInfo?[PlayerNotification.recordKey] as? PlayerEventRecord, case .eventsLost(let snapshot) = record.event {
                posted.withLock { $0.append(snapshot) }
                postedSignal.signal()
            }
        }
        defer { notifications.removeObserver(observer) }
        let other = try await Fixtures.player()
        try await other.0.perform(.setLoop(.forever))
        try await other.0.load(.file(Fixtures.clipB))

        // A 20 s clip, paused 5 s before its end: once it plays, it ends long after the queue
        // below is full (filling takes milliseconds), and mpv reports the end into the full
        // queue: lost.
        try await player.load(.file(Fixtures.fixture("long.mp4")), startPaused: true)
        try await player.seek(to: 15)
        try await player.perform(.setVolume(100))
        // Hold the event pump: an immediate handler (which runs on the pump) blocks on the next
        // position it sees (the play below brings one), until released.
        let release = DispatchSemaphore(value: 0)
        let holding = DispatchSemaphore(value: 0)
        let armed = Guarded(true)
        let hold = bus.subscribe(to: .player(id), kinds: [.positionChanged], delivery: .immediate) { _ in
            guard armed.withLock({ armed in defer { armed = false }; return armed }) else { return }
            holding.signal()
            _ = release.wait(timeout: .now() + 30)
        }
        defer { hold.cancel() }
        try player.send(.play)
        try await offPool { _ = holding.wait(timeout: .now() + 10) }
        // Track selections sent until mpv refuses more: each reserves a place for its answer in
        // mpv's queue (1000 events), so the queue fills and the refusal is typed. (Not volume
        // changes: settings of one property coalesce, one in flight at a time.)
        var sent = 0
        var refusal: PlayerError?
        while refusal == nil, sent < 5000 {
            do throws(PlayerError) {
                try player.send(.selectTrack(.subtitle, id: nil))
                sent += 1
            } catch {
                refusal = error
            }
        }
        guard case .eventQueueFull(let refusedID, let operation)? = refusal else {
            Issue.record("no refusal after \(sent) sends: \(String(describing: refusal))")
            release.signal()
            return
        }
        #expect(refusedID == id && operation.hasPrefix("set sid"), "\(operation)")
        #expect(sent >= 900 && sent <= 1000, "\(sent)")
        // Wait for the end, asking mpv synchronously (a read that needs no place in the full
        // queue; PlayerKit's own reads do, so this is the engine's, for this test only).
        let ended = try await offPool { () -> Bool in
            let deadline = ContinuousClock.now + .seconds(20)
            while (try? player.core.handle.property("idle-active"))?.boolValue != true, ContinuousClock.now < deadline {
                _ = release.wait(timeout: .now() + .milliseconds(20))  // never signalled yet: a bounded pause
            }
            return (try? player.core.handle.property("idle-active"))?.boolValue == true
        }
        #expect(ended, "the item did not end within 20 s")
        release.signal()

        let lost = await recorder.waitFor(timeout: .seconds(20)) { if case .eventsLost = $0.event { return true } else { return false } }
        guard case .eventsLost(let snapshot)? = lost?.event else {
            Issue.record("no eventsLost; events: \(recorder.events.suffix(20))")
            return
        }
        // The rebuilt state: the item ended unseen; the volume is mpv's (the last sent change
        // mpv carried out).
        let volume = try await player.property("volume").doubleValue
        #expect(snapshot.state == .ended, "\(snapshot)")
        #expect(snapshot.volume == volume)
        #expect(player.state == .ended)
        #expect(player.snapshot.volume == volume)
        #expect(recorder.states.last == .ended)
        // The loss was real: mpv's end of the item never arrived.
        let before = recorder.records.filter { $0.sequenceNumber < lost?.sequenceNumber ?? 0 }
        #expect(!before.contains { if case .itemEnded = $0.event { return true } else { return false } })
        // Every channel: delegate (above, and its typed method), the player's stream, NotificationCenter.
        var iterator = stream.makeAsyncIterator()
        let streamed = await iterator.next()
        #expect(streamed?.event == lost?.event)
        stream.cancel()
        // The bridge posts on a queue of its own: its notification may come after the stream's.
        try await offPool { _ = postedSignal.wait(timeout: .now() + 10) }
        #expect(posted.withLock { $0 } == [snapshot])
        // Sequence numbers stayed gapless through it all.
        let numbers = recorder.records.map(\.sequenceNumber)
        #expect(numbers == Array(1...UInt64(numbers.count)))
        // The player works as before: loads, polls positions, reports its end; the other never noticed.
        let mark = recorder.mark
        try await player.load(.file(Fixtures.fixture("short-a.mp4")))
        #expect(await recorder.waitFor(timeout: .seconds(10), after: mark) { if case .positionChanged = $0.event { return true } else { return false } } != nil)
        #expect(await recorder.waitFor(timeout: .seconds(10), after: mark) { $0.event == .itemEnded(.finished) } != nil)
        try await player.perform(.setVolume(12))
        #expect(player.snapshot.volume == 12)
        #expect(other.0.state == .playing)
        #expect(!other.1.events.contains { if case .eventsLost = $0 { return true } else { return false } })
        await player.shutdown()
        await other.0.shutdown()
    }
}
