import ArgumentParser
import Dispatch
import ExampleSupport
import Foundation
import PlayerKit
import PlayerKitRooms

/// One player in a Syncplay room: it plays a shipped clip in step with every other member of the
/// room (other `playerkit-room` processes, on this machine or others, or Syncplay's own client),
/// and prints every room event and its measured drift from the room's clock.
@main
struct Room: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "playerkit-room",
        abstract: "Play a shipped clip in a Syncplay room, in step with the room's other members.",
        discussion: """
            Start a server first (Debian's syncplay-server: `syncplay-server --port 8999 --disable-ready`).
            The room starts when a member starts it: this example does with --start-with N once N members
            (itself included) are in the room. With --frames it logs every frame's position and wall-clock
            time; `playerkit-room --compare a.jsonl b.jsonl …` then prints the drift between those processes.
            """)

    @OptionGroup var logging: LoggingOptions

    @Option(help: "The Syncplay server, host:port.")
    var server = "127.0.0.1:8999"

    @Option(help: "The room to join.")
    var room = "demo"

    @Option(help: "This member's name in the room (also the player's ID).")
    var name = "member"

    @Option(help: "The server's password, if it has one.")
    var password: String?

    @Option(help: "tls-required (the default: a server without TLS is refused), tls-if-offered (fall back to plain TCP, saying so) or plain (a server without TLS, such as Debian's syncplay-server on loopback).")
    var security: String = "tls-required"

    @Option(help: "The clip to play (default: the shipped Media/clip-a.mp4), repeated seamlessly.")
    var clip: String?

    @Option(help: "Start the room once this many members (this one included) are in it.")
    var startWith: Int?

    @Option(help: "Stop after this many seconds (default: run until interrupted).")
    var seconds: Double?

    @Flag(help: "Print one JSON object per line instead of text.")
    var json = false

    @Flag(help: "Also print one JSON line per frame: position and wall-clock time (for --compare).")
    var frames = false

    @Flag(help: "Do not join a room: just play at once (the naive way, to compare with).")
    var naive = false

    @Option(parsing: .remaining, help: "Compare the frame logs of earlier runs (files written with --frames) and exit; with --seconds (given before it), over that long from when all play.")
    var compare: [String] = []

    func validate() throws {
        if let seconds, !(seconds > 0 && seconds.isFinite) { throw ValidationError("--seconds must be above 0, got \(seconds)") }
        if let startWith, startWith < 1 { throw ValidationError("--start-with must be 1 or more, got \(startWith)") }
        if compare.isEmpty, !naive, parsedServer == nil {
            throw ValidationError("--server must be host:port with a port from 1 to 65535, got \(server)")
        }
        if !compare.isEmpty, compare.count < 2 { throw ValidationError("--compare needs two frame logs or more, got \(compare.count)") }
        if parsedSecurity == nil { throw ValidationError("--security must be tls-required, tls-if-offered or plain, got \(security)") }
    }

    private var parsedSecurity: RoomClient.Configuration.Security? {
        switch security {
        case "tls-required": return .tlsRequired
        case "tls-if-offered": return .tlsIfOffered
        case "plain": return .plain
        default: return nil
        }
    }

    private var parsedServer: (host: String, port: Int)? {
        guard let colon = server.lastIndex(of: ":"), let port = Int(server[server.index(after: colon)...]),
              (1...65535).contains(port), colon > server.startIndex else { return nil }
        return (String(server[..<colon]), port)
    }

    func run() async throws {
        if !compare.isEmpty { return try compareLogs() }
        logging.bootstrap()
        _ = Interruption.shared  // from here on, Ctrl-C leaves the room and shuts the player down
        let start = ContinuousClock.now
        let output = Output(json: json, name: name, start: start)

        var configuration = PlayerConfiguration(videoOutput: .none, audioOutput: .none)
        configuration = logging.applied(to: configuration)
        let player = try await Player.create(id: PlayerID(stringLiteral: name), configuration: configuration)
        let path = clip ?? ExampleSupport.shippedMedia("clip-a.mp4")
        let frames = self.frames
        // The player's own events and the follower's (room changes, the correction and its drift), by the player's ID.
        let subscription = player.eventBus.subscribe(to: player.id, kinds: [.stateChanged, .error, .room, .sync, .positionChanged]) { record in
            output.player(record, frames: frames)
        }
        defer { subscription.cancel() }
        let everyFrame = frames ? player.observeEveryFrame() : nil
        defer { everyFrame?.cancel() }

        try await player.perform(.setLoop(.forever))
        try await player.preload(.joined([MediaSource(path)], repeated: 500))  // paused on its first frame

        if naive {
            try await player.play()
            await Interruption.shared.wait(upTo: seconds.map { .seconds($0) })
            await player.shutdown()
            return
        }

        guard let (host, port) = parsedServer else { return }
        var roomConfiguration = RoomClient.Configuration(host: host, port: port, room: room, name: name, password: password)
        roomConfiguration.security = parsedSecurity ?? .tlsRequired
        let client = try RoomClient(roomConfiguration)
        let follower = try RoomFollower(room: client, players: [player])
        try await client.join()
        follower.start()
        let duration = player.snapshot.duration ?? 0
        try? await client.announceFile(name: URL(fileURLWithPath: path).lastPathComponent, duration: duration, size: 0)

        if let startWith {
            // Wait until enough members are in (or the run ends), then start the room.
            let members = Task {
                while !Task.isCancelled, client.members.count + 1 < startWith { try? await Task.sleep(for: .milliseconds(50)) }
            }
            let interrupted = await Interruption.shared.wait(upTo: seconds.map { .seconds($0) }, orUntil: { await members.value })
            members.cancel()
            if !interrupted, client.members.count + 1 >= startWith {
                output.note("starting the room with \(client.members.count + 1) members")
                try await follower.play()
            }
        }
        let elapsed = ContinuousClock.now - start
        await Interruption.shared.wait(upTo: seconds.map { .seconds($0) - elapsed })
        follower.invalidate()
        await client.leave()
        await player.shutdown()
    }

    private func compareLogs() throws {
        let logs = try compare.map { file in CrossProcessDrift.frames(in: try String(contentsOfFile: file, encoding: .utf8)) }
        for (file, log) in zip(compare, logs) where log.isEmpty { throw ValidationError("no frame lines in \(file)") }
        // From the latest first frame on: every process is playing.
        let from = logs.compactMap { $0.map(\.wall).min() }.max()
        // Over --seconds from there, when given.
        let to = from.flatMap { from in seconds.map { from + $0 } }
        for figures in CrossProcessDrift.compare(logs, from: from, to: to) { ExampleSupport.printLine(figures.description) }
    }
}

