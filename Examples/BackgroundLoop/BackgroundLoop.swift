import ArgumentParser
import Dispatch
import Foundation
import ExampleSupport
import PlayerKit

/// A background video that loops a list of clips forever (a treadmill) behind a foreground
/// player, printing every clip change and wrap-around with the measured gap at each seam.
@main
struct BackgroundLoop: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "playerkit-background-loop",
        abstract: "Loop three shipped clips seamlessly behind a foreground player; print each seam's gap.")

    @OptionGroup var logging: LoggingOptions

    @Option(help: "Stop after this many seconds.")
    var seconds: Double = 12

    @Flag(help: "Print one JSON object per line: player, event, t, and index/count/gapMs on seam events.")
    var json = false

    @Flag(help: "Open a real window per player (X11).")
    var window = false

    @Option(help: "mpv video driver for --window.")
    var vo = "x11"

    @Option(parsing: .upToNextOption, help: "Clips for the treadmill (default: the shipped Media/background-1, -2 and -3).")
    var clips: [String] = []

    func validate() throws {
        guard seconds > 0, seconds.isFinite else { throw ValidationError("--seconds must be above 0, got \(seconds)") }
    }

    func run() async throws {
        logging.bootstrap()
        _ = Interruption.shared  // from here on, Ctrl-C shuts the players down
        let output = DispatchQueue(label: "background-loop.output")
        let start = ContinuousClock.now
        var configuration = PlayerConfiguration(videoOutput: window ? .window : .none, audioOutput: .none)
        configuration = logging.applied(to: configuration)
        configuration.videoDriver = vo
        configuration.delegateQueue = output
        var backgroundConfiguration = configuration
        var foregroundConfiguration = configuration
        if window {
            backgroundConfiguration.extraOptions["geometry"] = "+40+40"
            foregroundConfiguration.extraOptions["geometry"] = "+400+40"
        }
        let background = try await Player.create(id: "background", configuration: backgroundConfiguration)
        let foreground = try await Player.create(id: "foreground", configuration: foregroundConfiguration)

        let json = self.json
        let wraps = Tally()
        let seams = SeamLog()
        let subscription = PlayerEventBus.shared.subscribe(
            to: .players([background.id, foreground.id]),
            kinds: [.stateChanged, .clip, .error],
            delivery: .queue(output)
        ) { record in
            let t = ExampleSupport.seconds(since: start)
            switch record.event.feature(ClipEvent.self) {
            case .loopWrapped(_, let seam)?:
                wraps.increment()
                if let seam { seams.append(seam) }
            case .clipChanged(_, let seam?)?: seams.append(seam)
            default: break
            }
            if json {
                ExampleSupport.printLine(JSONEventLine(record, t: t).json)
            } else {
                ExampleSupport.printLine(String(format: "%8.3f  %@  %@", t, record.playerID.rawValue.padding(toLength: 10, withPad: " ", startingAt: 0), Self.describe(record.event)))
            }
        }
        defer { subscription.cancel() }

        let sources = (clips.isEmpty ? ["background-1.mp4", "background-2.mp4", "background-3.mp4"].map(ExampleSupport.shippedMedia) : clips)
            .map { MediaSource($0) }
        let loop = try ClipLoop(player: background, clips: sources)
        try await loop.start()
        try await foreground.perform(.setLoop(.forever))
        try await foreground.load(MediaSource(ExampleSupport.shippedMedia("clip-a.mp4")))

        await Interruption.shared.wait(upTo: .seconds(seconds))  // or until Ctrl-C / SIGTERM; then shut down
        loop.stop()
        await foreground.shutdown()
        await background.shutdown()
        output.sync {}
        let measured = seams.all
        let worst = measured.map(\.gap).max() ?? 0
        if json {
            var line = JSONEventLine(player: background.id.rawValue, event: "summary", t: ExampleSupport.seconds(since: start))
            line.count = wraps.count
            line.gapMs = (worst * 10_000).rounded() / 10
            line.value = "\(measured.count) seams"
            ExampleSupport.printLine(line.json)
        } else {
            ExampleSupport.printLine(String(format: "%d wrap-arounds, %d seams, largest gap %.1f ms", wraps.count, measured.count, worst * 1000))
        }
    }

    private static func describe(_ event: PlayerEvent) -> String {
        // The loop's own events come as feature events of type ClipEvent.
        switch event.feature(ClipEvent.self) {
        case .clipChanged(let index, let seam)?:
            return "clip \(index)" + (seam.map { String(format: ", gap %.1f ms (frame to frame %.1f ms)", $0.gap * 1000, $0.frameInterval * 1000) } ?? "")
        case .loopWrapped(let count, let seam)?:
            return "wrap-around \(count)" + (seam.map { String(format: ", gap %.1f ms", $0.gap * 1000) } ?? "")
        default:
            return event.description
        }
    }
}

/// The seams the loop reported in its events (appended on the output queue, read after it).
final class SeamLog: @unchecked Sendable {
    private let lock = NSLock()
    private var seams: [SeamTiming] = []
    func append(_ seam: SeamTiming) { lock.withLock { seams.append(seam) } }
    var all: [SeamTiming] { lock.withLock { seams } }
}
