import Foundation
@testable import PlayerKitCore
@testable import PlayerKitMPRIS
import PlayerKitSupport
import PlayerKitTesting
import Testing

/// What MPRIS says about a player and decides about requests, on a `FakePlayer` and a manual
/// clock: no bus, no mpv, no wall clock.
@Suite("MPRIS model: properties from events, decisions on requests, names (on FakePlayer)", .timeLimit(.minutes(1)))
struct MPRISModelTests {
    /// A fake player and a model fed with its events (on the emitting thread).
    final class Fixture: Sendable {
        let clock = ManualClock()
        let bus = PlayerEventBus(label: "mpris-model")
        let player: FakePlayer
        let model: Locked<MPRISPlayerModel>
        let changes = Locked<[MPRISPlayerModel.Change]>([])
        private let subscription: Locked<PlayerSubscription?> = Locked(nil)

        init(duration: Double = 10) throws {
            player = try FakePlayer(id: PlayerID(stringLiteral: "model-\(UUID().uuidString.prefix(8))"), clock: clock, bus: bus,
                                    defaultMedia: FakePlayer.Media(duration: duration))
            model = Locked(MPRISPlayerModel(player: player, now: clock.now))
            let model = model, changes = changes
            let token = bus.subscribe(to: player.id, delivery: .immediate) { record in
                let change = model.withLock { $0.apply(record.event, at: record.time) }
                if !change.isEmpty { changes.withLock { $0.append(change) } }
            }
            subscription.withLock { $0 = token }
        }

        var now: ContinuousClock.Instant { clock.now }
        func position() -> Double { model.withLock { $0.position(at: clock.now) } }
        func value(_ name: String, controls: MPRISControls = .standard) -> BusValue? {
            model.withLock { $0.playerProperty(name, controls: controls, now: clock.now) }
        }
        func decide(_ request: MPRISRequest, controls: MPRISControls = .all) -> MPRISPlayerModel.Decision {
            model.withLock { $0.decide(request, controls: controls, isShutDown: player.isShutDown, now: clock.now) }
        }
        func takeChanges() -> [MPRISPlayerModel.Change] {
            changes.withLock { changes in
                defer { changes = [] }
                return changes
            }
        }
    }

    @Test("position: the last report moved on at the rate while playing, still while paused, within the item; Seeked only for jumps")
    func position() async throws {
        let fixture = try Fixture(duration: 10)
        try await fixture.player.load(.file("/media/a.mp4"))
        #expect(fixture.value("PlaybackStatus") == .string("Playing"))
        fixture.clock.advance(by: .milliseconds(1600))
        #expect(abs(fixture.position() - 1.6) < 0.001)
        #expect(fixture.value("Position") == .int64(1_600_000))
        try await fixture.player.pause()
        fixture.clock.advance(by: .seconds(3))
        #expect(abs(fixture.position() - 1.6) < 0.001)
        #expect(fixture.value("PlaybackStatus") == .string("Paused"))
        _ = fixture.takeChanges()
        try await fixture.player.perform(.setSpeed(2))
        try await fixture.player.play()
        fixture.clock.advance(by: .milliseconds(1100))
        #expect(abs(fixture.position() - 3.8) < 0.001, "\(fixture.position())")
        #expect(fixture.value("Rate") == .double(2))
        // Regular position reports are playback, not jumps.
        #expect(fixture.takeChanges().allSatisfy { $0.seeked == nil })
        try await fixture.player.seek(to: 7)
        #expect(fixture.takeChanges().contains { $0.seeked == 7 })
        fixture.clock.advance(by: .seconds(1))
        #expect(abs(fixture.position() - 9) < 0.001)
        try await fixture.player.pause()
        try await fixture.player.seek(to: 9.9)
        #expect(fixture.position() <= 10)
    }

