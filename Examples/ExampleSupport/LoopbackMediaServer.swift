import Foundation
import PlayerKit
#if canImport(Glibc)
import Glibc
#endif

/// A small HTTP/1.1 file server on 127.0.0.1 for the examples, tests and benchmarks: serves
/// files from memory with Range requests, ETag and Last-Modified, keep-alive, optional
/// throttling, and faults on demand (404, a reset in the middle of a body, a stall, redirects).
/// It counts what it serves, per path. One thread per connection; not for production.
public final class LoopbackMediaServer: @unchecked Sendable {
    // @unchecked: mutable state is in `state` (Guarded); the listening socket is set once.

    /// A fault the server injects for one path.
    public enum Fault: Sendable, Hashable {
        /// Answers 404.
        case notFound
        /// Sends the headers and `bytes` of the body, then resets the connection (RST). `times`
        /// requests fail this way, then the path is served normally (nil: always).
        case resetAfter(bytes: Int, times: Int?)
        /// Sends the headers and `bytes` of the body, then closes the connection cleanly (a body
        /// cut short). `times` requests fail this way, then the path is served normally (nil: always).
        case closeAfter(bytes: Int, times: Int?)
        /// Accepts the request and sends nothing until the client gives up.
        case stall
        /// Sends the headers and `bytes` of the body, then nothing. `times` requests stall this
        /// way, then the path is served normally (nil: always).
        case stallAfter(bytes: Int, times: Int?)
        /// Redirects (302) to another path of this server.
        case redirect(to: String)
        /// Serves the file only up to byte `offset`: every response (a range past it too) sends
        /// its headers as usual, its body up to `offset`, then resets the connection (RST). A
        /// server that lost the rest of the file: reconnecting never gets further.
        case truncateAt(offset: Int)
        /// Serves the file only up to byte `offset`, then sends nothing (every request, a range
        /// past it too): a server stuck at one place, however often it is asked.
        case stallAt(offset: Int)
        /// Sends the headers, then `bytes` of the body every `interval`, for as long as the
        /// client listens: a server that is never silent for long and never gets anywhere.
        case trickle(bytes: Int, every: Duration)
        /// Holds back the bytes from `offset` on until the fault is removed (`setFault(nil, ...)`),
        /// then sends them: a response that reaches `offset` (one starting there too) sends
        /// nothing more until then; one that starts past it is served at once. A gate a test
        /// opens when it has seen what it waits for, whatever the machine's speed.
        case holdAt(offset: Int)
    }

    /// How the server answers a path, beside faults: the habits of real origins.
    public struct Style: OptionSet, Sendable, Hashable {
        public let rawValue: Int
        public init(rawValue: Int) { self.rawValue = rawValue }
        /// No Content-Length: a chunked body (Transfer-Encoding: chunked), as dynamic servers send.
        public static let chunked = Style(rawValue: 1)
        /// Range is ignored: every answer is 200 with the whole body.
        public static let ignoresRange = Style(rawValue: 2)
        /// No ETag and no Last-Modified.
        public static let noValidators = Style(rawValue: 4)
    }

    /// One request as the server saw it.
    public struct Request: Sendable, Hashable {
        /// The path, with its leading "/".
        public let path: String
        /// The first byte asked for (0 without a Range header).
        public let rangeStart: Int64
        /// Whether a Range header was sent.
        public let hasRange: Bool
    }

    /// What the server did for one path.
    public struct PathCounts: Sendable, Hashable {
        /// Requests received.
        public var requests = 0
        /// Body bytes sent.
        public var bodyBytes: Int64 = 0
        /// Responses the client closed before their body ended.
        public var closedByClient = 0
    }

    private struct File {
        var data: Data
        var etag: String
        var lastModified: String
    }

    private struct State {
        var files: [String: File] = [:]
        /// Paths whose body is made for each request (``setGenerator(_:_:)``).
        var generators: [String: @Sendable () -> Data] = [:]
        var faults: [String: Fault] = [:]
        var styles: [String: Style] = [:]
        var faultUses: [String: Int] = [:]
        var counts: [String: PathCounts] = [:]
        var log: [Request] = []
        var bytesPerSecond: Int?
        var stopped = false
        var connections: [Int32] = []
        var version = 0
    }

