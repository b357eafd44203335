import Foundation
import ExampleSupport
import PlayerKit
@testable import PlayerKitCore
import Testing

@Suite("Engine operations", .timeLimit(.minutes(4)))
struct EngineTests {
    @Test("a request mpv refuses after it was sent comes back as an error event naming it; the player stays usable")
    func sentRequestRefusedByMPV() async throws {
        let (player, recorder) = try await Fixtures.player()
        defer { Task { await player.shutdown() } }
        // No public command reaches mpv unchecked; the engine's escape-hatch operation does.
        try player.core.send(.setProperty(name: "no-such-property", value: .int(1)))
        let refusal = await recorder.waitFor { if case .error = $0.event { return true }; return false }
        #expect(refusal?.event == .error(.propertyNotFound(name: "no-such-property")))
        try await player.load(.file(Fixtures.clipA), startPaused: true)
        #expect(player.state == .ready)
    }

    @Test("perform suspends until mpv carried the command out: the read-outs reflect it when it returns; mpv's refusal is thrown to the caller, not published")
    func performWaitsForTheAnswer() async throws {
        let (player, recorder) = try await Fixtures.player()
        defer { Task { await player.shutdown() } }
        // The 4 s clip loops: on a loaded machine the time between play and pause below can be
        // longer than the clip at 1.5x, and an ended clip leaves nothing loaded to seek in.
        try await player.perform(.setLoop(.forever))
        try await player.load(.file(Fixtures.clipA), startPaused: true)
        try await player.perform(.setSpeed(1.5))
        #expect(player.snapshot.speed == 1.5)
        try await player.perform(.play)
        #expect(!player.isPaused)
        try await player.perform(.pause)
        #expect(player.isPaused)
        try await player.perform(.seek(to: 1, precision: .exact))
        #expect(await eventually { abs((player.position ?? 0) - 1) < 0.05 })
        // No public command reaches mpv unchecked; the engine's escape-hatch operation does.
        await #expect(throws: PlayerError.propertyNotFound(name: "no-such-property")) {
            try await player.core.request(.setProperty(name: "no-such-property", value: .int(1)), timeout: .seconds(10))
        }
        // The refusal went to the caller only: the first error event is the one of a later
        // request sent without waiting.
        try player.core.send(.setProperty(name: "another-missing-property", value: .int(1)))
        let published = await recorder.waitFor { if case .error = $0.event { return true }; return false }
        #expect(published?.event == .error(.propertyNotFound(name: "another-missing-property")))
        try await player.perform(.play)
        #expect(await eventually { player.state == .playing })
    }

    @Test("observeProperty reports any mpv property, the current value first, then each change, until cancelled; an unknown name is refused by name")
    func observeAnyProperty() async throws {
        let (player, recorder) = try await Fixtures.player()
        defer { Task { await player.shutdown() } }
        #expect(throws: PlayerError.propertyNotFound(name: "no-such-property")) { _ = try player.observeProperty("no-such-property") }
        #expect(throws: PlayerError.propertyNotFound(name: "")) { _ = try player.observeProperty("") }
        try await player.load(.file(Fixtures.clipA), startPaused: true)
        let observation = try player.observeProperty("core-idle")
        let idle = await recorder.waitFor { $0.event == .propertyChanged(name: "core-idle", value: .flag(true)) }
        #expect(idle?.playerID == player.id)
        // A sub-property is observed by its full name (while the item is loaded and paused: a
        // 4 s clip played on a loaded machine can end, and its track list empty, before the
        // observation's first value comes).
        let titled = try player.observeProperty("track-list/count")
        let count = await recorder.waitFor {
            if case .propertyChanged("track-list/count", .int(let count)) = $0.event { return count > 0 }
            return false
        }
        #expect(count != nil)
        let played = recorder.mark
        try await player.play()
        // mpv's core runs once the item plays: the change is heard as an event.
        let running = await recorder.waitFor(after: played) { $0.event == .propertyChanged(name: "core-idle", value: .flag(false)) }
        #expect(running != nil)
        titled.cancel()
        observation.cancel()
        // After the cancel, no change of it is reported: pause and play again, then a marker.
        let mark = recorder.mark
        try await player.pause()
        try await player.play()
        try await player.perform(.setVolume(41))
        #expect(await recorder.waitFor(after: mark) { $0.event == .volumeChanged(41) } != nil)
        #expect(!recorder.records.contains { $0.sequenceNumber > mark && $0.event.kind == .propertyChanged })
    }

    @Test("observeProperty on a shut-down player throws playerShutDown, whatever the name (a known one, an unknown one, an empty one)")
    func observePropertyAfterShutdown() async throws {
        let (player, _) = try await Fixtures.player()
        await player.shutdown()
        for name in ["core-idle", "no-such-property", ""] {
            #expect(throws: PlayerError.playerShutDown(player.id), "observing \"\(name)\"") { _ = try player.observeProperty(name) }
        }
    }

    @Test("perform refuses by name at once: a bad argument, a seek with nothing loaded, a timeout that is not positive, a shut-down player")
    func performRefusals() async throws {
        let (player, _) = try await Fixtures.player()
        await #expect(throws: PlayerError.noMediaLoaded(operation: "seek")) { try await player.perform(.seek(to: 1, precision: .exact)) }
        do {
            try await player.perform(.setSpeed(.nan))
            Issue.record("a NaN speed was accepted")
        } catch .invalidArgument(let name, _, _) {
            #expect(name == "speed")
        } catch {
            Issue.record("unexpected \(error)")
        }
        do {
            try await player.perform(.play, timeout: .zero)
            Issue.record("a zero timeout was accepted")
        } catch .invalidArgument(let name, let value, _) {
            #expect(name == "timeout")
            #expect(value.contains("0"))
        } catch {
            Issue.record("unexpected \(error)")
        }
        try await player.perform(.setMuted(true))
        await player.shutdown()
        await #expect(throws: PlayerError.playerShutDown(player.id)) { try await player.perform(.play) }
    }

    @Test("Player.perform(each:) with one command hands a command to several players at once and returns each one's answer, in order")
    func performOnSeveral() async throws {
        let (loaded, _) = try await Fixtures.player()
        let (empty, _) = try await Fixtures.player()
        let (gone, _) = try await Fixtures.player()
        defer { Task { await loaded.shutdown(); await empty.shutdown() } }
        try await loaded.load(.file(Fixtures.clipA), startPaused: true)
        await gone.shutdown()
        // Each player's own answer: carried out, or refused by the check.
        let seeks = await Player.perform(each: [loaded, empty].map { ($0, .seek(to: 1, precision: .exact)) })
        #expect(seeks.count == 2)
        #expect((try? seeks[0].get()) != nil)
        #expect(throws: PlayerError.noMediaLoaded(operation: "seek")) { try seeks[1].get() }
        #expect(await eventually { abs((loaded.position ?? 0) - 1) < 0.05 })
        // When it returns, every live player's read-out reflects the command; a shut-down one
        // says so.
        let speeds = await Player.perform(each: [loaded, gone, empty].map { ($0, .setSpeed(1.25)) })
        #expect(speeds.count == 3)
        #expect((try? speeds[0].get()) != nil)
        #expect(throws: PlayerError.playerShutDown(gone.id)) { try speeds[1].get() }
        #expect((try? speeds[2].get()) != nil)
        #expect(loaded.snapshot.speed == 1.25)
        #expect(empty.snapshot.speed == 1.25)
        // A bad argument or timeout fails for every player, and nothing is sent.
        let nan = await Player.perform(each: [loaded, empty].map { ($0, .setSpeed(.nan)) })
        #expect(nan.allSatisfy { if case .failure(.invalidArgument(name: "speed", _, _)) = $0 { true } else { false } })
        let zero = await Player.perform(each: [loaded].map { ($0, .play) }, timeout: .zero)
        #expect(zero.allSatisfy { if case .failure(.invalidArgument(name: "timeout", _, _)) = $0 { true } else { false } })
        #expect(loaded.isPaused)
        #expect(await Player.perform(each: []).isEmpty)
    }

    @Test("Player.create makes a player on PlayerKit's own thread, under the initializer's ID rules and typed errors")
    func createOffThePool() async throws {
        let id = Fixtures.uniqueID("created")
        let player = try await Player.create(id: id, configuration: Fixtures.headless)
        #expect(player.id == id)
        #expect(Player.live(id) === player)
        await #expect(throws: PlayerError.duplicateID(id)) { try await Player.create(id: id, configuration: Fixtures.headless) }
        await #expect(throws: PlayerError.invalidID(" ")) { try await Player.create(id: PlayerID(stringLiteral: " "), configuration: Fixtures.headless) }
        try await player.load(.file(Fixtures.clipA), startPaused: true)
        #expect(player.state == .ready)
        await player.shutdown()
        #expect(Player.live(id) == nil)
        // The ID is free again.
        let again = try await Player.create(id: id, configuration: Fixtures.headless)
        await again.shutdown()
    }

    @Test("on a libmpv before 0.37 the pitch is kept by mpv's scaletempo in the player's filter chain, never by its scaletempo2; none without pitch correction, and the app's own af wins")
    func pitchFilter() async throws {
        let id: PlayerID = "pitch-options"
        let keeping = PlayerConfiguration()
        #expect(keeping.mpvOptions(for: id, scaletempo2IsUnsafe: true).contains { $0 == ("af", PlayerConfiguration.pitchFilter) })
        #expect(!keeping.mpvOptions(for: id, scaletempo2IsUnsafe: false).contains { $0.0 == "af" })
        var tape = PlayerConfiguration()
        tape.pitchCorrection = false
        #expect(!tape.mpvOptions(for: id, scaletempo2IsUnsafe: true).contains { $0.0 == "af" })
        #expect(tape.mpvOptions(for: id, scaletempo2IsUnsafe: true).contains { $0 == ("audio-pitch-correction", "no") })
        var own = PlayerConfiguration()
        own.extraOptions["af"] = "lavfi=[volume=0.5]"
        #expect(own.mpvOptions(for: id, scaletempo2IsUnsafe: true).last { $0.0 == "af" }?.1 == "lavfi=[volume=0.5]")
        // Nobody hears a player without an audio output: no pitch kept, no filter; unless the
        // app chose mpv's output itself.
        let unheard = PlayerConfiguration(videoOutput: .none, audioOutput: .none)
        #expect(!unheard.mpvOptions(for: id, scaletempo2IsUnsafe: true).contains { $0.0 == "af" })
        #expect(unheard.mpvOptions(for: id, scaletempo2IsUnsafe: true).contains { $0 == ("audio-pitch-correction", "no") })
        var recorded = unheard
        recorded.extraOptions["ao"] = "pcm"
        #expect(recorded.mpvOptions(for: id, scaletempo2IsUnsafe: true).contains { $0 == ("af", PlayerConfiguration.pitchFilter) })

        // A headless player at another speed: neither filter in its chain.
        let (quiet, _) = try await Fixtures.player()
        try await quiet.load(.file(Fixtures.clipA), startPaused: true)
        try await quiet.perform(.setSpeed(1.5))
        try await quiet.perform(.play)
        let quietChain = "\(try await quiet.property("af"))"
        #expect(!quietChain.contains("scaletempo"), "af: \(quietChain)")
        await quiet.shutdown()

        // This libmpv (Debian's is 0.35): the client API version agrees with the release number.
        var heard = Fixtures.headless
        heard.extraOptions["ao"] = "null"
        let player = try await Player.create(configuration: heard)
        defer { Task { await player.shutdown() } }
        let release = "\(try await player.property("mpv-version"))"  // "mpv 0.35.1"
        let number = release.split(separator: " ").first { $0.contains(".") && $0.contains(where: \.isNumber) }?.drop { !$0.isNumber } ?? ""
        let parts = number.split(separator: ".").compactMap { Int(String($0.prefix(while: \.isNumber))) }
        try #require(parts.count >= 2, "mpv-version \(release)")
        #expect(LibMPV.scaletempo2IsUnsafe == (parts[0] == 0 && parts[1] < 37), "\(release), client API \(String(LibMPV.clientAPIVersion, radix: 16))")
        try await player.load(.file(Fixtures.clipA), startPaused: true)
        try await player.perform(.setSpeed(1.5))
        let chain = "\(try await player.property("af"))"
        if LibMPV.scaletempo2IsUnsafe {
            #expect(chain.contains("scaletempo") && chain.contains("playerkit-pitch") && !chain.contains("scaletempo2"), "af: \(chain)")
        } else {
            #expect(!chain.contains("playerkit-pitch"), "af: \(chain)")
        }
        try await player.perform(.play)
        #expect(player.snapshot.speed == 1.5 && !player.isPaused)
    }

    @Test("a muted player runs its pitch filter without the search (nobody hears its pitch), still taking the speed so that mpv inserts no scaletempo2; unmuted, the full filter is back, and it plays on throughout")
    func mutedPitchFilter() async throws {
        var heard = Fixtures.headless
        heard.extraOptions["ao"] = "null"
        let (player, recorder) = try await Fixtures.player(configuration: heard)
        defer { Task { await player.shutdown() } }
        try #require(LibMPV.scaletempo2IsUnsafe, "only a libmpv before 0.37 has PlayerKit's pitch filter")
        try await player.load(.file(Fixtures.clipA))
        #expect(await recorder.waitForState(.playing))
        try await player.perform(.setSpeed(1.25))
        try await player.perform(.setMuted(true))
        let muted = "\(try await player.property("af"))"
        #expect(muted.contains("playerkit-pitch") && muted.contains("overlap") && !muted.contains("scaletempo2"), "af: \(muted)")
        try await player.perform(.setMuted(false))
        let heardAgain = "\(try await player.property("af"))"
        #expect(heardAgain.contains("playerkit-pitch") && !heardAgain.contains("overlap") && !heardAgain.contains("scaletempo2"), "af: \(heardAgain)")
        #expect(player.snapshot.isMuted == false && player.snapshot.speed == 1.25)
        // Still playing: the position moves on after both changes of the chain.
        let before = player.snapshot.position ?? 0
        let moved = await recorder.waitFor(timeout: .seconds(5)) {
            if case .positionChanged(let position) = $0.event { return position > before + 0.3 } else { return false }
        }
        #expect(moved != nil)
    }

    @Test("in turn: each player gets the command once the one before answered; a refused one does not stop the turn, and each answer is its own")
    func performInTurn() async throws {
        var made: [Player] = []
        for _ in 0..<3 { made.append(try await Fixtures.player().0) }
        let players = made
        defer { Task { for player in players { await player.shutdown() } } }
        for player in [players[0], players[2]] { try await player.load(.file(Fixtures.clipA), startPaused: true) }
        // The middle one has nothing loaded: its seek is refused by the check, and the last one
        // still gets its seek.
        let seeks = await Player.perform(each: players.map { ($0, .seek(to: 1, precision: .exact)) }, pacing: .inTurn)
        #expect(seeks.count == 3)
        #expect((try? seeks[0].get()) != nil && (try? seeks[2].get()) != nil)
        #expect(throws: PlayerError.noMediaLoaded(operation: "seek")) { try seeks[1].get() }
        // Each seek returned once landed, so both read the target.
        #expect(players[0].position == 1 && players[2].position == 1)
        // Started in turn: when it returns, every member plays; the starts are in list order.
        // (By the records' times: each player's change is published by the thread that hands its
        // command over, so two players' handlers may run in either order.)
        let order = Guarded<[(PlayerID, ContinuousClock.Instant)]>([])
        let watches = players.map { player in
            player.eventBus.subscribe(to: player.id, kinds: [.stateChanged], delivery: .immediate) { record in
                if case .stateChanged(_, .playing) = record.event { order.withLock { $0.append((record.playerID, record.time)) } }
            }
        }
        defer { for watch in watches { watch.cancel() } }
        let plays = await Player.perform(each: [players[0], players[2]].map { ($0, .play) }, pacing: .inTurn)
        #expect(plays.allSatisfy { (try? $0.get()) != nil })
        #expect(!players[0].isPaused && !players[2].isPaused)
        #expect(await eventually { order.withLock { $0.count } == 2 })
        #expect(order.withLock { $0.sorted { $0.1 < $1.1 }.map(\.0) } == [players[0].id, players[2].id])
        // A shut-down member fails with playerShutDown; the turn goes on past it.
        await players[1].shutdown()
        let pauses = await Player.perform(each: [players[1], players[0]].map { ($0, .pause) }, pacing: .inTurn)
        #expect(throws: PlayerError.playerShutDown(players[1].id)) { try pauses[0].get() }
        #expect((try? pauses[1].get()) != nil && players[0].isPaused)
    }

    @Test("property reads suspend until mpv answers (no thread waits): values, typed errors by name, playerShutDown after shutdown")
    func propertyReads() async throws {
        let (player, _) = try await Fixtures.player()
        try await player.load(.file(Fixtures.clipA), startPaused: true)
        try await player.seek(to: 1.5)
        #expect(try await player.property("time-pos").doubleValue.map { abs($0 - 1.5) < 0.01 } == true)
        #expect(try await player.property("pause") == .flag(true))
        await #expect(throws: PlayerError.propertyNotFound(name: "no-such-property")) { try await player.property("no-such-property") }
        #expect(try await player.property("playlist-count").intValue == 1)
        // Reads and commands from many tasks at once: each gets its own answer.
        let volumes = try await withThrowingTaskGroup(of: Double?.self) { group in
            for index in 0..<20 {
                group.addTask {
                    try await player.perform(.setVolume(Double(40 + index)))
                    return try await player.property("volume").doubleValue
                }
            }
            var all: [Double?] = []
            for try await volume in group { all.append(volume) }
            return all
        }
        #expect(volumes.count == 20 && volumes.allSatisfy { $0.map { (40...59).contains($0) } == true })
        await player.shutdown()
        await #expect(throws: PlayerError.playerShutDown(player.id)) { try await player.property("volume") }
    }

    @Test("an awaited operation updates the read-outs it owns before it returns")
    func awaitedOperationUpdatesModel() async throws {
        let (player, _) = try await Fixtures.player()
        defer { Task { await player.shutdown() } }
        try await player.load(.file(Fixtures.clipA), startPaused: true)
        try await player.play()
        #expect(!player.isPaused)
        try await player.pause()
        #expect(player.isPaused)
        try await player.setProperty("pause", to: .flag(false))
        #expect(!player.isPaused)
    }
}
