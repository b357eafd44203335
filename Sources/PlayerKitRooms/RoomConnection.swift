import COpenSSL
import Foundation
import Logging
import PlayerKitSupport

/// One TCP connection to a Syncplay server: lines out, lines in (as an async sequence), and a
/// switch to TLS in the middle (Syncplay's STARTTLS, on the system's OpenSSL). Internal to the
/// room client.
///
/// Each connection has a thread of its own that does all of its socket and TLS work (an OpenSSL
/// connection must not be used by two threads at once): it waits in `poll` on the socket and on
/// a pipe that wakes it for the other threads' requests (a line to send, a bound to keep, TLS,
/// closing), and at most until the nearest of its deadlines. Every wait is bounded on the
/// monotonic clock; nothing waits on Swift's cooperative pool.
final class RoomConnection: Sendable {
    /// The lines the server sends, in order; finishes when the connection closes (with the
    /// error that closed it, if any).
    let lines: AsyncStream<Result<String, RoomError>>
    private let link: Link

    private init(link: Link) {
        self.link = link
        self.lines = link.lines
    }

    /// A connection nobody holds any more is closed: its thread ends.
    deinit {
        link.close()
    }

    /// Connects to `host:port` within `timeout` (name resolution included). The wait ends early,
    /// with ``RoomError/closed``, when the calling task is cancelled (``RoomClient/leave()``).
    /// - Throws: ``RoomError/timedOut(operation:server:after:)`` (``RoomError/Operation/connecting``),
    ///   ``RoomError/connectionFailed(server:reason:)``, ``RoomError/closed``.
    static func open(host: String, port: Int, timeout: Duration, logger: Logger = Logger(label: "PlayerKit.rooms")) async throws(RoomError) -> RoomConnection {
        let link: Link
        do {
            link = try Link(host: host, port: port, logger: logger)
        } catch {
            throw .connectionFailed(server: "\(host):\(port)", reason: "\(error)")
        }
        let outcome = await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<RoomError?, Never>) in
                link.start(connectingWithin: timeout) { continuation.resume(returning: $0) }
            }
        } onCancel: {
            link.close()
        }
        if let outcome { throw outcome }
        return RoomConnection(link: link)
    }

    /// Bounds the wait for the server's next line: unless a line arrives within `remaining`
    /// (`limit` when nil), ``lines`` ends with ``RoomError/timedOut(operation:server:after:)``
    /// naming `operation` and `limit`, and the connection closes. With `renewedByEachLine`, every
    /// line starts the wait anew (a bound on silence); without, it holds until the next call.
    /// Replaces the previous bound.
    func expectLine(_ operation: RoomError.Operation, limit: Duration, remaining: Duration? = nil, renewedByEachLine: Bool = false) {
        link.request(.watch(operation: operation, limit: limit, deadline: .now + max(.zero, remaining ?? limit), renewed: renewedByEachLine))
    }

    /// Ends the bound set by ``expectLine(_:limit:remaining:renewedByEachLine:)``.
    func stopExpectingLines() {
        link.request(.stopWatching)
    }

    /// Sends one line (a newline is added). Unless the connection has taken it within
    /// `remaining` (`limit` when nil), the connection ends with
    /// ``RoomError/timedOut(operation:server:after:)`` naming `operation` and `limit` (a server
    /// that does not read, its buffers full).
    /// - Throws: that ``RoomError/timedOut(operation:server:after:)``, or
    ///   ``RoomError/connectionFailed(server:reason:)`` when the connection is gone.
    func send(_ line: String, operation: RoomError.Operation, limit: Duration, remaining: Duration? = nil) async throws(RoomError) {
        link.logger.trace("sent", metadata: ["line": "\(line)"])
        let bytes = Array((line + "\r\n").utf8)
        let deadline = ContinuousClock.now + max(.zero, remaining ?? limit)
        let outcome = await withCheckedContinuation { (continuation: CheckedContinuation<RoomError?, Never>) in
            link.request(.send(bytes, operation: operation, limit: limit, deadline: deadline) { continuation.resume(returning: $0) })
        }
        if let outcome { throw outcome }
    }

    /// Switches the connection to TLS (after the server agreed to), checking the server's
    /// certificate against the system's trust roots and `trustedCertificatesFile`, and its name
    /// against `host` (a host name, or an address literal checked against the certificate's
    /// addresses); returns once the handshake completed, within `remaining` (`limit` when nil).
    /// Cancelling the calling task closes the connection.
    /// - Throws: ``RoomError/timedOut(operation:server:after:)``
    ///   (``RoomError/Operation/tlsHandshake``, `limit`), ``RoomError/connectionFailed(server:reason:)``
    ///   naming why the handshake failed (an untrusted certificate, a name that does not match).
    func startTLS(host: String, trustedCertificatesFile: String?, limit: Duration, remaining: Duration? = nil) async throws(RoomError) {
        let deadline = ContinuousClock.now + max(.zero, remaining ?? limit)
        let outcome = await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<RoomError?, Never>) in
                link.request(.startTLS(host: host, trustedCertificatesFile: trustedCertificatesFile, limit: limit, deadline: deadline) {
                    continuation.resume(returning: $0)
                })
            }
        } onCancel: { [link] in
            link.close()
        }
        if let outcome { throw outcome }
    }

    /// Closes the connection; ``lines`` then finishes.
    func close() {
        link.close()
    }
}

