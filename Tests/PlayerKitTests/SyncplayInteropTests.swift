import Foundation
import Glibc
import Testing
import PlayerKit
@testable import PlayerKitRooms  // the follower's clock
import PlayerKitSupport

/// Debian's own Syncplay client (`syncplay --no-gui`, driving a real mpv) and a PlayerKit player
/// in one room on the real server: changes from either side reach the other.
@Suite("Rooms: with Syncplay's own client", .timeLimit(.minutes(4)), .tags(.timingPass))
struct SyncplayInteropTests {
    @Test("a start and a pause from PlayerKit reach Syncplay's mpv; a seek and a start in that mpv reach the PlayerKit player")
    func bothWays() async throws {
        let server = try await SyncplayServer.start()
        defer { server.stop() }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("playerkit-syncplay-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        // The same timeline on both sides: clip-a 50 times over (mpv's EDL; PlayerKit's
        // MediaSource.joined makes the same).
        let timeline = directory.appendingPathComponent("clip-a-long.edl")
        try ("# mpv EDL v0\n" + String(repeating: Fixtures.clipA + "\n", count: 50)).write(to: timeline, atomically: true, encoding: .utf8)
        let room = "interop-\(UInt32.random(in: 0...UInt32.max))"

        let (player, _) = try await Fixtures.player()
        defer { Task { await player.shutdown() } }
        try await player.preload(.joined([MediaSource(Fixtures.clipA)], repeated: 50))
        var configuration = RoomClient.Configuration(host: "127.0.0.1", port: server.port, room: room, name: "playerkit")
        configuration.security = .plain  // Syncplay's server here offers no TLS
        let client = try RoomClient(configuration)
        let follower = try RoomFollower(room: client, players: [player])
        follower.start()
        try await client.join()
        defer { Task { follower.invalidate(); await client.leave() } }
        try await client.announceFile(name: "clip-a-long.edl", duration: player.snapshot.duration ?? 200, size: 0)

        let real = try RealSyncplayClient(port: server.port, room: room, name: "syncplay", file: timeline, directory: directory)
        defer { real.stop() }
        #expect(await eventually(timeout: .seconds(30)) { client.members.contains("syncplay") }, "the real client never joined: \(real.log)")
        let mpv = real.mpv
        #expect(await eventually(timeout: .seconds(30)) { mpv.property("pause") as? Bool == true }, "no mpv answering: \(real.log)")

        // PlayerKit starts the room: Syncplay's mpv plays.
        try await follower.play()
        #expect(await eventually(timeout: .seconds(15)) { mpv.property("pause") as? Bool == false }, "mpv did not start: \(real.log)")
        #expect(await eventually(timeout: .seconds(15)) { (mpv.property("time-pos") as? Double ?? 0) > 1 })

        // PlayerKit pauses: mpv pauses near the same position (Syncplay's client corrects
        // positions only beyond its own thresholds).
        try await follower.pause()
        let pausedAt = try #require(follower.clock?.position)
        #expect(await eventually(timeout: .seconds(15)) { mpv.property("pause") as? Bool == true }, "mpv did not pause: \(real.log)")
        #expect(await eventually { abs((mpv.property("time-pos") as? Double ?? -10) - pausedAt) < 1 },
                "mpv at \(String(describing: mpv.property("time-pos"))), room paused at \(pausedAt)")

        // mpv seeks (as its user would): the PlayerKit player lands there.
        mpv.set("time-pos", 30.0)
        #expect(await eventually(timeout: .seconds(15)) { abs((player.position ?? 0) - 30) < 0.5 },
                "PlayerKit at \(player.position ?? -1): \(real.log)")
        // mpv plays: the PlayerKit player plays. Syncplay's client takes an unpause back, without
        // a word, in its first 5 s after it rewound a file (`recentlyRewound`, the file was loaded
        // moments ago on a fast run), and turns an unpause while the others are not ready into
        // "ready, unpause again": as its user would, press play again while mpv is put back on
        // pause, at most once a second (a run where the first press was taken back failed here).
        let pressedUntil = ContinuousClock.now + .seconds(20)
        var presses = 0
        var started = false
        while !started, ContinuousClock.now < pressedUntil {
            if mpv.property("pause") as? Bool != false {
                mpv.set("pause", false)
                presses += 1
            }
            started = await eventually(timeout: .seconds(1)) { player.state == .playing && (player.position ?? 0) > 30.5 }
        }
        #expect(started, "PlayerKit \(player.state) at \(player.position ?? -1) after \(presses) press(es) of play in mpv: \(real.log)")
    }
}