    @Test("properties and the changes events make: status, metadata (track IDs per item), volume, rate, loop, playlist, fullscreen")
    func properties() async throws {
        let fixture = try Fixture(duration: 12.5)
        #expect(fixture.value("PlaybackStatus") == .string("Stopped"))
        #expect(fixture.value("Metadata") == .dictionary([("mpris:trackid", .objectPath(MPRISPlayerModel.noTrack))]))
        #expect(fixture.value("CanPlay") == .bool(false) && fixture.value("CanSeek") == .bool(false))
        try await fixture.player.load(.file("/media/a b.mp4"), startPaused: true)
        #expect(fixture.value("PlaybackStatus") == .string("Paused"))
        #expect(fixture.value("Metadata") == .dictionary([
            ("mpris:trackid", .objectPath("/org/playerkit/track/1")), ("mpris:length", .int64(12_500_000)),
            ("xesam:url", .string("file:///media/a%20b.mp4")),
        ]))
        #expect(fixture.value("CanPlay") == .bool(true) && fixture.value("CanSeek") == .bool(true))
        #expect(fixture.value("CanSeek", controls: [.playback]) == .bool(false))
        #expect(fixture.value("CanPlay", controls: [.seeking]) == .bool(false))
        #expect(fixture.value("CanControl", controls: []) == .bool(false))
        #expect(fixture.value("CanGoNext") == .bool(false))
        fixture.model.withLock { $0.artworkURL = URL(string: "file:///posters/a.png") }
        if case .dictionary(let entries)? = fixture.value("Metadata") {
            #expect(entries.contains { $0.0 == "mpris:artUrl" && $0.1 == .string("file:///posters/a.png") })
        } else { Issue.record("no metadata") }
        _ = fixture.takeChanges()
        try await fixture.player.perform(.setVolume(35))
        try await fixture.player.perform(.setSpeed(1.5))
        try await fixture.player.perform(.setLoop(.forever))
        try await fixture.player.perform(.setFullscreen(true))
        let changes = fixture.takeChanges()
        #expect(changes.map(\.player) == [["Volume"], ["Rate"], ["LoopStatus"], []])
        #expect(changes.last?.root == ["Fullscreen"])
        #expect(fixture.value("Volume") == .double(0.35) && fixture.value("Rate") == .double(1.5) && fixture.value("LoopStatus") == .string("Track"))
        #expect(fixture.model.withLock { $0.isFullscreen })
        // A playlist from the events (a fake has none: fed by hand, as a real player's events would).
        let change = fixture.model.withLock { $0.apply(.playlistChanged(PlaylistPosition(index: 1, count: 3)), at: fixture.now) }
        #expect(change.player == ["CanGoNext", "CanGoPrevious"])
        #expect(fixture.value("CanGoNext") == .bool(true) && fixture.value("CanGoPrevious") == .bool(true))
        #expect(fixture.value("CanGoNext", controls: [.playback]) == .bool(false))
        // The next item gets the next track ID; an item that ends leaves no track.
        try fixture.player.send(.stop)
        #expect(fixture.value("PlaybackStatus") == .string("Stopped"))
        #expect(fixture.value("Metadata") == .dictionary([("mpris:trackid", .objectPath(MPRISPlayerModel.noTrack))]))
        try await fixture.player.load(.file("/media/b.mp4"))
        #expect(fixture.model.withLock { $0.trackID } == "/org/playerkit/track/2")
    }

    @Test("decisions: each request checked for its control, the player, its arguments and the state, in that order")
    func decisions() async throws {
        let fixture = try Fixture(duration: 10)
        // Nothing loaded.
        #expect(fixture.decide(.play) == .refuse(.noMediaLoaded))
        #expect(fixture.decide(.stop) == .ignore("nothing is loaded"))
        #expect(fixture.decide(.seek(by: 1)) == .refuse(.noMediaLoaded))
        try await fixture.player.load(.file("/media/a.mp4"))
        fixture.clock.advance(by: .seconds(2))
        let track = fixture.model.withLock { $0.trackID }
        let cases: [(MPRISRequest, MPRISControls, MPRISPlayerModel.Decision)] = [
            (.playPause, .all, .command(.pause)),
            (.play, .all, .command(.play)),
            (.pause, [.seeking], .refuse(.notAllowed(.playback))),
            (.seek(by: 3), .all, .command(.seek(to: 5, precision: .exact))),
            (.seek(by: -5), .all, .command(.seek(to: 0, precision: .exact))),
            (.seek(by: 30), .all, .ignore("past the end of the last item")),
            (.seek(by: .nan), .all, .refuse(.invalidArgument(name: "seek offset", value: "nan", reason: "must be a finite number"))),
            (.seek(by: 1), [.playback], .refuse(.notAllowed(.seeking))),
            (.setPosition(4, trackID: track), .all, .command(.seek(to: 4, precision: .exact))),
            (.setPosition(4, trackID: "/org/playerkit/track/9"), .all, .refuse(.unknownTrack(given: "/org/playerkit/track/9", current: track))),
            (.setPosition(-1, trackID: track), .all, .refuse(.invalidArgument(name: "position", value: "-1.0 s", reason: "must be 0 or more"))),
            (.setPosition(11, trackID: track), .all, .refuse(.invalidArgument(name: "position", value: "11.0 s", reason: "is after the end of the track (10.0 s)"))),
            (.setVolume(-0.5), .all, .command(.setVolume(0))),
            (.setVolume(0.5), .all, .command(.setVolume(50))),
            (.setVolume(.infinity), .all, .refuse(.invalidArgument(name: "volume", value: "inf", reason: "must be a finite number"))),
            (.setRate(0), .all, .command(.pause)),
            (.setRate(2), .all, .command(.setSpeed(2))),
            (.setRate(8), .all, .refuse(.invalidArgument(name: "rate", value: "8.0", reason: "must be between MinimumRate 0.25 and MaximumRate 4.0"))),
            (.setLoopStatus("Track"), .all, .command(.setLoop(.forever))),
            (.setLoopStatus("None"), .all, .command(.setLoop(.off))),
            (.setLoopStatus("Playlist"), .all, .refuse(.notSupported("LoopStatus Playlist (a player repeats its item, not its playlist)"))),
            (.setLoopStatus("Twice"), .all, .refuse(.invalidArgument(name: "loop status", value: "\"Twice\"", reason: "must be None, Track or Playlist"))),
            (.next, .all, .ignore("no next item")),
            (.previous, [.playback], .refuse(.notAllowed(.playlist))),
            (.setFullscreen(true), .standard, .refuse(.notAllowed(.fullscreen))),
            (.setFullscreen(true), .all, .command(.setFullscreen(true))),
            (.raise, .all, .forward(nil)),
            (.quit, .standard, .refuse(.notAllowed(.quit))),
        ]
        for (request, controls, expected) in cases {
            #expect(fixture.decide(request, controls: controls) == expected, "\(request) with \(controls)")
        }
        if case .refuse(.notSupported) = fixture.decide(.openURI("file:///a.mp4")) {} else { Issue.record("OpenUri was not refused") }
        // Controls the app handles: checked the same, then the app's, with the resolved command.
        let appHandled = fixture.model.withLock { model in
            [MPRISRequest.seek(by: 1), .setRate(0), .setRate(9), .setVolume(0.2)].map {
                model.decide($0, controls: .all, appHandles: [.seeking, .rate], isShutDown: false, now: fixture.now)
            }
        }
        #expect(appHandled == [
            .forward(.seek(to: 3, precision: .exact)), .forward(.pause),
            .refuse(.invalidArgument(name: "rate", value: "9.0", reason: "must be between MinimumRate 0.25 and MaximumRate 4.0")),
            .command(.setVolume(20)),
        ])
        // With a next item, a seek past the end is a Next (MPRIS's rule).
        fixture.model.withLock { _ = $0.apply(.playlistChanged(PlaylistPosition(index: 0, count: 2)), at: fixture.now) }
        #expect(fixture.decide(.seek(by: 30)) == .command(.next))
        #expect(fixture.decide(.next) == .command(.next))
        // A shut-down player refuses everything its controls allow, and nothing else is checked first.
        await fixture.player.shutdown()
        #expect(fixture.decide(.pause) == .refuse(.playerShutDown))
        #expect(fixture.decide(.seek(by: 1), controls: [.playback]) == .refuse(.notAllowed(.seeking)))
    }

    @Test("names: every ID escapes to a valid, distinct D-Bus name element that unescapes to it; app names are checked")
    func names() throws {
        var generator = SeededGenerator(seed: 29)
        let alphabet = Array("abcXYZ019-_ .é/😀:\u{00A0}")
        var seen: [String: PlayerID] = [:]
        for _ in 0..<2000 {
            let length = Int.random(in: 1...12, using: &generator)
            let raw = String((0..<length).map { _ in alphabet.randomElement(using: &generator)! })
            guard let id = try? PlayerID(validating: raw) else { continue }
            let name = try MPRISBusName.forPlayer(id, app: "app")
            let element = String(name.dropFirst("org.mpris.MediaPlayer2.app.".count))
            #expect(element.utf8.allSatisfy { ($0 >= 97 && $0 <= 122) || ($0 >= 65 && $0 <= 90) || ($0 >= 48 && $0 <= 57) || $0 == 95 || $0 == 45 },
                    "\(raw) -> \(element)")
            #expect(MPRISBusName.playerID(fromInstance: name, app: "app") == id, "\(raw) -> \(name)")
            if let other = seen[name] { #expect(other == id, "\(other) and \(id) share \(name)") }
            seen[name] = id
        }
        #expect(MPRISBusName.escape("main") == "main" && MPRISBusName.escape("feed-3") == "feed-3")
        #expect(MPRISBusName.escape("camera 1") == "camera_201" && MPRISBusName.escape("a_b") == "a_5fb")
        #expect(throws: MPRISError.invalidAppName("my-app", reason: "may hold only ASCII letters, digits and _ (one D-Bus name element)")) {
            try MPRISBusName.forApp("my-app")
        }
        #expect(throws: MPRISError.invalidAppName("2players", reason: "must not start with a digit")) { try MPRISBusName.forApp("2players") }
        #expect(throws: MPRISError.invalidAppName("", reason: "must not be empty")) { try MPRISBusName.forApp("") }
        let long = PlayerID(stringLiteral: String(repeating: "é", count: 60))
        #expect(throws: MPRISError.self) { try MPRISBusName.forPlayer(long, app: "app") }
        #expect(throws: MPRISError.invalidArgument(name: "bus call timeout", value: "0.0 seconds", reason: "must be positive")) {
            try MPRISService(configuration: MPRISConfiguration(appName: "app", identity: "App", busCallTimeout: .zero))
        }
    }
}
