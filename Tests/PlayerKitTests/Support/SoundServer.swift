import Foundation
import Synchronization

/// A real PulseAudio server of the test's own, with null sinks (devices that play into
/// nothing), reached on a Unix socket in a private folder. Stops on `stop()`.
final class SoundServer: Sendable {
    /// The server's address for mpv's `pulse-host` and pactl's `-s`.
    let address: String
    private let folder: URL
    private let pid: pid_t
    private let ended = Mutex(false)

    /// Starts `pulseaudio` with one null sink per name in `sinks` (the first is the default)
    /// and waits (up to 10 s) until pactl lists them.
    init(sinks: [String]) throws {
        guard let pulseaudio = VirtualDisplay.which("pulseaudio") else { throw SoundServerError.notInstalled("pulseaudio") }
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("playerkit-pulse-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let socket = folder.appendingPathComponent("native").path
        address = "unix:\(socket)"
        // Spawned directly, not with Foundation's Process (see `ChildProcess.spawnServer`).
        let arguments = [pulseaudio, "--daemonize=no", "-n", "--exit-idle-time=-1", "--disallow-exit", "--log-target=stderr",
                         "--load=module-native-protocol-unix socket=\(socket) auth-anonymous=1"]
            + sinks.map { "--load=module-null-sink sink_name=\($0)" }
        var environment = ProcessInfo.processInfo.environment
        environment["HOME"] = folder.path
        environment["XDG_RUNTIME_DIR"] = folder.path
        environment["PULSE_RUNTIME_PATH"] = folder.appendingPathComponent("run").path
        pid = try ChildProcess.spawnServer(arguments, environment: environment)
        let deadline = ContinuousClock.now + .seconds(10)
        while (try? pactl(["list", "short", "sinks"]))?.components(separatedBy: "\n").filter({ !$0.isEmpty }).count != sinks.count {
            guard ContinuousClock.now < deadline, isRunning else {
                stop()
                throw SoundServerError.didNotStart(address)
            }
            Thread.sleep(forTimeInterval: 0.05)
        }
    }

    /// Runs pactl against this server; its standard output.
    func pactl(_ arguments: [String]) throws -> String {
        guard let pactl = VirtualDisplay.which("pactl") else { throw SoundServerError.notInstalled("pactl") }
        let (status, output) = try ChildProcess.run(URL(fileURLWithPath: pactl), ["-s", address] + arguments)
        guard status == 0 else { throw SoundServerError.toolFailed(arguments.joined(separator: " "), status) }
        return output
    }

    /// One playing stream (a sink input) as the server sees it.
    struct Stream: Sendable, Hashable {
        let application: String
        let sink: String
    }

    /// The streams playing now: each one's application name and the name of its sink.
    func streams() throws -> [Stream] {
        var sinkNames: [String: String] = [:]  // index -> name
        for line in try pactl(["list", "short", "sinks"]).split(separator: "\n") {
            let fields = line.split(separator: "\t")
            if fields.count >= 2 { sinkNames[String(fields[0])] = String(fields[1]) }
        }
        var streams: [Stream] = []
        var sink: String?, application: String?
        func flush() {
            if let sink, let application { streams.append(Stream(application: application, sink: sinkNames[sink] ?? sink)) }
        }
        for raw in try pactl(["list", "sink-inputs"]).split(separator: "\n") {
            let line = raw.trimmingCharacters(in: .whitespaces)
            if line.hasPrefix("Sink Input #") {
                flush()
                sink = nil
                application = nil
            } else if line.hasPrefix("Sink: ") {
                sink = String(line.dropFirst("Sink: ".count))
            } else if line.hasPrefix("application.name = ") {
                application = String(line.dropFirst("application.name = ".count)).trimmingCharacters(in: CharacterSet(charactersIn: "\""))
            }
        }
        flush()
        return streams
    }

    /// Starts a server off the cooperative thread pool.
    static func start(sinks: [String]) async throws -> SoundServer {
        try await offPool { try SoundServer(sinks: sinks) }
    }

    /// Whether the server is still running (reaps it when it has ended).
    private var isRunning: Bool {
        ended.withLock { ended in
            guard !ended else { return false }
            var status: Int32 = 0
            if waitpid(pid, &status, WNOHANG) == pid { ended = true }
            return !ended
        }
    }

    func stop() {
        ended.withLock { ended in
            guard !ended else { return }
            kill(pid, SIGKILL)
            var status: Int32 = 0
            waitpid(pid, &status, 0)
            ended = true
        }
        try? FileManager.default.removeItem(at: folder)
    }
}

enum SoundServerError: Error {
    case notInstalled(String)
    case didNotStart(String)
    case toolFailed(String, Int32)
}
