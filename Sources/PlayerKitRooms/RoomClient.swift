import Foundation
import Logging
import PlayerKitCore
import PlayerKitSupport

/// What a Syncplay room says about playback: paused or playing, at which position, as of a
/// local monotonic instant. The position moves on with time while the room plays.
public struct RoomState: Sendable, Hashable {
    /// The room's position (seconds) at ``time``.
    public var position: Double
    /// Whether the room is paused.
    public var paused: Bool
    /// The member whose report set it (the server's `setBy`), when the server says; who made
    /// each change is the `by:` of ``RoomEvent/paused(position:by:)``,
    /// ``RoomEvent/resumed(position:by:)`` and ``RoomEvent/seeked(position:by:)``.
    var setBy: String?
    /// The local instant ``position`` refers to: when the message arrived, its position moved on
    /// by the one-way delay from the server while the room plays.
    public var time: ContinuousClock.Instant

    /// A room state: at `position` as of `time`, paused or playing, set by `setBy`. A
    /// ``RoomClient`` makes them from the server's messages; a test's own ``RoomSession`` makes
    /// them on its test clock.
    public init(position: Double, paused: Bool, setBy: String? = nil, time: ContinuousClock.Instant) {
        self.position = position
        self.paused = paused
        self.setBy = setBy
        self.time = time
    }

    /// The room's position at `instant`: ``position`` plus the time since ``time`` while playing.
    public func position(at instant: ContinuousClock.Instant) -> Double {
        paused ? position : position + max(0, instant.seconds(since: time))
    }
}

/// What happens in a room, in the order the server said it.
@nonexhaustive
public enum RoomEvent: Sendable, Hashable {
    /// The server greeted us into `room` under `name` (it may add a suffix to a taken name).
    case joined(room: String, name: String)
    /// Another member joined the room.
    case memberJoined(String)
    /// A member left the room.
    case memberLeft(String)
    /// Someone paused the room at `position`.
    case paused(position: Double, by: String?)
    /// Someone started the room at `position`.
    case resumed(position: Double, by: String?)
    /// Someone seeked the room to `position`.
    case seeked(position: Double, by: String?)
    /// The server's periodic state (about once a second).
    case state(RoomState)
    /// The connection ended, with the error that ended it (nil: the server closed it); the client
    /// reconnects after its delay unless it was left. A server silent for
    /// ``RoomClient/Configuration/idleTimeout`` ends it with
    /// ``RoomError/timedOut(operation:server:after:)`` naming ``RoomError/Operation/receiving``.
    case disconnected(RoomError?)
    /// The server does not offer TLS and the configuration (``RoomClient/Configuration/Security/tlsIfOffered``)
    /// let the client go on in plain TCP: the room's traffic, the names and the password's digest
    /// travel in the clear. Comes before ``joined(room:name:)`` on every such connection.
    case encryptionUnavailable(server: String)
}