/// The connection's socket, TLS and thread. Everything but `inbox` is touched only by the
/// connection's thread; other threads hand it requests through `inbox` and wake it through the
/// pipe.
private final class Link: @unchecked Sendable {
    /// What another thread asks of the connection's thread.
    enum Request {
        case send([UInt8], operation: RoomError.Operation, limit: Duration, deadline: ContinuousClock.Instant, done: @Sendable (RoomError?) -> Void)
        case watch(operation: RoomError.Operation, limit: Duration, deadline: ContinuousClock.Instant, renewed: Bool)
        case stopWatching
        case startTLS(host: String, trustedCertificatesFile: String?, limit: Duration, deadline: ContinuousClock.Instant, done: @Sendable (RoomError?) -> Void)
        case close
    }

    private struct Inbox {
        var requests: [Request] = []
        /// The thread has ended and closed the pipe: no more wake-ups (its descriptor number may
        /// belong to another file by now).
        var ended = false
    }

    /// A longest line the server may send (Syncplay's are well under 10 KiB).
    static let maximumLineLength = 1 << 20

    let lines: AsyncStream<Result<String, RoomError>>
    let logger: Logger
    private let continuation: AsyncStream<Result<String, RoomError>>.Continuation
    private let host: String
    private let port: Int
    private let server: String
    private let inbox = Locked(Inbox())
    private let wakeRead: Int32
    private let wakeWrite: Int32

    // The connection's thread only.
    private var socket: Int32 = -1
    private var context: OpaquePointer?
    private var ssl: OpaquePointer?
    private var handshake: (limit: Duration, deadline: ContinuousClock.Instant, done: @Sendable (RoomError?) -> Void)?
    private var sslWantsWrite = false
    private var received: [UInt8] = []
    private var outbox: [(bytes: [UInt8], sent: Int, operation: RoomError.Operation, limit: Duration, deadline: ContinuousClock.Instant, done: @Sendable (RoomError?) -> Void)] = []
    private var watch: (operation: RoomError.Operation, limit: Duration, deadline: ContinuousClock.Instant, renewed: Bool)?
    private var ended = false
    /// What the requests still pending at the end are answered with (set by ``end(with:)``).
    private var endedWith = RoomError.closed

    init(host: String, port: Int, logger: Logger) throws(RoomError) {
        self.host = host
        self.port = port
        self.server = "\(host):\(port)"
        self.logger = logger
        (lines, continuation) = AsyncStream<Result<String, RoomError>>.makeStream()
        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0 else {
            throw .connectionFailed(server: "\(host):\(port)", reason: "no pipe: \(String(cString: strerror(errno)))")
        }
        for fd in fds {
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        }
        wakeRead = fds[0]
        wakeWrite = fds[1]
    }

