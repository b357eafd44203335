import Foundation
import Glibc
import Logging
import Testing
import PlayerKit
@testable import PlayerKitRooms  // for handing the follower an event late
import PlayerKitSupport

/// A member of a room for the tests: a player paused on a looping clip, its client and follower.
private struct Member {
    let player: Player
    let events: EventRecorder
    let client: RoomClient
    let follower: RoomFollower

    static func join(_ server: SyncplayServer, room: String, name: String, port: Int? = nil, reconnectDelay: Duration? = .milliseconds(300)) async throws -> Member {
        let (player, events) = try await Fixtures.player()
        try await player.preload(.joined([MediaSource(Fixtures.clipA)], repeated: 100))
        var configuration = RoomClient.Configuration(host: "127.0.0.1", port: port ?? server.port, room: room, name: name)
        configuration.security = .plain  // the test server offers no TLS
        configuration.reconnectDelay = reconnectDelay
        // A loaded machine's Python server answers late.
        configuration.tlsTimeout = .seconds(20)
        configuration.joinTimeout = .seconds(20)
        let client = try RoomClient(configuration, logger: roomLogger(name))
        let follower = try RoomFollower(room: client, players: [player], logger: roomLogger(name))
        follower.start()
        try await client.join()
        try await client.announceFile(name: "clip-a.mp4", duration: player.snapshot.duration ?? 400, size: 0)
        return Member(player: player, events: events, client: client, follower: follower)
    }

    func leave() async {
        follower.invalidate()
        await client.leave()
        await player.shutdown()
    }
}

/// The wire and the follower's decisions on stderr when `PLAYERKIT_ROOM_TRACE` is set (for a
/// failure that needs the conversation with the server).
private func roomLogger(_ name: String) -> Logger {
    var logger = Logger(label: "PlayerKit.rooms.\(name)")
    if ProcessInfo.processInfo.environment["PLAYERKIT_ROOM_TRACE"] != nil {
        logger = Logger(label: "PlayerKit.rooms.\(name)", factory: { StreamLogHandler.standardError(label: $0) })
        logger.logLevel = .trace
    }
    return logger
}

/// The frame of the shipped clips (30 fps) that mpv shows when paused at `position`. An exact
/// seek shows the first frame whose timestamp is at least the target less 5 ms, and `time-pos`
/// then reports either the target or that frame's timestamp (both are seen, run to run): both
/// give the same frame here.
private func frameShown(at position: Double?) -> Int {
    guard let position else { return -1 }
    return Int(((position - 0.005) * 30 - 1e-6).rounded(.up))
}

private func uniqueRoom() -> String { "room-\(UInt32.random(in: 0...UInt32.max))" }