/// A member of a Syncplay room: joins a room on a `syncplay-server`, answers the server's
/// requests for its play state, and reports the room's state and changes as ``RoomEvent``s.
///
/// **Threading.** Methods may be called from any thread. Events are delivered on an async
/// sequence per ``events(bufferLimit:)->EventStream<RoomEvent>`` call, in the order the server sent them.
public final class RoomClient: Sendable {
    /// Where and how to join.
    public struct Configuration: Sendable, Hashable {
        /// The server's host name or address. Default: loopback.
        var host: String
        /// The server's TCP port. Default: 8999, Syncplay's.
        var port: Int
        /// The room to join (created by the server if new).
        var room: String
        /// The name to join under.
        var name: String
        /// The server's password, if it has one.
        var password: String?
        /// How long the TCP connection may take, name resolution included; then
        /// ``RoomError/timedOut(operation:server:after:)`` with ``RoomError/Operation/connecting``.
        /// Default: 5 s.
        public var connectTimeout: Duration = .seconds(5)
        /// How long the switch to TLS may take, from the request (Syncplay's STARTTLS) to the
        /// handshake's end; then ``RoomError/timedOut(operation:server:after:)`` with
        /// ``RoomError/Operation/askingForTLS`` or ``RoomError/Operation/tlsHandshake``. Unused
        /// with ``Security/plain``. Default: 10 s.
        public var tlsTimeout: Duration = .seconds(10)
        /// How long the server may take to answer the greeting (the room joined, or refused);
        /// then ``RoomError/timedOut(operation:server:after:)`` with
        /// ``RoomError/Operation/joining``. Default: 5 s.
        public var joinTimeout: Duration = .seconds(5)
        /// The longest silence from the server once joined: Syncplay servers send their state
        /// about once a second, so a silence this long means the server or the path is gone.
        /// The connection then ends with ``RoomError/timedOut(operation:server:after:)`` with
        /// ``RoomError/Operation/receiving`` (``RoomEvent/disconnected(_:)``) and the client
        /// reconnects after ``reconnectDelay``. Also bounds each message sent once joined
        /// (``RoomError/Operation/sending``). Default: 10 s (Syncplay's own client gives up
        /// after 12.5 s).
        public var idleTimeout: Duration = .seconds(10)
        /// How long to wait before reconnecting after the connection ends; nil: do not reconnect.
        /// Default: 1 s.
        public var reconnectDelay: Duration? = .seconds(1)
        /// Whether the connection is encrypted. Default: ``Security/tlsRequired``: a server that
        /// does not offer TLS is ``RoomError/tlsNotOffered(server:)``, never a silent downgrade
        /// (Syncplay's own client falls back to plain TCP, so anyone on the path who strips the
        /// server's offer reads the room, the names and the password's digest). Choose
        /// ``Security/plain`` for a server without TLS (a loopback or private network), or
        /// ``Security/tlsIfOffered`` to fall back with ``RoomEvent/encryptionUnavailable(server:)``.
        public var security: Security = .tlsRequired
        /// A PEM file of certificates to trust for the server's TLS certificate, besides the
        /// system's (a private certificate authority, a self-signed server). Default: none.
        public var trustedCertificatesFile: String?

        /// How the connection is protected.
        ///
        /// `@nonexhaustive`: a `switch` over it outside PlayerKit needs `@unknown default`.
        @nonexhaustive
        public enum Security: Sendable, Hashable {
            /// Plain TCP: the room, names and the password's digest travel in the clear.
            case plain
            /// TLS when the server offers it (Syncplay's STARTTLS), plain TCP when it does not: then
            /// ``RoomEvent/encryptionUnavailable(server:)`` comes before ``RoomEvent/joined(room:name:)``
            /// and ``RoomClient/isEncrypted`` is false. A downgrade is never silent.
            case tlsIfOffered
            /// TLS or nothing (the default): a server that does not offer it is
            /// ``RoomError/tlsNotOffered(server:)``, which says how to opt out.
            case tlsRequired
        }

        /// A configuration for `room` as `name` on `host:port` (default: loopback, 8999,
        /// Syncplay's port), with the server's `password` if it has one. These five are given
        /// here, not read back or set later; the other fields keep their defaults until set.
        public init(host: String = "127.0.0.1", port: Int = 8999, room: String, name: String, password: String? = nil) {
            self.host = host
            self.port = port
            self.room = room
            self.name = name
            self.password = password
        }
    }

