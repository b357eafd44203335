import ArgumentParser
import Dispatch
import ExampleSupport
import Foundation
import PlayerKit

/// Several players over the shipped clips and a live table of every player's ID, state and
/// position, driven only by the event bus. Runs until `--seconds` pass or SIGINT/SIGTERM arrives,
/// then shuts every player down and waits for the bus to report each one shut down.
@main
struct PlayerMonitor: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "playerkit-player-monitor",
        abstract: "Run several players and watch them through PlayerKit's event bus.")

    @OptionGroup var logging: LoggingOptions

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
        logging.bootstrap()
        _ = Interruption.shared  // from here on, Ctrl-C shuts the players down
        let bus = PlayerEventBus(label: "monitor")
        let board = Board(json: json)
        // The only source of what is shown: one subscription to every player on the bus.
        let subscription = bus.subscribe(to: .all) { record in board.apply(record) }
        defer { subscription.cancel() }

        var configuration = PlayerConfiguration(videoOutput: .none, audioOutput: .none)

        configuration = logging.applied(to: configuration)
        configuration.eventBus = bus
        var started: [Player] = []
        for index in 1...players {
            let player = try await Player.create(id: PlayerID(stringLiteral: "player-\(index)"), configuration: configuration)
            try await player.perform(.setLoop(.forever))
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
        await Interruption.shared.wait(upTo: seconds.map { .seconds($0) })
        await withTaskGroup(of: Void.self) { group in
            for player in started { group.addTask { await player.shutdown() } }
        }
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
    /// Standard output is a terminal: the table is redrawn in place with escape codes and cut to
    /// the terminal's height. Otherwise (a pipe, a file) plain snapshots, one a second.
    private let isTerminal = isatty(STDOUT_FILENO) != 0
    private let start = ContinuousClock.now
    private let content = Guarded(Content())  // not Synchronization.Mutex: ThreadSanitizer cannot see its futex on Linux
    private let shutDowns = Tally()

    init(json: Bool) {
        self.json = json
    }

    /// Called on the subscription's serial queue.
    func apply(_ record: PlayerEventRecord) {
        // Counted once the record is in the table or printed, so `finish()` shows it.
        defer { if record.event == .shutDown { countShutDown() } }
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
            // Redraw at most ten times a second on a terminal, once a second elsewhere.
            guard ContinuousClock.now - content.lastRender >= (isTerminal ? .milliseconds(100) : .seconds(1)) else { return nil }
            content.lastRender = .now
            return render(content.rows)
        }
        if let table { ExampleSupport.printLine(table) }
    }

    private func countShutDown() {
        shutDowns.increment()
    }

    /// Returns once the bus has reported `count` players shut down, or after 15 s (a player whose
    /// core mpv could not destroy within its `shutdownTimeout` reports it only later).
    func waitForShutDowns(_ count: Int) async {
        if !(await shutDowns.wait(for: count, timeout: .seconds(15))) {
            FileHandle.standardError.write(Data("not every player reported its shutdown within 15 s\n".utf8))
        }
    }

    func finish() {
        if !json { ExampleSupport.printLine(content.withLock { render($0.rows) }) }
    }

    private func render(_ rows: [PlayerID: Row]) -> String {
        let title = String(format: "PlayerKit monitor  t=%.1f s  %d players", ExampleSupport.seconds(since: start), rows.count)
        // Cursor home and clear screen on a terminal: the table is redrawn in place.
        var lines = [(isTerminal ? "\u{1B}[H\u{1B}[2J" : "\n") + title]
        lines.append("ID".padding(toLength: 14, withPad: " ", startingAt: 0) + "STATE      POSITION   EVENTS  ERROR")
        // Natural order: player-2 before player-10.
        var sorted = rows.sorted { $0.key.rawValue.compare($1.key.rawValue, options: .numeric) == .orderedAscending }
        // On a terminal the header stays in view: rows that do not fit are summed up in one line.
        var hidden = 0
        if isTerminal, let height = Self.terminalHeight(), sorted.count > height - 3 {
            let shown = max(0, height - 4)
            hidden = sorted.count - shown
            sorted = Array(sorted.prefix(shown))
        }
        for (id, row) in sorted {
            let position = row.position.map { String(format: "%6.2f", $0) } ?? "     -"
            let duration = row.duration.map { String(format: "/%-4.1f", $0) } ?? "     "
            lines.append(
                id.rawValue.padding(toLength: 14, withPad: " ", startingAt: 0)
                    + (row.isShutDown ? "shut down" : row.state.rawValue).padding(toLength: 11, withPad: " ", startingAt: 0)
                    + position + duration + String(format: "%7d", row.events) + "  " + (row.lastError ?? ""))
        }
        if hidden > 0 { lines.append("... and \(hidden) more (a taller terminal shows them)") }
        return lines.joined(separator: "\n")
    }

    /// The terminal's height in lines, when standard output is one that says.
    private static func terminalHeight() -> Int? {
        var size = winsize()
        guard ioctl(STDOUT_FILENO, UInt(TIOCGWINSZ), &size) == 0, size.ws_row > 0 else { return nil }
        return Int(size.ws_row)
    }
}
