import Foundation
import Glibc
import Testing
import PlayerKitRooms
import PlayerKitSupport

/// Every wait of a room client for its server is bounded by its configuration: servers written
/// here, on loopback, that accept and never speak, send half a line, stall the TLS handshake, go
/// silent after the greeting or never complete the TCP connection. Each wait ends with
/// `RoomError.timedOut` naming the operation within its bound plus `slack`, and `leave()`
/// returns at once whatever the client is waiting for.
@Suite("Rooms: every wait for the server is bounded", .timeLimit(.minutes(4)), .tags(.waitPass))
struct RoomBoundsTests {
    /// What a loaded machine may add to a bound (a connection's thread wakes from `poll` at its deadline).
    private static let slack: Duration = .seconds(2)
    private static let bound: Duration = .seconds(1)

    private static func configuration(_ port: Int, security: RoomClient.Configuration.Security = .plain) -> RoomClient.Configuration {
        var configuration = RoomClient.Configuration(host: "127.0.0.1", port: port, room: "demo", name: "solo")
        configuration.security = security
        configuration.reconnectDelay = nil
        return configuration
    }

    /// Joins and returns the error and how long the join took; nil when the join has not ended
    /// within `bound` plus `slack` (it is left then, so the test ends).
    private static func joinError(_ client: RoomClient, bound: Duration) async -> (error: RoomError?, elapsed: Duration)? {
        let attempt = JoinAttempt(client)
        guard let result = await attempt.result(within: bound + slack) else {
            await client.leave()
            return nil
        }
        return (result.error, result.elapsed)
    }