    private struct Session {
        var connection: RoomConnection?
        var joinedName: String?
        /// Whether the current connection is encrypted (nil before one is set up).
        var isEncrypted: Bool?
        var members: Set<String> = []
        var room: RoomState?
        var latency = RoomLatency()
        /// Changes we sent that the server has not confirmed (Syncplay's `ignoringOnTheFly`).
        var clientIgnoring = 0
        /// The server's forced update to acknowledge in our next answer.
        var serverIgnoring = 0
        var left = false
        /// Our last change until the server's forced update shows it applied. The server ignores
        /// a change that arrives before it has our acknowledgement of an earlier forced update
        /// (one may be on its way to us as we send): such a change is sent again.
        var pendingChange: SyncplayWire.PlayState?
        var pendingRetries = 0
        var localState: (@Sendable () -> (position: Double, paused: Bool)?)?
        /// The file announced with ``announceFile(name:duration:size:)``, announced again on
        /// every reconnection.
        var file: SyncplayWire.FileInfo?
        /// The joins under way (``join()``), which ``leave()`` cancels.
        var attempts: [Int: Task<Result<RoomConnection, RoomError>, Never>] = [:]
        var nextAttempt = 0
    }

    /// The configuration given at creation.
    let configuration: Configuration
    private let state = Locked(Session())
    private let loop = Locked<Task<Void, Never>?>(nil)
    private let logger: Logger

    /// A client for `configuration`; ``join()`` connects.
    /// - Throws: ``RoomError/invalidArgument(name:value:reason:)`` for an empty room or name, a
    ///   port outside 1...65535, a timeout that is not positive or a negative reconnection delay.
    public init(_ configuration: Configuration, logger: Logger = Logger(label: "PlayerKit.rooms")) throws(RoomError) {
        guard !configuration.room.trimmingCharacters(in: .whitespaces).isEmpty else {
            throw .invalidArgument(name: "room", value: configuration.room, reason: "is empty")
        }
        guard !configuration.name.trimmingCharacters(in: .whitespaces).isEmpty else {
            throw .invalidArgument(name: "name", value: configuration.name, reason: "is empty")
        }
        guard (1...65535).contains(configuration.port) else {
            throw .invalidArgument(name: "port", value: "\(configuration.port)", reason: "is not a TCP port (1...65535)")
        }
        for (name, timeout) in [("connectTimeout", configuration.connectTimeout), ("tlsTimeout", configuration.tlsTimeout),
                                ("joinTimeout", configuration.joinTimeout), ("idleTimeout", configuration.idleTimeout)] {
            guard timeout > .zero else { throw .invalidArgument(name: name, value: "\(timeout)", reason: "is not a positive duration") }
        }
        if let delay = configuration.reconnectDelay, delay < .zero {
            throw .invalidArgument(name: "reconnectDelay", value: "\(delay)", reason: "is negative")
        }
        self.configuration = configuration
        var logger = logger
        logger[metadataKey: "room"] = "\(configuration.room)"
        self.logger = logger
    }

    deinit {
        loop.withLock { $0?.cancel() }
    }

    // MARK: Read-outs

    /// The room's latest state (nil before the first): the last ``RoomEvent/state(_:)``.
    var roomState: RoomState? { state.withLock { $0.room } }
    /// The other members the server told us about.
    public var members: Set<String> { state.withLock { $0.members } }
    /// The name the server gave us (nil before the greeting's answer).
    var joinedName: String? { state.withLock { $0.joinedName } }
    /// Whether the connection to the server is encrypted with TLS: nil before a connection is set
    /// up, false with ``Configuration/Security/plain`` or after a ``Configuration/Security/tlsIfOffered``
    /// fallback (``RoomEvent/encryptionUnavailable(server:)``).
    public var isEncrypted: Bool? { state.withLock { $0.isEncrypted } }
    /// The path's round trip to the server (the shortest recent one), nil before the first.
    var roundTrip: Double? { state.withLock { $0.latency.roundTrip } }

    /// The path's round trip, waiting up to `limit` for the first measurement (the server's
    /// first state request and our answer's echo: about a second after joining). Changes made
    /// before it is measured reach the others late: the server adds its estimate of our
    /// message's age to a start's position, and has none before that exchange.
    /// - Returns: the round trip in seconds, or nil when none was measured within `limit`.
    public func roundTrip(waitingUpTo limit: Duration) async -> Double? {
        let deadline = ContinuousClock.now + limit
        while true {
            if let roundTrip { return roundTrip }
            guard ContinuousClock.now < deadline, !Task.isCancelled, !state.withLock({ $0.left }) else { return nil }
            try? await Task.sleep(for: .milliseconds(10))
        }
    }

