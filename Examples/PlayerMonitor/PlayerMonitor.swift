import ArgumentParser
import Dispatch
import ExampleSupport
import Foundation
import PlayerKit

/// Several players over the shipped clips and a live table of every player's ID, state and
/// position, driven only by the event bus.
@main
struct PlayerMonitor: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "player-monitor",
        abstract: "Run several players and watch them through PlayerKit's event bus.")

    @Option(help: "How many players to run (1 to 64).")
    var players = 4

    @Flag(help: "Print one JSON object per event per line (player, event, t, ...) instead of the table.")
    var json = false

    @Option(help: "Stop after this many seconds (default: run until interrupted).")
    var seconds: Double?

    func validate() throws {
        guard (1...64).contains(players) else { throw ValidationError("--players must be 1 to 64, got \(players)") }
        if let seconds, !(seconds > 0) { throw ValidationError("--seconds must be above 0, got \(seconds)") }
    }

    func run() async throws {
        let bus = PlayerEventBus(label: "monitor")
        let board = Board(json: json)
        // The only source of what is shown: one subscription to every player on the bus.
        let subscription = bus.subscribe(to: .all) { record in board.apply(record) }
        defer { subscription.cancel() }

        var configuration = PlayerConfiguration(videoOutput: .none, audioOutput: .none)
        configuration.eventBus = bus
        var started: [Player] = []
        for index in 1...players {
            let player = try Player(id: PlayerID(stringLiteral: "player-\(index)"), configuration: configuration)
            try player.setLoop(.forever)
            started.append(player)
        }
        await withTaskGroup(of: Void.self) { group in
            for (index, player) in started.enumerated() {
                group.addTask {
                    // Errors reach the board through the bus like every other event.
                    _ = try? await player.load(MediaSource(ExampleSupport.shippedMedia(index.isMultiple(of: 2) ? "clip-a.mp4" : "clip-b.mp4")))
                }
            }
        }
        if let seconds {
            try? await Task.sleep(for: .seconds(seconds))
        } else {
            while !Task.isCancelled { try? await Task.sleep(for: .seconds(3600)) }
        }
        for player in started { await player.shutdown() }
        await board.waitForShutDowns(started.count)
        board.finish()
    }
}

/// What the bus told about each player, rendered as a table or as JSON lines.
final class Board: Sendable {
    struct Row: Sendable {
        var state = PlayerState.idle
        var position: Double?
        var duration: Double?
        var events = 0
        var lastError: String?
        var isShutDown = false
    }

    private struct Content: Sendable {
        var rows: [PlayerID: Row] = [:]
        var lastRender = ContinuousClock.now - .seconds(1)
    }

    private let json: Bool
    private let start = ContinuousClock.now
    private let content = Locked(Content())  // not Synchronization.Mutex: ThreadSanitizer cannot see its futex on Linux
    private let shutDowns = Tally()

    init(json: Bool) {
        self.json = json
    }

    /// Called on the subscription's serial queue.
    func apply(_ record: PlayerEventRecord) {
        if record.event == .shutDown { countShutDown() }
        if json {
            ExampleSupport.printLine(JSONEventLine(record, t: ExampleSupport.seconds(since: start)).json)
            return
        }
        let table: String? = content.withLock { content in
            var row = content.rows[record.playerID] ?? Row()
            row.events += 1
            switch record.event {
            case .stateChanged(_, let state): row.state = state
            case .positionChanged(let position): row.position = position
            case .mediaLoaded(let info): row.duration = info.duration
            case .durationKnown(let duration): row.duration = duration
            case .error(let error): row.lastError = error.description
            case .shutDown: row.isShutDown = true
            default: break
            }
            content.rows[record.playerID] = row
            // Redraw at most ten times a second.
            guard ContinuousClock.now - content.lastRender >= .milliseconds(100) else { return nil }
            content.lastRender = .now
            return render(content.rows)
        }
        if let table { ExampleSupport.printLine(table) }
    }

    private func countShutDown() {
        shutDowns.increment()
    }

    /// Returns once the bus has reported `count` players shut down.
    func waitForShutDowns(_ count: Int) async {
        await shutDowns.wait(for: count)
    }

    func finish() {
        if !json { ExampleSupport.printLine(content.withLock { render($0.rows) }) }
    }

    private func render(_ rows: [PlayerID: Row]) -> String {
        // Cursor home and clear screen: the table is redrawn in place.
        var lines = ["\u{1B}[H\u{1B}[2J" + String(format: "PlayerKit monitor  t=%.1f s  %d players", ExampleSupport.seconds(since: start), rows.count)]
        lines.append("ID".padding(toLength: 14, withPad: " ", startingAt: 0) + "STATE      POSITION   EVENTS  ERROR")
        for (id, row) in rows.sorted(by: { $0.key < $1.key }) {
            let position = row.position.map { String(format: "%6.2f", $0) } ?? "     -"
            let duration = row.duration.map { String(format: "/%-4.1f", $0) } ?? "     "
            lines.append(
                id.rawValue.padding(toLength: 14, withPad: " ", startingAt: 0)
                    + (row.isShutDown ? "shut down" : row.state.rawValue).padding(toLength: 11, withPad: " ", startingAt: 0)
                    + position + duration + String(format: "%7d", row.events) + "  " + (row.lastError ?? ""))
        }
        return lines.joined(separator: "\n")
    }
}