/// Debian's `syncplay` client, headless (`--no-gui`), with its own mpv on a JSON IPC socket; its
/// configuration kept in a directory of its own.
private final class RealSyncplayClient: Sendable {
    let mpv: MPVSocket
    private let process: Process
    private let logFile: URL

    init(port: Int, room: String, name: String, file: URL, directory: URL) throws {
        guard let syncplay = VirtualDisplay.which("syncplay"), let mpvPath = VirtualDisplay.which("mpv") else {
            throw SyncplayServerError.notInstalled
        }
        let socket = directory.appendingPathComponent("mpv.sock").path
        mpv = MPVSocket(path: socket)
        logFile = directory.appendingPathComponent("syncplay.log")
        _ = FileManager.default.createFile(atPath: logFile.path, contents: nil)
        process = Process()
        process.executableURL = URL(fileURLWithPath: syncplay)
        process.arguments = ["--no-gui", "--no-store", "-a", "127.0.0.1:\(port)", "-n", name, "-r", room,
                             "--player-path", mpvPath, file.path, "--",
                             "--vo=null", "--ao=null", "--input-ipc-server=\(socket)"]
        var environment = ProcessInfo.processInfo.environment
        environment["HOME"] = directory.path
        environment["XDG_CONFIG_HOME"] = directory.appendingPathComponent(".config").path
        environment["PYTHONUNBUFFERED"] = "1"
        environment.removeValue(forKey: "DISPLAY")
        environment.removeValue(forKey: "WAYLAND_DISPLAY")
        process.environment = environment
        process.standardInput = FileHandle.nullDevice
        let log = try FileHandle(forWritingTo: logFile)
        process.standardOutput = log
        process.standardError = log
        try process.run()
    }

    /// What the client printed so far (its last 2000 characters).
    var log: String { String(((try? String(contentsOf: logFile, encoding: .utf8)) ?? "").suffix(2000)) }

    /// Ends mpv (through its socket) and the client (SIGKILL: a child of a dispatch thread may
    /// have SIGTERM blocked).
    func stop() {
        mpv.command(["quit"])
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
    }
}

/// mpv's JSON IPC: one short connection per command.
private struct MPVSocket: Sendable {
    let path: String

    func property(_ name: String) -> Any? {
        (command(["get_property", name])?["data"]).flatMap { $0 is NSNull ? nil : $0 }
    }

    func set(_ name: String, _ value: Any) {
        _ = command(["set_property", name, value])
    }

    @discardableResult
    func command(_ arguments: [Any]) -> [String: Any]? {
        let descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var timeout = timeval(tv_sec: 2, tv_usec: 0)
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8.prefix(MemoryLayout.size(ofValue: address.sun_path) - 1))
        withUnsafeMutableBytes(of: &address.sun_path) { buffer in
            for (index, byte) in bytes.enumerated() { buffer[index] = byte }
        }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard connected == 0,
              let request = try? JSONSerialization.data(withJSONObject: ["command": arguments, "request_id": 7]) else { return nil }
        let line = request + Data("\n".utf8)
        guard line.withUnsafeBytes({ send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }) == line.count else { return nil }
        var received = Data()
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = recv(descriptor, &buffer, buffer.count, 0)
            if count <= 0 { return nil }
            received.append(contentsOf: buffer[0..<count])
            while let newline = received.firstIndex(of: 0x0A) {
                let message = received[received.startIndex..<newline]
                received = Data(received[received.index(after: newline)...])
                if let object = try? JSONSerialization.jsonObject(with: message) as? [String: Any], object["request_id"] as? Int == 7 {
                    return object
                }
            }
        }
    }
}
