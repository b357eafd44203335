import Foundation

/// A real Wayland compositor without a screen: Debian's weston with its headless backend and
/// GL renderer (Mesa), for tests of apps that GTK runs on Wayland. Screenshots are allowed
/// (`--debug`). Stops on `stop()`.
final class HeadlessWayland: Sendable {
    /// The folder of the compositor's socket (`XDG_RUNTIME_DIR`) and the socket's name.
    let runtimeDirectory: URL
    let socket: String
    private let process: Process

    /// Starts weston with one output of `width` x `height` and waits (up to 10 s) for its socket.
    init(width: Int = 1024, height: Int = 600) throws {
        guard let weston = VirtualDisplay.which("weston") else { throw VirtualDisplayError.notInstalled("weston") }
        runtimeDirectory = FileManager.default.temporaryDirectory.appendingPathComponent("playerkit-wayland-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: runtimeDirectory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        socket = "wayland-test"
        process = Process()
        process.executableURL = URL(fileURLWithPath: weston)
        process.arguments = [
            "--backend=headless-backend.so", "--use-gl", "--width=\(width)", "--height=\(height)",
            "--socket=\(socket)", "--no-config", "--debug", "--idle-time=0",
        ]
        var environment = ProcessInfo.processInfo.environment
        environment["XDG_RUNTIME_DIR"] = runtimeDirectory.path
        environment["DISPLAY"] = nil
        environment["WAYLAND_DISPLAY"] = nil
        process.environment = environment
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        let path = runtimeDirectory.appendingPathComponent(socket).path
        let deadline = ContinuousClock.now + .seconds(10)
        while !FileManager.default.fileExists(atPath: path) {
            guard ContinuousClock.now < deadline, process.isRunning else {
                stop()
                throw VirtualDisplayError.didNotStart("weston (\(process.isRunning ? "no socket after 10 s" : "exited"))")
            }
            Thread.sleep(forTimeInterval: 0.05)
        }
    }

    static func start() async throws -> HeadlessWayland {
        try await offPool { try HeadlessWayland() }
    }

    /// The environment of a Wayland client of this compositor (GTK on Wayland, no X11).
    var environment: [String: String] {
        var environment = ProcessInfo.processInfo.environment
        environment["XDG_RUNTIME_DIR"] = runtimeDirectory.path
        environment["WAYLAND_DISPLAY"] = socket
        environment["GDK_BACKEND"] = "wayland"
        environment["DISPLAY"] = nil
        return environment
    }

    /// A screenshot of the compositor's output (weston-screenshooter's PNG), converted by ffmpeg
    /// to an X window dump so ``XWDImage`` reads it. Off the cooperative pool.
    func screenshot() async throws -> XWDImage {
        try await offPool { [self] in
            let folder = runtimeDirectory.appendingPathComponent("shots-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: folder) }
            guard let shooter = VirtualDisplay.which("weston-screenshooter") else { throw VirtualDisplayError.notInstalled("weston-screenshooter") }
            let process = Process()
            process.executableURL = URL(fileURLWithPath: shooter)
            process.currentDirectoryURL = folder
            process.environment = environment
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.run()
            // Bounded: a compositor that never answers ends the screenshot, not the test run.
            let deadline = ContinuousClock.now + .seconds(15)
            while process.isRunning, ContinuousClock.now < deadline { Thread.sleep(forTimeInterval: 0.05) }
            if process.isRunning {
                kill(process.processIdentifier, SIGKILL)
                process.waitUntilExit()
                throw VirtualDisplayError.toolFailed("weston-screenshooter did not finish within 15 s", -1)
            }
            let shots = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasSuffix(".png") }
            guard process.terminationStatus == 0, let png = shots.first else {
                throw VirtualDisplayError.toolFailed("weston-screenshooter wrote no screenshot", process.terminationStatus)
            }
            return try XWDImage(converting: folder.appendingPathComponent(png))
        }
    }

    func stop() {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
        try? FileManager.default.removeItem(at: runtimeDirectory)
    }
}

extension XWDImage {
    /// Any image ffmpeg reads (a PNG), converted by ffmpeg to an X window dump and read.
    init(converting image: URL) throws {
        let xwd = FileManager.default.temporaryDirectory.appendingPathComponent("converted-\(UUID().uuidString).xwd")
        defer { try? FileManager.default.removeItem(at: xwd) }
        let (status, _) = try ChildProcess.run(
            URL(fileURLWithPath: "/usr/bin/ffmpeg"),
            ["-hide_banner", "-loglevel", "error", "-y", "-i", image.path, "-c:v", "xwd", "-f", "image2", xwd.path])
        guard status == 0 else { throw VirtualDisplayError.toolFailed("ffmpeg could not convert \(image.path)", status) }
        try self.init(contentsOf: xwd)
    }
}
