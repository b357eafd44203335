@testable import PlayerKitCore
import Foundation
import Testing
import PlayerKit

/// Every bad input gets a typed error naming the value; afterwards the same player loads and
/// plays another item, and a bystander player is unaffected.
@Suite("Bad input", .timeLimit(.minutes(4)))
struct BadInputTests {
    /// Asserts the player still works: it loads and plays a real clip.
    private func assertStillPlays(_ player: Player, _ recorder: EventRecorder, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let mark = recorder.mark
        try await player.perform(.setLoop(.forever))  // stays playing however slow the machine is
        let info = try await player.load(.file(Fixtures.clipB))
        #expect(info.duration != nil, sourceLocation: sourceLocation)
        let moving = await recorder.waitFor(after: mark) { if case .positionChanged(let p) = $0.event { return p > 0.1 }; return false }
        #expect(moving != nil, sourceLocation: sourceLocation)
        #expect(player.state == .playing, sourceLocation: sourceLocation)
    }

    private func expectLoad(_ player: Player, _ source: MediaSource, throws expected: PlayerError,
                            sourceLocation: SourceLocation = #_sourceLocation) async {
        do {
            try await player.load(source)
            Issue.record("loading \(source) did not fail", sourceLocation: sourceLocation)
        } catch {
            #expect(error == expected, sourceLocation: sourceLocation)
            #expect(error.description.contains(source.description) || error.description.contains(expected.description),
                    sourceLocation: sourceLocation)
        }
    }

    @Test("files that are missing, directories or empty are refused before mpv sees them")
    func badFiles() async throws {
        let (player, recorder) = try await Fixtures.player()
        defer { Task { await player.shutdown() } }
        let missing = Fixtures.fixture("no-such-file.mp4")
        await expectLoad(player, .file(missing), throws: .fileNotFound(path: missing))
        try await assertStillPlays(player, recorder)

        let directory = Fixtures.repository.appendingPathComponent("Media").path
        await expectLoad(player, .file(directory), throws: .notAFile(path: directory))
        try await assertStillPlays(player, recorder)

        let empty = Fixtures.fixture("empty.mp4")
        await expectLoad(player, .file(empty), throws: .emptyFile(path: empty))
        try await assertStillPlays(player, recorder)

        await expectLoad(player, .file(""), throws: .invalidSource(""))
        #expect(PlayerError.fileNotFound(path: missing).description.contains(missing))
    }

    /// The error of a load that must fail, or nil (recorded) when it loaded.
    private func loadError(_ player: Player, _ source: MediaSource, sourceLocation: SourceLocation = #_sourceLocation) async -> (String, MPVError)? {
        do {
            try await player.load(source)
            Issue.record("\(source) loaded", sourceLocation: sourceLocation)
        } catch {
            guard case .loadFailed(let failed, let mpvError) = error else {
                Issue.record("unexpected error \(error)", sourceLocation: sourceLocation)
                return nil
            }
            return (failed, mpvError)
        }
        return nil
    }

    @Test("each failed load carries its own item's reason: random bytes, then an HTTP 404 on the same player, never the other's")
    func eachLoadErrorHasItsOwnReason() async throws {
        let server = try LoopbackHTTPServer(root: Fixtures.repository.appendingPathComponent("Media"))
        defer { server.stop() }
        let random = FileManager.default.temporaryDirectory.appendingPathComponent("random-\(UUID().uuidString).mp4")
        var generator = SystemRandomNumberGenerator()
        try Data((0..<65_536).map { _ in UInt8.random(in: .min ... .max, using: &generator) }).write(to: random)
        defer { try? FileManager.default.removeItem(at: random) }
        let missing = "http://127.0.0.1:\(server.port)/no-such-clip.mp4"
        let (player, recorder) = try await Fixtures.player()
        defer { Task { await player.shutdown() } }

        // A fresh player's 404, for reference: the reason names the URL.
        let (fresh, _) = try await Fixtures.player()
        defer { Task { await fresh.shutdown() } }
        let reference = await loadError(fresh, MediaSource(missing))
        #expect(reference?.1.reason?.contains("Failed to open \(missing)") == true, "fresh 404: \(String(describing: reference?.1))")

        for round in 1...3 {
            let bytes = await loadError(player, .file(random.path))
            #expect(bytes?.0 == random.path)
            let bytesReason = bytes?.1.reason ?? ""
            #expect(!bytesReason.isEmpty, "round \(round), random bytes: \(String(describing: bytes?.1))")
            #expect(!bytesReason.contains(missing) && !bytesReason.contains("Failed to open http"), "round \(round): \(bytesReason)")

            let notFound = await loadError(player, MediaSource(missing))
            #expect(notFound?.0 == missing)
            let reason = notFound?.1.reason ?? ""
            #expect(reason.contains("Failed to open") && reason.contains(missing), "round \(round), 404: \(String(describing: notFound?.1))")
            #expect(!(notFound?.1.logMessages ?? []).contains { $0.contains("recognize file format") },
                    "round \(round), 404: \(String(describing: notFound?.1))")
        }
        try await assertStillPlays(player, recorder)
    }

    @Test("files mpv cannot read fail with mpv's code and the file's name", arguments: ["random-bytes.mp4", "truncated.mp4"])
    func unreadableFiles(name: String) async throws {
        let (player, recorder) = try await Fixtures.player()
        let (bystander, bystanderEvents) = try await Fixtures.player()
        defer { Task { await player.shutdown(); await bystander.shutdown() } }
        try await bystander.perform(.setLoop(.forever))  // keeps playing however long the test takes
        try await bystander.load(.file(Fixtures.clipA))

        let path = Fixtures.fixture(name)
        do {
            try await player.load(.file(path))
            Issue.record("\(name) loaded")
        } catch {
            guard case .loadFailed(let source, let mpvError) = error else {
                Issue.record("unexpected error \(error)")
                return
            }
            #expect(source == path)
            #expect(mpvError.code < 0)
            #expect(error.description.contains(path))
        }
        // The failure is also reported as events, in order: error, itemEnded(error), failed.
        #expect(await recorder.waitForState(.failed))
        let names = recorder.events.map(\.kind.rawValue)
        #expect(names.firstIndex(of: "error").map { $0 < names.firstIndex(of: "itemEnded")! } == true)
        try await assertStillPlays(player, recorder)
        #expect(bystander.state == .playing)
        #expect(!bystanderEvents.events.contains { $0.kind.rawValue == "error" })
    }

    @Test("URL schemes mpv does not support are refused")
    func unsupportedScheme() async throws {
        let (player, recorder) = try await Fixtures.player()
        defer { Task { await player.shutdown() } }
        await expectLoad(player, "gopher2://example.invalid/clip.mp4",
                         throws: .unsupportedScheme(scheme: "gopher2", source: "gopher2://example.invalid/clip.mp4"))
        try await assertStillPlays(player, recorder)
    }

    @Test("unknown properties and commands, invalid values")
    func propertiesAndCommands() async throws {
        let (player, recorder) = try await Fixtures.player()
        defer { Task { await player.shutdown() } }
        try await player.load(.file(Fixtures.clipA), startPaused: true)

        await #expect(throws: PlayerError.propertyNotFound(name: "no-such-property")) {
            try await player.setProperty("no-such-property", to: .int(1))
        }
        await #expect(throws: PlayerError.propertyNotFound(name: "no-such-property")) {
            try await player.property("no-such-property")
        }
        await #expect(throws: PlayerError.unknownCommand(name: "frobnicate")) { try await player.command(["frobnicate", "x"]) }
        await #expect(throws: PlayerError.self) { try await player.command([]) }
        // A file name with command syntax in it is one argument, never a command string.
        await #expect(throws: PlayerError.self) { try await player.command(["loadfile", "a.mp4; quit", "no-such-flag"]) }
        #expect(player.state == .ready)

        do {
            try await player.setProperty("volume", to: .string("abc"))
            Issue.record("volume abc accepted")
        } catch {
            guard case .invalidPropertyValue(let name, let value, let mpvError) = error else {
                Issue.record("unexpected \(error)")
                return
            }
            #expect(name == "volume" && value == "abc" && mpvError.code < 0)
        }
        await #expect(throws: PlayerError.invalidArgument(name: "speed", value: "-1.0", reason: "must be between 0.25 and 4")) {
            try await player.perform(.setSpeed(-1))
        }
        await #expect(throws: PlayerError.self) { try await player.perform(.setSpeed(.nan)) }
        await #expect(throws: PlayerError.invalidArgument(name: "volume", value: "nan", reason: "must be a finite number, 0 or more")) {
            try await player.perform(.setVolume(.nan))
        }
        await #expect(throws: PlayerError.self) { try await player.perform(.setVolume(1000)) }
        await #expect(throws: PlayerError.invalidArgument(name: "seek position", value: "nan", reason: "must be a finite number of seconds, 0 or more")) {
            try await player.seek(to: .nan)
        }
        await #expect(throws: PlayerError.self) { try await player.perform(.seekBy(.infinity, precision: .keyframe)) }
        await #expect(throws: PlayerError.invalidArgument(name: "loop play count", value: "0", reason: "must be 1 or more")) {
            try await player.perform(.setLoop(.playCount(0)))
        }
        // The escape hatches work for good input.
        await #expect(try player.property("volume").doubleValue == 100)
        try await player.setProperty("volume", to: .int(55))
        await #expect(try player.property("volume").doubleValue == 55)
        await #expect(try player.command(["expand-text", "${media-title}"]) == .string("PlayerKit clip A"))
        try await player.play()
        #expect(await recorder.waitForState(.playing))
        try await assertStillPlays(player, recorder)
    }

    @Test("seeking with nothing loaded")
    func seekWithoutMedia() async throws {
        let player = try await Player.create(configuration: Fixtures.headless)
        defer { Task { await player.shutdown() } }
        await #expect(throws: PlayerError.noMediaLoaded(operation: "seek")) { try await player.seek(to: 1) }
    }

    @Test("every call on a shut-down player throws playerShutDown")
    func callsAfterShutdown() async throws {
        let id = Fixtures.uniqueID("gone")
        let (player, _) = try await Fixtures.player(id: id)
        try await player.load(.file(Fixtures.clipA))
        await player.shutdown()
        #expect(player.isShutDown)
        let shutDown = PlayerError.playerShutDown(id)
        await #expect(throws: shutDown) { try await player.load(.file(Fixtures.clipA)) }
        await #expect(throws: shutDown) { try await player.play() }
        await #expect(throws: shutDown) { try await player.pause() }
        await #expect(throws: shutDown) { try await player.perform(player.isPaused ? .play : .pause) }
        await #expect(throws: shutDown) { try await player.stop() }
        await #expect(throws: shutDown) { try await player.perform(.setVolume(10)) }
        await #expect(throws: shutDown) { try await player.perform(.setMuted(true)) }
        await #expect(throws: shutDown) { try await player.perform(.setSpeed(2)) }
        await #expect(throws: shutDown) { try await player.perform(.setLoop(.forever)) }
        await #expect(throws: shutDown) { try await player.perform(.setHardwareDecoding(true)) }
        await #expect(throws: shutDown) { try await player.append(.file(Fixtures.clipB)) }
        await #expect(throws: shutDown) { try await player.perform(.next) }
        await #expect(throws: shutDown) { try await player.perform(.previous) }
        await #expect(throws: shutDown) { try await player.clearPlaylist() }
        await #expect(throws: shutDown) { try await player.property("volume") }
        await #expect(throws: shutDown) { try await player.setProperty("volume", to: .int(1)) }
        await #expect(throws: shutDown) { try await player.command(["stop"]) }
        // A second shutdown is harmless.
        await player.shutdown()
    }

    @Test("sent commands: bad arguments are refused at once with the same typed errors as the blocking methods; the player stays usable")
    func sentCommands() async throws {
        let (player, recorder) = try await Fixtures.player()
        let speed = PlayerError.invalidArgument(name: "speed", value: "0.0", reason: "must be between 0.25 and 4")
        #expect(throws: speed) { try player.send(.setSpeed(0)) }
        await #expect(throws: speed) { try await player.perform(.setSpeed(0)) }
        #expect(throws: PlayerError.invalidArgument(name: "seek position", value: "nan", reason: "must be a finite number of seconds, 0 or more")) {
            try player.send(.seek(to: .nan, precision: .exact))
        }
        #expect(throws: PlayerError.invalidArgument(name: "seek offset", value: "inf", reason: "must be a finite number of seconds")) {
            try player.send(.seekBy(.infinity, precision: .keyframe))
        }
        #expect(throws: PlayerError.invalidArgument(name: "volume", value: "-1.0", reason: "must be a finite number, 0 or more")) {
            try player.send(.setVolume(-1))
        }
        #expect(throws: PlayerError.invalidArgument(name: "loop play count", value: "0", reason: "must be 1 or more")) {
            try player.send(.setLoop(.playCount(0)))
        }
        #expect(throws: PlayerError.noMediaLoaded(operation: "seek")) { try player.send(.seek(to: 1, precision: .exact)) }
        try await assertStillPlays(player, recorder)
        // A good command is carried out: the state follows.
        let mark = recorder.mark
        try player.send(.pause)
        #expect(await recorder.waitForState(.paused, after: mark))
        await player.shutdown()
        #expect(throws: PlayerError.playerShutDown(player.id)) { try player.send(.play) }
    }
}
