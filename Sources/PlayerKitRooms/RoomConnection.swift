import Foundation
import Logging
import NIOCore
import NIOExtras
import NIOPosix
import NIOSSL
import NIOTLS

/// One TCP connection to a Syncplay server: lines out, lines in (as an async sequence), and a
/// switch to TLS in the middle (Syncplay's STARTTLS). Internal to the room client.
final class RoomConnection: Sendable {
    /// The lines the server sends, in order; finishes when the connection closes (with the
    /// error that closed it, if any).
    let lines: AsyncStream<Result<String, RoomError>>
    private let channel: any Channel
    private let server: String
    private let logger: Logger

    private init(channel: any Channel, lines: AsyncStream<Result<String, RoomError>>, server: String, logger: Logger) {
        self.channel = channel
        self.lines = lines
        self.server = server
        self.logger = logger
    }

    /// Connects to `host:port` within `timeout` (name resolution included). The wait ends early,
    /// with ``RoomError/closed``, when the calling task is cancelled (``RoomClient/leave()``).
    /// - Throws: ``RoomError/timedOut(operation:server:after:)`` (``RoomError/Operation/connecting``),
    ///   ``RoomError/connectionFailed(server:reason:)``, ``RoomError/closed``.
    static func open(host: String, port: Int, timeout: Duration, logger: Logger = Logger(label: "PlayerKit.rooms")) async throws(RoomError) -> RoomConnection {
        let server = "\(host):\(port)"
        let (lines, continuation) = AsyncStream<Result<String, RoomError>>.makeStream()
        let connecting = ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .connectTimeout(TimeAmount(timeout))
            .channelOption(.socketOption(.so_keepalive), value: 1)
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(QuickAcknowledger())
                    try channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(LineBasedFrameDecoder()))
                    try channel.pipeline.syncOperations.addHandler(LineForwarder(server: server, continuation: continuation, logger: logger))
                }
            }
            .connect(host: host, port: port)
        // The wait ends with the connection, its failure or the task's cancellation; a connection
        // made after its wait was abandoned is closed.
        let outcome = connecting.eventLoop.makePromise(of: (any Channel).self)
        connecting.cascade(to: outcome)
        outcome.futureResult.whenFailure { _ in connecting.whenSuccess { $0.close(promise: nil) } }
        do {
            let channel = try await withTaskCancellationHandler {
                try await outcome.futureResult.get()
            } onCancel: {
                outcome.fail(CancellationError())
            }
            return RoomConnection(channel: channel, lines: lines, server: server, logger: logger)
        } catch ChannelError.connectTimeout {
            continuation.finish()
            throw .timedOut(operation: .connecting, server: server, after: timeout)
        } catch is CancellationError {
            continuation.finish()
            throw .closed
        } catch {
            continuation.finish()
            throw .connectionFailed(server: server, reason: "\(error)")
        }
    }

    /// Bounds the wait for the server's next line: unless a line arrives within `remaining`
    /// (`limit` when nil), ``lines`` ends with ``RoomError/timedOut(operation:server:after:)``
    /// naming `operation` and `limit`, and the connection closes. With `renewedByEachLine`, every
    /// line starts the wait anew (a bound on silence); without, it holds until the next call.
    /// Replaces the previous bound.
    func expectLine(_ operation: RoomError.Operation, limit: Duration, remaining: Duration? = nil, renewedByEachLine: Bool = false) {
        channel.pipeline.fireUserInboundEventTriggered(LineForwarder.Watch.line(
            operation: operation, limit: limit, remaining: max(.zero, remaining ?? limit), renewed: renewedByEachLine))
    }

    /// Ends the bound set by ``expectLine(_:limit:remaining:renewedByEachLine:)``.
    func stopExpectingLines() {
        channel.pipeline.fireUserInboundEventTriggered(LineForwarder.Watch.none)
    }

    /// Sends one line (a newline is added). Unless the connection has taken it within
    /// `remaining` (`limit` when nil), the connection ends with
    /// ``RoomError/timedOut(operation:server:after:)`` naming `operation` and `limit` (a server
    /// that does not read, its buffers full).
    /// - Throws: that ``RoomError/timedOut(operation:server:after:)``, or
    ///   ``RoomError/connectionFailed(server:reason:)`` when the connection is gone.
    func send(_ line: String, operation: RoomError.Operation, limit: Duration, remaining: Duration? = nil) async throws(RoomError) {
        logger.trace("sent", metadata: ["line": "\(line)"])
        var buffer = channel.allocator.buffer(capacity: line.utf8.count + 2)
        buffer.writeString(line)
        buffer.writeString("\r\n")
        let written = channel.eventLoop.makePromise(of: Void.self)
        let timeout = RoomError.timedOut(operation: operation, server: server, after: limit)
        let timer = channel.eventLoop.scheduleTask(in: TimeAmount(max(.zero, remaining ?? limit))) { [channel] in
            written.fail(timeout)
            channel.pipeline.fireUserInboundEventTriggered(LineForwarder.Watch.fail(timeout))
        }
        channel.writeAndFlush(buffer).whenComplete { result in
            timer.cancel()
            written.completeWith(result)
        }
        do {
            try await written.futureResult.get()
        } catch let error as RoomError {
            throw error
        } catch {
            throw .connectionFailed(server: server, reason: "\(error)")
        }
    }

    /// Switches the connection to TLS (after the server agreed to), checking the server's
    /// certificate against `configuration`; returns once the handshake completed, within
    /// `remaining` (`limit` when nil). Cancelling the calling task closes the connection.
    /// - Throws: ``RoomError/timedOut(operation:server:after:)``
    ///   (``RoomError/Operation/tlsHandshake``, `limit`), ``RoomError/connectionFailed(server:reason:)``
    ///   naming why the handshake failed (an untrusted certificate, a name that does not match).
    func startTLS(configuration: TLSConfiguration, serverHostname: String?, limit: Duration, remaining: Duration? = nil) async throws(RoomError) {
        let timeout = RoomError.timedOut(operation: .tlsHandshake, server: server, after: limit)
        let delay = max(.zero, remaining ?? limit)
        do {
            let context = try NIOSSLContext(configuration: configuration)
            let handshake = channel.eventLoop.makePromise(of: Void.self)
            try await channel.eventLoop.submit { [channel] in
                let handler = try NIOSSLClientHandler(context: context, serverHostname: serverHostname)
                try channel.pipeline.syncOperations.addHandler(handler, position: .first)
                try channel.pipeline.syncOperations.addHandler(HandshakeWaiter(handshake, timeout: timeout, after: delay),
                                                               position: .after(handler))
            }.get()
            try await withTaskCancellationHandler {
                try await handshake.futureResult.get()
            } onCancel: { [channel] in
                channel.close(promise: nil)
            }
        } catch let error as RoomError {
            throw error
        } catch {
            throw .connectionFailed(server: server, reason: "TLS: \(error)")
        }
    }

    /// Closes the connection; ``lines`` then finishes.
    func close() {
        channel.close(promise: nil)
    }
}