    /// The room's events from now on. Each call makes a sequence of its own; one that falls
    /// `bufferLimit` events behind loses the oldest.
    /// The sequences end when the client leaves (at once, asked for after it left).
    public func events(bufferLimit: Int = EventStream<RoomEvent>.defaultBufferLimit) -> EventStream<RoomEvent> {
        let (stream, continuation) = EventStream<RoomEvent>.makeStream(bufferLimit: bufferLimit)
        broadcast.add(yield: { continuation.yield($0) }, finish: { continuation.finish() }, isEnded: { continuation.isFinished })
        return stream
    }

    /// The room's events, to every sequence asked for.
    private let broadcast = EventBroadcast<RoomEvent>()

    /// What the client reports as its own play state when the server asks (about once a second):
    /// `provider` returns the local position and whether it is paused, or nil while it has none.
    /// Called on the client's task; it must not block.
    ///
    /// An answer never changes the room (``pause(at:)``, ``play(at:)`` and ``seek(to:paused:)``
    /// do): when `provider` says paused while the room plays, or the reverse, as it may while
    /// the room's latest change is on its way to the app, the client answers with the room's
    /// state instead (Syncplay's server would take the difference for a pause or a start).
    public func reportLocalState(_ provider: @escaping @Sendable () -> (position: Double, paused: Bool)?) {
        state.withLock { $0.localState = provider }
    }

    // MARK: Joining and leaving

    /// Connects and joins the room; returns once the server greeted us. Each wait is bounded by
    /// the configuration: ``Configuration/connectTimeout``, ``Configuration/tlsTimeout``,
    /// ``Configuration/joinTimeout`` (so at most their sum, plus the event loop's scheduling
    /// delay). ``leave()``, or cancelling the calling task, ends it at once with
    /// ``RoomError/closed``.
    /// - Throws: ``RoomError/connectionFailed(server:reason:)``,
    ///   ``RoomError/passwordRejected(server:message:)``, ``RoomError/timedOut(operation:server:after:)``
    ///   naming the wait, ``RoomError/malformedMessage(line:reason:)``, ``RoomError/closed``
    ///   after ``leave()``.
    public func join() async throws(RoomError) {
        // On a task of its own, which leave() cancels.
        let attempt = Task { [weak self] () async -> Result<RoomConnection, RoomError> in
            guard let self else { return .failure(.closed) }
            do throws(RoomError) { return .success(try await self.connect()) } catch { return .failure(error) }
        }
        let number = state.withLock { state -> Int? in
            guard !state.left else { return nil }
            state.nextAttempt += 1
            state.attempts[state.nextAttempt] = attempt
            return state.nextAttempt
        }
        guard let number else {
            attempt.cancel()
            throw .closed
        }
        let result = await withTaskCancellationHandler {
            await attempt.value
        } onCancel: {
            attempt.cancel()
        }
        state.withLock { _ = $0.attempts.removeValue(forKey: number) }
        let connection = try result.get()
        loop.withLock { task in
            task?.cancel()
            task = Task { [weak self] in await self?.run(connection) }
        }
    }

    /// Leaves the room and closes the connection; no reconnection follows. Returns at once in
    /// every state (connecting, joining, joined, reconnecting, the server silent): a pending
    /// ``join()`` ends with ``RoomError/closed``.
    public func leave() async {
        let (connection, attempts) = state.withLock { state in
            state.left = true
            defer { state.attempts = [:] }
            return (state.connection, Array(state.attempts.values))
        }
        for attempt in attempts { attempt.cancel() }
        connection?.close()
        let task = loop.withLock { $0 }
        task?.cancel()
        await task?.value
        for attempt in attempts { _ = await attempt.value }
        broadcast.finish()
    }

    // MARK: Changing the room

