import ArgumentParser
import ExampleSupport
import Foundation
import PlayerKit

/// Camera angles of one event in one GTK 4 window, in lockstep: each angle a PlayerKit player
/// drawn with OpenGL into the app's window, all kept together by a `MultiView`, the skew of each
/// measured on its frame changes and shown on its tile.
@main
struct MultiViewCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "playerkit-multiview",
        abstract: "Show 2 to 9 camera angles (live HLS URLs or local files) in lockstep in one GTK 4 window.",
        discussion: """
            A click on an angle (or its number key) gives it the audio, a larger tile and, with \
            --mpris, the desktop's media keys; g goes back to the grid; space pauses the group \
            and resumes it where it paused, l resumes it at the live edge instead; s shows each \
            angle's frames per second, drops, buffer and stalls on its tile (and hides them), and \
            watches the angles for a frozen or black picture and silence, shown on the tile while \
            it lasts (--alarms watches from the start); q quits.
            With --json, one JSON object per second ("type":"skews") gives each angle's skew \
            against the group in milliseconds (skew_ms, skew_p50_ms, skew_p95_ms, skew_p99_ms, \
            measured on its frame changes over the last 10 s); other lines report the group's \
            events ("type":"event"), the tiles' places ("type":"tiles"), the audio focus, and \
            every angle's playback statistics once a second ("type":"statistics"), and with --alarms \
            each alarm as it is raised and cleared ("type":"alarm").
            """)

    @OptionGroup var logging: LoggingOptions

    @Argument(help: "The angles: 2 to 9 live HLS URLs (one encoder's angles) or local files (played from their starts); with --headless, one alone (to measure its own frame timing).")
    var sources: [String] = []

    @Option(help: "The angles' player IDs, comma-separated (default: angle-1, angle-2, ...).")
    var ids: String?

    @Option(help: "The angle (1-based) that starts with the audio and the large tile (default: 1, in the grid).")
    var focus = 1

    @Flag(help: "Put the angles on one timeline by their playlists' PROGRAM-DATE-TIME first (angles of separate encoders).")
    var programDateTime = false

    @Option(help: "Keep the angles this many seconds behind the live edge (default: follow the angle furthest ahead).")
    var latency: Double?

    @Flag(help: "Play the focused angle's audio on the default output (default: no audio output).")
    var audio = false

    @Flag(help: "Publish the angles on the D-Bus session bus (MPRIS); the focused one gets the media keys.")
    var mpris = false

    @Flag(help: "No window: the angles play with their video nowhere (for measuring).")
    var headless = false

    @Flag(help: "Print JSON lines: the skews each second, the group's events, the tiles and the focus.")
    var json = false

    @Option(help: "Quit after this many seconds.")
    var seconds: Double?

    @Option(help: "When each angle joins, in seconds after the start, comma-separated (default: all at once).")
    var joinAt: String?

    @Option(help: "Write every angle's frame changes (media time and monotonic time, measured apart from the group) to this file as JSON lines when quitting.")
    var frameLog: String?

    @Option(help: "With --headless: render every angle's frames (small, in software), read the frame number burned into each (the barcode of Scripts/live-origin.py) and write each angle's rendered frames (number and monotonic time) to this file as JSON lines when quitting.")
    var renderedLog: String?

    @Flag(help: "Watch every angle from the start for a frozen or black picture and silence; the tile shows an alarm while it lasts.")
    var alarms = false

    @Option(help: "How long a fault lasts before it is an alarm, in seconds (0.1 to 3600).")
    var alarmAfter = 2.0

    @Option(help: "Window size as WIDTHxHEIGHT.")
    var size = "1280x720"

    func validate() throws {
        guard (headless ? 1...9 : 2...9).contains(sources.count) else {
            throw ValidationError("give 2 to 9 angles\(headless ? " (or one, headless)" : ""), got \(sources.count)")
        }
        for source in sources where !source.contains("://") && !FileManager.default.fileExists(atPath: source) {
            throw ValidationError("no such file: \(source)")
        }
        if let ids {
            let names = ids.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
            guard names.count == sources.count, Set(names).count == names.count else {
                throw ValidationError("--ids needs \(sources.count) different IDs, comma-separated, got \(ids)")
            }
            for name in names {
                do { _ = try PlayerID(validating: name) } catch { throw ValidationError("--ids: \(error)") }
            }
        }
        guard (1...sources.count).contains(focus) else { throw ValidationError("--focus must be from 1 to \(sources.count), got \(focus)") }
        if programDateTime, !sources.allSatisfy({ $0.hasPrefix("http://") || $0.hasPrefix("https://") }) {
            throw ValidationError("--program-date-time needs HTTP(S) playlists")
        }
        if let latency { guard latency > 0, latency.isFinite else { throw ValidationError("--latency must be above 0, got \(latency)") } }
        if let seconds { guard seconds > 0, seconds.isFinite else { throw ValidationError("--seconds must be above 0, got \(seconds)") } }
        if let joinAt {
            let delays = joinAt.split(separator: ",", omittingEmptySubsequences: false).map { Double($0) }
            guard delays.count == sources.count, delays.allSatisfy({ $0.map { $0 >= 0 && $0.isFinite } ?? false }) else {
                throw ValidationError("--join-at needs \(sources.count) times of 0 or more seconds, comma-separated, got \(joinAt)")
            }
        }
        guard (0.1...3600).contains(alarmAfter) else { throw ValidationError("--alarm-after must be from 0.1 to 3600 seconds, got \(alarmAfter)") }
        if renderedLog != nil, !headless { throw ValidationError("--rendered-log needs --headless (a window renders the angles itself)") }
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
        let names = ids.map { $0.split(separator: ",").map(String.init) } ?? sources.indices.map { "angle-\($0 + 1)" }
        let options = MultiViewOptions(
            sources: sources, ids: try names.map { try PlayerID(validating: $0) }, focus: focus - 1,
            programDateTime: programDateTime, latency: latency, audio: audio, mpris: mpris, headless: headless, json: json,
            seconds: seconds, joinAt: joinAt.map { $0.split(separator: ",").compactMap { Double($0) } }, frameLog: frameLog,
            renderedLog: renderedLog, alarms: alarms, alarmAfter: .milliseconds(Int64((alarmAfter * 1000).rounded())), width: width, height: height,
            configuration: logging.applied(to: PlayerConfiguration(videoOutput: headless && renderedLog == nil ? .none : .frames, audioOutput: audio ? .system : .none)))
        // GTK runs on the main thread, where `run()` is called.
        let status = try MainActor.assumeIsolated {
            let app = try MultiViewApp(options: options)
            return app.run()
        }
        if status != 0 { throw ExitCode(status) }
    }
}
