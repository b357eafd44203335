import Foundation
import Synchronization

/// A private D-Bus session bus of the test's own: Debian's `dbus-daemon --session` on a Unix
/// socket in a private folder, and the desktop's own clients (playerctl, gdbus, dbus-send)
/// pointed at it. ``restart()`` ends the daemon and starts a new one at the same address, as a
/// desktop session's bus that went away and came back.
final class SessionBus: Sendable {
    /// The bus's address (`unix:path=…`).
    let address: String
    private let folder: URL
    private let socket: String
    private let pid: Mutex<pid_t?>

    /// The environment for a client of this bus (the test process's own, with
    /// `DBUS_SESSION_BUS_ADDRESS` set to it).
    var environment: [String: String] {
        var environment = ProcessInfo.processInfo.environment
        environment["DBUS_SESSION_BUS_ADDRESS"] = address
        environment["HOME"] = folder.path
        environment["XDG_RUNTIME_DIR"] = folder.path
        return environment
    }

    private init() throws {
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("playerkit-bus-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        socket = folder.appendingPathComponent("bus").path
        address = "unix:path=\(socket)"
        pid = Mutex(nil)
        try launch()
    }

    /// Starts a bus off the cooperative pool; it answers `ListNames` when this returns.
    static func start() async throws -> SessionBus {
        try await offPool { try SessionBus() }
    }

    private func launch() throws {
        guard let daemon = VirtualDisplay.which("dbus-daemon") else { throw SessionBusError.notInstalled("dbus-daemon") }
        try? FileManager.default.removeItem(atPath: socket)
        let started = try ChildProcess.spawnServer([daemon, "--session", "--nofork", "--nopidfile", "--address=\(address)"], environment: environment)
        pid.withLock { $0 = started }
        let deadline = ContinuousClock.now + .seconds(10)
        while (try? names()) == nil {
            guard ContinuousClock.now < deadline else {
                stop()
                throw SessionBusError.didNotStart(address)
            }
            Thread.sleep(forTimeInterval: 0.02)
        }
    }

    /// Ends the daemon (every connection to it drops) and starts a new one at the same address.
    func restart(after pause: Duration = .zero) async throws {
        try await offPool { [self] in
            endDaemon()
            if pause > .zero { Thread.sleep(forTimeInterval: Double(pause.components.seconds) + Double(pause.components.attoseconds) / 1e18) }
            try launch()
        }
    }

    /// Ends the daemon without starting another.
    func endDaemon() {
        pid.withLock { pid in
            guard let running = pid else { return }
            kill(running, SIGKILL)
            var status: Int32 = 0
            waitpid(running, &status, 0)
            pid = nil
        }
    }

    /// The names on the bus now (blocking; for tests' polling off the pool).
    func names() throws -> [String] {
        let (status, output) = try ChildProcess.run(
            URL(fileURLWithPath: "/usr/bin/env"),
            ["dbus-send", "--bus=\(address)", "--print-reply=literal", "--dest=org.freedesktop.DBus", "/org/freedesktop/DBus",
             "org.freedesktop.DBus.ListNames"])
        guard status == 0 else { throw SessionBusError.toolFailed("dbus-send ListNames", status, output) }
        return output.split(whereSeparator: \.isWhitespace).map(String.init).filter { $0.contains(".") && !$0.hasPrefix(":") && $0 != "array" && $0 != "[" && $0 != "]" }
    }

    /// Runs a client of this bus (`playerctl`, `gdbus`, `dbus-send`) to its end, off the pool:
    /// exit status, standard output and standard error.
    func run(_ tool: String, _ arguments: [String]) async throws -> (status: Int32, output: String, errors: String) {
        guard let path = VirtualDisplay.which(tool) else { throw SessionBusError.notInstalled(tool) }
        return try await ChildProcess.runToEnd(URL(fileURLWithPath: path), arguments, environment: environment)
    }

    /// Runs `playerctl` with `arguments`; its output, trimmed. Throws when it fails.
    func playerctl(_ arguments: [String]) async throws -> String {
        let (status, output, errors) = try await run("playerctl", arguments)
        guard status == 0 else { throw SessionBusError.toolFailed("playerctl \(arguments.joined(separator: " "))", status, errors) }
        return output.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Waits, polling every 50 ms for at most `timeout`, until `condition` holds of the names on
    /// the bus; the last names read.
    @discardableResult
    func waitForNames(timeout: Duration = .seconds(10), _ condition: @escaping @Sendable ([String]) -> Bool) async throws -> [String] {
        let deadline = ContinuousClock.now + timeout
        while true {
            let names = try await offPool { [self] in try self.names() }
            if condition(names) || ContinuousClock.now >= deadline { return names }
            try await Task.sleep(for: .milliseconds(50))
        }
    }

    /// Waits, polling every 50 ms for at most `timeout`, until `condition` holds of playerctld's
    /// players, most recently active first (its `PlayerNames`); the last list read.
    @discardableResult
    func waitForPlayerctld(timeout: Duration = .seconds(10), _ condition: @escaping @Sendable ([String]) -> Bool) async throws -> [String] {
        let deadline = ContinuousClock.now + timeout
        while true {
            let reply = try await run("gdbus", [
                "call", "--session", "--dest", "org.mpris.MediaPlayer2.playerctld", "--object-path", "/org/mpris/MediaPlayer2",
                "--method", "org.freedesktop.DBus.Properties.Get", "com.github.altdesktop.playerctld", "PlayerNames",
            ])
            // (<['org.mpris.MediaPlayer2.a', 'org.mpris.MediaPlayer2.b']>,)
            let names = reply.output.split(separator: "'").enumerated().filter { $0.offset % 2 == 1 }.map { String($0.element) }
            if condition(names) || ContinuousClock.now >= deadline { return names }
            try await Task.sleep(for: .milliseconds(50))
        }
    }

    func stop() {
        endDaemon()
        try? FileManager.default.removeItem(at: folder)
    }

    deinit {
        stop()
    }
}

enum SessionBusError: Error, CustomStringConvertible {
    case notInstalled(String)
    case didNotStart(String)
    case toolFailed(String, Int32, String)

    var description: String {
        switch self {
        case .notInstalled(let tool): return "\(tool) is not installed (make test-deps installs it)"
        case .didNotStart(let address): return "dbus-daemon did not start at \(address)"
        case .toolFailed(let tool, let status, let errors): return "\(tool) failed with \(status): \(errors)"
        }
    }
}
