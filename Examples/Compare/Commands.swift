import Foundation

/// What the app can be asked to do: by its buttons and keys, and with `--remote` by lines on
/// standard input (one command per line, answered by one JSON line with `--json`).
enum Command: Sendable, Equatable {
    case play, pause, togglePlay
    /// One frame forward or back on both players, in lockstep.
    case step, back
    /// Both players to a time in seconds, or to frame N of A.
    case seek(Double), frame(Int)
    case speed(Double)
    case mode(ViewMode)
    /// The wipe's divider, 0 to 1 from the left.
    case wipe(Double)
    /// Pane 0 (A) or 1 (B) fullscreen through the fullscreen policy; nil leaves fullscreen.
    case fullscreen(Int?)
    /// Opens a file in pane 0 or 1.
    case open(Int, String)
    /// With `--mpris`: pane 0 or 1 gets the media keys.
    case mediaKeys(Int)
    /// Finds B's offset to A by their sound (or pictures) and applies it to the group.
    case align(byPicture: Bool)
    /// Sets by hand how much later B plays a moment than A, in seconds.
    case offset(Double)
    /// Measures B against A frame by frame (PSNR and SSIM, at B's offset) for the graph.
    case measure
    /// Both players on the pair with the lowest SSIM.
    case worst
    /// What a click on the graph does, at a fraction of its width from the left: both players
    /// on the measured pair nearest that time.
    case graph(Double)
    /// Watches both panes for a frozen or black picture and silence lasting this many seconds
    /// (the `i` key watches at 2 s); each pane's label shows its alarms while they last.
    case alarms(Double)
    /// Reports the app's state.
    case status
    case quit

    /// The commands as typed, for help texts.
    static let usage = "play | pause | toggle | step | back | seek SECONDS | frame N | speed X | mode side|wipe|difference | wipe 0..1 | fullscreen a|b|off | open a|b PATH | keys a|b | align sound|picture | offset SECONDS | measure | worst | graph 0..1 | alarms SECONDS | status | quit"

    /// The command one line names.
    /// - Throws: ``CommandError`` naming the word or value that is wrong.
    init(parsing line: String) throws(CommandError) {
        let words = line.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: true).map(String.init)
        guard let name = words.first else { throw .empty }
        func argument(_ index: Int) throws(CommandError) -> String {
            guard words.count > index else { throw .missingArgument(command: name) }
            return words[index]
        }
        func number(_ text: String, in range: ClosedRange<Double>) throws(CommandError) -> Double {
            guard let value = Double(text), value.isFinite, range.contains(value) else {
                throw .invalidValue(command: name, value: text, expected: "a number from \(range.lowerBound) to \(range.upperBound)")
            }
            return value
        }
        func pane(_ text: String) throws(CommandError) -> Int {
            switch text.lowercased() {
            case "a": return 0
            case "b": return 1
            default: throw .invalidValue(command: name, value: text, expected: "a or b")
            }
        }
        switch name {
        case "play": self = .play
        case "pause": self = .pause
        case "toggle": self = .togglePlay
        case "step": self = .step
        case "back": self = .back
        case "seek": self = .seek(try number(try argument(1), in: 0...(24 * 3600)))
        case "frame":
            let text = try argument(1)
            guard let frame = Int(text), frame >= 0 else {
                throw .invalidValue(command: name, value: text, expected: "a frame number from 0")
            }
            self = .frame(frame)
        case "speed": self = .speed(try number(try argument(1), in: 0.01...100))
        case "mode":
            let text = try argument(1)
            guard let mode = ViewMode(rawValue: text), [.sideBySide, .wipe, .difference].contains(mode) else {
                throw .invalidValue(command: name, value: text, expected: "side, wipe or difference")
            }
            self = .mode(mode)
        case "wipe": self = .wipe(try number(try argument(1), in: 0...1))
        case "fullscreen":
            let text = try argument(1)
            self = .fullscreen(text == "off" ? nil : try pane(text))
        case "open":
            let index = try pane(try argument(1))
            self = .open(index, try argument(2))
        case "keys": self = .mediaKeys(try pane(try argument(1)))
        case "align":
            let text = try argument(1)
            guard ["sound", "picture"].contains(text) else { throw .invalidValue(command: name, value: text, expected: "sound or picture") }
            self = .align(byPicture: text == "picture")
        case "offset": self = .offset(try number(try argument(1), in: -600...600))
        case "measure": self = .measure
        case "worst": self = .worst
        case "graph": self = .graph(try number(try argument(1), in: 0...1))
        case "alarms": self = .alarms(try number(try argument(1), in: 0.1...3600))
        case "status": self = .status
        case "quit": self = .quit
        default: throw .unknown(name)
        }
    }
}