    /// Tells the room which file this member plays (Syncplay shows it to the others and counts
    /// only members with a file when it works out the room's position). Announced again after
    /// every reconnection.
    /// - Throws: ``RoomError/invalidArgument(name:value:reason:)`` for a negative or infinite
    ///   duration or a negative size; ``RoomError/closed`` while not connected (the file is still
    ///   announced once the client reconnects); ``RoomError/timedOut(operation:server:after:)``
    ///   (``RoomError/Operation/sending``) when the connection has not taken it within
    ///   ``Configuration/idleTimeout``, or ``RoomError/connectionFailed(server:reason:)``.
    public func announceFile(name: String, duration: Double, size: Int) async throws(RoomError) {
        guard duration.isFinite, duration >= 0 else {
            throw .invalidArgument(name: "duration", value: "\(duration)", reason: "is not a duration")
        }
        guard size >= 0 else { throw .invalidArgument(name: "size", value: "\(size)", reason: "is negative") }
        let file = SyncplayWire.FileInfo(name: name, duration: duration, size: Double(size))
        guard let connection = state.withLock({ state -> RoomConnection? in
            state.file = file
            return state.connection
        }) else { throw .closed }
        try await send(SyncplayWire.file(file), on: connection)
    }

    /// Pauses the room at `position` (the local player's position).
    /// - Throws: ``RoomError/closed`` while not connected;
    ///   ``RoomError/timedOut(operation:server:after:)`` (``RoomError/Operation/sending``) when the
    ///   connection has not taken it within ``Configuration/idleTimeout``, or
    ///   ``RoomError/connectionFailed(server:reason:)``.
    public func pause(at position: Double) async throws(RoomError) {
        try await sendChange(SyncplayWire.PlayState(position: position, paused: true, doSeek: false))
    }

    /// Starts the room at `position`.
    /// - Throws: as ``pause(at:)``.
    public func play(at position: Double) async throws(RoomError) {
        try await sendChange(SyncplayWire.PlayState(position: position, paused: false, doSeek: false))
    }

    /// Seeks the room to `position`, keeping it paused or playing as `paused` says.
    /// - Throws: ``RoomError/invalidArgument(name:value:reason:)`` for a negative or infinite
    ///   position; otherwise as ``pause(at:)``.
    public func seek(to position: Double, paused: Bool) async throws(RoomError) {
        guard position.isFinite, position >= 0 else {
            throw .invalidArgument(name: "position", value: "\(position)", reason: "is not a position")
        }
        try await sendChange(SyncplayWire.PlayState(position: position, paused: paused, doSeek: true))
    }

    private func sendChange(_ playState: SyncplayWire.PlayState) async throws(RoomError) {
        try await send(beginChange(playState))
    }

    /// A change of the room made here: registered by ``beginChange(_:)``, sent by ``send(_:)``.
    struct Change: Sendable {
        fileprivate let connection: RoomConnection?
        fileprivate let line: String
    }

    /// Registers a change of the room made here, before it is sent: from now on the server's
    /// states are not taken (they were sent before the server knew of it) until the server
    /// confirms it. A ``RoomFollower`` registers its change before it sets its own clock, so that
    /// no state older than the change can reach it stamped later than the change.
    func beginChange(_ playState: SyncplayWire.PlayState) -> Change {
        state.withLock { state -> Change in
            state.clientIgnoring += 1
            // A change of the room (a seek, or a pause state it does not have) gets the server's
            // forced update back; a repeat of the room's state does not.
            if playState.doSeek || state.room?.paused != playState.paused {
                state.pendingChange = playState
                state.pendingRetries = 0
            }
            if var room = state.room {
                room.position = playState.position
                room.paused = playState.paused
                room.setBy = state.joinedName
                room.time = .now
                state.room = room
            }
            return Change(connection: state.connection, line: SyncplayWire.state(
                playState: playState, latencyCalculation: nil, clientTimestamp: Self.wallClock(),
                clientRtt: state.latency.lastRoundTrip, ignoringServer: nil, ignoringClient: state.clientIgnoring))
        }
    }

