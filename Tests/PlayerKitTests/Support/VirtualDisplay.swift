import Foundation

/// A real X server without a screen (Xvfb) for tests that need windows. Stops on `stop()`.
final class VirtualDisplay: Sendable {
    let display: String
    private let process: Process

    /// Starts Xvfb on a free display number with one screen of `size` ("WIDTHxHEIGHT") and
    /// waits (up to 10 s) until it answers.
    init(size: String = "1280x720") throws {
        guard let xvfb = VirtualDisplay.which("Xvfb") else { throw VirtualDisplayError.notInstalled("Xvfb") }
        process = Process()
        process.executableURL = URL(fileURLWithPath: xvfb)
        // -displayfd: Xvfb picks a free display number itself and writes it to standard output
        // once it accepts connections, so tests starting servers at once never collide.
        // -noreset: without it the server resets whenever its last client leaves (a readiness
        // probe, an X tool), and a client connecting during the reset is refused.
        process.arguments = ["-displayfd", "1", "-noreset", "-screen", "0", "\(size)x24", "-nolisten", "tcp"]
        let announcement = Pipe()
        process.standardOutput = announcement
        process.standardError = FileHandle.nullDevice
        try process.run()
        var text = ""
        let reader = announcement.fileHandleForReading
        while !text.contains("\n") {
            let chunk = reader.availableData
            if chunk.isEmpty { break }  // Xvfb exited without a display
            text += String(decoding: chunk, as: UTF8.self)
        }
        guard let number = Int(text.trimmingCharacters(in: .whitespacesAndNewlines)) else {
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
            throw VirtualDisplayError.didNotStart(text)
        }
        display = ":\(number)"
        // The number is announced as soon as the server listens; wait (up to 10 s) until it
        // also answers a client, as the tests' X clients expect.
        let deadline = ContinuousClock.now + .seconds(10)
        while (try? run("xwininfo", ["-root"], attempts: 1)) == nil {
            guard ContinuousClock.now < deadline, process.isRunning else {
                stop()
                throw VirtualDisplayError.didNotStart(display)
            }
            Thread.sleep(forTimeInterval: 0.05)
        }
    }

    /// Starts a display off the cooperative thread pool (see ``offPool(_:)``).
    static func start(size: String = "1280x720") async throws -> VirtualDisplay {
        try await offPool { try VirtualDisplay(size: size) }
    }

    /// ``run(_:_:attempts:)`` off the cooperative thread pool.
    @discardableResult
    func runAsync(_ tool: String, _ arguments: [String], attempts: Int = 4) async throws -> String {
        try await offPool { try self.run(tool, arguments, attempts: attempts) }
    }

    func stop() {
        if process.isRunning {
            // SIGKILL: the child inherits the test runner's signal mask, in which SIGTERM is blocked.
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }

    /// Runs an X client on this display and returns its standard output; throws on failure.
    ///
    /// X queries race the windows they look at: `xwininfo -tree` exits 1 ("BadWindow") when a
    /// window goes away while it walks the tree, which a window opening or closing at that
    /// moment makes happen now and then. So a failure while the server runs is retried, up to
    /// `attempts` times in all, after a short pause; only a failure every time is reported.
    @discardableResult
    func run(_ tool: String, _ arguments: [String], attempts: Int = 4) throws -> String {
        guard let path = VirtualDisplay.which(tool) else { throw VirtualDisplayError.notInstalled(tool) }
        var attempt = 0
        while true {
            attempt += 1
            let (status, output) = try ChildProcess.run(URL(fileURLWithPath: path), arguments, environment: environment)
            if status == 0 { return output }
            guard attempt < attempts, process.isRunning else {
                let server = process.isRunning ? "running" : "exited (\(process.terminationReason == .exit ? "status" : "signal") \(process.terminationStatus))"
                throw VirtualDisplayError.toolFailed("\(tool) on \(display) (attempt \(attempt)), Xvfb \(server): \(output.prefix(200))", status)
            }
            Thread.sleep(forTimeInterval: 0.1 * Double(attempt))
        }
    }

    /// The process environment with DISPLAY pointing here.
    var environment: [String: String] {
        var environment = ProcessInfo.processInfo.environment
        environment["DISPLAY"] = display
        return environment
    }

    static func which(_ tool: String) -> String? {
        for directory in ["/usr/bin", "/usr/local/bin", "/bin"] where FileManager.default.isExecutableFile(atPath: "\(directory)/\(tool)") {
            return "\(directory)/\(tool)"
        }
        return nil
    }
}

enum VirtualDisplayError: Error {
    case notInstalled(String)
    case didNotStart(String)
    case toolFailed(String, Int32)
}
