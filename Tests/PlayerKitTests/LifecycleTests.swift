import Foundation
import Testing
import PlayerKit
@testable import PlayerKitCore
import PlayerKitSupport

@Suite("Identity and lifecycle", .timeLimit(.minutes(4)))
struct LifecycleTests {
    @Test("duplicate IDs are refused while the first player lives, and free after shutdown")
    func duplicateIDs() async throws {
        let id = Fixtures.uniqueID("dup")
        let first = try await Player.create(id: id, configuration: Fixtures.headless)
        #expect(throws: PlayerError.duplicateID(id)) { try Player(id: id, configuration: Fixtures.headless) }
        #expect(PlayerRegistry.liveIDs.contains(id))
        // The failed attempt changed nothing: the first player still works.
        try await first.load(.file(Fixtures.clipA), startPaused: true)
        await first.shutdown()
        #expect(!PlayerRegistry.liveIDs.contains(id))
        let second = try await Player.create(id: id, configuration: Fixtures.headless)
        #expect(second.id == id)
        await second.shutdown()
    }

    @Test("invalid IDs are refused", arguments: ["", "   ", "\t\n", "bad\u{7}id"])
    func invalidIDs(raw: String) {
        #expect(throws: PlayerError.invalidID(raw)) { try Player(id: PlayerID(stringLiteral: raw), configuration: Fixtures.headless) }
        #expect(!PlayerRegistry.liveIDs.contains(PlayerID(stringLiteral: raw)))
    }

    @Test("random IDs by default, custom IDs kept")
    func defaultIDs() async throws {
        let a = try await Player.create(configuration: Fixtures.headless)
        let b = try await Player.create(configuration: Fixtures.headless)
        #expect(a.id != b.id)
        #expect(UUID(uuidString: a.id.rawValue) != nil)
        await a.shutdown()
        await b.shutdown()
    }

