import PlayerKitCore
@testable import PlayerKitFeed
import PlayerKitSupport
import PlayerKitTesting
import Testing

@Suite("AudioPolicy's decisions, on fake players", .timeLimit(.minutes(1)))
struct AudioPolicyLogicTests {
    let bus = PlayerEventBus(label: "audio-logic")
    let clock = ManualClock()

    private func players(_ count: Int) throws -> [FakePlayer] {
        try (0..<count).map { _ in try FakePlayer(clock: clock, bus: bus) }
    }

    @Test("duck: the others are turned down, each gets its own volume back with the focus, and all of them when the policy lets go")
    func duck() async throws {
        let all = try players(3)
        try await all[1].perform(.setVolume(70))
        let audio = try AudioPolicy(mode: .duck(volume: 20), players: all)
        try await audio.focus(all[0])
        #expect(all.map(\.snapshot.volume) == [100, 20, 20])
        try await audio.focus(all[1])
        #expect(all.map(\.snapshot.volume) == [20, 70, 20])
        #expect(audio.focused == all[1].id)
        try await audio.clearFocus()
        #expect(all.map(\.snapshot.volume) == [100, 70, 100])
        #expect(audio.focused == nil)
        // Nobody's mute was touched.
        #expect(all.allSatisfy { $0.snapshot.isMuted == false && !$0.commands.contains(.setMuted(true)) })
        for player in all { await player.shutdown() }
    }

    @Test("solo keeps a player's own mute: one muted before the policy stays muted when the policy lets go")
    func soloKeepsOwnMute() async throws {
        let all = try players(3)
        try await all[2].perform(.setMuted(true))
        let audio = try AudioPolicy(mode: .solo, players: all)
        try await audio.focus(all[0])
        #expect(all.map(\.snapshot.isMuted) == [false, true, true])
        try await audio.focus(all[2])                                  // its own mute: it was muted itself
        #expect(all.map(\.snapshot.isMuted) == [true, true, true])
        try await audio.clearFocus()
        #expect(all.map(\.snapshot.isMuted) == [false, false, true])
        for player in all { await player.shutdown() }
    }

    @Test("mix changes nothing; a player added while another has the focus is quieted at once")
    func mixAndAdd() async throws {
        let all = try players(3)
        let mix = try AudioPolicy(mode: .mix, players: [all[0], all[1]])
        try await mix.focus(all[0])
        #expect(all[0].commands.isEmpty && all[1].commands.isEmpty)
        let duck = try AudioPolicy(mode: .duck(volume: 10), players: [all[0]])
        try await duck.focus(all[0])
        try await duck.add(all[2])
        #expect(all[2].snapshot.volume == 10)
        try await duck.add(all[2])                                     // again: nothing more
        #expect(all[2].commands == [.setVolume(10)])
        for player in all { await player.shutdown() }
    }

