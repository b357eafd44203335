import ArgumentParser
import Dispatch
import Foundation
import ExampleSupport
import PlayerKit

/// Two players at once: one with the custom ID "main", one with a random ID, each playing its
/// own clip; every event is printed with the ID of the player it came from.
@main
struct TwoPlayers: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "playerkit-two-players",
        abstract: "Play two videos at once with PlayerKit and print every event with its player's ID.")

    @OptionGroup var logging: LoggingOptions

    @Flag(help: "Open a real window per player (needs an X11 or Wayland display).")
    var window = false

    @Option(help: "Stop after this many seconds (default: when both clips have ended).")
    var seconds: Double?

    @Flag(help: "Play each clip over and over, until --seconds pass or Ctrl-C (default: once).")
    var loop = false

    @Flag(help: "Print one JSON object per event per line: player, event, t, and state on state changes.")
    var json = false

    @Flag(help: "Play audio through the system output (default: silent).")
    var audio = false

    @Option(help: "Embed the \"main\" player's video into this existing X11 window (decimal or 0x hex ID).")
    var embedInto: String?

    @Option(help: "mpv video driver for --window: x11, gpu, or auto for mpv's own choice.")
    var vo = "x11"

    @Option(help: "Media for the player \"main\" (default: the shipped Media/clip-a.mp4).")
    var mainMedia: String?

    @Option(help: "Media for the random-ID player (default: the shipped Media/clip-b.mp4).")
    var otherMedia: String?

    func validate() throws {
        if let seconds, !(seconds > 0) { throw ValidationError("--seconds must be above 0, got \(seconds)") }
        if let embedInto, Self.windowID(embedInto) == nil {
            throw ValidationError("--embed-into needs an X11 window ID such as 0x200002 or 2097154, got \(embedInto)")
        }
    }

    /// Parses "0x200002" or "2097154".
    static func windowID(_ text: String) -> UInt64? {
        text.lowercased().hasPrefix("0x") ? UInt64(text.dropFirst(2), radix: 16) : UInt64(text)
    }

    func run() async throws {
        logging.bootstrap()
        _ = Interruption.shared  // from here on, Ctrl-C shuts the players down
        var configuration = PlayerConfiguration(videoOutput: window ? .window : .none, audioOutput: audio ? .system : .none)
        configuration = logging.applied(to: configuration)
        // x11 by default: with several cores in one process, mpv's automatic probing of GPU
        // drivers has crashed under software GL (Xvfb); x11 works everywhere X11 does.
        configuration.videoDriver = vo == "auto" ? nil : vo
        configuration.delegateQueue = DispatchQueue(label: "two-players.events")  // one queue: lines never interleave
        let printer = EventPrinter(json: json)
        // Side by side when windowed: mpv's geometry option places each window.
        var mainConfiguration = configuration
        var otherConfiguration = configuration
        if window {
            mainConfiguration.extraOptions["geometry"] = "+40+40"
            otherConfiguration.extraOptions["geometry"] = "+400+40"
        }
        if let embedInto, let windowID = Self.windowID(embedInto) {
            mainConfiguration.videoOutput = .embedded(x11WindowID: windowID)
            mainConfiguration.videoDriver = vo == "auto" ? nil : vo
        }
        let main = try await Player.create(id: "main", configuration: mainConfiguration, delegate: printer)
        let other = try await Player.create(configuration: otherConfiguration, delegate: printer)
        if !json { ExampleSupport.printLine("players: \(main.id) and \(other.id)") }

        let sources = [mainMedia ?? ExampleSupport.shippedMedia("clip-a.mp4"), otherMedia ?? ExampleSupport.shippedMedia("clip-b.mp4")]
        var failures = 0
        let loop = loop
        await withTaskGroup(of: Bool.self) { group in
            for (player, source) in zip([main, other], sources) {
                group.addTask {
                    do throws(PlayerError) {
                        if loop { try await player.perform(.setLoop(.forever)) }
                        try await player.load(MediaSource(source))
                        return true
                    } catch {
                        // mpv's own failures were already printed as error events.
                        switch error {
                        case .loadFailed, .playbackFailed, .loadCancelled: break
                        default: printer.report(error: error, player: player.id)
                        }
                        return false
                    }
                }
            }
            for await loaded in group where !loaded { failures += 1 }
        }

        // Until both items end (or --seconds pass), or Ctrl-C / SIGTERM: the players are shut
        // down in every case.
        let expectedEnds = 2 - failures
        if let seconds {
            await Interruption.shared.wait(upTo: .seconds(seconds))
        } else if loop {
            await Interruption.shared.wait()  // a looping clip never ends: until Ctrl-C or SIGTERM
        } else {
            await Interruption.shared.wait(orUntil: { await printer.waitForEnds(count: expectedEnds) })
        }
        await main.shutdown()
        await other.shutdown()
        if failures > 0 { throw ExitCode(1) }
    }
}

/// Prints events as text or JSON lines, and tells when items have ended.
final class EventPrinter: PlayerDelegate {
    private let json: Bool
    private let start = ContinuousClock.now
    private let endsSeen = Tally()

    init(json: Bool) {
        self.json = json
    }

    private var elapsed: Double { ExampleSupport.seconds(since: start) }

    func player(_ player: any MediaPlayer, didEmit record: PlayerEventRecord) {
        emit(record)
        if case .itemEnded = record.event { noteEnd() }
    }

    func report(error: PlayerError, player: PlayerID) {
        emit(player, .error(error))
    }

    private func emit(_ record: PlayerEventRecord) {
        emit(record.playerID, record.event)
    }

    private func emit(_ player: PlayerID, _ event: PlayerEvent) {
        if json {
            ExampleSupport.printLine(JSONEventLine(player: player, event: event, t: elapsed).json)
        } else {
            ExampleSupport.printLine(String(
                format: "%8.3f  %@  %@", elapsed, player.rawValue.padding(toLength: 36, withPad: " ", startingAt: 0),
                event.description))
        }
    }

    private func noteEnd() {
        endsSeen.increment()
    }

    /// Returns once `count` items have ended.
    func waitForEnds(count: Int) async {
        await endsSeen.wait(for: count)
    }
}
