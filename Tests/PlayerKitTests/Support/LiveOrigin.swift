import Foundation
import Glibc
import PlayerKitSupport

/// Scripts/live-origin.py on a free loopback port: live HLS angles of one scene, encoded once
/// per option set (kept under .build/live-origin), with faults injected over HTTP. Killed on
/// `stop()`.
final class LiveOrigin: Sendable {
    let port: Int
    /// One live playlist URL per angle.
    let angles: [String]
    /// Where the encoded angles are kept: `angle-N/` each, with its segments.
    let directory: URL
    /// The scene's start on the monotonic clock (CLOCK_MONOTONIC seconds): an origin started
    /// again with it (``restarted()``) serves the same live window.
    let start: Double
    /// The arguments it was started with (besides `--dir`).
    private let arguments: [String]
    private let process: Process

    /// Starts an origin with these arguments of live-origin.py (besides `--dir`), waiting up to
    /// `timeout` for it to encode and serve.
    static func start(_ arguments: [String], timeout: Duration = .seconds(180)) async throws -> LiveOrigin {
        // The media of each option set in a folder of its own (live-origin.py names it), made once.
        let root = Fixtures.repository.appendingPathComponent(".build/live-origin")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", Fixtures.repository.appendingPathComponent("Scripts/live-origin.py").path,
                             "--dir", root.path] + arguments
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        let reader = JSONLineReader(output.fileHandleForReading)
        let first = await withTaskGroup(of: (port: Int, angles: [String], media: String, start: Double)?.self) { group in
            group.addTask {
                guard let line = await reader.next(), let port = line["port"] as? Int, let angles = line["angles"] as? [String],
                      let media = line["media"] as? String, let start = line["start"] as? Double else { return nil }
                return (port, angles, media, start)
            }
            let pid = process.processIdentifier
            group.addTask {
                // Past the timeout the origin is killed, which ends the reader's wait too.
                if (try? await Task.sleep(for: timeout)) != nil { kill(pid, SIGKILL) }
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first
        }
        guard let (port, angles, media, start) = first else {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            throw LiveOriginError.didNotStart(arguments.joined(separator: " "))
        }
        // Keep reading, so the pipe never fills.
        Task.detached { await reader.drain() }
        return LiveOrigin(port: port, angles: angles, directory: URL(fileURLWithPath: media), start: start, arguments: arguments,
                          process: process)
    }

    private init(port: Int, angles: [String], directory: URL, start: Double, arguments: [String], process: Process) {
        self.port = port
        self.angles = angles
        self.directory = directory
        self.start = start
        self.arguments = arguments
        self.process = process
    }

    /// The origin started again after ``stop()``: on the same port, serving the same live window
    /// (the scene's clock went on meanwhile, as an encoder's behind a restarted server would).
    func restarted(timeout: Duration = .seconds(60)) async throws -> LiveOrigin {
        var arguments = self.arguments
        if let index = arguments.firstIndex(of: "--port") { arguments.removeSubrange(index...(index + 1)) }
        return try await Self.start(arguments + ["--port", String(port), "--start", String(start)], timeout: timeout)
    }

    /// Freezes the origin (SIGSTOP): its port still accepts connections (the kernel does), and
    /// nothing answers them, as a server that hangs. ``thaw()`` lets it go on.
    func freeze() { kill(process.processIdentifier, SIGSTOP) }

    /// Lets a frozen origin go on (SIGCONT).
    func thaw() { kill(process.processIdentifier, SIGCONT) }

    /// Injects a fault (`drop`, `delay`, `stall`, `end`, `gone`, `fail`, `restore`) into `angle`.
    /// Returns the origin's answer.
    @discardableResult
    func control(_ action: String, angle: Int, seconds: Double? = nil, count: Int? = nil, status: Int? = nil) async throws -> String {
        var query = "angle=\(angle)"
        if let seconds { query += "&seconds=\(seconds)" }
        if let count { query += "&count=\(count)" }
        if let status { query += "&status=\(status)" }
        let port = port, path = "/control/\(action)?\(query)"
        return try await offPool { try Self.get(port: port, path: path) }
    }

    /// A plain HTTP/1.0 GET on loopback: the body.
    private static func get(port: Int, path: String) throws -> String {
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard socket >= 0 else { throw LiveOriginError.control(path) }
        defer { close(socket) }
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(socket, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { throw LiveOriginError.control(path) }
        let request = Array("GET \(path) HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n".utf8)
        guard send(socket, request, request.count, 0) == request.count else { throw LiveOriginError.control(path) }
        var response: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = recv(socket, &buffer, buffer.count, 0)
            if count <= 0 { break }
            response += buffer[0..<count]
        }
        let text = String(decoding: response, as: UTF8.self)
        guard text.hasPrefix("HTTP/1.") , text.contains(" 200 ") else { throw LiveOriginError.control("\(path): \(text.prefix(80))") }
        return text.components(separatedBy: "\r\n\r\n").dropFirst().joined(separator: "\r\n\r\n")
    }

    /// Ends the origin at once (SIGKILL, a frozen one too) and reaps it: its port refuses
    /// connections from then on.
    func stop() {
        guard process.isRunning else { return }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    deinit { stop() }
}

enum LiveOriginError: Error {
    case didNotStart(String)
    case control(String)
}