    /// Sends a change registered by ``beginChange(_:)``.
    /// - Throws: ``RoomError/closed`` when it was registered while not connected; otherwise as
    ///   ``pause(at:)``.
    func send(_ change: Change) async throws(RoomError) {
        guard let connection = change.connection else { throw .closed }
        try await send(change.line, on: connection)
    }

    // MARK: The connection

    /// Sends `line` on a joined connection, within ``Configuration/idleTimeout``.
    private func send(_ line: String, on connection: RoomConnection) async throws(RoomError) {
        try await connection.send(line, operation: .sending, limit: configuration.idleTimeout)
    }

    /// Connects, switches to TLS (as configured) and joins; each wait bounded by its timeout.
    /// Cancelling the calling task (``leave()``) ends it with ``RoomError/closed``.
    private func connect() async throws(RoomError) -> RoomConnection {
        let server = "\(configuration.host):\(configuration.port)"
        let connection = try await RoomConnection.open(host: configuration.host, port: configuration.port,
                                                       timeout: configuration.connectTimeout, logger: logger)
        let result = await withTaskCancellationHandler { () async -> Result<Void, RoomError> in
            do throws(RoomError) {
                try await greet(on: connection)
                return .success(())
            } catch {
                return .failure(error)
            }
        } onCancel: {
            connection.close()
        }
        switch result {
        case .success:
            return connection
        case .failure(let error):
            connection.close()
            // Left while waiting: the closing, not what it did to the wait, is the outcome.
            if Task.isCancelled || state.withLock({ $0.left }) { throw .closed }
            logger.debug("joining failed", metadata: ["server": "\(server)", "error": "\(error)"])
            throw error
        }
    }

    /// The greeting and its answer (after TLS, as configured), on a fresh connection; once
    /// joined, the connection's silence is bounded by ``Configuration/idleTimeout``.
    private func greet(on connection: RoomConnection) async throws(RoomError) {
        let configuration = configuration
        let server = "\(configuration.host):\(configuration.port)"
        var iterator = connection.lines.makeAsyncIterator()
        if configuration.security != .plain {
            try await negotiateTLS(on: connection, lines: &iterator)
        } else {
            state.withLock { $0.isEncrypted = false }
        }
        let limit = configuration.joinTimeout
        let deadline = ContinuousClock.now + limit
        connection.expectLine(.joining, limit: limit)
        try await connection.send(SyncplayWire.hello(
            username: configuration.name, room: configuration.room,
            passwordHash: configuration.password.map(SyncplayWire.passwordHash)),
            operation: .joining, limit: limit, remaining: deadline - .now)
        // The greeting's answer, or the server's refusal.
        while true {
            guard let next = await iterator.next() else {
                throw .connectionFailed(server: server, reason: "closed before the greeting was answered")
            }
            for message in try SyncplayWire.decode(try next.get()) {
                switch message {
                case .hello(let name, let room, _, _):
                    connection.expectLine(.receiving, limit: configuration.idleTimeout, renewedByEachLine: true)
                    let left = state.withLock { state -> Bool in
                        guard !state.left else { return true }
                        state.connection = connection
                        state.joinedName = name
                        state.clientIgnoring = 0
                        state.serverIgnoring = 0
                        return false
                    }
                    guard !left else { throw .closed }
                    publish(.joined(room: room, name: name))
                    // Who is already there (the server tells only of later arrivals by itself).
                    try await send(SyncplayWire.list(), on: connection)
                    if let file = state.withLock({ $0.file }) { try await send(SyncplayWire.file(file), on: connection) }
                    return
                case .error(let text):
                    if text.localizedCaseInsensitiveContains("password") { throw .passwordRejected(server: server, message: text) }
                    throw .serverError(message: text)
                default:
                    continue
                }
            }
        }
    }