    /// Starts the connection's thread: it connects within `timeout`, reports the outcome to
    /// `connected` (nil: connected), then serves the connection until it ends.
    func start(connectingWithin timeout: Duration, connected: @escaping @Sendable (RoomError?) -> Void) {
        let thread = Thread { [self] in
            // OpenSSL writes to the socket with write(2): to a connection the server reset, that
            // raises SIGPIPE, which would end the process. Blocked on this thread (its own), the
            // signal stays pending here and the write fails with EPIPE instead.
            var pipeSignal = sigset_t()
            sigemptyset(&pipeSignal)
            sigaddset(&pipeSignal, SIGPIPE)
            pthread_sigmask(SIG_BLOCK, &pipeSignal, nil)
            let outcome = connect(within: timeout)
            connected(outcome)
            if outcome == nil { serve() }
            end(with: nil)
        }
        thread.name = "PlayerKit.room-connection"
        thread.start()
    }

    /// Hands `request` to the connection's thread; once the connection has ended, a send or a
    /// TLS request is answered at once with the connection's end.
    func request(_ request: Request) {
        let delivered = inbox.withLock { inbox -> Bool in
            guard !inbox.ended else { return false }
            inbox.requests.append(request)
            var byte: UInt8 = 1
            _ = write(wakeWrite, &byte, 1)
            return true
        }
        guard !delivered else { return }
        switch request {
        case .send(_, _, _, _, let done), .startTLS(_, _, _, _, let done):
            done(.connectionFailed(server: server, reason: "the connection is closed"))
        case .watch, .stopWatching, .close:
            break
        }
    }

    func close() {
        request(.close)
    }

    // MARK: On the connection's thread

