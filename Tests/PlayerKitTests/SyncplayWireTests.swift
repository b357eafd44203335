import Foundation
import Testing
@testable import PlayerKitRooms

/// Syncplay's wire format, read and written as `syncplay-server` 1.6.9 does (pure logic: the
/// lines are those the real server sends, copied from its protocol; the server itself is tested
/// in RoomTests).
@Suite("Syncplay wire format", .timeLimit(.minutes(4)))
struct SyncplayWireTests {
    @Test("the server's greeting, state, user and list messages are read")
    func readsServerMessages() throws {
        let hello = try SyncplayWire.decode(#"{"Hello": {"username": "left", "room": {"name": "demo"}, "version": "1.2.255", "realversion": "1.6.9", "motd": "", "features": {"chat": true}}}"#)
        #expect(hello == [.hello(username: "left", room: "demo", version: "1.6.9", motd: "")])

        let state = try SyncplayWire.decode(#"{"State": {"ping": {"latencyCalculation": 1700000000.25, "serverRtt": 0.002, "clientLatencyCalculation": 1700000000.1}, "playstate": {"position": 12.5, "paused": false, "doSeek": false, "setBy": "right"}}}"#)
        guard case .state(let decoded)? = state.first else { Issue.record("not a state: \(state)"); return }
        #expect(decoded.playState == .init(position: 12.5, paused: false, doSeek: false, setBy: "right"))
        #expect(decoded.ping == .init(latencyCalculation: 1_700_000_000.25, serverRtt: 0.002, clientLatencyCalculation: 1_700_000_000.1))

        let joined = try SyncplayWire.decode(#"{"Set": {"user": {"right": {"room": {"name": "demo"}, "event": {"joined": true, "version": "1.6.9", "features": {}}}}}}"#)
        #expect(joined == [.userJoined(name: "right", room: "demo")])
        let left = try SyncplayWire.decode(#"{"Set": {"user": {"right": {"room": {"name": "demo"}, "event": {"left": true}}}}}"#)
        #expect(left == [.userLeft(name: "right", room: "demo")])
        let file = try SyncplayWire.decode(#"{"Set": {"user": {"right": {"room": {"name": "demo"}, "file": {"name": "clip-a.mp4", "duration": 20.0, "size": 123}}}}}"#)
        #expect(file == [.userFile(name: "right", room: "demo", file: .init(name: "clip-a.mp4", duration: 20, size: 123))])
        let list = try SyncplayWire.decode(#"{"List": {"demo": {"right": {"position": 0, "file": {}, "controller": false, "isReady": null, "features": {}}, "left": {"position": 0, "file": {}}}}}"#)
        #expect(list == [.list(["demo": ["left", "right"]])])
        #expect(try SyncplayWire.decode(#"{"Error": {"message": "Wrong password supplied"}}"#) == [.error(message: "Wrong password supplied")])
        #expect(try SyncplayWire.decode(#"{"TLS": {"startTLS": "false"}}"#) == [.tls(accepted: false)])
        // Commands PlayerKit does not use, and settings it does not read, are skipped.
        #expect(try SyncplayWire.decode(#"{"Set": {"playlistIndex": {"user": null, "index": null}}}"#).isEmpty)
        #expect(try SyncplayWire.decode(#"{"Future": {"x": 1}}"#).isEmpty)
    }

    @Test("a broken or hostile line is a typed error that names the problem", arguments: [
        ("not json at all", "not JSON"),
        ("[1, 2, 3]", "not a JSON object"),
        (#"{"Hello": "x"}"#, "Hello is not an object"),
        (#"{"Hello": {"username": "a", "version": "1"}}"#, "Hello.room is missing"),
        (#"{"State": {"playstate": {"position": "12", "paused": false}}}"#, "State.playstate.position is not a finite number"),
        (#"{"State": {"playstate": {"position": -5, "paused": false}}}"#, "is not a position"),
        (#"{"State": {"playstate": {"position": 1, "paused": "no"}}}"#, "State.playstate.paused is not true or false"),
        (#"{"State": {"ping": {"latencyCalculation": "soon"}}}"#, "State.ping.latencyCalculation is not a finite number"),
        (#"{"Error": {}}"#, "Error.message is missing"),
    ])
    func malformed(line: String, problem: String) {
        do {
            _ = try SyncplayWire.decode(line)
            Issue.record("accepted: \(line)")
        } catch {
            guard case .malformedMessage(let offending, let reason) = error else { Issue.record("wrong error \(error)"); return }
            #expect(offending == line)
            #expect(reason.contains(problem), "\(reason)")
            #expect(error.description.contains(problem))
        }
    }

    @Test("what the client sends is what the server reads")
    func writesClientMessages() throws {
        let hello = SyncplayWire.hello(username: "left", room: "demo", passwordHash: SyncplayWire.passwordHash("secret"))
        let object = try #require(try JSONSerialization.jsonObject(with: Data(hello.utf8)) as? [String: Any])
        let fields = try #require(object["Hello"] as? [String: Any])
        #expect(fields["username"] as? String == "left")
        #expect((fields["room"] as? [String: Any])?["name"] as? String == "demo")
        #expect(fields["version"] as? String == "1.2.255")
        #expect(fields["password"] as? String == "5ebe2294ecd0e0f08eab7690d2a6ee69")
        #expect(!hello.contains("\n"))

        let state = SyncplayWire.state(playState: .init(position: 3.25, paused: true, doSeek: true), latencyCalculation: 10.5,
                                       clientTimestamp: 11, clientRtt: 0.004, ignoringServer: nil, ignoringClient: 1)
        #expect(state == #"{"State":{"ignoringOnTheFly":{"client":1},"ping":{"clientLatencyCalculation":11,"clientRtt":0.004,"latencyCalculation":10.5},"playstate":{"doSeek":true,"paused":true,"position":3.25}}}"#)
    }

    @Test("the password travels as Syncplay's MD5 hex digest")
    func passwordHash() {
        #expect(SyncplayWire.passwordHash("secret") == "5ebe2294ecd0e0f08eab7690d2a6ee69")  // printf secret | md5sum
        #expect(SyncplayWire.passwordHash("") == "d41d8cd98f00b204e9800998ecf8427e")
        #expect(SyncplayWire.passwordHash("pässwörd ✓") == "424f0acb4def3f5d2db59084752ce66d")  // its UTF-8 bytes
    }

    @Test("MD5 gives RFC 1321's test suite digests, and md5sum's across the padding boundaries")
    func md5TestSuite() {
        // RFC 1321, appendix A.5.
        let suite = [
            ("", "d41d8cd98f00b204e9800998ecf8427e"),
            ("a", "0cc175b9c0f1b6a831c399e269772661"),
            ("abc", "900150983cd24fb0d6963f7d28e17f72"),
            ("message digest", "f96b697d7cb7938d525a2f31aaf161d0"),
            ("abcdefghijklmnopqrstuvwxyz", "c3fcd3d76192e4007dfb496cca67e13b"),
            ("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789", "d174ab98d277d9f5a5611c2c9f419d9f"),
            (String(repeating: "1234567890", count: 8), "57edf4a22be3c955ac49da2e2107b67a"),
        ]
        for (message, digest) in suite { #expect(MD5.hexDigest(Array(message.utf8)) == digest, "\(message)") }
        // Lengths around the 56- and 64-byte padding boundaries: N times "x" (md5sum's digests).
        let boundaries = [
            55: "04364420e25c512fd958a70738aa8f72", 56: "668a72d5ba17f08e62dabcafad6db14b",
            57: "693037871c4a9d3d8685018905cb530a", 63: "7dc2ca208106a2f703567bdff99d8981",
            64: "c1bb4f81d892b2d57947682aeb252456", 65: "1bc932052302d074bdec39795fe00cf6",
            119: "ab347a5f68c8a443cfcddc633f12c24f", 120: "fb98667f98096de92620b64f46e1c5b5",
            128: "d69cb61a6ee87200676eb0d4b90edbcb",
        ]
        for (length, digest) in boundaries {
            #expect(MD5.hexDigest([UInt8](repeating: UInt8(ascii: "x"), count: length)) == digest, "\(length) bytes")
        }
    }

    @Test("latency: the shortest recent round trip, halved; absurd echoes ignored")
    func latency() {
        var latency = RoomLatency()
        #expect(latency.roundTrip == nil && latency.forwardDelay == 0)
        let accepted1 = latency.noteEcho(sentAt: 100, now: 100.030)
        #expect(accepted1)
        let accepted2 = latency.noteEcho(sentAt: 101, now: 101.010)
        #expect(accepted2)
        let accepted3 = latency.noteEcho(sentAt: 102, now: 102.050)
        #expect(accepted3)  // queued: longer, does not move the estimate
        #expect(abs(latency.forwardDelay - 0.005) < 1e-9)
        #expect(abs(latency.lastRoundTrip - 0.050) < 1e-9)
        #expect(abs(latency.jitter - 0.040) < 1e-9)
        let accepted4 = latency.noteEcho(sentAt: 200, now: 199)
        #expect(!accepted4)      // from the future
        let accepted5 = latency.noteEcho(sentAt: .nan, now: 199)
        #expect(!accepted5)
        #expect(latency.samples.count == 3)
        for second in 0..<(RoomLatency.window + 4) { latency.noteEcho(sentAt: Double(second), now: Double(second) + 0.020) }
        #expect(latency.samples.count == RoomLatency.window)
        #expect(abs(latency.forwardDelay - 0.010) < 1e-9)     // the 10 ms sample has left the window
    }
}

/// The wire format and connection against Debian's real `syncplay-server` (the room client and
/// its players are tested in RoomTests).
@Suite("Syncplay server: greeting and states", .timeLimit(.minutes(4)), .tags(.timingPass))
struct SyncplayServerTests {
    /// The next messages from `connection` until `match` returns a value (each line within 10 s,
    /// or the connection's `timedOut` is thrown).
    private func next<Value: Sendable>(_ connection: RoomConnection, _ match: (SyncplayWire.ServerMessage) -> Value?) async throws -> Value? {
        connection.expectLine(.receiving, limit: .seconds(10), renewedByEachLine: true)
        var iterator = connection.lines.makeAsyncIterator()
        while let line = await iterator.next() {
            for message in try SyncplayWire.decode(try line.get()) {
                if let value = match(message) { return value }
            }
        }
        return nil
    }

    @Test("the real server answers the greeting with the room and sends states that decode; a wrong password is refused by name")
    func greetingAndStates() async throws {
        let server = try await SyncplayServer.start(password: "secret")
        defer { server.stop() }
        let connection = try await RoomConnection.open(host: "127.0.0.1", port: server.port, timeout: .seconds(5))
        defer { connection.close() }
        try await connection.send(SyncplayWire.hello(username: "left", room: "demo", passwordHash: SyncplayWire.passwordHash("secret")),
                                  operation: .joining, limit: .seconds(5))
        let hello = try await next(connection) { message -> (String, String)? in
            if case .hello(let name, let room, _, _) = message { return (name, room) } else { return nil }
        }
        #expect(hello?.0 == "left" && hello?.1 == "demo")
        // The server asks for our state about once a second, with its ping stamp.
        let state = try await next(connection) { message -> SyncplayWire.ServerState? in
            if case .state(let state) = message { return state } else { return nil }
        }
        #expect(state?.ping.latencyCalculation != nil)
        #expect(state?.playState?.paused == true)

        let refused = try await RoomConnection.open(host: "127.0.0.1", port: server.port, timeout: .seconds(5))
        defer { refused.close() }
        try await refused.send(SyncplayWire.hello(username: "intruder", room: "demo", passwordHash: SyncplayWire.passwordHash("guess")),
                               operation: .joining, limit: .seconds(5))
        let error = try await next(refused) { message -> String? in
            if case .error(let text) = message { return text } else { return nil }
        }
        #expect(error == "Wrong password supplied")
    }
}