    /// Syncplay's STARTTLS: asks the server for TLS and, when it agrees, switches the connection
    /// to it, checking the server's certificate (the system's trust roots and
    /// ``Configuration/trustedCertificatesFile``) and host name. The answer and the handshake
    /// together are bounded by ``Configuration/tlsTimeout``.
    private func negotiateTLS(on connection: RoomConnection,
                              lines iterator: inout AsyncStream<Result<String, RoomError>>.Iterator) async throws(RoomError) {
        let configuration = configuration
        let server = "\(configuration.host):\(configuration.port)"
        let limit = configuration.tlsTimeout
        let deadline = ContinuousClock.now + limit
        connection.expectLine(.askingForTLS, limit: limit)
        try await connection.send(SyncplayWire.startTLS(), operation: .askingForTLS, limit: limit)
        var accepted: Bool?
        while accepted == nil {
            guard let next = await iterator.next() else {
                throw .connectionFailed(server: server, reason: "closed before answering the request for TLS")
            }
            for case .tls(let answer) in try SyncplayWire.decode(try next.get()) { accepted = answer }
        }
        connection.stopExpectingLines()
        guard accepted == true else {
            guard configuration.security != .tlsRequired else { throw .tlsNotOffered(server: server) }
            logger.warning("the server does not offer TLS: the room's traffic is not encrypted", metadata: ["server": "\(server)"])
            state.withLock { $0.isEncrypted = false }
            publish(.encryptionUnavailable(server: server))
            return
        }
        // SNI and the name check take a host name; an address literal is checked against the
        // certificate's IP addresses instead.
        try await connection.startTLS(host: configuration.host, trustedCertificatesFile: configuration.trustedCertificatesFile,
                                      limit: limit, remaining: deadline - .now)
        state.withLock { $0.isEncrypted = true }
    }

    /// Reads the server's lines until the connection ends, then reconnects (unless left).
    private func run(_ first: RoomConnection) async {
        var connection: RoomConnection? = first
        while let current = connection, !Task.isCancelled {
            var ending: RoomError?
            do {
                for await line in current.lines {
                    for message in try SyncplayWire.decode(try line.get()) { try await handle(message, on: current) }
                }
            } catch {
                ending = error
                logger.warning("room connection ended", metadata: ["error": "\(error)"])
            }
            current.close()
            state.withLock { $0.connection = nil }
            publish(.disconnected(ending))
            connection = nil
            guard let delay = configuration.reconnectDelay else { return }
            while connection == nil, !Task.isCancelled, !state.withLock({ $0.left }) {
                try? await Task.sleep(for: delay)
                guard !Task.isCancelled else { return }
                connection = try? await connect()
            }
        }
    }

