import Foundation
import Glibc
import PlayerKitSupport

/// Debian's real `syncplay-server` on a free loopback port, for the room tests. Killed on `stop()`.
final class SyncplayServer: Sendable {
    let port: Int
    private let password: String?
    private let tlsDirectory: String?
    private let running: Locked<Process>

    /// Starts the server (with `password`, if given) and waits, up to 15 s, until it accepts
    /// connections. A port taken between choosing and binding it is retried with another.
    static func start(password: String? = nil, tlsDirectory: String? = nil) async throws -> SyncplayServer {
        try await offPool {
            var attempt = 0
            while true {
                attempt += 1
                do {
                    return try SyncplayServer(port: try freePort(), password: password, tlsDirectory: tlsDirectory)
                } catch SyncplayServerError.didNotStart(let reason) where attempt < 3 {
                    _ = reason
                }
            }
        }
    }

    private init(port: Int, password: String?, tlsDirectory: String?) throws {
        guard let executable = VirtualDisplay.which("syncplay-server") else { throw SyncplayServerError.notInstalled }
        self.port = port
        self.password = password
        self.tlsDirectory = tlsDirectory
        running = Locked(try Self.launch(executable, port: port, password: password, tlsDirectory: tlsDirectory))
    }

    private static func launch(_ executable: String, port: Int, password: String?, tlsDirectory: String?) throws -> Process {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = ["--port", "\(port)", "--salt", "PLAYERKITTESTS", "--disable-ready"]
            + (password.map { ["--password", $0] } ?? []) + (tlsDirectory.map { ["--tls", $0] } ?? [])
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        let deadline = ContinuousClock.now + .seconds(15)
        while !Self.accepts(port) {
            guard ContinuousClock.now < deadline, process.isRunning else {
                if process.isRunning { kill(process.processIdentifier, SIGKILL) }
                process.waitUntilExit()
                throw SyncplayServerError.didNotStart("port \(port)")
            }
            Thread.sleep(forTimeInterval: 0.05)
        }
        return process
    }

    /// Ends the server at once (SIGKILL: a child started from a dispatch thread may have SIGTERM
    /// blocked) and reaps it.
    func stop() {
        let process = running.withLock { $0 }
        guard process.isRunning else { return }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    /// Kills the server and starts a new one on the same port (it forgets every room), waiting
    /// until it accepts connections.
    func restart() async throws {
        stop()
        guard let executable = VirtualDisplay.which("syncplay-server") else { throw SyncplayServerError.notInstalled }
        let port = port, password = password, tlsDirectory = tlsDirectory
        let process = try await offPool { try Self.launch(executable, port: port, password: password, tlsDirectory: tlsDirectory) }
        running.withLock { $0 = process }
    }

    /// A port that was free a moment ago (bound to port 0, read back, closed).
    private static func freePort() throws -> Int {
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard socket >= 0 else { throw SyncplayServerError.didNotStart("socket") }
        defer { close(socket) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(socket, $0, length) } }
        guard bound == 0 else { throw SyncplayServerError.didNotStart("bind") }
        let named = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(socket, $0, &length) } }
        guard named == 0 else { throw SyncplayServerError.didNotStart("getsockname") }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    /// Whether something accepts TCP connections on loopback `port`.
    private static func accepts(_ port: Int) -> Bool {
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard socket >= 0 else { return false }
        defer { close(socket) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        return result == 0
    }
}

enum SyncplayServerError: Error {
    case notInstalled
    case didNotStart(String)
}