    @Test("an invalid mpv option fails creation with the option named")
    func invalidOption() throws {
        var configuration = Fixtures.headless
        configuration.extraOptions = ["no-such-option": "1"]
        let id = Fixtures.uniqueID("opt")
        #expect {
            try Player(id: id, configuration: configuration)
        } throws: { error in
            guard case PlayerError.invalidOption(let name, let value, _) = error else { return false }
            return name == "no-such-option" && value == "1"
        }
        // The ID was not kept by the failed creation.
        #expect(!PlayerRegistry.liveIDs.contains(id))
    }

    @Test("pitch correction is on by default for a player heard and off when configured, or when nobody hears the player; a player without it plays at double speed to the end")
    func pitchCorrection() async throws {
        // Heard: mpv's null output chosen by the app counts as an output.
        var heard = Fixtures.headless
        heard.extraOptions["ao"] = "null"
        let (standard, _) = try await Fixtures.player(id: Fixtures.uniqueID("pitch-on"), configuration: heard)
        let (unheard, _) = try await Fixtures.player(id: Fixtures.uniqueID("pitch-unheard"))
        var configuration = heard
        configuration.pitchCorrection = false
        let (plain, recorder) = try await Fixtures.player(id: Fixtures.uniqueID("pitch-off"), configuration: configuration)
        await #expect(try standard.property("audio-pitch-correction") == .flag(true))
        await #expect(try unheard.property("audio-pitch-correction") == .flag(false))
        await unheard.shutdown()
        await #expect(try plain.property("audio-pitch-correction") == .flag(false))
        try await plain.perform(.setSpeed(2))
        _ = try await plain.load(.file(Fixtures.clipB))
        let end = await recorder.waitFor(timeout: .seconds(20)) {
            if case .itemEnded = $0.event { return true } else { return false }
        }
        #expect(end?.event == .itemEnded(.finished))
        await standard.shutdown()
        await plain.shutdown()
    }

    @Test("20 create, play, shutdown cycles")
    func cycles() async throws {
        for cycle in 0..<20 {
            let (player, recorder) = try await Fixtures.player(id: "cycle")
            try await player.load(.file(Fixtures.clipB))
            #expect(await recorder.waitForState(.playing), "cycle \(cycle)")
            await player.shutdown()
            #expect(player.isShutDown)
        }
        #expect(!PlayerRegistry.liveIDs.contains("cycle"))
    }

    @Test("a player dropped while playing frees itself; its ID is free at once")
    func droppedWhilePlaying() async throws {
        let id = Fixtures.uniqueID("dropped")
        var weakPlayer = WeakReference<Player>(nil)
        do {
            let (player, recorder) = try await Fixtures.player(id: id)
            weakPlayer.object = player
            try await player.load(.file(Fixtures.clipA))
            #expect(await recorder.waitForState(.playing))
        }
        // Gone once the deliveries in flight (each holds the player for its delegate call) ran.
        let reference = weakPlayer  // a copy of the weak reference, read live below
        #expect(await eventually { reference.object == nil })
        #expect(!PlayerRegistry.liveIDs.contains(id))
        let again = try await Player.create(id: id, configuration: Fixtures.headless)
        try await again.load(.file(Fixtures.clipA), startPaused: true)
        await again.shutdown()
    }

    @Test("shutdown while a load is pending fails the load with playerShutDown")
    func shutdownDuringLoad() async throws {
        let id = Fixtures.uniqueID("pending")
        let player = try await Player.create(id: id, configuration: Fixtures.headless)
        let server = try LoopbackHTTPServer(root: Fixtures.repository.appendingPathComponent("Media"))
        defer { server.stop() }
        async let loading: MediaInfo = player.load(MediaSource("http://127.0.0.1:\(server.port)/clip-a.mp4"))
        await player.shutdown()
        do {
            _ = try await loading
            // The load may have won the race; then the player still shut down cleanly.
        } catch {
            let error = error as? PlayerError
            #expect(error == .playerShutDown(id) || error == .loadCancelled(source: "http://127.0.0.1:\(server.port)/clip-a.mp4"))
        }
        #expect(player.isShutDown)
    }

    @Test("a newer load supersedes an older one")
    func supersededLoad() async throws {
        let (player, _) = try await Fixtures.player()
        defer { Task { await player.shutdown() } }
        async let first: MediaInfo = player.load(.file(Fixtures.clipA), startPaused: true)
        async let second: MediaInfo = player.load(.file(Fixtures.clipB), startPaused: true)
        var outcomes: [Result<MediaInfo, any Error>] = []
        do { outcomes.append(.success(try await first)) } catch { outcomes.append(.failure(error)) }
        do { outcomes.append(.success(try await second)) } catch { outcomes.append(.failure(error)) }
        // Both run concurrently, so either may reach mpv first. The one mpv got last always
        // loads; the other either loaded before it or was cancelled, with its own source named.
        let sources = [Fixtures.clipA, Fixtures.clipB]
        let loaded = outcomes.compactMap { try? $0.get().source }
        #expect(!loaded.isEmpty)
        for (index, outcome) in outcomes.enumerated() {
            if case .failure(let error) = outcome {
                #expect(error as? PlayerError == .loadCancelled(source: sources[index]))
            }
        }
        #expect(player.state.hasMedia)
    }

    @Test("a delegate may call back into its player, including shutdown")
    func reentrantDelegate() async throws {
        let calls = Locked<[String]>([])
        let recorder = EventRecorder { player, record in
            // Runs on the delegate queue: call straight back into the same player.
            if case .stateChanged(_, .playing) = record.event, player.isPaused == false, calls.withLock({ $0.isEmpty }) {
                do {
                    try player.send(.pause)
                    let position = player.position
                    calls.withLock { $0.append("paused at \(String(describing: position))") }
                    _ = player.state
                } catch {
                    calls.withLock { $0.append("error \(error)") }
                }
            }
            if case .stateChanged(_, .paused) = record.event {
                Task { await player.shutdown() }
            }
        }
        let player = try await Player.create(configuration: Fixtures.headless)
        player.delegate = recorder
        try await player.perform(.setLoop(.forever))
        // The delegate may pause and shut the player down before `load` has returned to this task
        // (seen under ThreadSanitizer): `load` then ends with `playerShutDown`, as documented.
        // What must hold is below.
        _ = try? await player.load(.file(Fixtures.clipA))
        #expect(await recorder.waitForState(.paused))
        #expect(calls.withLock { $0.count } == 1)
        #expect(calls.withLock { $0.first?.hasPrefix("paused at") } == true)
        // The shutdown started from inside the delegate completes.
        await player.shutdown()
        #expect(player.isShutDown)
    }

    @Test("one process serves 32 players at once")
    func thirtyTwoPlayers() async throws {
        var players: [(Player, EventRecorder)] = []
        for index in 0..<32 {
            players.append(try await Fixtures.player(id: Fixtures.uniqueID("p\(index)")))
        }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for (index, (player, _)) in players.enumerated() {
                group.addTask { try await player.load(.file(index.isMultiple(of: 2) ? Fixtures.clipA : Fixtures.clipB)) }
            }
            try await group.waitForAll()
        }
        for (player, recorder) in players {
            #expect(await recorder.waitForState(.playing))
            #expect(recorder.records.allSatisfy { $0.playerID == player.id })
        }
        await withTaskGroup(of: Void.self) { group in
            for (player, _) in players { group.addTask { await player.shutdown() } }
        }
        #expect(players.allSatisfy { $0.0.isShutDown })
    }

    @Test("calls racing a shutdown either work or throw playerShutDown; none reaches a destroyed core")
    func callsRacingShutdown() async throws {
        for round in 0..<5 {
            let id = Fixtures.uniqueID("race\(round)")
            let player = try await Player.create(id: id, configuration: Fixtures.headless)
            try await player.load(.file(Fixtures.clipA), startPaused: true)
            let outcomes = Locked<[String: Int]>([:])
            await withTaskGroup(of: Void.self) { group in
                for worker in 0..<4 {
                    group.addTask {
                        for step in 0..<50 {
                            do throws(PlayerError) {
                                switch (worker + step) % 4 {
                                case 0: try await player.perform(.setVolume(Double(step)))
                                case 1: _ = try await player.property("time-pos")
                                case 2: try await player.command(["show-text", "x"])
                                default: try await player.setProperty("mute", to: .flag(step % 2 == 0))
                                }
                                outcomes.withLock { $0["ok", default: 0] += 1 }
                            } catch .playerShutDown(let failed) {
                                #expect(failed == id)
                                outcomes.withLock { $0["shutDown", default: 0] += 1 }
                            } catch {
                                Issue.record("unexpected \(error)")
                            }
                        }
                    }
                }
                group.addTask { await player.shutdown() }
            }
            #expect(outcomes.withLock { $0.values.reduce(0, +) } == 200)
            #expect(player.isShutDown)
        }
    }
}
