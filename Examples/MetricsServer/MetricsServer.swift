import ArgumentParser
import ExampleSupport
import Foundation
import PlayerKit
import PlayerKitMetrics
import Prometheus

/// Several players over the shipped clips, their statistics and events exported through
/// swift-metrics to a Prometheus registry, served at `http://127.0.0.1:PORT/metrics` for a
/// scraper (Prometheus itself, `curl`). Runs until `--seconds` pass or SIGINT/SIGTERM arrives.
@main
struct MetricsServer: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "playerkit-metrics-server",
        abstract: "Serve players' statistics at /metrics for Prometheus.")

    @OptionGroup var logging: LoggingOptions

    @Option(help: "How many players to run (1 to 16).")
    var players = 2

    @Option(help: "The port of 127.0.0.1 to serve /metrics on (0: any free port, printed).")
    var port: UInt16 = 9464

    @Option(help: "Seconds between statistics samples (0.05 to 86400).")
    var interval = 1.0

    @Flag(help: "Print one JSON line per statistics sample and the port served (instead of a line a second).")
    var json = false

    @Option(help: "Stop after this many seconds (default: run until interrupted).")
    var seconds: Double?

    func validate() throws {
        guard (1...16).contains(players) else { throw ValidationError("--players must be 1 to 16, got \(players)") }
        guard PlaybackStatistics.observableIntervals.contains(.milliseconds(interval * 1000)) else {
            throw ValidationError("--interval must be from 0.05 to 86400 seconds, got \(interval)")
        }
        if let seconds, !(seconds > 0) { throw ValidationError("--seconds must be above 0, got \(seconds)") }
    }

    func run() async throws {
        logging.bootstrap()
        _ = Interruption.shared  // from here on, Ctrl-C shuts the players down
        let start = ContinuousClock.now
        let registry = PrometheusCollectorRegistry()
        let metrics = PlayerMetrics(labels: [("app", "playerkit-metrics-server")],
                                    factory: PrometheusMetricsFactory(registry: registry))
        let server = LoopbackMediaServer()
        server.setGenerator("metrics") { Data(registry.emitToBuffer()) }
        try server.start(port: port)
        defer { server.stop() }
        var status = JSONEventLine(player: "server", event: "listening", t: 0)
        status.value = server.url("metrics").absoluteString
        ExampleSupport.printLine(json ? status.json : "serving \(server.url("metrics"))")

        let bus = PlayerEventBus(label: "metrics-server")
        var configuration = logging.applied(to: PlayerConfiguration(videoOutput: .none, audioOutput: .none))
        configuration.eventBus = bus
        let printing = json
        let subscription = bus.subscribe(kinds: [.statisticsUpdated]) { record in
            guard printing else { return }
            ExampleSupport.printLine(JSONEventLine(record, t: ExampleSupport.seconds(since: start)).json)
        }
        defer { subscription.cancel() }
        var started: [Player] = []
        for index in 1...players {
            let player = try await Player.create(id: PlayerID(stringLiteral: "player-\(index)"), configuration: configuration)
            try await player.perform(.setLoop(.forever))
            try metrics.attach(player, labels: [("clip", index.isMultiple(of: 2) ? "clip-b" : "clip-a")],
                               every: .milliseconds(interval * 1000))
            started.append(player)
        }
        for (index, player) in started.enumerated() {
            _ = try? await player.load(MediaSource(ExampleSupport.shippedMedia(index.isMultiple(of: 2) ? "clip-a.mp4" : "clip-b.mp4")))
        }
        await Interruption.shared.wait(upTo: seconds.map { .seconds($0) })
        for player in started { metrics.detach(player.id) }
        await withTaskGroup(of: Void.self) { group in
            for player in started { group.addTask { await player.shutdown() } }
        }
    }
}
