import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A small real HTTP/1.1 file server on 127.0.0.1 (random port) for tests that need a network.
/// Serves files under `root`, honours single byte ranges, closes each connection after one
/// response. Only loopback; stops with ``stop()``.
final class LoopbackHTTPServer: Sendable {
    let port: UInt16
    private let listener: Int32
    private let root: URL
    /// When set, bodies are sent at about this many bytes per second (to make a slow network).
    private let bytesPerSecond: Int?
    private let requests = Atomic<Int>(0)
    private let stopped = Atomic<Bool>(false)

    var requestCount: Int { requests.load(ordering: .relaxed) }

    init(root: URL, bytesPerSecond: Int? = nil) throws {
        self.root = root
        self.bytesPerSecond = bytesPerSecond
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw POSIXError(.EIO) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(fd, 16) == 0 else {
            close(fd)
            throw POSIXError(.EADDRINUSE)
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        self.port = UInt16(bigEndian: address.sin_port)
        self.listener = fd
        let thread = Thread { [self] in acceptLoop() }
        thread.start()
    }

    func stop() {
        guard !stopped.exchange(true, ordering: .relaxed) else { return }
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
    }

    private func acceptLoop() {
        while !stopped.load(ordering: .relaxed) {
            let client = accept(listener, nil, nil)
            if client < 0 { break }
            requests.add(1, ordering: .relaxed)
            let thread = Thread { [self] in serve(client) }
            thread.start()
        }
    }

    private func serve(_ client: Int32) {
        defer { close(client) }
        var request = [UInt8]()
        var buffer = [UInt8](repeating: 0, count: 4096)
        while !request.containsHeaderEnd {
            let count = read(client, &buffer, buffer.count)
            if count <= 0 { return }
            request += buffer[0..<count]
            if request.count > 65536 { return }
        }
        let text = String(decoding: request, as: UTF8.self)
        let lines = text.components(separatedBy: "\r\n")
        let parts = lines.first?.split(separator: " ") ?? []
        guard parts.count >= 2 else { return }
        let path = String(parts[1]).removingPercentEncoding ?? String(parts[1])
        let file = root.appendingPathComponent(path).standardizedFileURL
        guard file.path.hasPrefix(root.standardizedFileURL.path), let data = FileManager.default.contents(atPath: file.path) else {
            send(client, "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
            return
        }
        var start = 0
        var end = data.count - 1
        var status = "200 OK"
        if let range = lines.first(where: { $0.lowercased().hasPrefix("range: bytes=") }) {
            let spec = range.dropFirst("range: bytes=".count).split(separator: "-", omittingEmptySubsequences: false)
            if let first = spec.first, let from = Int(first) { start = from }
            if spec.count > 1, let to = Int(spec[1]) { end = min(to, data.count - 1) }
            status = "206 Partial Content"
        }
        guard start <= end else {
            send(client, "HTTP/1.1 416 Range Not Satisfiable\r\nContent-Range: bytes */\(data.count)\r\nConnection: close\r\n\r\n")
            return
        }
        var header = "HTTP/1.1 \(status)\r\nContent-Type: video/mp4\r\nAccept-Ranges: bytes\r\n"
        header += "Content-Length: \(end - start + 1)\r\nConnection: close\r\n"
        if status.hasPrefix("206") { header += "Content-Range: bytes \(start)-\(end)/\(data.count)\r\n" }
        send(client, header + "\r\n")
        if parts[0] != "HEAD" { sendBytes(client, data[start...end]) }
    }

    private func send(_ client: Int32, _ text: String) {
        sendBytes(client, Data(text.utf8))
    }

    private func sendBytes(_ client: Int32, _ data: Data) {
        if let bytesPerSecond, data.count > 1024 {
            // A slow link: 20 slices a second.
            let slice = max(bytesPerSecond / 20, 1)
            var offset = data.startIndex
            while offset < data.endIndex, !stopped.load(ordering: .relaxed) {
                let end = min(offset + slice, data.endIndex)
                guard write(client, data[offset..<end]) else { return }
                offset = end
                Thread.sleep(forTimeInterval: 0.05)
            }
            return
        }
        _ = write(client, data)
    }

    /// Writes all of `data`; false when the peer went away.
    private func write(_ client: Int32, _ data: Data) -> Bool {
        data.withUnsafeBytes { raw in
            var offset = 0
            while offset < raw.count {
                let written = Glibc.send(client, raw.baseAddress! + offset, raw.count - offset, Int32(MSG_NOSIGNAL))
                if written <= 0 { return false }
                offset += written
            }
            return true
        }
    }
}

private extension [UInt8] {
    var containsHeaderEnd: Bool {
        count >= 4 && (0...(count - 4)).contains { self[$0] == 13 && self[$0 + 1] == 10 && self[$0 + 2] == 13 && self[$0 + 3] == 10 }
    }
}