    private let state = Guarded(State())
    private var listener: Int32 = -1
    /// The port it listens on (after ``start()``).
    public private(set) var port: UInt16 = 0

    /// How often a rate-limited response sends its share of the rate: one burst of
    /// `bytesPerSecond × pacing` bytes (at least 1 KiB) per interval. A finer pacing is closer to
    /// a real server's TCP flow, and wastes less when a client drops a response midway (a burst
    /// written after the client closed still counts as sent).
    public let pacing: Duration

    /// A server of `files` (path without "/" → bytes), sending at most `bytesPerSecond` per
    /// response (nil: as fast as it can), in bursts every `pacing`.
    public init(files: [String: Data] = [:], bytesPerSecond: Int? = nil, pacing: Duration = .milliseconds(50)) {
        self.pacing = pacing
        state.withLock { state in
            state.bytesPerSecond = bytesPerSecond
            for (name, data) in files { state.files["/" + name] = Self.file(data, version: 0) }
        }
    }

    deinit { stop() }

    private static func file(_ data: Data, version: Int) -> File {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in data { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        let date = Date(timeIntervalSince1970: 1_700_000_000 + Double(version) * 3600)
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        return File(data: data, etag: "\"\(String(hash, radix: 16))-\(data.count)\"", lastModified: formatter.string(from: date))
    }

    /// Serves what `body` makes, new for each request, at `/name` from now on: a page made on
    /// demand, such as a `/metrics` page for a scraper.
    public func setGenerator(_ name: String, _ body: @escaping @Sendable () -> Data) {
        state.withLock { $0.generators["/" + name] = body }
    }

    /// Serves `data` at `/name` from now on (a new ETag and Last-Modified when it changes).
    public func setFile(_ name: String, _ data: Data) {
        state.withLock { state in
            state.version += 1
            state.files["/" + name] = Self.file(data, version: state.version)
        }
    }

    /// Injects `fault` for `/name` (nil removes it).
    public func setFault(_ fault: Fault?, for name: String) {
        state.withLock { state in
            state.faults["/" + name] = fault
            state.faultUses["/" + name] = 0
        }
    }

    /// Answers `/name` in `style` from now on (empty: plainly).
    public func setStyle(_ style: Style, for name: String) {
        state.withLock { $0.styles["/" + name] = style }
    }

    /// Sets the throttle for responses that start from now on.
    public func setBytesPerSecond(_ bytesPerSecond: Int?) {
        state.withLock { $0.bytesPerSecond = bytesPerSecond }
    }

    /// The URL of `/name`.
    public func url(_ name: String) -> URL { URL(string: "http://127.0.0.1:\(port)/\(name)")! }

    /// What was served for `/name`.
    public func counts(_ name: String) -> PathCounts { state.withLock { $0.counts["/" + name] ?? PathCounts() } }

    /// Every request so far, in order.
    public var requests: [Request] { state.withLock { $0.log } }

    /// Body bytes sent over every path.
    public var totalBodyBytes: Int64 { state.withLock { $0.counts.values.reduce(0) { $0 + $1.bodyBytes } } }

    /// Forgets the counts and the request log.
    public func resetCounts() {
        state.withLock { state in
            state.counts = [:]
            state.log = []
        }
    }

    /// Starts listening on 127.0.0.1, on `requested` (0: an ephemeral port; ``port`` says which).
    public func start(port requested: UInt16 = 0) throws {
        signal(SIGPIPE, SIG_IGN)
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw POSIXError(.init(rawValue: errno) ?? .EIO) }
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = requested.bigEndian
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(fd, 64) == 0 else {
            close(fd)
            throw POSIXError(.init(rawValue: errno) ?? .EIO)
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        port = UInt16(bigEndian: address.sin_port)
        listener = fd
        let thread = Thread { [self] in acceptLoop(fd) }
        thread.name = "LoopbackMediaServer"
        thread.start()
    }

    /// Stops listening and closes every connection.
    public func stop() {
        let (connections, wasStopped) = state.withLock { state -> ([Int32], Bool) in
            let was = state.stopped
            state.stopped = true
            return (state.connections, was)
        }
        guard !wasStopped, listener >= 0 else { return }
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
        for connection in connections { shutdown(connection, Int32(SHUT_RDWR)) }
    }

    private var isStopped: Bool { state.withLock { $0.stopped } }

    private func acceptLoop(_ fd: Int32) {
        while !isStopped {
            let connection = accept(fd, nil, nil)
            guard connection >= 0 else {
                if errno == EINTR { continue }
                return
            }
            // As web servers do on keep-alive connections (nginx's `tcp_nodelay`, on by
            // default): without it, a response's body waits behind its head for the client's
            // delayed ACK (up to 40 ms) on a reused connection.
            var one: Int32 = 1
            setsockopt(connection, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
            state.withLock { $0.connections.append(connection) }
            let thread = Thread { [self] in
                serve(connection)
                state.withLock { $0.connections.removeAll { $0 == connection } }
                close(connection)
            }
            thread.start()
        }
    }

    private func serve(_ connection: Int32) {
        var buffer = [UInt8]()
        while !isStopped {
            // Read one request head.
            while !buffer.containsHeadEnd {
                var chunk = [UInt8](repeating: 0, count: 4096)
                let count = recv(connection, &chunk, chunk.count, 0)
                if count <= 0 { return }
                buffer.append(contentsOf: chunk[0..<count])
                if buffer.count > 64 << 10 { return }
            }
            let end = buffer.headEnd!
            let head = String(decoding: buffer[0..<end], as: UTF8.self)
            buffer.removeFirst(end + 4)
            guard respond(to: head, on: connection) else { return }
        }
    }

    /// Answers one request; false when the connection must close.
    private func respond(to head: String, on connection: Int32) -> Bool {
        let lines = head.components(separatedBy: "\r\n")
        let parts = lines.first?.split(separator: " ") ?? []
        guard parts.count >= 2 else { return false }
        let method = String(parts[0])
        let path = String(parts[1])
        var range: (start: Int64, end: Int64?)?
        var closeAfter = false
        for line in lines.dropFirst() {
            let lower = line.lowercased()
            if lower.hasPrefix("range:"), let spec = line.split(separator: "=", maxSplits: 1).last {
                let bounds = spec.split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
                if let start = bounds.first.flatMap({ Int64($0.trimmingCharacters(in: .whitespaces)) }) {
                    range = (start, bounds.count > 1 ? Int64(bounds[1].trimmingCharacters(in: .whitespaces)) : nil)
                }
            }
            if lower.hasPrefix("connection:"), lower.contains("close") { closeAfter = true }
        }
        let (stored, generator, fault, bytesPerSecond, style) = state.withLock { state -> (File?, (@Sendable () -> Data)?, Fault?, Int?, Style) in
            state.counts[path, default: PathCounts()].requests += 1
            state.log.append(Request(path: path, rangeStart: range?.start ?? 0, hasRange: range != nil))
            var fault = state.faults[path]
            var limitedTimes: Int?
            if case .resetAfter(_, let times?) = fault { limitedTimes = times }
            if case .closeAfter(_, let times?) = fault { limitedTimes = times }
            if case .stallAfter(_, let times?) = fault { limitedTimes = times }
            if let times = limitedTimes {
                let uses = state.faultUses[path, default: 0]
                if uses >= times { fault = nil } else { state.faultUses[path] = uses + 1 }
            }
            return (state.files[path], state.generators[path], fault, state.bytesPerSecond, state.styles[path] ?? [])
        }
        // A generated page is made outside the lock, for this request.
        let file = stored ?? generator.map { Self.file($0(), version: 0) }
        switch fault {
        case .notFound:
            return send(connection, head: "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n") && !closeAfter
        case .redirect(let target):
            return send(connection, head: "HTTP/1.1 302 Found\r\nLocation: /\(target)\r\nContent-Length: 0\r\n\r\n") && !closeAfter
        case .stall:
            waitForClose(connection, path: path)
            return false
        default:
            break
        }
        guard let file else {
            return send(connection, head: "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n") && !closeAfter
        }
        let size = Int64(file.data.count)
        var status = "200 OK"
        var start: Int64 = 0
        var end = size
        var extra = ""
        if let range, !style.contains(.ignoresRange) {
            guard range.start < size else {
                return send(connection, head: "HTTP/1.1 416 Range Not Satisfiable\r\nContent-Range: bytes */\(size)\r\nContent-Length: 0\r\n\r\n")
                    && !closeAfter
            }
            start = range.start
            end = min(size, (range.end ?? (size - 1)) + 1)
            status = "206 Partial Content"
            extra = "Content-Range: bytes \(start)-\(end - 1)/\(size)\r\n"
        }
        let chunked = style.contains(.chunked)
        var headers = "HTTP/1.1 \(status)\r\nContent-Type: video/mp4\r\n"
        if !style.contains(.ignoresRange) { headers += "Accept-Ranges: bytes\r\n" }
        headers += chunked ? "Transfer-Encoding: chunked\r\n" : "Content-Length: \(end - start)\r\n"
        if !style.contains(.noValidators) { headers += "ETag: \(file.etag)\r\nLast-Modified: \(file.lastModified)\r\n" }
        headers += "\(extra)\r\n"
        guard send(connection, head: headers) else { return false }
        if method == "HEAD" { return !closeAfter }
        if case .trickle(let bytes, let every) = fault {
            var offset = start
            while offset < end, !isStopped {
                let count = Int(min(Int64(bytes), end - offset))
                let ok = file.data.withUnsafeBytes { raw -> Bool in
                    chunked ? sendChunk(connection, raw.baseAddress!.advanced(by: Int(offset)), count)
                        : sendAll(connection, raw.baseAddress!.advanced(by: Int(offset)), count)
                }
                guard ok else {
                    state.withLock { $0.counts[path, default: PathCounts()].closedByClient += 1 }
                    return false
                }
                offset += Int64(count)
                state.withLock { $0.counts[path, default: PathCounts()].bodyBytes += Int64(count) }
                Thread.sleep(forTimeInterval: Double(every.components.seconds) + Double(every.components.attoseconds) * 1e-18)
            }
            return false
        }
        var offset = start
        var limit = end
        if case .resetAfter(let bytes, _) = fault { limit = min(end, start + Int64(bytes)) }
        if case .stallAfter(let bytes, _) = fault { limit = min(end, start + Int64(bytes)) }
        if case .closeAfter(let bytes, _) = fault { limit = min(end, start + Int64(bytes)) }
        if case .truncateAt(let cut) = fault { limit = max(start, min(end, Int64(cut))) }
        if case .stallAt(let cut) = fault { limit = max(start, min(end, Int64(cut))) }
        let chunk = bytesPerSecond.map { max(1024, Int(Double($0) * (Double(pacing.components.seconds) + Double(pacing.components.attoseconds) * 1e-18))) } ?? (64 << 10)
        if case .holdAt(let cut) = fault, start <= Int64(cut) { limit = min(end, Int64(cut)) }
        let began = ContinuousClock.now
        var sent: Int64 = 0
        while true {
            while offset < limit {
                if isStopped { return false }
                let count = Int(min(Int64(chunk), limit - offset))
                let ok = file.data.withUnsafeBytes { bytes -> Bool in
                    chunked ? sendChunk(connection, bytes.baseAddress!.advanced(by: Int(offset)), count)
                        : sendAll(connection, bytes.baseAddress!.advanced(by: Int(offset)), count)
                }
                if !ok {
                    state.withLock { $0.counts[path, default: PathCounts()].closedByClient += 1 }
                    return false
                }
                offset += Int64(count)
                sent += Int64(count)
                state.withLock { $0.counts[path, default: PathCounts()].bodyBytes += Int64(count) }
                if let bytesPerSecond {
                    let due = began + .seconds(Double(sent) / Double(bytesPerSecond))
                    let wait = due - ContinuousClock.now
                    if wait > .zero { Thread.sleep(forTimeInterval: Double(wait.components.seconds) + Double(wait.components.attoseconds) * 1e-18) }
                }
            }
            guard limit < end, case .holdAt = fault else { break }
            // Held: nothing more until the fault is removed, the client leaves or the server stops.
            guard waitWhileHeld(connection, path: path) else { return false }
            limit = end
        }
        if limit < end {
            if case .closeAfter = fault {
                shutdown(connection, Int32(SHUT_WR))
                return false
            }
            if case .resetAfter = fault { resetConnection(connection); return false }
            if case .truncateAt = fault { resetConnection(connection); return false }
            waitForClose(connection, path: path)
            return false
        }
        if chunked, !send(connection, head: "0\r\n\r\n") { return false }
        return !closeAfter
    }

    /// One chunk of a chunked body.
    private func sendChunk(_ connection: Int32, _ pointer: UnsafeRawPointer, _ count: Int) -> Bool {
        send(connection, head: String(count, radix: 16) + "\r\n") && sendAll(connection, pointer, count) && send(connection, head: "\r\n")
    }

    /// Makes the coming close a reset (RST): the peer's next read fails with ECONNRESET.
    private func resetConnection(_ connection: Int32) {
        var linger = linger(l_onoff: 1, l_linger: 0)
        setsockopt(connection, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<linger>.size))
    }

    /// Waits while `path`'s fault is a hold: true once it is removed or replaced, false when the
    /// client closes (counted) or the server stops first.
    private func waitWhileHeld(_ connection: Int32, path: String) -> Bool {
        while !isStopped {
            let held = state.withLock { state -> Bool in
                if case .holdAt = state.faults[path] { return true }
                return false
            }
            if !held { return true }
            var descriptor = pollfd(fd: connection, events: Int16(POLLIN), revents: 0)
            if poll(&descriptor, 1, 20) > 0 {
                var byte: UInt8 = 0
                if recv(connection, &byte, 1, Int32(MSG_PEEK)) <= 0 {
                    state.withLock { $0.counts[path, default: PathCounts()].closedByClient += 1 }
                    return false
                }
                usleep(20_000)  // the client wrote (a pipelined request): it waits its turn
            }
        }
        return false
    }

    /// Sends nothing more; returns when the client closes (counted) or the server stops.
    private func waitForClose(_ connection: Int32, path: String) {
        while !isStopped {
            var descriptor = pollfd(fd: connection, events: Int16(POLLIN), revents: 0)
            let ready = poll(&descriptor, 1, 100)
            if ready > 0 {
                var byte: UInt8 = 0
                if recv(connection, &byte, 1, 0) <= 0 {
                    state.withLock { $0.counts[path, default: PathCounts()].closedByClient += 1 }
                    return
                }
            }
        }
    }

    private func send(_ connection: Int32, head: String) -> Bool {
        var bytes = Array(head.utf8)
        return sendAll(connection, &bytes, bytes.count)
    }

    private func sendAll(_ connection: Int32, _ pointer: UnsafeRawPointer, _ count: Int) -> Bool {
        var done = 0
        while done < count {
            let result = Glibc.send(connection, pointer.advanced(by: done), count - done, Int32(MSG_NOSIGNAL))
            if result < 0, errno == EINTR { continue }
            if result <= 0 { return false }
            done += result
        }
        return true
    }
}

extension [UInt8] {
    fileprivate var headEnd: Int? {
        guard count >= 4 else { return nil }
        for index in 0...(count - 4) where self[index] == 13 && self[index + 1] == 10 && self[index + 2] == 13 && self[index + 3] == 10 {
            return index
        }
        return nil
    }

    fileprivate var containsHeadEnd: Bool { headEnd != nil }
}