    @Test("bad input is refused by name and changes nothing: a ducking volume of 120 or NaN, a player listed twice, focus on a stranger")
    func badInput() async throws {
        let all = try players(2)
        #expect(throws: PlayerError.invalidArgument(name: "ducking volume", value: "120.0", reason: "must be between 0 and 100")) {
            try AudioPolicy(mode: .duck(volume: 120))
        }
        #expect(throws: PlayerError.invalidArgument(name: "ducking volume", value: "nan", reason: "must be between 0 and 100")) {
            try AudioPolicy(mode: .duck(volume: .nan))
        }
        #expect(throws: PlayerError.invalidArgument(name: "audio policy", value: "\(all[0].id), \(all[0].id)", reason: "lists a player twice")) {
            try AudioPolicy(mode: .solo, players: [all[0], all[0]])
        }
        let solo = try AudioPolicy(mode: .solo, players: [all[0]])
        await #expect(throws: PlayerError.invalidArgument(name: "audio focus", value: all[1].id.rawValue, reason: "is not in the audio policy")) {
            try await solo.focus(all[1])
        }
        #expect(solo.focused == nil && all[0].commands.isEmpty)
        try await solo.focus(all[0])
        #expect(solo.focused == all[0].id)
        for player in all { await player.shutdown() }
    }

    @Test("a player that refuses its volume: focus throws mpv's error, and the policy and the other players stay usable")
    func refusal() async throws {
        let all = try players(3)
        let audio = try AudioPolicy(mode: .duck(volume: 20), players: all)
        all[2].refuseCommands { command in
            if case .setVolume = command { return .commandFailed(command: ["set", "volume"], MPVError(code: -12, message: "refused by the test")) }
            return nil
        }
        await #expect(throws: PlayerError.commandFailed(command: ["set", "volume"], MPVError(code: -12, message: "refused by the test"))) { try await audio.focus(all[0]) }
        all[2].refuseCommands(nil)
        try await audio.focus(all[1])
        #expect(all.map(\.snapshot.volume) == [20, 100, 20])
        try await audio.clearFocus()
        #expect(all.map(\.snapshot.volume) == [100, 100, 100])
        for player in all { await player.shutdown() }
    }

    @Test("a player shut down is left alone; focus calls racing from eight tasks leave exactly one player loud")
    func shutDownAndRaces() async throws {
        let all = try players(4)
        let audio = try AudioPolicy(mode: .duck(volume: 20), players: all)
        await all[3].shutdown()
        try await audio.focus(all[0])
        #expect(all[3].commands.isEmpty)
        for round in 0..<50 {
            await withTaskGroup(of: Void.self) { group in
                for task in 0..<8 {
                    let player = all[(round + task) % 3]
                    group.addTask { try? await audio.focus(player) }
                }
            }
            let focused = try #require(audio.focused)
            let volumes = all.prefix(3).map { ($0.id, $0.snapshot.volume) }
            #expect(volumes.allSatisfy { $0.1 == ($0.0 == focused ? 100 : 20) }, "round \(round): focus \(focused), \(volumes)")
        }
        for player in all { await player.shutdown() }
    }

    /// Which audio track each player has selected now, from its tracksChanged events (the load's
    /// list first): nil for none.
    private final class TrackLog: Sendable {
        private let selected = Locked<[PlayerID: Int?]>([:])
        private let subscription: PlayerSubscription
        init(_ bus: PlayerEventBus) {
            let selected = selected
            subscription = bus.subscribe(to: .all, kinds: [.mediaLoaded, .tracksChanged], delivery: .immediate) { record in
                let tracks: [Track]
                switch record.event {
                case .mediaLoaded(let info): tracks = info.tracks
                case .tracksChanged(let list): tracks = list
                default: return
                }
                selected.withLock { $0[record.playerID] = .some(tracks.first { $0.kind == .audio && $0.isSelected }?.id) }
            }
        }
        func audio(_ players: [FakePlayer]) -> [Int?] { selected.withLock { state in players.map { state[$0.id] ?? nil } } }
        deinit { subscription.cancel() }
    }

    @Test("solo without decoding the unheard: the others' audio tracks are off (also of items loaded later), each gets its own track back with the focus")
    func unheardAudioOff() async throws {
        let log = TrackLog(bus)
        let media = FakePlayer.Media(duration: 60, audioTracks: 2)
        let all = try (0..<3).map { _ in try FakePlayer(clock: clock, bus: bus, defaultMedia: media) }
        let audio = try AudioPolicy(mode: .solo, players: all, decodesUnheardAudio: false)
        #expect(!audio.decodesUnheardAudio)
        // The focus before anything is loaded (as a multi-view app gives it): the others' items
        // load with their sound off.
        try await audio.focus(all[0])
        for player in all { _ = try await player.load("clip.mp4") }
        #expect(log.audio(all) == [1, nil, nil])
        #expect(all.map(\.snapshot.isMuted) == [false, true, true])
        // The second player chose its second track itself before; with the focus it gets it back.
        try await audio.clearFocus()
        #expect(log.audio(all) == [1, 1, 1])
        try await all[1].perform(.selectTrack(.audio, id: 2))
        try await audio.focus(all[0])
        #expect(log.audio(all) == [1, nil, nil])
        let mark = all[1].commands.count
        try await audio.focus(all[1])
        #expect(log.audio(all) == [nil, 2, nil])
        #expect(all.map(\.snapshot.isMuted) == [true, false, true])
        // Its track, volume and mute come back (sent to the players at once, in no set order).
        let restored = Array(all[1].commands[mark...])
        #expect(restored.count == 3 && Set(restored) == [.selectTrack(.audio, id: 2), .setVolume(100), .setMuted(false)], "\(restored)")
        // A player without the focus loads another item: its sound is off again.
        _ = try await all[2].load("other.mp4")
        #expect(log.audio(all) == [nil, 2, nil])
        try await audio.clearFocus()
        #expect(log.audio(all) == [1, 2, 1])
        #expect(all.map(\.snapshot.isMuted) == [false, false, false])
        for player in all { await player.shutdown() }
    }

    @Test("without decoding the unheard: an item without sound gets no track change; a mode other than solo is refused by name")
    func unheardAudioEdges() async throws {
        let all = try players(2)
        let audio = try AudioPolicy(mode: .solo, players: all, decodesUnheardAudio: false)
        for player in all { _ = try await player.load("silent.mp4") }
        try await audio.focus(all[0])
        try await audio.focus(all[1])
        #expect(all.allSatisfy { !$0.commands.contains { if case .selectTrack = $0 { true } else { false } } })
        #expect(all.map(\.snapshot.isMuted) == [true, false])
        #expect(throws: PlayerError.invalidArgument(name: "decodesUnheardAudio", value: "false", reason: "needs the solo mode (in duck(volume: 20.0) every player is heard)")) {
            try AudioPolicy(mode: .duck(volume: 20), players: all, decodesUnheardAudio: false)
        }
        #expect(throws: PlayerError.invalidArgument(name: "decodesUnheardAudio", value: "false", reason: "needs the solo mode (in mix every player is heard)")) {
            try AudioPolicy(mode: .mix, decodesUnheardAudio: false)
        }
        #expect(try AudioPolicy(mode: .mix).decodesUnheardAudio)
        for player in all { await player.shutdown() }
    }
}