/// Followers on Debian's real `syncplay-server`: players in one test process, each through its
/// own connection, as separate processes would be. (Drift bounds between processes are
/// TimingTests', run alone.) In make test's waits lane: they wait on the server far more than
/// they compute, and what they assert comes eventually, within generous bounds.
@Suite("Rooms: players following a room", .timeLimit(.minutes(4)), .tags(.waitPass))
struct RoomFollowerTests {
    @Test("a start, a pause and a seek from either member reach the other's player; paused, both show the same frame")
    func changesBothWays() async throws {
        let server = try await SyncplayServer.start()
        defer { server.stop() }
        let room = uniqueRoom()
        let left = try await Member.join(server, room: room, name: "left")
        let right = try await Member.join(server, room: room, name: "right")
        defer { Task { await left.leave(); await right.leave() } }

        try await left.follower.play()
        #expect(await eventually { right.player.state == .playing }, "right did not start: \(right.player.state)")
        #expect(await eventually { (right.player.position ?? 0) > 1 })

        // Right pauses: left lands on right's very position, paused.
        try await right.follower.pause()
        let pausedAt = try #require(right.follower.clock?.position)
        #expect(await eventually { left.player.state == .paused && frameShown(at: left.player.position) == frameShown(at: pausedAt) },
                "left at \(left.player.position ?? -1) (\(left.player.state)), right paused at \(pausedAt)")
        #expect(await eventually { frameShown(at: right.player.position) == frameShown(at: pausedAt) },
                "right at \(right.player.position ?? -1) (\(right.player.state)), paused at \(pausedAt), room \(String(describing: right.client.roomState))")

        // Left seeks while paused: right lands there.
        try await left.follower.seek(to: 7.5)
        #expect(await eventually { right.player.state == .paused && abs((right.player.position ?? -1) - 7.5) < 0.002 },
                "right at \(right.player.position ?? -1)")

        // Right starts: both play on from 7.5, together.
        try await right.follower.play()
        #expect(await eventually { left.player.state == .playing && (left.player.position ?? 0) > 8 })
        #expect(await eventually { abs((left.player.position ?? 0) - (right.player.position ?? 100)) < 0.1 })
        // Each player heard the room's changes on its own event path, by its ID.
        let roomEvents = left.events.records.filter { $0.event.kind == .room }.map { "\($0.event)" }
        #expect(roomEvents.contains { $0.contains("paused") && $0.contains("right") }, "\(roomEvents)")
        #expect(await eventually { !left.follower.skews.isEmpty })
    }

    @Test("the server restarts mid-play: the players play on, both reconnect, and the new room resumes where they are")
    func serverRestart() async throws {
        let server = try await SyncplayServer.start()
        defer { server.stop() }
        let room = uniqueRoom()
        let left = try await Member.join(server, room: room, name: "left")
        let right = try await Member.join(server, room: room, name: "right")
        defer { Task { await left.leave(); await right.leave() } }
        try await left.follower.play()
        #expect(await eventually { (right.player.position ?? 0) > 2 })

        let mark = left.events.mark
        try await server.restart()
        // Both come back (the restarted server knows nothing of the room)...
        for member in [left, right] {
            #expect(await member.events.waitFor(timeout: .seconds(15), after: mark) { "\($0.event)".contains("joined(room") } != nil,
                    "\(member.player.id) did not rejoin")
        }
        // ...the players never stopped...
        #expect(left.player.state == .playing && right.player.state == .playing)
        #expect(!left.events.records.filter { $0.sequenceNumber > mark }.contains { if case .stateChanged(_, .paused) = $0.event { true } else { false } })
        // ...and the new room plays at their position, not at 0.
        let clock = try #require(left.follower.clock)
        #expect(await eventually(timeout: .seconds(10)) {
            guard let state = left.client.roomState, !state.paused else { return false }
            return abs(state.position(at: .now) - clock.position(at: .now)) < 0.5
        }, "room: \(String(describing: left.client.roomState)), clock at \(clock.position(at: .now))")
        #expect(await eventually { abs((left.player.position ?? 0) - (right.player.position ?? 100)) < 0.1 })
    }

    @Test("a member that joins mid-play catches up to the room's position")
    func lateJoiner() async throws {
        let server = try await SyncplayServer.start()
        defer { server.stop() }
        let room = uniqueRoom()
        let left = try await Member.join(server, room: room, name: "left")
        let right = try await Member.join(server, room: room, name: "right")
        defer { Task { await left.leave(); await right.leave() } }
        try await left.follower.play()
        #expect(await eventually { (right.player.position ?? 0) > 3 })

        let late = try await Member.join(server, room: room, name: "late")
        defer { Task { await late.leave() } }
        #expect(await eventually { late.player.state == .playing })
        #expect(await eventually(timeout: .seconds(10)) { abs((late.player.position ?? 0) - (left.player.position ?? 100)) < 0.1 },
                "late at \(late.player.position ?? -1), left at \(left.player.position ?? -1)")
    }

    @Test("one follower with two local players keeps both on the room, in lockstep with each other and the other member")
    func twoLocalPlayers() async throws {
        let server = try await SyncplayServer.start()
        defer { server.stop() }
        let room = uniqueRoom()
        let remote = try await Member.join(server, room: room, name: "remote")
        defer { Task { await remote.leave() } }
        let (first, firstEvents) = try await Fixtures.player()
        let (second, _) = try await Fixtures.player()
        defer { Task { await first.shutdown(); await second.shutdown() } }
        for player in [first, second] { try await player.preload(.joined([MediaSource(Fixtures.clipA)], repeated: 100)) }
        var configuration = RoomClient.Configuration(host: "127.0.0.1", port: server.port, room: room, name: "pair")
        configuration.security = .plain
        configuration.tlsTimeout = .seconds(20)
        configuration.joinTimeout = .seconds(20)
        let client = try RoomClient(configuration, logger: roomLogger("pair"))
        let follower = try RoomFollower(room: client, players: [first, second], logger: roomLogger("pair"))
        follower.start()
        try await client.join()
        defer { Task { follower.invalidate(); await client.leave() } }

        try await remote.follower.play()
        #expect(await eventually { first.state == .playing && second.state == .playing })
        #expect(await eventually { (first.position ?? 0) > 2 })
        #expect(await eventually { follower.skews.count == 2 })
        #expect(await eventually {
            abs((first.position ?? 0) - (second.position ?? 100)) < 0.05 && abs((first.position ?? 0) - (remote.player.position ?? 100)) < 0.1
        }, "first \(first.position ?? -1), second \(second.position ?? -1), remote \(remote.player.position ?? -1)")
        // Each local player reports its own drift on its own event path.
        #expect(await firstEvents.waitFor { if case .drift? = $0.event.feature(SyncEvent.self) { true } else { false } } != nil)

        // The pair pauses the room: all three stop on one frame.
        try await follower.pause()
        let pausedAt = try #require(follower.clock?.position)
        #expect(await eventually {
            [first, second, remote.player].allSatisfy { $0.state == .paused && frameShown(at: $0.position) == frameShown(at: pausedAt) }
        }, "\([first, second, remote.player].map { "\($0.state) \($0.position ?? -1)" }), paused at \(pausedAt)")
    }

    @Test("a room state received before the app's own start, handed over after it, does not undo the start")
    func lateStateAfterLocalChange() async throws {
        let server = try await SyncplayServer.start()
        defer { server.stop() }
        let solo = try await Member.join(server, room: uniqueRoom(), name: "solo")
        defer { Task { await solo.leave() } }
        #expect(await eventually { solo.client.roomState != nil })
        let before = try #require(solo.client.roomState)
        #expect(before.paused)
        try await solo.follower.play()
        // The paused state was on its way to the follower while the app started the room (a
        // loaded machine delays the follower's task): it arrives now.
        solo.follower.handle(.state(before))
        #expect(solo.follower.clock?.paused == false, "the late state paused the clock")
        #expect(await eventually { (solo.player.position ?? 0) > 1.2 })
        // The room heard no pause from us either (the client answers the server's states with
        // the follower's clock).
        #expect(solo.client.roomState?.paused == false)
        #expect(!solo.events.records.contains { if case .stateChanged(_, .paused) = $0.event { $0.time > before.time } else { false } },
                "the player paused after the start: \(solo.events.records.filter { $0.event.kind != .positionChanged && $0.time > before.time }.map { "\($0.time) \($0.event)" })")
    }

    @Test("an answer to the server never changes the room: a follower whose clock lags the room does not restart it by answering")
    func answerDoesNotChangeRoom() async throws {
        // Found by make test (1 run in 6): after a pause, all three members played on. A periodic
        // state sent before the pause reached the pausing member between its clock's pause and
        // its message; its follower adopted it (playing), and the client answered the server's
        // next state with that clock. The server takes any answer whose pause state differs from
        // the room's for a change, and restarted the room.
        let server = try await SyncplayServer.start()
        defer { server.stop() }
        let room = uniqueRoom()
        let solo = try await Member.join(server, room: room, name: "solo")
        defer { Task { await solo.leave() } }
        let other = try await Member.join(server, room: room, name: "other")
        defer { Task { await other.leave() } }
        #expect(await eventually { solo.follower.clock != nil && other.client.roomState != nil })
        var stale = try #require(solo.client.roomState)
        #expect(stale.paused)
        // A state that says the room plays, adopted by the follower after the room paused.
        stale.paused = false
        stale.time = .now
        let handedAt = stale.time
        solo.follower.handle(.state(stale))
        #expect(solo.follower.clock?.paused == false)
        // The server's next periodic states (one a second): the room stays paused, and the
        // follower comes back to it.
        #expect(await eventually(timeout: .seconds(10)) {
            (other.client.roomState?.time).map { $0 > handedAt + .milliseconds(2200) } ?? false
        })
        #expect(other.client.roomState?.paused == true, "the room was restarted: \(String(describing: other.client.roomState))")
        #expect(await eventually(timeout: .seconds(3)) { solo.follower.clock?.paused == true })
        #expect(other.player.state != .playing, "\(other.player.state)")
        #expect(!other.events.records.contains { if case .stateChanged(_, .playing) = $0.event { $0.time > handedAt } else { false } },
                "the other member's player started")
    }

    @Test("garbage from the server: a typed error names it, the player plays on locally; bad arguments are refused by name")
    func hostileServer() async throws {
        let fake = try FakeSyncplayServer()
        defer { fake.stop() }
        let (player, events) = try await Fixtures.player()
        defer { Task { await player.shutdown() } }
        // Long enough to play on through the whole test (a single 4 s clip could end first on a
        // loaded machine), as in the other room tests.
        try await player.preload(.joined([MediaSource(Fixtures.clipA)], repeated: 100))
        var configuration = RoomClient.Configuration(host: "127.0.0.1", port: fake.port, room: "demo", name: "solo")
        configuration.reconnectDelay = nil
        configuration.security = .plain
        let client = try RoomClient(configuration)
        let follower = try RoomFollower(room: client, players: [player])
        follower.start()
        try await client.join()
        try await follower.play()
        #expect(await eventually { (player.position ?? 0) > 0.3 })
        fake.send(#"{"State": {"playstate": {"position": "soon", "paused": false}}}"#)
        let ending = await events.waitFor(timeout: .seconds(10)) { "\($0.event)".contains("disconnected") }
        // The follower told the player, on its own event path, with the typed error.
        let error: RoomError? = if case .feature(let feature) = ending?.event, let event = feature as? RoomPlayerEvent,
            case .room(.disconnected(let error)) = event { error } else { nil }
        if case .malformedMessage(let line, let reason) = error {
            #expect(line.contains("soon") && reason.contains("State.playstate.position"), "\(reason)")
        } else {
            Issue.record("not a malformed-message ending: \(String(describing: ending?.event))")
        }
        let position = player.position ?? 0
        #expect(await eventually { (player.position ?? 0) > position + 0.3 }, "the player stopped with the room")
        #expect(player.state == .playing)
        await client.leave()
        await #expect(throws: RoomError.closed) { try await client.join() }

        #expect(throws: RoomError.invalidArgument(name: "players", value: "\(player.id.rawValue), \(player.id.rawValue)", reason: "lists a player twice")) {
            try RoomFollower(room: client, players: [player, player])
        }
        await #expect(throws: RoomError.invalidArgument(name: "position", value: "nan", reason: "is not a position")) {
            try await follower.seek(to: .nan)
        }
        #expect(player.state == .playing)
    }
}