/// Prints what happens, as text or JSON lines, in order.
final class Output: Sendable {
    let json: Bool
    let name: String
    let start: ContinuousClock.Instant
    private let queue = DispatchQueue(label: "room.output")

    init(json: Bool, name: String, start: ContinuousClock.Instant) {
        self.json = json
        self.name = name
        self.start = start
    }

    func player(_ record: PlayerEventRecord, frames: Bool) {
        // Wall-clock time of the frame: the record's monotonic time, moved to the system clock.
        let wall = Date().timeIntervalSince1970 - ContinuousClock.now.seconds(since: record.time)
        queue.async { [self] in
            switch record.event {
            case .positionChanged(let position):
                guard frames else { return }
                let line = CrossProcessDrift.Frame(player: record.playerID.rawValue, position: position, wall: wall)
                ExampleSupport.printLine(String(decoding: try! JSONEncoder().encode(line), as: UTF8.self))
            default:
                if json {
                    var line = JSONEventLine(record, t: ExampleSupport.seconds(since: start))
                    if case .feature(let feature) = record.event, let drift = feature as? SyncEvent, case .drift(let seconds) = drift {
                        line.driftMs = seconds * 1000
                    }
                    ExampleSupport.printLine(line.json)
                } else {
                    ExampleSupport.printLine(String(format: "%8.3f  %@  %@", ExampleSupport.seconds(since: start), record.playerID.rawValue, record.event.description))
                }
            }
        }
    }

    func note(_ text: String) {
        let t = ExampleSupport.seconds(since: start)
        queue.async { [self] in
            if json {
                var line = JSONEventLine(player: name, event: "note", t: t)
                line.value = text
                ExampleSupport.printLine(line.json)
            } else {
                ExampleSupport.printLine(String(format: "%8.3f  %@", t, text))
            }
        }
    }
}