    private func handle(_ message: SyncplayWire.ServerMessage, on connection: RoomConnection) async throws(RoomError) {
        switch message {
        case .state(let serverState):
            var resend: SyncplayWire.PlayState?
            let (events, provider) = state.withLock { state -> ([RoomEvent], (@Sendable () -> (position: Double, paused: Bool)?)?) in
                let now = ContinuousClock.now
                if let stamp = serverState.ping.clientLatencyCalculation {
                    state.latency.noteEcho(sentAt: stamp, now: Self.wallClock())
                }
                // Syncplay's on-the-fly rules: a forced update from the server is acknowledged;
                // our own change is pending until the server echoes its count.
                if let server = serverState.ignoringServer {
                    state.serverIgnoring = server
                    state.clientIgnoring = 0
                    // A forced update: ours applied, or someone else's, which may have made the
                    // server drop ours.
                    if let pending = state.pendingChange, let play = serverState.playState {
                        // (Not compared by position: a playing room's moves on while messages
                        // travel.)
                        let ours = play.setBy == state.joinedName && play.paused == pending.paused
                            && (!pending.doSeek || play.doSeek)
                        if ours || state.pendingRetries >= 3 {
                            state.pendingChange = nil
                        } else {
                            state.pendingRetries += 1
                            resend = pending
                        }
                    }
                } else if let client = serverState.ignoringClient, client == state.clientIgnoring {
                    state.clientIgnoring = 0
                }
                var events: [RoomEvent] = []
                if let play = serverState.playState, state.clientIgnoring == 0 {
                    let position = play.position + (play.paused ? 0 : state.latency.forwardDelay)
                    let previous = state.room
                    let room = RoomState(position: position, paused: play.paused, setBy: play.setBy, time: now)
                    state.room = room
                    if play.doSeek, play.setBy != state.joinedName {
                        events.append(.seeked(position: position, by: play.setBy))
                    }
                    // A room starts paused: a first state that plays is a start.
                    if (previous?.paused ?? true) != play.paused {
                        events.append(play.paused ? .paused(position: position, by: play.setBy) : .resumed(position: position, by: play.setBy))
                    }
                    events.append(.state(room))
                }
                return (events, state.clientIgnoring == 0 ? state.localState : nil)
            }
            // The app's provider runs outside the lock: it may read this client's state. When
            // this message changed the room, the app has not heard of it yet (its events are on
            // their way): the answer is the room's new state, or the server would take the app's
            // old one for a change and undo the room's.
            let changed = events.contains { event in
                switch event {
                case .paused, .resumed, .seeked: true
                default: false
                }
            }
            // Nor is any other answer a change: the server takes an answer whose pause state
            // differs from the room's for one, and pauses or restarts the room. The provider may
            // lag the room (a state the room has since left was adopted while the app changed
            // it): when it disagrees with the room's pause state, the answer is the room's.
            let room = state.withLock { $0.room }
            let local: (position: Double, paused: Bool)?
            if changed, let room {
                local = (room.position(at: .now), room.paused)
            } else if let provided = provider?() {
                local = if let room, room.paused != provided.paused { (room.position(at: .now), room.paused) } else { provided }
            } else {
                local = nil
            }
            let answer = state.withLock { state -> String in
                defer { state.serverIgnoring = 0 }
                return SyncplayWire.state(
                    playState: local.map { SyncplayWire.PlayState(position: max(0, $0.position), paused: $0.paused, doSeek: false) },
                    latencyCalculation: serverState.ping.latencyCalculation, clientTimestamp: Self.wallClock(),
                    clientRtt: state.latency.lastRoundTrip, ignoringServer: state.serverIgnoring, ignoringClient: state.clientIgnoring)
            }
            for event in events { publish(event) }
            try await send(answer, on: connection)
            // After the acknowledgement, so the server applies it this time.
            if let resend {
                logger.debug("room change sent again", metadata: ["position": "\(resend.position)", "paused": "\(resend.paused)"])
                let line = state.withLock { state -> String in
                    state.clientIgnoring += 1
                    return SyncplayWire.state(playState: resend, latencyCalculation: nil, clientTimestamp: Self.wallClock(),
                                              clientRtt: state.latency.lastRoundTrip, ignoringServer: nil, ignoringClient: state.clientIgnoring)
                }
                try await send(line, on: connection)
            }
        case .userJoined(let name, let room) where room == configuration.room:
            state.withLock { _ = $0.members.insert(name) }
            publish(.memberJoined(name))
        case .userLeft(let name, let room) where room == configuration.room:
            state.withLock { _ = $0.members.remove(name) }
            publish(.memberLeft(name))
        case .list(let rooms):
            let names = Set(rooms[configuration.room] ?? []).subtracting([joinedName ?? ""])
            state.withLock { $0.members = names }
        case .error(let text):
            throw .serverError(message: text)
        default:
            break
        }
    }

    private func publish(_ event: RoomEvent) {
        broadcast.yield(event)
    }

    /// Seconds since 1970 on the wall clock: the ping stamps' clock (only differences of our own
    /// stamps are used, so the server's clock need not agree).
    private static func wallClock() -> Double { Date().timeIntervalSince1970 }
}