/// Acknowledges what arrives at once (Linux's TCP_QUICKACK, which the kernel turns off again by
/// itself, so it is set after every read). Syncplay's server sends without TCP_NODELAY: with our
/// acknowledgements delayed (up to 40 ms), its next small message (a start, a pause) waited for
/// them under Nagle's algorithm, and the room's members heard of it 40 ms apart.
private final class QuickAcknowledger: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    func channelActive(context: ChannelHandlerContext) {
        acknowledgeQuickly(context)
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        acknowledgeQuickly(context)
        context.fireChannelRead(data)
    }

    private func acknowledgeQuickly(_ context: ChannelHandlerContext) {
        #if os(Linux)
        try? context.channel.syncOptions?.setOption(.tcpOption(.init(rawValue: 12 /* TCP_QUICKACK */)), value: 1)
        #endif
    }
}

/// Completes a promise when the TLS handshake completes, or fails it with the handshake's error.
private final class HandshakeWaiter: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    private let promise: EventLoopPromise<Void>
    private let timeout: RoomError
    private let delay: Duration
    private var timer: Scheduled<Void>?
    /// A promise is completed once: the first outcome counts.
    private var done = false

    /// Fails `promise` with `timeout` and closes the connection unless the handshake completed
    /// within `delay`.
    init(_ promise: EventLoopPromise<Void>, timeout: RoomError, after delay: Duration) {
        self.promise = promise
        self.timeout = timeout
        self.delay = delay
    }

    func handlerAdded(context: ChannelHandlerContext) {
        timer = context.eventLoop.assumeIsolated().scheduleTask(in: TimeAmount(delay)) { [self] in
            complete(timeout)
            context.close(promise: nil)
        }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let event = event as? TLSUserEvent, case .handshakeCompleted = event { complete(nil) }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        complete(error)
        context.fireErrorCaught(error)
    }

    func channelInactive(context: ChannelHandlerContext) {
        complete(ChannelError.ioOnClosedChannel)
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        complete(ChannelError.ioOnClosedChannel)
    }

    private func complete(_ error: (any Error)?) {
        guard !done else { return }
        done = true
        timer?.cancel()
        timer = nil
        if let error { promise.fail(error) } else { promise.succeed(()) }
    }
}