    private static func expectTimedOut(_ outcome: (error: RoomError?, elapsed: Duration)?, _ operation: RoomError.Operation,
                                       port: Int, after bound: Duration, sourceLocation: SourceLocation = #_sourceLocation) {
        guard let outcome else {
            Issue.record("join() had not ended \(slack) after its bound of \(bound)", sourceLocation: sourceLocation)
            return
        }
        #expect(outcome.error == .timedOut(operation: operation, server: "127.0.0.1:\(port)", after: bound),
                "\(String(describing: outcome.error))", sourceLocation: sourceLocation)
        #expect(outcome.elapsed <= bound + slack, "took \(outcome.elapsed)", sourceLocation: sourceLocation)
    }

    @Test("a server that accepts and never speaks: asking for TLS, or joining in the clear, times out by name")
    func silentServer() async throws {
        let server = try ScriptedServer([.silent])
        defer { server.stop() }
        var configuration = Self.configuration(server.port, security: .tlsIfOffered)
        configuration.tlsTimeout = Self.bound
        Self.expectTimedOut(await Self.joinError(try RoomClient(configuration), bound: Self.bound), .askingForTLS,
                            port: server.port, after: Self.bound)

        configuration = Self.configuration(server.port)
        configuration.joinTimeout = Self.bound
        Self.expectTimedOut(await Self.joinError(try RoomClient(configuration), bound: Self.bound), .joining,
                            port: server.port, after: Self.bound)
    }

    @Test("a server that sends half a line and stalls: asking for TLS, joining, or once joined, times out by name")
    func halfLine() async throws {
        let server = try ScriptedServer([.halfLine])
        defer { server.stop() }
        var configuration = Self.configuration(server.port, security: .tlsIfOffered)
        configuration.tlsTimeout = Self.bound
        Self.expectTimedOut(await Self.joinError(try RoomClient(configuration), bound: Self.bound), .askingForTLS,
                            port: server.port, after: Self.bound)

        configuration = Self.configuration(server.port)
        configuration.joinTimeout = Self.bound
        Self.expectTimedOut(await Self.joinError(try RoomClient(configuration), bound: Self.bound), .joining,
                            port: server.port, after: Self.bound)

        // Joined, then half a line: a line that never ends is silence.
        let joined = try ScriptedServer([.joinThenHalfLine])
        defer { joined.stop() }
        configuration = Self.configuration(joined.port)
        configuration.idleTimeout = Self.bound
        let client = try RoomClient(configuration)
        let ending = RoomEndings(client)
        try await client.join()
        let start = ContinuousClock.now
        let error = await ending.first(within: Self.bound + Self.slack)
        #expect(error == .timedOut(operation: .receiving, server: "127.0.0.1:\(joined.port)", after: Self.bound), "\(String(describing: error))")
        #expect(start.duration(to: .now) <= Self.bound + Self.slack)
        await client.leave()
    }

    @Test("a server that agrees to TLS and never completes the handshake: the handshake times out by name")
    func stalledHandshake() async throws {
        let server = try ScriptedServer([.stallTLS])
        defer { server.stop() }
        var configuration = Self.configuration(server.port, security: .tlsRequired)
        configuration.tlsTimeout = Self.bound
        Self.expectTimedOut(await Self.joinError(try RoomClient(configuration), bound: Self.bound), .tlsHandshake,
                            port: server.port, after: Self.bound)
        // The client had started the handshake: its ClientHello reached the server.
        #expect(server.bytesAfterTLS > 0)
    }

    @Test("a server that goes silent after the greeting: the client reports the silence by name and reconnects")
    func silentAfterJoining() async throws {
        let server = try ScriptedServer([.joinThenStates(count: 2), .joinThenStates(count: 1_000)])
        defer { server.stop() }
        var configuration = Self.configuration(server.port)
        configuration.idleTimeout = .seconds(2)
        configuration.reconnectDelay = .milliseconds(100)
        let client = try RoomClient(configuration)
        let ending = RoomEndings(client)
        try await client.join()
        // Two states 0.2 s apart, then silence.
        let start = ContinuousClock.now
        let error = await ending.first(within: .seconds(2) + .milliseconds(400) + Self.slack)
        #expect(error == .timedOut(operation: .receiving, server: "127.0.0.1:\(server.port)", after: .seconds(2)), "\(String(describing: error))")
        #expect(start.duration(to: .now) <= .seconds(2) + .milliseconds(400) + Self.slack, "took \(start.duration(to: .now))")
        // It reconnects and joins again, on a server that keeps speaking.
        #expect(await ending.joins(atLeast: 2, within: .seconds(5)), "no second join; connections: \(server.connections)")
        #expect(server.connections >= 2)
        await client.leave()
    }

    @Test("a TCP connection the server never completes (its backlog is full): connecting times out by name")
    func connectTimeout() async throws {
        let listener = try FullListener()
        defer { listener.stop() }
        var configuration = Self.configuration(listener.port)
        configuration.connectTimeout = Self.bound
        Self.expectTimedOut(await Self.joinError(try RoomClient(configuration), bound: Self.bound), .connecting,
                            port: listener.port, after: Self.bound)
    }

    @Test("timeouts that are not positive are refused by name")
    func badTimeouts() throws {
        var configuration = Self.configuration(8999)
        configuration.idleTimeout = .zero
        #expect(throws: RoomError.invalidArgument(name: "idleTimeout", value: "\(Duration.zero)", reason: "is not a positive duration")) {
            try RoomClient(configuration)
        }
        configuration = Self.configuration(8999)
        configuration.reconnectDelay = .seconds(-1)
        #expect(throws: RoomError.invalidArgument(name: "reconnectDelay", value: "\(Duration.seconds(-1))", reason: "is negative")) {
            try RoomClient(configuration)
        }
    }

    // MARK: leave() in every state

    /// Every bound long (a minute), so only `leave()` can end the waits in time.
    private static func patientConfiguration(_ port: Int, security: RoomClient.Configuration.Security = .plain) -> RoomClient.Configuration {
        var configuration = configuration(port, security: security)
        configuration.connectTimeout = .seconds(60)
        configuration.tlsTimeout = .seconds(60)
        configuration.joinTimeout = .seconds(60)
        configuration.idleTimeout = .seconds(60)
        return configuration
    }

    /// Leaves `client` while `attempt` (if any) waits: `leave()` returns within `slack`, and the
    /// pending `join()` ends with `closed` within `slack` too.
    private static func expectPromptLeave(_ client: RoomClient, joining attempt: JoinAttempt?, _ state: String,
                                          sourceLocation: SourceLocation = #_sourceLocation) async {
        let start = ContinuousClock.now
        await client.leave()
        let leaving = start.duration(to: .now)
        #expect(leaving <= slack, "leave() while \(state) took \(leaving)", sourceLocation: sourceLocation)
        guard let attempt else { return }
        let result = await attempt.result(within: slack)
        #expect(result != nil, "join() had not ended \(slack) after leave() while \(state)", sourceLocation: sourceLocation)
        #expect(result?.error == .closed, "join() while \(state): \(String(describing: result?.error))", sourceLocation: sourceLocation)
    }

    @Test("leave() returns at once while connecting, joining, in the TLS handshake, joined, reconnecting and with the server silent")
    func promptLeave() async throws {
        // Connecting: the server's backlog is full.
        let listener = try FullListener()
        defer { listener.stop() }
        var client = try RoomClient(Self.patientConfiguration(listener.port))
        var attempt = JoinAttempt(client)
        try await Task.sleep(for: .milliseconds(300))
        #expect(attempt.isPending)
        await Self.expectPromptLeave(client, joining: attempt, "connecting")

        // Joining: the server took the greeting and says nothing.
        let silent = try ScriptedServer([.silent])
        defer { silent.stop() }
        client = try RoomClient(Self.patientConfiguration(silent.port))
        attempt = JoinAttempt(client)
        #expect(await silent.waitForLine(containing: "Hello"))
        await Self.expectPromptLeave(client, joining: attempt, "joining")

        // Asking for TLS: the server took the request and says nothing.
        client = try RoomClient(Self.patientConfiguration(silent.port, security: .tlsIfOffered))
        attempt = JoinAttempt(client)
        #expect(await silent.waitForLine(containing: "startTLS"))
        await Self.expectPromptLeave(client, joining: attempt, "asking for TLS")

        // The TLS handshake: the server agreed and took the ClientHello.
        let stalling = try ScriptedServer([.stallTLS])
        defer { stalling.stop() }
        client = try RoomClient(Self.patientConfiguration(stalling.port, security: .tlsRequired))
        attempt = JoinAttempt(client)
        #expect(await eventually { stalling.bytesAfterTLS > 0 })
        await Self.expectPromptLeave(client, joining: attempt, "in the TLS handshake")

        // Joined, the server speaking.
        let speaking = try ScriptedServer([.joinThenStates(count: 1_000)])
        defer { speaking.stop() }
        client = try RoomClient(Self.patientConfiguration(speaking.port))
        try await client.join()
        try await Task.sleep(for: .milliseconds(300))
        await Self.expectPromptLeave(client, joining: nil, "joined")

        // Joined, the server silent.
        let mute = try ScriptedServer([.joinThenStates(count: 0)])
        defer { mute.stop() }
        client = try RoomClient(Self.patientConfiguration(mute.port))
        try await client.join()
        try await Task.sleep(for: .milliseconds(500))
        await Self.expectPromptLeave(client, joining: nil, "joined to a silent server")

        // Reconnecting: the server closed the connection and takes the next greeting silently.
        let closing = try ScriptedServer([.joinThenClose, .silent])
        defer { closing.stop() }
        var configuration = Self.patientConfiguration(closing.port)
        configuration.reconnectDelay = .milliseconds(100)
        client = try RoomClient(configuration)
        try await client.join()
        #expect(await eventually { closing.connections >= 2 && closing.lines.filter { $0.contains("Hello") }.count >= 2 })
        await Self.expectPromptLeave(client, joining: nil, "reconnecting")

        // Waiting out the reconnection delay.
        let again = try ScriptedServer([.joinThenClose])
        defer { again.stop() }
        configuration = Self.patientConfiguration(again.port)
        configuration.reconnectDelay = .seconds(60)
        client = try RoomClient(configuration)
        let ending = RoomEndings(client)
        try await client.join()
        _ = await ending.first(within: .seconds(5))
        #expect(ending.ended)
        await Self.expectPromptLeave(client, joining: nil, "waiting to reconnect")
    }
}

