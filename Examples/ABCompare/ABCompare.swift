import ArgumentParser
import Dispatch
import Foundation
import ExampleSupport
import PlayerKit

/// Two shipped clips side by side in lockstep through a `SyncGroup`, printing each member's
/// drift every second and the spread between them at the end; `--naive` starts them the
/// usual way instead (one `load` after the other, no group) for comparison.
@main
struct ABCompare: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "playerkit-ab-compare",
        abstract: "Play two clips in lockstep and print how far apart they drift.")

    @OptionGroup var logging: LoggingOptions

    @Option(help: "Stop after this many seconds.")
    var seconds: Double = 20

    @Flag(help: "Print one JSON object per line: player, event, t, and driftMs on drift events.")
    var json = false

    @Flag(help: "Start the two players one after the other with no sync group, for comparison.")
    var naive = false

    @Flag(help: "Open a window per player, side by side (X11).")
    var window = false

    @Option(help: "mpv video driver for --window.")
    var vo = "x11"

    func validate() throws {
        guard seconds > 0, seconds.isFinite else { throw ValidationError("--seconds must be above 0, got \(seconds)") }
    }

    func run() async throws {
        logging.bootstrap()
        _ = Interruption.shared  // from here on, Ctrl-C shuts the players down
        let start = ContinuousClock.now
        let output = DispatchQueue(label: "ab-compare.output")
        var configuration = PlayerConfiguration(videoOutput: window ? .window : .none, audioOutput: .none)
        configuration = logging.applied(to: configuration)
        configuration.videoDriver = vo
        configuration.positionUpdateInterval = .zero  // every frame: the spread is measured per frame
        configuration.delegateQueue = output
        var leftConfiguration = configuration, rightConfiguration = configuration
        if window {
            leftConfiguration.extraOptions["geometry"] = "+40+40"
            rightConfiguration.extraOptions["geometry"] = "+400+40"
        }
        let left = try await Player.create(id: "left", configuration: leftConfiguration)
        let right = try await Player.create(id: "right", configuration: rightConfiguration)
        let sources = [MediaSource.joined([MediaSource(ExampleSupport.shippedMedia("clip-a.mp4"))], repeated: 500),
                       MediaSource.joined([MediaSource(ExampleSupport.shippedMedia("clip-b.mp4"))], repeated: 500)]

        // The spread, measured the same way in both modes: at every frame of either player,
        // |(wall - position) of left - (wall - position) of right|.
        let meter = SpreadMeter()
        let json = self.json
        let positions = PlayerEventBus.shared.subscribe(to: .players([left.id, right.id]), kinds: [.positionChanged], delivery: .queue(output)) { record in
            guard case .positionChanged(let position) = record.event else { return }
            meter.frame(of: record.playerID, at: record.time, position: position)
        }
        defer { positions.cancel() }
        let drifts = PlayerEventBus.shared.subscribe(to: .players([left.id, right.id]), kinds: [.sync], delivery: .queue(output)) { record in
            guard case .drift(let drift)? = record.event.feature(SyncEvent.self) else { return }
            let t = ExampleSupport.seconds(since: start)
            if json {
                ExampleSupport.printLine(JSONEventLine(record, t: t).json)
            } else {
                ExampleSupport.printLine(String(format: "%7.2f  %@  drift %+6.1f ms", t, record.playerID.rawValue.padding(toLength: 6, withPad: " ", startingAt: 0), drift * 1000))
            }
        }
        defer { drifts.cancel() }

        var group: SyncGroup?
        if naive {
            // The usual way: each player loads and starts on its own, one after the other.
            try await left.load(sources[0])
            try await right.load(sources[1])
            meter.startMeasuring()
            let until = seconds
            Task { await Self.reportNaiveDrift(meter: meter, json: json, start: start, output: output, until: until) }
        } else {
            let synced = try SyncGroup(players: [left, right])
            try await synced.load(sources)
            try await synced.play()
            meter.startMeasuring()
            group = synced
        }
        await Interruption.shared.wait(upTo: .seconds(seconds))  // or until Ctrl-C / SIGTERM; then shut down
        _ = group
        await left.shutdown()
        await right.shutdown()
        output.sync {}
        let (p50, p99, worst) = meter.percentiles()
        if json {
            var line = JSONEventLine(player: naive ? "naive" : "group", event: "summary", t: ExampleSupport.seconds(since: start))
            line.p50Ms = (p50 * 10_000).rounded() / 10
            line.p99Ms = (p99 * 10_000).rounded() / 10
            line.maxMs = (worst * 10_000).rounded() / 10
            line.count = meter.count
            ExampleSupport.printLine(line.json)
        } else {
            ExampleSupport.printLine(String(format: "%@: drift between the players over %d frames: p50 %.1f ms, p99 %.1f ms, max %.1f ms",
                                            naive ? "naive start" : "sync group", meter.count, p50 * 1000, p99 * 1000, worst * 1000))
        }
    }

    /// Without a group nobody reports drift: print the measured spread once a second.
    static func reportNaiveDrift(meter: SpreadMeter, json: Bool, start: ContinuousClock.Instant, output: DispatchQueue, until seconds: Double) async {
        var elapsed = 1.0
        while elapsed < seconds {
            try? await Task.sleep(for: .seconds(1))
            elapsed += 1
            guard let spread = meter.latest else { continue }
            let t = ExampleSupport.seconds(since: start)
            output.async {
                if json {
                    var line = JSONEventLine(player: "right", event: "syncDrift", t: t)
                    line.driftMs = (spread * 10_000).rounded() / 10
                    ExampleSupport.printLine(line.json)
                } else {
                    ExampleSupport.printLine(String(format: "%7.2f  right   drift %+6.1f ms (from left)", t, spread * 1000))
                }
            }
        }
    }
}

/// Offsets (monotonic clock minus position) of the two players, and the spread at every frame.
final class SpreadMeter: Sendable {
    private struct State {
        var offsets: [PlayerID: Double] = [:]
        var spreads: [Double] = []
        var measuring = false
        var latest: Double?
    }
    private let state = Guarded(State())
    private let origin = ContinuousClock.now

    func startMeasuring() { state.withLock { $0.measuring = true } }

    func frame(of player: PlayerID, at time: ContinuousClock.Instant, position: Double) {
        state.withLock { state in
            state.offsets[player] = time.seconds(since: origin) - position
            guard state.measuring, state.offsets.count == 2, let low = state.offsets.values.min(), let high = state.offsets.values.max() else { return }
            // Signed, right against left, for the per-second report; absolute for the statistics.
            let right = state.offsets["right"] ?? 0, left = state.offsets["left"] ?? 0
            state.latest = left - right
            state.spreads.append(high - low)
        }
    }

    var latest: Double? { state.withLock { $0.latest } }
    var count: Int { state.withLock { $0.spreads.count } }

    func percentiles() -> (Double, Double, Double) {
        let spreads = state.withLock { $0.spreads }
        return (ExampleStatistics.percentile(0.5, of: spreads) ?? 0, ExampleStatistics.percentile(0.99, of: spreads) ?? 0, spreads.max() ?? 0)
    }
}
