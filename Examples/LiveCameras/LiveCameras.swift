import ArgumentParser
import ExampleSupport
import Foundation
import PlayerKit

/// Live cameras, one headless player each, and what each does when its origin goes away and
/// comes back: every state change, each camera's loss (buffering while the player opens the
/// source again) and its return, or its failure with the cause (`networkFailed`). Ends with a
/// summary per camera: how often it waited for its source, for how long in all and at most.
@main
struct LiveCameras: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "playerkit-live-cameras",
        abstract: "Play live sources (HLS, RTSP, SRT, ...) and watch each through losses of its origin.")

    @OptionGroup var logging: LoggingOptions

    @Argument(help: "The live sources (URLs), one camera each.")
    var sources: [String]

    @Flag(help: "Print one JSON object per line (player, event, t, ...) instead of text.")
    var json = false

    @Option(help: "Stop after this many seconds (default: run until interrupted).")
    var seconds: Double?

    @Option(help: "How long a lost source is opened again before the camera gives up, in seconds (PlayerConfiguration.networkTimeout).")
    var networkTimeout: Double = 60

    @Option(help: "Give a camera up after it waited this many seconds for its source (PlayerConfiguration.bufferingTimeout; default: none).")
    var bufferingTimeout: Double?

    func validate() throws {
        guard (1...64).contains(sources.count) else { throw ValidationError("give 1 to 64 sources, got \(sources.count)") }
        if let seconds, !(seconds > 0) { throw ValidationError("--seconds must be above 0, got \(seconds)") }
        guard networkTimeout > 0, networkTimeout <= 86_400 else { throw ValidationError("--network-timeout must be above 0 and at most a day") }
        if let bufferingTimeout, !(bufferingTimeout > 0) { throw ValidationError("--buffering-timeout must be above 0") }
    }

    func run() async throws {
        logging.bootstrap()
        _ = Interruption.shared  // from here on, Ctrl-C shuts the cameras down
        let bus = PlayerEventBus(label: "live-cameras")
        let wall = Wall(json: json)
        let subscription = bus.subscribe(to: .all) { record in wall.apply(record) }
        defer { subscription.cancel() }
        var configuration = logging.applied(to: PlayerConfiguration(videoOutput: .none, audioOutput: .none))
        configuration.eventBus = bus
        configuration.networkTimeout = .seconds(networkTimeout)
        configuration.bufferingTimeout = bufferingTimeout.map { .seconds($0) }
        var cameras: [Player] = []
        for index in sources.indices {
            cameras.append(try await Player.create(id: PlayerID(stringLiteral: "cam-\(index + 1)"), configuration: configuration))
        }
        await withTaskGroup(of: Void.self) { group in
            for (camera, source) in zip(cameras, sources) {
                // A failed load reaches the wall through the bus, as every other event.
                group.addTask { _ = try? await camera.load(MediaSource(source)) }
            }
        }
        await Interruption.shared.wait(upTo: seconds.map { .seconds($0) })
        wall.summarize(cameras)
        await withTaskGroup(of: Void.self) { group in
            for camera in cameras { group.addTask { await camera.shutdown() } }
        }
    }
}

/// What the bus said about each camera: printed as it comes, and summed up at the end.
final class Wall: Sendable {
    private struct Camera: Sendable {
        var waitingSince: ContinuousClock.Instant?
        var waits = 0
        var waited: Duration = .zero
        var longest: Duration = .zero
        var live: Bool?
        var failure: String?
    }

    private let json: Bool
    private let start = ContinuousClock.now
    private let cameras = Guarded([PlayerID: Camera]())

    init(json: Bool) {
        self.json = json
    }

    /// Called on the subscription's serial queue, in each camera's order.
    func apply(_ record: PlayerEventRecord) {
        switch record.event {
        case .stateChanged, .mediaLoaded, .itemEnded, .error: break
        default: return
        }
        cameras.withLock { cameras in
            var camera = cameras[record.playerID] ?? Camera()
            switch record.event {
            case .stateChanged(_, .buffering):
                camera.waitingSince = record.time
                camera.waits += 1
            case .stateChanged(.buffering, _):
                if let since = camera.waitingSince {
                    camera.waited += record.time - since
                    camera.longest = max(camera.longest, record.time - since)
                }
                camera.waitingSince = nil
            case .mediaLoaded(let info): camera.live = info.isLive
            case .error(let error): camera.failure = error.description
            default: break
            }
            cameras[record.playerID] = camera
        }
        let t = ExampleSupport.seconds(since: start)
        if json {
            ExampleSupport.printLine(JSONEventLine(record, t: t).json)
        } else {
            ExampleSupport.printLine(String(format: "%7.2f  %@  %@", t, record.playerID.rawValue, "\(record.event)"))
        }
    }

    /// One line per camera: its state now, how often and how long it waited for its source.
    func summarize(_ players: [Player]) {
        let now = ContinuousClock.now
        let t = ExampleSupport.seconds(since: start)
        for player in players {
            var camera = cameras.withLock { $0[player.id] } ?? Camera()
            if let since = camera.waitingSince {
                camera.waited += now - since
                camera.longest = max(camera.longest, now - since)
            }
            if json {
                var line = JSONEventLine(player: player.id.rawValue, event: "summary", t: t)
                line.state = player.state.rawValue
                line.live = camera.live
                line.count = camera.waits
                line.value = String(format: "%.3f", camera.waited.seconds)
                line.maxMs = (camera.longest.seconds * 1000).rounded()
                line.error = camera.failure
                ExampleSupport.printLine(line.json)
            } else {
                ExampleSupport.printLine(String(
                    format: "%@: %@, %@, waited for its source %d times, %.1f s in all, %.1f s at most%@",
                    player.id.rawValue, player.state.rawValue, camera.live == true ? "live" : "not live", camera.waits,
                    camera.waited.seconds, camera.longest.seconds, camera.failure.map { "; \($0)" } ?? ""))
            }
        }
    }
}

private extension Duration {
    var seconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}