/// A Syncplay server that answers the greeting properly and then sends whatever the test says:
/// the one fake in the room tests, for hostile input the real server never sends.
private final class FakeSyncplayServer: Sendable {
    let port: Int
    private let listener: Int32
    private let client = Locked<Int32>(-1)

    init() throws {
        listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let listener = listener
        _ = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, length) } }
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listener, $0, &length) } }
        guard listen(listener, 4) == 0 else { throw SyncplayServerError.didNotStart("fake: listen") }
        port = Int(UInt16(bigEndian: address.sin_port))
        let client = client
        let thread = Thread {
            let connection = accept(listener, nil, nil)
            guard connection >= 0 else { return }
            client.withLock { $0 = connection }
            // Read the greeting, answer it as syncplay-server 1.6.9 does.
            var buffer = [UInt8](repeating: 0, count: 4096)
            var received = ""
            while !received.contains("\n") {
                let count = recv(connection, &buffer, buffer.count, 0)
                if count <= 0 { return }
                received += String(decoding: buffer[0..<count], as: UTF8.self)
            }
            let hello = #"{"Hello": {"username": "solo", "room": {"name": "demo"}, "version": "1.6.9", "realversion": "1.6.9", "motd": "", "features": {}}}"# + "\r\n"
            _ = hello.withCString { Glibc.send(connection, $0, strlen($0), Int32(MSG_NOSIGNAL)) }
            // Swallow the rest until closed.
            while recv(connection, &buffer, buffer.count, 0) > 0 {}
        }
        thread.start()
    }

    /// Sends `line` to the connected client.
    func send(_ line: String) {
        let connection = client.withLock { $0 }
        guard connection >= 0 else { return }
        _ = (line + "\r\n").withCString { Glibc.send(connection, $0, strlen($0), Int32(MSG_NOSIGNAL)) }
    }

    func stop() {
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
        let connection = client.withLock { $0 }
        if connection >= 0 { shutdown(connection, Int32(SHUT_RDWR)); close(connection) }
    }
}