// MARK: - Helpers

/// A `join()` on a task of its own, its outcome and duration read with a bound.
private final class JoinAttempt: Sendable {
    struct Outcome: Sendable {
        var error: RoomError?
        var elapsed: Duration
    }

    private let outcome = Locked<Outcome?>(nil)

    init(_ client: RoomClient) {
        let outcome = outcome
        Task {
            let start = ContinuousClock.now
            var failure: RoomError?
            do throws(RoomError) { try await client.join() } catch { failure = error }
            let result = Outcome(error: failure, elapsed: start.duration(to: .now))
            outcome.withLock { $0 = result }
        }
    }

    var isPending: Bool { outcome.withLock { $0 == nil } }

    /// The outcome, waiting up to `timeout` for it; nil when the join has not ended by then.
    func result(within timeout: Duration) async -> Outcome? {
        _ = await eventually(timeout: timeout) { [outcome] in outcome.withLock { $0 != nil } }
        return outcome.withLock { $0 }
    }
}

/// A room client's disconnections and joins, as they come.
private final class RoomEndings: Sendable {
    private let endings = Locked<[RoomError?]>([])
    private let joined = Locked(0)
    private let task: Task<Void, Never>

    init(_ client: RoomClient) {
        let stream = client.events()
        let endings = endings, joined = joined
        task = Task {
            for await event in stream {
                switch event {
                case .disconnected(let error): endings.withLock { $0.append(error) }
                case .joined: joined.withLock { $0 += 1 }
                default: break
                }
            }
        }
    }

