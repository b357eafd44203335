import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A TCP proxy on 127.0.0.1 that puts network faults between a client (a player) and a server
/// (a ``LoopbackMediaServer``), for tests and the soak: the server vanishing and coming back,
/// a path that swallows everything, a trickle. One thread per direction of each connection;
/// not for production.
///
/// ```swift
/// let proxy = FaultProxy(upstreamPort: server.port)
/// try proxy.start()
/// try await player.load(MediaSource(proxy.url("clip.mp4").absoluteString))
/// proxy.setMode(.down)   // connections reset, new ones refused
/// proxy.setMode(.pass)   // back on the same port
/// ```
public final class FaultProxy: @unchecked Sendable {
    // @unchecked: mutable state is in `state` (locked).

    /// What the proxy does to traffic.
    public enum Mode: Sendable, Hashable {
        /// Forwards everything at full speed.
        case pass
        /// The server is gone: every open connection is reset and the port refuses new ones
        /// (the listening socket is closed) until the mode changes again.
        case down
        /// A dead path: connections are accepted and kept, but nothing goes through either way.
        case blackhole
        /// Forwards the server's bytes at most this fast (the client's at full speed).
        case trickle(bytesPerSecond: Int)
        /// Holds every chunk, both ways, for `seconds` plus a uniformly random jitter of up to
        /// ±`jitter` seconds before passing it on, in order: a long, uneven path (what netem's
        /// `delay 50ms 5ms` does, in user space).
        case delay(seconds: Double, jitter: Double)

        var isDelay: Bool {
            if case .delay = self { true } else { false }
        }
    }

    private struct State {
        var mode: Mode = .pass
        var listener: Int32 = -1
        var connections: Set<Int32> = []
        var stopped = false
        var accepted = 0
        /// Bumped by every change to `.down`, so connections made before it know to end.
        var generation = 0
        /// How long each chunk was held in `.delay` mode (seconds, receipt to send).
        var holds: [Double] = []
    }

    private let upstreamPort: UInt16
    private let state = NSLock()
    private var storage = State()
    /// The port the proxy listens on (0 before ``start()``); kept across ``Mode/down``.
    public private(set) var port: UInt16 = 0

    /// A proxy to `upstreamPort` on 127.0.0.1.
    public init(upstreamPort: UInt16) {
        self.upstreamPort = upstreamPort
    }

    deinit { stop() }

    private func locked<Value>(_ body: (inout State) -> Value) -> Value {
        state.lock()
        defer { state.unlock() }
        return body(&storage)
    }

    /// The URL of `name` through the proxy.
    public func url(_ name: String) -> URL { URL(string: "http://127.0.0.1:\(port)/\(name)")! }

    /// The current mode.
    public var mode: Mode { locked { $0.mode } }

    /// How many connections the proxy accepted so far.
    public var acceptedConnections: Int { locked { $0.accepted } }

    /// How long each chunk was really held in ``Mode/delay(seconds:jitter:)`` mode (seconds, from
    /// its receipt to its send, in the order sent; the first 100,000): what the path delayed,
    /// which a loaded machine can make longer than the mode asked.
    public var realizedDelays: [Double] { locked { $0.holds } }

    /// Starts listening on an ephemeral port of 127.0.0.1.
    public func start() throws {
        signal(SIGPIPE, SIG_IGN)
        try listen(on: 0)
    }