/// A command line that could not be understood; the description names what is wrong.
enum CommandError: Error, CustomStringConvertible {
    case empty
    case unknown(String)
    case missingArgument(command: String)
    case invalidValue(command: String, value: String, expected: String)

    var description: String {
        switch self {
        case .empty: "an empty command (commands: \(Command.usage))"
        case .unknown(let name): "unknown command '\(name)' (commands: \(Command.usage))"
        case .missingArgument(let command): "'\(command)' needs an argument (commands: \(Command.usage))"
        case .invalidValue(let command, let value, let expected): "'\(command)' got '\(value)', expected \(expected)"
        }
    }
}

/// Why the app could not start or go on.
enum AppFailure: Error, CustomStringConvertible {
    case openGL(String)
    case renderer(String)
    case media(String)

    var description: String {
        switch self {
        case .openGL(let reason): "OpenGL: \(reason)"
        case .renderer(let reason): "the players' OpenGL renderers: \(reason)"
        case .media(let reason): "media: \(reason)"
        }
    }
}

/// One line of `--json` output that is not a player's event: the app's own reports.
struct AppLine: Encodable {
    /// `ready`, `done` (a command finished), `failed` (a command failed), `mode`, `quit`.
    var event: String
    /// Seconds since the app started.
    var t: Double
    var command: String?
    var players: [String]?
    /// Each player's frame number after a frame command, by player ID.
    var frames: [String: Int]?
    /// The group's time after a frame command.
    var time: Double?
    var mode: String?
    /// The wipe's divider, as a fraction of the picture area's width.
    var divider: Double?
    /// The picture area's size in pixels.
    var area: [Int]?
    /// The fullscreen policy's owner and whether it is fullscreen.
    var owner: String?
    var fullscreen: Bool?
    /// GDK's display type: `GdkX11Display` or `GdkWaylandDisplay`.
    var backend: String?
    var error: String?
    /// How many times the GL area was drawn, and how many new frames each player gave it.
    var draws: Int?
    var newFrames: [String: Int]?
    /// What the window's controls show: the play button's label, the seek bar's value and end,
    /// the time label.
    var playButton: String?
    var seekBar: [Double]?
    var timeLabel: String?
    /// Both panes' labels as GTK shows them (A's first): state, position, statistics, alarms.
    var paneLabels: [String]?
    /// At the end: the players still alive in the process (none, after a clean quit).
    var livePlayers: [String]?
    /// How much later B plays a moment than A, in seconds (after `align` or `offset`), and its
    /// recorder's clock drift in ppm (when measured).
    var offset: Double?
    var drift: Double?
    /// After `measure`: the pairs measured, the mean SSIM (All), B's frames left unpaired; the
    /// graph's size in pixels and how many of its columns carry the SSIM line.
    var pairs: Int?
    var ssimMean: Double?
    var unpaired: Int?
    var graph: [Int]?
    var graphColumns: Int?

    init(event: String, t: Double) {
        self.event = event
        self.t = t
    }

    var json: String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return (try? encoder.encode(self)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
    }
}
