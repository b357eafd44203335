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

    /// Connects to `host:port` within `timeout`.
    /// - Throws: ``RoomError/connectionFailed(server:reason:)``.
    static func open(host: String, port: Int, timeout: Duration, logger: Logger = Logger(label: "PlayerKit.rooms")) async throws(RoomError) -> RoomConnection {
        let server = "\(host):\(port)"
        let (lines, continuation) = AsyncStream<Result<String, RoomError>>.makeStream()
        do {
            let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .connectTimeout(.nanoseconds(Int64(timeout.components.seconds) * 1_000_000_000 + timeout.components.attoseconds / 1_000_000_000))
                .channelOption(.socketOption(.so_keepalive), value: 1)
                .channelOption(.socketOption(.tcp_nodelay), value: 1)
                .connect(host: host, port: port) { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandler(QuickAcknowledger())
                        try channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(LineBasedFrameDecoder()))
                        try channel.pipeline.syncOperations.addHandler(LineForwarder(continuation: continuation, logger: logger))
                        return channel
                    }
                }
            return RoomConnection(channel: channel, lines: lines, server: server, logger: logger)
        } catch {
            continuation.finish()
            throw .connectionFailed(server: server, reason: "\(error)")
        }
    }

    /// Sends one line (a newline is added).
    /// - Throws: ``RoomError/connectionFailed(server:reason:)`` when the connection is gone.
    func send(_ line: String) async throws(RoomError) {
        logger.trace("sent", metadata: ["line": "\(line)"])
        var buffer = channel.allocator.buffer(capacity: line.utf8.count + 2)
        buffer.writeString(line)
        buffer.writeString("\r\n")
        do {
            try await channel.writeAndFlush(buffer)
        } catch {
            throw .connectionFailed(server: server, reason: "\(error)")
        }
    }

    /// Switches the connection to TLS (after the server agreed to), checking the server's
    /// certificate against `configuration`; returns once the handshake completed.
    /// - Throws: ``RoomError/connectionFailed(server:reason:)`` naming why the handshake failed
    ///   (an untrusted certificate, a name that does not match).
    func startTLS(configuration: TLSConfiguration, serverHostname: String?) async throws(RoomError) {
        do {
            let context = try NIOSSLContext(configuration: configuration)
            let handshake = channel.eventLoop.makePromise(of: Void.self)
            try await channel.eventLoop.submit { [channel] in
                let handler = try NIOSSLClientHandler(context: context, serverHostname: serverHostname)
                try channel.pipeline.syncOperations.addHandler(handler, position: .first)
                try channel.pipeline.syncOperations.addHandler(HandshakeWaiter(handshake), position: .after(handler))
            }.get()
            try await handshake.futureResult.get()
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
    /// A promise is completed once: the first outcome counts.
    private var done = false

    init(_ promise: EventLoopPromise<Void>) {
        self.promise = promise
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
        if let error { promise.fail(error) } else { promise.succeed(()) }
    }
}

/// Hands each line to the connection's stream; the end of the connection finishes it.
private final class LineForwarder: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    private let continuation: AsyncStream<Result<String, RoomError>>.Continuation
    private let logger: Logger
    private var failed = false

    init(continuation: AsyncStream<Result<String, RoomError>>.Continuation, logger: Logger) {
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
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // A line over the decoder's limit, a TLS failure, a reset.
        fail(.connectionFailed(server: "\(context.remoteAddress.map { "\($0)" } ?? "?")", reason: "\(error)"), context: context)
    }

    func channelInactive(context: ChannelHandlerContext) {
        continuation.finish()
        context.fireChannelInactive()
    }

    private func fail(_ error: RoomError, context: ChannelHandlerContext) {
        guard !failed else { return }
        failed = true
        continuation.yield(.failure(error))
        continuation.finish()
        context.close(promise: nil)
    }
}