    deinit { task.cancel() }

    var ended: Bool { endings.withLock { !$0.isEmpty } }

    /// The first disconnection's error, waiting up to `timeout`; nil when none came (or it had none).
    func first(within timeout: Duration) async -> RoomError? {
        _ = await eventually(timeout: timeout) { [endings] in endings.withLock { !$0.isEmpty } }
        return endings.withLock { $0.first ?? nil }
    }

    /// Whether the client joined `count` times within `timeout`.
    func joins(atLeast count: Int, within timeout: Duration) async -> Bool {
        await eventually(timeout: timeout) { [joined] in joined.withLock { $0 >= count } }
    }
}

/// A loopback server whose backlog is full: a client's TCP connection is never completed (Linux
/// drops the SYN). Its connections are closed on `stop()`.
private final class FullListener: Sendable {
    let port: Int
    private let sockets: Locked<[Int32]>

    init() throws {
        let listener = try openListener(backlog: 0)
        port = listener.port
        var sockets = [listener.socket]
        // Fill the accept queue (it holds one connection with a backlog of 0) until a connection
        // stays pending.
        for _ in 0..<8 {
            let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
            guard socket >= 0 else { break }
            sockets.append(socket)
            var address = loopbackAddress(port: port)
            _ = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            var descriptor = pollfd(fd: socket, events: Int16(POLLOUT), revents: 0)
            if poll(&descriptor, 1, 300) == 0 { break }
        }
        self.sockets = Locked(sockets)
    }

    func stop() {
        sockets.withLock { sockets in
            for socket in sockets { close(socket) }
            sockets = []
        }
    }
}

private func loopbackAddress(port: Int) -> sockaddr_in {
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = UInt16(port).bigEndian
    return address
}

/// A listening loopback socket on a free port.
private func openListener(backlog: Int32) throws -> (socket: Int32, port: Int) {
    let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard listener >= 0 else { throw SyncplayServerError.didNotStart("socket") }
    var address = loopbackAddress(port: 0)
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, length) } }
    let named = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listener, $0, &length) } }
    guard bound == 0, named == 0, listen(listener, backlog) == 0 else {
        close(listener)
        throw SyncplayServerError.didNotStart("listen")
    }
    return (listener, Int(UInt16(bigEndian: address.sin_port)))
}

/// A loopback TCP server that speaks as the test says: each connection gets the next behaviour
/// of the list (the last repeats). Its threads poll in steps of 50 ms and end on `stop()` or,
/// by themselves, after `lifetime`.
private final class ScriptedServer: Sendable {
    enum Behaviour: Sendable {
        /// Reads everything, writes nothing.
        case silent
        /// Answers the first line with half a line (no newline), then reads and stalls.
        case halfLine
        /// Agrees to TLS (Syncplay's STARTTLS), then never answers the handshake.
        case stallTLS
        /// Answers the greeting as syncplay-server does, sends `count` states 0.2 s apart, then
        /// goes silent.
        case joinThenStates(count: Int)
        /// Answers the greeting, then half a state line, then silence.
        case joinThenHalfLine
        /// Answers the greeting, then closes the connection 0.2 s later.
        case joinThenClose
    }

    let port: Int
    private let listener: Int32
    private let behaviours: [Behaviour]
    private let stopped = Locked(false)
    private let record = Locked<(connections: Int, lines: [String], bytesAfterTLS: Int)>((0, [], 0))

    var connections: Int { record.withLock { $0.connections } }
    var lines: [String] { record.withLock { $0.lines } }
    var bytesAfterTLS: Int { record.withLock { $0.bytesAfterTLS } }

