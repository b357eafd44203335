import ArgumentParser
import CGTK
import GTKSupport
import ExampleSupport
import Foundation
import PlayerKit
import PlayerKitMPRIS

extension ViewMode: ExpressibleByArgument {}

/// Two videos side by side in one GTK 4 window, frame by frame: each a PlayerKit player drawn
/// with OpenGL into the app's `GtkGLArea`, kept in lockstep by a sync group, shown side by side,
/// as a wipe or as their difference. Each pane shows its player's ID and state from the bus;
/// one pane at a time may go fullscreen, through a fullscreen policy.
@main
struct Compare: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "playerkit-compare",
        abstract: "Compare two videos frame by frame in a GTK 4 window (side by side, wipe, difference).",
        discussion: """
            Keys: space play/pause, '.' and ',' one frame forward and back, s/w/d side by side, \
            wipe, difference, f fullscreen A, Esc leave fullscreen, i each pane's frames per second, \
            drops, buffer and stalls, and its alarms (a frozen or black picture, silence, 2 s), \
            q quit. Drag on the picture to \
            move the wipe; drop a file on a pane to open it there.
            With --remote, commands are read from standard input, one per line: \(Command.usage).
            With --mpris, the desktop sees both players (playerctl -l). With --json, each player's \
            playback statistics come once a second as statisticsUpdated lines, and alarms as \
            alarmRaised and alarmCleared lines.
            """)

    @OptionGroup var logging: LoggingOptions

    @Argument(help: "The two videos (default: the shipped Media/compare-a.mp4 and Media/compare-b.mp4).")
    var files: [String] = []

    @Option(help: "How to show them: side, wipe or difference.")
    var mode: ViewMode = .sideBySide

    @Option(help: "The wipe's divider, from 0 (left) to 1 (right).")
    var wipe = 0.5

    @Option(help: "The two players' IDs, comma-separated.")
    var ids = "left,right"

    @Flag(help: "Stay paused on the first frames (default: play).")
    var paused = false

    @Flag(help: "Play the pair over and over (default: once, ending on idle players).")
    var loop = false

    @Flag(help: "Play A's audio on the default output (B is never heard).")
    var audio = false

    @Flag(help: "Print one JSON object per line: every event with its player's ID, and the app's own reports.")
    var json = false

    @Flag(help: "Read commands from standard input, one per line; its end quits.")
    var remote = false

    @Flag(help: "Publish both players on the D-Bus session bus (MPRIS) as playerkit_compare.instance_<ID>: the desktop's media controls, media keys and playerctl play, pause and seek the pair; the pane last clicked gets media keys.")
    var mpris = false

    @Option(help: "Quit after this many seconds.")
    var seconds: Double?

    @Option(help: "Window size as WIDTHxHEIGHT.")
    var size = "960x600"

    func validate() throws {
        guard files.isEmpty || files.count == 2 else { throw ValidationError("give two videos or none, got \(files.count)") }
        for file in files where !FileManager.default.fileExists(atPath: file) {
            throw ValidationError("no such file: \(file)")
        }
        guard [.sideBySide, .wipe, .difference].contains(mode) else { throw ValidationError("--mode must be side, wipe or difference, got \(mode.rawValue)") }
        guard wipe.isFinite, (0...1).contains(wipe) else { throw ValidationError("--wipe must be from 0 to 1, got \(wipe)") }
        let names = ids.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
        guard names.count == 2, names[0] != names[1], names.allSatisfy({ !$0.isEmpty }) else {
            throw ValidationError("--ids needs two different IDs, comma-separated, got \(ids)")
        }
        for name in names {
            do { _ = try PlayerID(validating: name) } catch { throw ValidationError("--ids: \(error)") }
        }
        if let seconds { guard seconds > 0, seconds.isFinite else { throw ValidationError("--seconds must be above 0, got \(seconds)") } }
        guard Self.parseSize(size) != nil else { throw ValidationError("--size must be WIDTHxHEIGHT from 320x240 to 8192x8192, got \(size)") }
    }

    static func parseSize(_ text: String) -> (width: Int, height: Int)? {
        let parts = text.split(separator: "x").compactMap { Int($0) }
        guard parts.count == 2, (320...8192).contains(parts[0]), (240...8192).contains(parts[1]) else { return nil }
        return (parts[0], parts[1])
    }

    func run() throws {
        logging.bootstrap()
        let (width, height) = Self.parseSize(size)!
        let options = CompareOptions(
            files: files.isEmpty ? ["compare-a.mp4", "compare-b.mp4"].map(ExampleSupport.shippedMedia) : files,
            ids: try ids.split(separator: ",").map { try PlayerID(validating: String($0)) },
            mode: mode, divider: wipe, startPaused: paused, looping: loop, json: json, remote: remote, seconds: seconds,
            width: width, height: height, audio: audio, mpris: mpris,
            configuration: logging.applied(to: PlayerConfiguration(videoOutput: .frames, audioOutput: .none)))
        // GTK runs on the main thread, where `run()` is called.
        let status = try MainActor.assumeIsolated {
            let app = try CompareApp(options: options)
            return app.run()
        }
        if status != 0 { throw ExitCode(status) }
    }
}
