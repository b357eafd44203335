import Foundation
import PlayerKit
@testable import PlayerKitCore
import Testing

/// Audio devices against a real sound server the test starts: PulseAudio with two null sinks,
/// "alpha" (the default) and "beta", asked with pactl what it sees.
@Suite("Audio devices and the sound server", .timeLimit(.minutes(4)))
struct AudioDeviceTests {
    /// A player that plays through `server`'s PulseAudio, on `device` if given.
    private func player(_ id: PlayerID, server: SoundServer, device: String? = nil) async throws -> (Player, EventRecorder) {
        var configuration = Fixtures.headless
        configuration.audioOutput = .system
        configuration.audioDevice = device
        configuration.extraOptions["ao"] = "pulse"
        configuration.extraOptions["pulse-host"] = server.address
        return try await Fixtures.player(id: id, configuration: configuration)
    }

    /// Asks the server until `done` holds for its streams (up to 15 s); the last answer.
    private func streams(of server: SoundServer, until done: @Sendable ([SoundServer.Stream]) -> Bool) async throws -> [SoundServer.Stream] {
        let deadline = ContinuousClock.now + .seconds(15)
        var last: [SoundServer.Stream] = []
        while ContinuousClock.now < deadline {
            last = try await offPool { try server.streams() }
            if done(last) { return last }
            try await Task.sleep(for: .milliseconds(100))
        }
        return last
    }

    @Test("each player's stream carries its ID and plays on the device chosen; a device change moves only that player")
    func streamsByPlayerID() async throws {
        let server = try await SoundServer.start(sinks: ["alpha", "beta"])
        defer { server.stop() }
        let left = Fixtures.uniqueID("left"), right = Fixtures.uniqueID("right")
        let (leftPlayer, _) = try await player(left, server: server, device: "pulse/beta")
        let (rightPlayer, _) = try await player(right, server: server)
        for player in [leftPlayer, rightPlayer] {
            try await player.perform(.setLoop(.forever))
            _ = try await player.load(.file(Fixtures.clipA))
        }
        // The devices the players can use: the default and both sinks, by mpv's names.
        let devices = try await leftPlayer.audioDevices()
        #expect(devices.first?.name == "auto")
        #expect(Set(devices.map(\.name)).isSuperset(of: ["pulse/alpha", "pulse/beta"]), "\(devices)")
        #expect(leftPlayer.audioDevice == "pulse/beta")

        // One stream per player, named by its ID: left on beta as configured, right on the
        // server's default (alpha).
        let expected: Set<SoundServer.Stream> = [.init(application: left.rawValue, sink: "beta"), .init(application: right.rawValue, sink: "alpha")]
        var seen = try await streams(of: server) { Set($0).isSuperset(of: expected) }
        #expect(Set(seen) == expected)

        // Right moves to beta while playing; left stays.
        try await rightPlayer.setAudioDevice("pulse/beta")
        #expect(rightPlayer.audioDevice == "pulse/beta")
        let moved: Set<SoundServer.Stream> = [.init(application: left.rawValue, sink: "beta"), .init(application: right.rawValue, sink: "beta")]
        seen = try await streams(of: server) { Set($0) == moved }
        #expect(Set(seen) == moved)

        for player in [leftPlayer, rightPlayer] { await player.shutdown() }
        let after = try await streams(of: server) { $0.isEmpty }
        #expect(after.isEmpty, "streams left after shutdown: \(after)")
    }

    @Test("a device that does not exist is refused with the names there are; the player keeps its device and plays on")
    func unknownDevice() async throws {
        let server = try await SoundServer.start(sinks: ["alpha", "beta"])
        defer { server.stop() }
        let id = Fixtures.uniqueID("solo")
        let (player, recorder) = try await player(id, server: server, device: "pulse/alpha")
        // Looping until its stream is seen: on a loaded machine the 4 s clip could end (and its
        // stream with it) before pactl is asked.
        try await player.perform(.setLoop(.forever))
        _ = try await player.load(.file(Fixtures.clipA))
        do {
            try await player.setAudioDevice("pulse/gamma")
            Issue.record("a missing device was accepted")
        } catch {
            guard case .unknownAudioDevice(let name, let available) = error else {
                Issue.record("wrong error: \(error)")
                return
            }
            #expect(name == "pulse/gamma")
            #expect(available.contains("pulse/alpha") && available.contains("pulse/beta"))
            #expect("\(error)".contains("pulse/gamma"))
        }
        #expect(player.audioDevice == "pulse/alpha")
        let seen = try await streams(of: server) { $0.contains { $0.application == id.rawValue } }
        #expect(seen == [.init(application: id.rawValue, sink: "alpha")])
        // It plays on to the end of the clip once looping stops.
        let mark = recorder.mark
        try await player.perform(.setLoop(.off))
        let end = await recorder.waitFor(timeout: .seconds(20), after: mark) {
            if case .itemEnded = $0.event { return true } else { return false }
        }
        #expect(end?.event == .itemEnded(.finished))
        await player.shutdown()
    }
}