    /// Changes what the proxy does; takes effect at once for open connections too.
    public func setMode(_ mode: Mode) {
        let (wasDown, toReset) = locked { state -> (Bool, [Int32]) in
            let wasDown = state.mode == .down
            state.mode = mode
            guard mode == .down, !wasDown else { return (wasDown, []) }
            state.generation += 1
            let listener = state.listener
            state.listener = -1
            if listener >= 0 {
                Glibc.shutdown(listener, Int32(SHUT_RDWR))
                close(listener)
            }
            return (wasDown, Array(state.connections))
        }
        for connection in toReset {
            var linger = linger(l_onoff: 1, l_linger: 0)
            setsockopt(connection, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<linger>.size))
            Glibc.shutdown(connection, Int32(SHUT_RDWR))
        }
        if wasDown, mode != .down { relisten() }
    }

    /// Whether the proxy is listening (false while ``Mode/down``, after ``stop()``, or when
    /// listening again on its port failed).
    public var isListening: Bool { locked { $0.listener >= 0 } }

    /// Listens on the same port again after ``Mode/down``: the port may be briefly unavailable
    /// (a connection of the old listener still closing), so binding is retried for up to two
    /// seconds, on the monotonic clock; ``isListening`` tells whether it worked.
    private func relisten() {
        let deadline = ContinuousClock.now + .seconds(2)
        while (try? listen(on: port)) == nil, ContinuousClock.now < deadline {
            Thread.sleep(forTimeInterval: 0.02)
        }
    }

    /// Stops listening and closes every connection.
    public func stop() {
        let (listener, connections) = locked { state -> (Int32, [Int32]) in
            state.stopped = true
            defer { state.listener = -1 }
            return (state.listener, Array(state.connections))
        }
        if listener >= 0 {
            Glibc.shutdown(listener, Int32(SHUT_RDWR))
            close(listener)
        }
        for connection in connections { Glibc.shutdown(connection, Int32(SHUT_RDWR)) }
    }

    private func listen(on requestedPort: UInt16) throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw POSIXError(.init(rawValue: errno) ?? .EIO) }
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = requestedPort.bigEndian
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, Glibc.listen(fd, 64) == 0 else {
            let code = errno
            close(fd)
            throw POSIXError(.init(rawValue: code) ?? .EIO)
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        port = UInt16(bigEndian: address.sin_port)
        locked { $0.listener = fd }
        let thread = Thread { [self] in acceptLoop(fd) }
        thread.name = "FaultProxy"
        thread.start()
    }

    private func acceptLoop(_ listener: Int32) {
        while true {
            let client = accept(listener, nil, nil)
            guard client >= 0 else {
                if errno == EINTR { continue }
                return
            }
            let generation = locked { state -> Int? in
                guard !state.stopped, state.mode != .down else { return nil }
                state.accepted += 1
                state.connections.insert(client)
                return state.generation
            }
            guard let generation, let upstream = connectUpstream() else {
                close(client)
                continue
            }
            locked { _ = $0.connections.insert(upstream) }
            let closer = Closer(client: client, upstream: upstream, proxy: self)
            for (from, to, downstream) in [(client, upstream, false), (upstream, client, true)] {
                let thread = Thread { [self] in
                    forward(from: from, to: to, downstream: downstream, generation: generation)
                    closer.finishOne()
                }
                thread.name = "FaultProxy.forward"
                thread.start()
            }
        }
    }

    /// Closes both sockets of a connection once both directions ended.
    private final class Closer: @unchecked Sendable {
        let client: Int32
        let upstream: Int32
        weak var proxy: FaultProxy?
        private let lock = NSLock()
        private var remaining = 2

        init(client: Int32, upstream: Int32, proxy: FaultProxy) {
            self.client = client
            self.upstream = upstream
            self.proxy = proxy
        }

        func finishOne() {
            lock.lock()
            remaining -= 1
            let last = remaining == 0
            lock.unlock()
            if !last {
                // Wake the other direction.
                Glibc.shutdown(client, Int32(SHUT_RDWR))
                Glibc.shutdown(upstream, Int32(SHUT_RDWR))
                return
            }
            proxy?.forget(client, upstream)
            close(client)
            close(upstream)
        }
    }

    private func forget(_ sockets: Int32...) {
        locked { state in for socket in sockets { state.connections.remove(socket) } }
    }

    private func connectUpstream() -> Int32? {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return nil }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = upstreamPort.bigEndian
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else {
            close(fd)
            return nil
        }
        return fd
    }

    /// Copies `from` to `to` as the mode allows, until either side ends, the mode goes down, or
    /// the proxy stops. Delayed chunks wait on this thread, in order, and go out at their
    /// deadlines (the poll sleeps until the next one); the connection is not closed before they
    /// did.
    private func forward(from: Int32, to: Int32, downstream: Bool, generation: Int) {
        Self.raiseThreadPriority()
        var buffer = [UInt8](repeating: 0, count: 16 << 10)
        var held: [(received: UInt64, deadline: UInt64, chunk: [UInt8])] = []
        var lastDeadline: UInt64 = 0
        /// Sends the held chunks whose deadline passed (all of them when `all`, waiting for each);
        /// false when the peer is gone.
        func release(all: Bool) -> Bool {
            while let first = held.first {
                let now = DispatchTime.now().uptimeNanoseconds
                if first.deadline > now {
                    guard all else { return true }
                    let wait = first.deadline - now
                    var pause = timespec(tv_sec: Int(wait / 1_000_000_000), tv_nsec: Int(wait % 1_000_000_000))
                    var left = timespec()
                    while nanosleep(&pause, &left) != 0, errno == EINTR { pause = left }
                    continue
                }
                held.removeFirst()
                guard sendAll(first.chunk, to: to) else { return false }
                let sent = DispatchTime.now().uptimeNanoseconds
                locked { state in
                    if state.holds.count < 100_000 { state.holds.append(Double(sent - first.received) / 1e9) }
                }
            }
            return true
        }
        defer { _ = release(all: true) }
        while true {
            let (mode, current, stopped) = locked { ($0.mode, $0.generation, $0.stopped) }
            if stopped || current != generation { return }
            if mode == .blackhole {
                Thread.sleep(forTimeInterval: 0.02)
                continue
            }
            guard release(all: !mode.isDelay) else { return }
            // Sleep until data comes, or the next held chunk is due (the mode is read again at
            // least every 50 ms).
            var timeout: Int32 = 50
            if let next = held.first?.deadline {
                let now = DispatchTime.now().uptimeNanoseconds
                timeout = next <= now ? 0 : Int32(min(50, (next - now + 999_999) / 1_000_000))
            }
            var descriptor = pollfd(fd: from, events: Int16(POLLIN), revents: 0)
            let ready = poll(&descriptor, 1, timeout)
            if ready == 0 { continue }
            if ready < 0 {
                if errno == EINTR { continue }
                return
            }
            var limit = buffer.count
            if downstream, case .trickle(let rate) = mode { limit = max(1, min(buffer.count, rate / 20)) }
            let count = recv(from, &buffer, limit, 0)
            if count <= 0 { return }
            if case .delay(let seconds, let jitter) = mode {
                let now = DispatchTime.now().uptimeNanoseconds
                let wait = max(0, seconds + Double.random(in: -jitter...jitter))
                lastDeadline = max(lastDeadline, now + UInt64(wait * 1e9))
                held.append((received: now, deadline: lastDeadline, chunk: Array(buffer[0..<count])))
                continue
            }
            guard sendAll(Array(buffer[0..<count]), to: to) else { return }
            if downstream, case .trickle(let rate) = mode {
                Thread.sleep(forTimeInterval: Double(count) / Double(max(rate, 1)))
            }
        }
    }

    /// Writes all of `bytes` to `fd`; false when the peer is gone.
    private func sendAll(_ bytes: [UInt8], to fd: Int32) -> Bool {
        var sent = 0
        while sent < bytes.count {
            let result = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress!.advanced(by: sent), bytes.count - sent, Int32(MSG_NOSIGNAL)) }
            if result < 0, errno == EINTR { continue }
            if result <= 0 { return false }
            sent += result
        }
        return true
    }

    /// Gives the calling forwarding thread a nice value of -10 where allowed (as root): the proxy
    /// stands in for the kernel's network path, which a loaded machine's other processes do not
    /// delay. Elsewhere it runs at the normal priority, and ``realizedDelays`` shows the cost.
    private static func raiseThreadPriority() {
        var buffer = [CChar](repeating: 0, count: 64)
        let count = readlink("/proc/thread-self", &buffer, buffer.count - 1)
        guard count > 0 else { return }
        let path = String(decoding: buffer[0..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        guard let thread = path.split(separator: "/").last.flatMap({ id_t(String($0)) }) else { return }
        _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), thread, -10)
    }
}