    init(_ behaviours: [Behaviour], lifetime: Duration = .seconds(90)) throws {
        precondition(!behaviours.isEmpty)
        (listener, port) = try openListener(backlog: 8)
        self.behaviours = behaviours
        let end = ContinuousClock.now + lifetime
        Thread { [self] in acceptLoop(until: end) }.start()
    }

    func stop() {
        stopped.withLock { $0 = true }
    }

    /// Waits (up to 10 s) until a line containing `text` arrived.
    func waitForLine(containing text: String) async -> Bool {
        await eventually { [record] in record.withLock { $0.lines.contains { $0.contains(text) } } }
    }

    private func running(_ end: ContinuousClock.Instant) -> Bool {
        !stopped.withLock { $0 } && ContinuousClock.now < end
    }

    private func acceptLoop(until end: ContinuousClock.Instant) {
        defer { close(listener) }
        while running(end) {
            var descriptor = pollfd(fd: listener, events: Int16(POLLIN), revents: 0)
            guard poll(&descriptor, 1, 50) > 0 else { continue }
            let connection = accept(listener, nil, nil)
            guard connection >= 0 else { continue }
            let index = record.withLock { record in
                record.connections += 1
                return record.connections - 1
            }
            let behaviour = behaviours[min(index, behaviours.count - 1)]
            Thread { [self] in serve(connection, behaviour, until: end) }.start()
        }
    }

    private func write(_ connection: Int32, _ text: String) {
        _ = text.withCString { Glibc.send(connection, $0, strlen($0), Int32(MSG_NOSIGNAL)) }
    }

    private static let hello = #"{"Hello": {"username": "solo", "room": {"name": "demo"}, "version": "1.6.9", "realversion": "1.6.9", "motd": "", "features": {}}}"# + "\r\n"
    private static let state = #"{"State": {"playstate": {"position": 0, "paused": true, "doSeek": false, "setBy": null}, "ping": {"latencyCalculation": 1.0, "serverRtt": 0}}}"# + "\r\n"

    private func serve(_ connection: Int32, _ behaviour: Behaviour, until end: ContinuousClock.Instant) {
        defer { close(connection) }
        var pending = [UInt8]()
        var buffer = [UInt8](repeating: 0, count: 4096)
        var tls = false
        var statesLeft = 0
        var nextState = ContinuousClock.now
        var closeAt: ContinuousClock.Instant?
        while running(end) {
            if let closeAt, ContinuousClock.now >= closeAt { return }
            if statesLeft > 0, ContinuousClock.now >= nextState {
                write(connection, Self.state)
                statesLeft -= 1
                nextState = .now + .milliseconds(200)
            }
            var descriptor = pollfd(fd: connection, events: Int16(POLLIN), revents: 0)
            guard poll(&descriptor, 1, 50) > 0 else { continue }
            let count = recv(connection, &buffer, buffer.count, 0)
            guard count > 0 else { return }
            if tls {
                record.withLock { $0.bytesAfterTLS += count }
                continue
            }
            pending += buffer[0..<count]
            while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                let line = String(decoding: pending[..<newline], as: UTF8.self)
                pending.removeSubrange(...newline)
                record.withLock { $0.lines.append(line) }
                switch behaviour {
                case .silent:
                    break
                case .halfLine:
                    write(connection, #"{"Hello": {"username": "so"#)
                case .stallTLS:
                    if line.contains("startTLS") {
                        write(connection, #"{"TLS": {"startTLS": "true"}}"# + "\r\n")
                        tls = true
                    }
                case .joinThenStates(let count):
                    if line.contains("startTLS") { write(connection, #"{"TLS": {"startTLS": "false"}}"# + "\r\n") }
                    if line.contains("\"Hello\"") {
                        write(connection, Self.hello)
                        statesLeft = count
                        nextState = .now + .milliseconds(200)
                    }
                case .joinThenHalfLine:
                    if line.contains("\"Hello\"") {
                        write(connection, Self.hello)
                        write(connection, #"{"State": {"playstate": {"#)
                    }
                case .joinThenClose:
                    if line.contains("\"Hello\"") {
                        write(connection, Self.hello)
                        closeAt = .now + .milliseconds(200)
                    }
                }
                if tls { break }
            }
        }
    }
}
