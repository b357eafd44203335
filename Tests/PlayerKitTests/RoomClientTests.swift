import Foundation
import Testing
@testable import PlayerKitRooms
import PlayerKitSupport

/// Records a room client's events as they come, for tests that wait on them.
private final class RoomRecorder: Sendable {
    let events = Locked<[RoomEvent]>([])
    private let task: Task<Void, Never>

    init(_ client: RoomClient) {
        let stream = client.events()
        let events = events
        task = Task { for await event in stream { events.withLock { $0.append(event) } } }
    }

    deinit { task.cancel() }

    /// The first recorded event `match` accepts, waiting up to `timeout`.
    func first(timeout: Duration = .seconds(10), _ match: @escaping @Sendable (RoomEvent) -> Bool) async -> RoomEvent? {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline, !Task.isCancelled {
            if let event = events.withLock({ $0.first(where: match) }) { return event }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return nil
    }
}

/// Room clients against Debian's real `syncplay-server`, started by the test on a free port.
@Suite("Rooms: clients on the real syncplay-server", .timeLimit(.minutes(4)), .tags(.waitPass))
struct RoomClientTests {
    private static func configuration(_ server: SyncplayServer, room: String, name: String, password: String? = "secret") -> RoomClient.Configuration {
        var configuration = RoomClient.Configuration(host: "127.0.0.1", port: server.port, room: room, name: name, password: password)
        configuration.security = .plain  // the test server offers no TLS (RoomTLSTests covers TLS)
        return configuration
    }

    @Test("two members: start, pause and seek from one reach the other with the position; leaving is seen")
    func changesPropagate() async throws {
        let server = try await SyncplayServer.start(password: "secret")
        defer { server.stop() }
        let room = "demo-\(UInt32.random(in: 0...UInt32.max))"
        let left = try RoomClient(Self.configuration(server, room: room, name: "left"))
        let right = try RoomClient(Self.configuration(server, room: room, name: "right"))
        let heard = RoomRecorder(right)
        let leftHeard = RoomRecorder(left)
        // Each member's local player follows the room at once (what a follower does); a member
        // that reported otherwise would be read as changing the room itself.
        left.reportLocalState { [weak left] in left?.roomState.map { (position: $0.position(at: .now), paused: $0.paused) } }
        right.reportLocalState { [weak right] in right?.roomState.map { (position: $0.position(at: .now), paused: $0.paused) } }
        try await left.join()
        try await right.join()
        #expect(left.joinedName == "left" && right.joinedName == "right")
        // Left hears right join; right learns of left from the list it asks for.
        #expect(await leftHeard.first { $0 == .memberJoined("right") } != nil)
        let deadline = ContinuousClock.now + .seconds(10)
        while !right.members.contains("left"), ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
        #expect(right.members == ["left"])
        try await left.announceFile(name: "clip-a.mp4", duration: 20, size: 1000)
        try await right.announceFile(name: "clip-a.mp4", duration: 20, size: 1000)
        #expect(await heard.first { $0 == .joined(room: room, name: "right") } != nil)

        // A playing room's position moves on while messages travel, and the server adds its
        // estimate of each member's delay (seconds on a loaded machine): a start is checked for
        // its origin and its sender; positions are checked exactly where the room is paused.
        try await left.play(at: 1)
        let resumed = await heard.first { if case .resumed(_, "left") = $0 { true } else { false } }
        guard case .resumed(let startedAt, _)? = resumed else { Issue.record("no start reached right: \(heard.events.withLock { $0 })"); return }
        #expect(startedAt > 0.9, "started at \(startedAt)")

        try await left.pause(at: 4)
        let paused = await heard.first { if case .paused(_, "left") = $0 { true } else { false } }
        guard case .paused(let pausedAt, _)? = paused else { Issue.record("no pause reached right: \(heard.events.withLock { $0 })"); return }
        #expect(abs(pausedAt - 4) < 0.05, "paused at \(pausedAt)")

        try await left.seek(to: 7.5, paused: true)
        let seeked = await heard.first { if case .seeked(_, "left") = $0 { true } else { false } }
        guard case .seeked(let landed, _)? = seeked else { Issue.record("no seek reached right: \(heard.events.withLock { $0 })"); return }
        #expect(abs(landed - 7.5) < 0.05, "seeked to \(landed)")
        #expect(abs((right.roomState?.position ?? -1) - 7.5) < 0.05)
        #expect(right.roomState?.paused == true)
        #expect(right.roundTrip != nil)

        await left.leave()
        #expect(await heard.first { $0 == .memberLeft("left") } != nil)
        await right.leave()
    }

    @Test("a wrong or missing password is a typed error naming the server's reason; bad arguments are refused by name")
    func refusals() async throws {
        let server = try await SyncplayServer.start(password: "secret")
        defer { server.stop() }
        for password in ["guess", nil] as [String?] {
            let intruder = try RoomClient(Self.configuration(server, room: "demo", name: "intruder", password: password))
            do {
                try await intruder.join()
                Issue.record("joined with password \(password ?? "none")")
            } catch {
                guard case .passwordRejected(_, let message) = error else { Issue.record("wrong error: \(error)"); continue }
                #expect(message == (password == nil ? "Password required" : "Wrong password supplied"))
            }
        }
        #expect(throws: RoomError.invalidArgument(name: "room", value: " ", reason: "is empty")) {
            try RoomClient(RoomClient.Configuration(room: " ", name: "a"))
        }
        #expect(throws: RoomError.invalidArgument(name: "port", value: "70000", reason: "is not a TCP port (1...65535)")) {
            try RoomClient(RoomClient.Configuration(port: 70000, room: "r", name: "a"))
        }
    }
}
