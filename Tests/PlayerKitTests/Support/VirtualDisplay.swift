import Foundation

/// A real X server without a screen (Xvfb) for tests that need windows. Stops on `stop()`.
final class VirtualDisplay: Sendable {
    let display: String
    private let process: Process

    /// Starts Xvfb on a free display number with one screen of `size` ("WIDTHxHEIGHT") and
    /// waits (up to 10 s) until it answers.
    init(size: String = "1280x720") throws {
        guard let xvfb = VirtualDisplay.which("Xvfb") else { throw VirtualDisplayError.notInstalled("Xvfb") }
        var number = 90 + Int.random(in: 0..<400)
        while FileManager.default.fileExists(atPath: "/tmp/.X\(number)-lock") { number += 1 }
        display = ":\(number)"
        process = Process()
        process.executableURL = URL(fileURLWithPath: xvfb)
        process.arguments = [display, "-screen", "0", "\(size)x24", "-nolisten", "tcp"]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        let deadline = ContinuousClock.now + .seconds(10)
        while (try? run("xwininfo", ["-root"])) == nil {
            guard ContinuousClock.now < deadline, process.isRunning else {
                stop()
                throw VirtualDisplayError.didNotStart(display)
            }
            Thread.sleep(forTimeInterval: 0.05)
        }
    }

    func stop() {
        if process.isRunning {
            // SIGKILL: the child inherits the test runner's signal mask, in which SIGTERM is blocked.
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }

    /// Runs an X client on this display and returns its standard output; throws on failure.
    @discardableResult
    func run(_ tool: String, _ arguments: [String]) throws -> String {
        guard let path = VirtualDisplay.which(tool) else { throw VirtualDisplayError.notInstalled(tool) }
        let (status, output) = try ChildProcess.run(URL(fileURLWithPath: path), arguments, environment: environment)
        guard status == 0 else { throw VirtualDisplayError.toolFailed(tool, status) }
        return output
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