/// Hands each line to the connection's stream; the end of the connection finishes it. Bounds
/// the wait for the next line as a ``Watch`` (a user event) says: when it expires, the stream
/// ends with ``RoomError/timedOut(operation:server:after:)`` and the connection closes.
private final class LineForwarder: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer

    /// What the connection waits for, sent down its pipeline from any thread.
    enum Watch: Sendable {
        /// A line within `remaining`, or the connection ends with `timedOut(operation, after: limit)`;
        /// with `renewed`, each line starts the wait anew.
        case line(operation: RoomError.Operation, limit: Duration, remaining: Duration, renewed: Bool)
        /// No bound on the next line.
        case none
        /// End the connection with `error` (a send that timed out).
        case fail(RoomError)
    }

    private let server: String
    private let continuation: AsyncStream<Result<String, RoomError>>.Continuation
    private let logger: Logger
    private var failed = false
    private var watch: (operation: RoomError.Operation, limit: Duration, renewed: Bool)?
    private var timer: Scheduled<Void>?

    init(server: String, continuation: AsyncStream<Result<String, RoomError>>.Continuation, logger: Logger) {
        self.server = server
        self.continuation = continuation
        self.logger = logger
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var buffer = unwrapInboundIn(data)
        guard let bytes = buffer.readBytes(length: buffer.readableBytes) else { return }
        guard let line = String(validating: bytes, as: UTF8.self) else {
            fail(.malformedMessage(line: String(decoding: bytes, as: UTF8.self), reason: "not UTF-8"), context: context)
            return
        }
        let trimmed = line.trimmingCharacters(in: .whitespacesAndNewlines)
        logger.trace("received", metadata: ["line": "\(trimmed)"])
        continuation.yield(.success(trimmed))
        if let watch, watch.renewed { arm(in: watch.limit, context: context) }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        guard let command = event as? Watch else {
            context.fireUserInboundEventTriggered(event)
            return
        }
        timer?.cancel()
        timer = nil
        watch = nil
        switch command {
        case .line(let operation, let limit, let remaining, let renewed):
            watch = (operation, limit, renewed)
            arm(in: remaining, context: context)
        case .none:
            break
        case .fail(let error):
            fail(error, context: context)
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // A TLS failure, a reset.
        fail(.connectionFailed(server: server, reason: "\(error)"), context: context)
    }

    func channelInactive(context: ChannelHandlerContext) {
        timer?.cancel()
        timer = nil
        continuation.finish()
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        timer?.cancel()
        timer = nil
    }

    /// (Re)starts the wait for the next line: `delay` from now.
    private func arm(in delay: Duration, context: ChannelHandlerContext) {
        timer?.cancel()
        guard let watch else { return }
        let error = RoomError.timedOut(operation: watch.operation, server: server, after: watch.limit)
        timer = context.eventLoop.assumeIsolated().scheduleTask(in: TimeAmount(delay)) { [self] in
            logger.debug("the server kept silent", metadata: ["error": "\(error)"])
            fail(error, context: context)
        }
    }

    private func fail(_ error: RoomError, context: ChannelHandlerContext) {
        guard !failed else { return }
        failed = true
        timer?.cancel()
        timer = nil
        continuation.yield(.failure(error))
        continuation.finish()
        context.close(promise: nil)
    }
}