    /// Resolves the host and connects to the first address that answers, within `timeout`.
    private func connect(within timeout: Duration) -> RoomError? {
        let deadline = ContinuousClock.now + timeout
        let timedOut = RoomError.timedOut(operation: .connecting, server: server, after: timeout)
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var found: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, String(port), &hints, &found)
        guard status == 0, let first = found else {
            return .connectionFailed(server: server, reason: "cannot resolve \(host): \(String(cString: gai_strerror(status)))")
        }
        defer { freeaddrinfo(first) }
        var failure = "no address"
        var address: UnsafeMutablePointer<addrinfo>? = first
        while let current = address {
            address = current.pointee.ai_next
            if closeRequested() { return .closed }
            guard ContinuousClock.now < deadline else { return timedOut }
            let fd = Glibc.socket(current.pointee.ai_family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            guard fd >= 0 else {
                failure = String(cString: strerror(errno))
                continue
            }
            var on: Int32 = 1
            setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, socklen_t(MemoryLayout<Int32>.size))
            setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &on, socklen_t(MemoryLayout<Int32>.size))
            if Glibc.connect(fd, current.pointee.ai_addr, current.pointee.ai_addrlen) == 0 {
                socket = fd
                acknowledgeQuickly()
                return nil
            }
            guard errno == EINPROGRESS else {
                failure = String(cString: strerror(errno))
                Glibc.close(fd)
                continue
            }
            // Wait for the connection, the deadline, or a request to close.
            while true {
                if closeRequested() {
                    Glibc.close(fd)
                    return .closed
                }
                let now = ContinuousClock.now
                guard now < deadline else {
                    Glibc.close(fd)
                    return timedOut
                }
                var fds = [pollfd(fd: fd, events: Int16(POLLOUT), revents: 0), pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0)]
                _ = poll(&fds, 2, Self.milliseconds(until: deadline, from: now))
                if fds[1].revents != 0 { drainWakeups() }
                guard fds[0].revents != 0 else { continue }
                var error: Int32 = 0
                var length = socklen_t(MemoryLayout<Int32>.size)
                getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length)
                if error == 0 {
                    socket = fd
                    acknowledgeQuickly()
                    return nil
                }
                failure = String(cString: strerror(error))
                Glibc.close(fd)
                break
            }
        }
        return .connectionFailed(server: server, reason: failure)
    }

    /// Whether a close is among the pending requests (while connecting, nothing else is taken).
    private func closeRequested() -> Bool {
        inbox.withLock { inbox in inbox.requests.contains { if case .close = $0 { true } else { false } } }
    }

    /// Serves the connected socket until the connection ends.
    private func serve() {
        while !ended {
            let batch = inbox.withLock { inbox -> [Request] in defer { inbox.requests = [] }; return inbox.requests }
            for (index, request) in batch.enumerated() {
                take(request)
                if ended {
                    // The rest of the batch left the inbox before the end answered what it held.
                    answer(batch[(index + 1)...], with: endedWith)
                    return
                }
            }
            if handshake != nil { stepHandshake() }
            if ended { return }
            flush()
            if ended { return }
            let now = ContinuousClock.now
            if let expired = expiredBound(at: now) {
                end(with: expired)
                return
            }
            var events = Int16(POLLIN)
            if !outbox.isEmpty || sslWantsWrite { events |= Int16(POLLOUT) }
            var fds = [pollfd(fd: socket, events: events, revents: 0), pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0)]
            _ = poll(&fds, 2, nextDeadline().map { Self.milliseconds(until: $0, from: now) } ?? -1)
            if fds[1].revents != 0 { drainWakeups() }
            if fds[0].revents & Int16(POLLIN | POLLHUP | POLLERR) != 0, handshake == nil {
                readAvailable()
            }
        }
    }

    private func take(_ request: Request) {
        switch request {
        case .send(let bytes, let operation, let limit, let deadline, let done):
            outbox.append((bytes, 0, operation, limit, deadline, done))
        case .watch(let operation, let limit, let deadline, let renewed):
            watch = (operation, limit, deadline, renewed)
        case .stopWatching:
            watch = nil
        case .startTLS(let host, let file, let limit, let deadline, let done):
            beginTLS(host: host, trustedCertificatesFile: file, limit: limit, deadline: deadline, done: done)
        case .close:
            end(with: nil)
        }
    }

    /// The first bound that has passed: a line not received, a line not sent, a handshake not
    /// completed.
    private func expiredBound(at now: ContinuousClock.Instant) -> RoomError? {
        if let watch, now >= watch.deadline {
            logger.debug("the server kept silent", metadata: ["operation": "\(watch.operation)"])
            return .timedOut(operation: watch.operation, server: server, after: watch.limit)
        }
        if let late = outbox.first(where: { now >= $0.deadline }) {
            return .timedOut(operation: late.operation, server: server, after: late.limit)
        }
        if let handshake, now >= handshake.deadline {
            return .timedOut(operation: .tlsHandshake, server: server, after: handshake.limit)
        }
        return nil
    }

    private func nextDeadline() -> ContinuousClock.Instant? {
        ([watch?.deadline, handshake?.deadline] + outbox.map(\.deadline)).compactMap { $0 }.min()
    }

    /// Reads what the socket has (through TLS once it is on), and hands over each whole line.
    private func readAvailable() {
        var chunk = [UInt8](repeating: 0, count: 16 << 10)
        while !ended {
            let count: Int = chunk.withUnsafeMutableBytes { buffer in
                if let ssl { return Int(SSL_read(ssl, buffer.baseAddress, Int32(buffer.count))) }
                return Glibc.read(socket, buffer.baseAddress, buffer.count)
            }
            if count > 0 {
                acknowledgeQuickly()
                received.append(contentsOf: chunk[0..<count])
                handOverLines()
                continue
            }
            if let ssl {
                switch SSL_get_error(ssl, Int32(count)) {
                case SSL_ERROR_WANT_READ:
                    return
                case SSL_ERROR_WANT_WRITE:
                    sslWantsWrite = true
                    return
                case SSL_ERROR_ZERO_RETURN:
                    end(with: nil)
                default:
                    end(with: .connectionFailed(server: server, reason: "TLS: \(Self.openSSLErrors())"))
                }
                return
            }
            if count == 0 {
                end(with: nil)                  // the server closed the connection
            } else if errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR {
                end(with: .connectionFailed(server: server, reason: String(cString: strerror(errno))))
            }
            return
        }
    }

    private func handOverLines() {
        // The lines handed over are removed once, at the end: removing each as it went moved the
        // rest of the buffer once per line (a 16 kB read of 5,000 short lines moved about 40 MB).
        var start = received.startIndex
        defer { received.removeSubrange(..<start) }
        while let newline = received[start...].firstIndex(of: UInt8(ascii: "\n")) {
            let bytes = received[start..<newline]
            start = newline + 1
            guard let line = String(validating: bytes, as: UTF8.self) else {
                end(with: .malformedMessage(line: String(decoding: bytes, as: UTF8.self), reason: "not UTF-8"))
                return
            }
            let trimmed = line.trimmingCharacters(in: .whitespacesAndNewlines)
            logger.trace("received", metadata: ["line": "\(trimmed)"])
            continuation.yield(.success(trimmed))
            if let current = watch, current.renewed { watch?.deadline = .now + current.limit }
            if ended { return }
        }
        if received.count - start > Self.maximumLineLength {
            end(with: .malformedMessage(line: String(decoding: received[start...].prefix(200), as: UTF8.self),
                                        reason: "a line longer than \(Self.maximumLineLength) bytes"))
        }
    }

    /// Writes what is pending, as far as the socket takes it; answers each line once written.
    private func flush() {
        guard handshake == nil else { return }  // lines go out once TLS is up (none are sent meanwhile)
        sslWantsWrite = false
        while !outbox.isEmpty, !ended {
            let written: Int = outbox[0].bytes.withUnsafeBytes { buffer in
                let rest = UnsafeRawBufferPointer(rebasing: buffer[outbox[0].sent...])
                if let ssl { return Int(SSL_write(ssl, rest.baseAddress, Int32(rest.count))) }
                return Glibc.send(socket, rest.baseAddress, rest.count, Int32(MSG_NOSIGNAL))
            }
            if written > 0 {
                outbox[0].sent += written
                if outbox[0].sent == outbox[0].bytes.count { outbox.removeFirst().done(nil) }
                continue
            }
            if let ssl {
                switch SSL_get_error(ssl, Int32(written)) {
                case SSL_ERROR_WANT_WRITE, SSL_ERROR_WANT_READ:
                    return
                default:
                    end(with: .connectionFailed(server: server, reason: "TLS: \(Self.openSSLErrors())"))
                    return
                }
            }
            if errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR { return }
            end(with: .connectionFailed(server: server, reason: String(cString: strerror(errno))))
        }
    }

    /// Sets up OpenSSL on the socket and starts the handshake.
    private func beginTLS(host: String, trustedCertificatesFile: String?, limit: Duration, deadline: ContinuousClock.Instant,
                          done: @escaping @Sendable (RoomError?) -> Void) {
        guard ssl == nil, handshake == nil else {
            done(.connectionFailed(server: server, reason: "TLS: already started"))
            return
        }
        ERR_clear_error()
        guard let context = SSL_CTX_new(TLS_client_method()) else {
            done(.connectionFailed(server: server, reason: "TLS: \(Self.openSSLErrors())"))
            return
        }
        self.context = context
        _ = playerkit_ssl_ctx_require_tls12(context)
        playerkit_ssl_ctx_verify_peer(context)
        SSL_CTX_set_default_verify_paths(context)
        if let trustedCertificatesFile, SSL_CTX_load_verify_locations(context, trustedCertificatesFile, nil) != 1 {
            done(.connectionFailed(server: server, reason: "TLS: cannot read the trusted certificates in \(trustedCertificatesFile): \(Self.openSSLErrors())"))
            end(with: nil)
            return
        }
        guard let ssl = SSL_new(context) else {
            done(.connectionFailed(server: server, reason: "TLS: \(Self.openSSLErrors())"))
            return
        }
        self.ssl = ssl
        SSL_set_fd(ssl, socket)
        // The name check: a host name (also sent as SNI), or an address literal against the
        // certificate's addresses.
        if X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), host) != 1 {
            ERR_clear_error()
            _ = playerkit_ssl_set_server_name(ssl, host)
            _ = SSL_set1_host(ssl, host)
        }
        handshake = (limit, deadline, done)
    }

    /// Moves the handshake on as far as the socket allows; completes it or fails the connection.
    private func stepHandshake() {
        guard let ssl, let current = handshake else { return }
        while true {
            let result = SSL_connect(ssl)
            if result == 1 {
                handshake = nil
                current.done(nil)
                // Lines the server sent right after the handshake may be in OpenSSL's buffer.
                readAvailable()
                return
            }
            let error = SSL_get_error(ssl, result)
            if error == SSL_ERROR_WANT_READ || error == SSL_ERROR_WANT_WRITE {
                sslWantsWrite = error == SSL_ERROR_WANT_WRITE
                // Wait for the socket: poll until it is ready or the handshake's deadline.
                let now = ContinuousClock.now
                guard now < current.deadline else { return }
                var fds = [pollfd(fd: socket, events: Int16(error == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT), revents: 0),
                           pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0)]
                _ = poll(&fds, 2, Self.milliseconds(until: current.deadline, from: now))
                if fds[1].revents != 0 { return }   // a request (a close): served by the loop
                if fds[0].revents == 0 { return }   // the deadline
                continue
            }
            let verify = SSL_get_verify_result(ssl)
            let reason = verify != X509_V_OK
                ? "TLS: certificate verify failed (\(String(cString: X509_verify_cert_error_string(verify))))"
                : "TLS handshake failed: \(Self.openSSLErrors())"
            handshake = nil
            current.done(.connectionFailed(server: server, reason: reason))
            end(with: .connectionFailed(server: server, reason: reason))
            return
        }
    }

    /// Answers the sends and TLS requests among `requests` with `error` (the connection ended
    /// before they were taken).
    private func answer(_ requests: ArraySlice<Request>, with error: RoomError) {
        for request in requests {
            switch request {
            case .send(_, _, _, _, let done), .startTLS(_, _, _, _, let done): done(error)
            case .watch, .stopWatching, .close: break
            }
        }
    }

    /// Ends the connection once: `error` (if any) ends ``lines``; pending sends and a pending
    /// handshake are answered with it; the socket, TLS and pipe are released.
    func end(with error: RoomError?) {
        guard !ended else { return }
        ended = true
        let pending = inbox.withLock { inbox -> [Request] in
            inbox.ended = true
            defer { inbox.requests = [] }
            return inbox.requests
        }
        let gone = error ?? .connectionFailed(server: server, reason: "the connection is closed")
        endedWith = gone
        for entry in outbox { entry.done(gone) }
        outbox = []
        handshake?.done(gone)
        handshake = nil
        answer(pending[...], with: gone)
        if let error { continuation.yield(.failure(error)) }
        continuation.finish()
        if let ssl {
            SSL_shutdown(ssl)
            SSL_free(ssl)
            self.ssl = nil
        }
        if let context {
            SSL_CTX_free(context)
            self.context = nil
        }
        if socket >= 0 {
            Glibc.close(socket)
            socket = -1
        }
        Glibc.close(wakeRead)
        Glibc.close(wakeWrite)
    }

    private func drainWakeups() {
        var bytes = [UInt8](repeating: 0, count: 64)
        while Glibc.read(wakeRead, &bytes, bytes.count) > 0 {}
    }

    /// Acknowledges what arrives at once (Linux's TCP_QUICKACK, which the kernel turns off
    /// again by itself, so it is set after every read). Syncplay's server sends without
    /// TCP_NODELAY: with our acknowledgements delayed (up to 40 ms), its next small message (a
    /// start, a pause) waited for them under Nagle's algorithm, and the room's members heard of
    /// it 40 ms apart.
    private func acknowledgeQuickly() {
        var on: Int32 = 1
        setsockopt(socket, Int32(IPPROTO_TCP), 12 /* TCP_QUICKACK */, &on, socklen_t(MemoryLayout<Int32>.size))
    }

    /// OpenSSL's queued errors, oldest first, as text.
    private static func openSSLErrors() -> String {
        var texts: [String] = []
        while case let code = ERR_get_error(), code != 0 {
            var buffer = [CChar](repeating: 0, count: 256)
            ERR_error_string_n(code, &buffer, buffer.count)
            texts.append(buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) })
        }
        return texts.isEmpty ? "unknown error" : texts.joined(separator: "; ")
    }

    /// Milliseconds from `now` to `deadline`, rounded up, at least 0 (poll's timeout).
    private static func milliseconds(until deadline: ContinuousClock.Instant, from now: ContinuousClock.Instant) -> Int32 {
        let (seconds, attoseconds) = (deadline - now).components
        let milliseconds = seconds * 1000 + (attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000
        return Int32(clamping: max(0, milliseconds))
    }
}
