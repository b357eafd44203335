import ArgumentParser
import ExampleSupport
import Foundation
import PlayerKit

/// A sync group's frame steps (issue 28): the time from `stepFrame()` (and `stepFrameBack()`)
/// until every member shows its new frame, for N members on the same clip from 1 s, as
/// Benchmarks/c/compare.c's `framestep` mode times mpv's own `frame-step` sent to N cores.
/// Prints the same JSON fields.
struct FrameStep: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "framestep")
    @Option var members = 2
    @Option var steps = 30
    @Argument var clip: String

    func run() async throws {
        let bus = PlayerEventBus(label: "framestep")
        var players: [Player] = []
        for _ in 0..<members { players.append(try await Player.create(configuration: benchConfiguration(bus: bus))) }
        let group = try SyncGroup(players: players)
        try await group.load(Array(repeating: MediaSource(clip), count: members))
        let start = try await group.seek(toFrame: 30)
        var forward: [Double] = [], back: [Double] = []
        var frame = start
        for _ in 0..<steps {
            let before = ContinuousClock.now
            frame = try await group.stepFrame()
            forward.append(before.duration(to: .now).inSeconds * 1000)
        }
        let forwardOK = frame.members.allSatisfy { $0.frameNumber == 30 + steps }
        for _ in 0..<steps {
            let before = ContinuousClock.now
            frame = try await group.stepFrameBack()
            back.append(before.duration(to: .now).inSeconds * 1000)
        }
        let backOK = frame.members.allSatisfy { $0.frameNumber == 30 }
        func percentile(_ values: [Double], _ fraction: Double) -> Double {
            let sorted = values.sorted()
            return sorted[min(sorted.count - 1, Int(Double(sorted.count) * fraction))]
        }
        func mean(_ values: [Double]) -> Double { values.reduce(0, +) / Double(values.count) }
        print(String(format: "{\"mode\": \"framestep\", \"members\": %d, \"steps\": %d, \"forward_p50_ms\": %.3f, \"forward_p90_ms\": %.3f, \"forward_mean_ms\": %.3f, \"back_p50_ms\": %.3f, \"back_p90_ms\": %.3f, \"back_mean_ms\": %.3f, \"positions_ok\": %@, \"back_positions_ok\": %@}",
                     members, steps, percentile(forward, 0.5), percentile(forward, 0.9), mean(forward),
                     percentile(back, 0.5), percentile(back, 0.9), mean(back), forwardOK ? "true" : "false", backOK ? "true" : "false"))
        group.invalidate()
        for player in players { await player.shutdown() }
    }
}

/// Posters of every clip at `time` through a PosterMaker (issue 28), beside
/// Benchmarks/c/compare.c's `posters` mode and Benchmarks/posters-baselines.sh (ffmpeg and mpv
/// run per clip). The pool's players are made before the clock starts, as the C client's core.
struct Posters: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "posters")
    @Option var time = 1.0
    @Option var concurrency = 2
    @Option var width = 320
    @Option var height = 240
    @Option(help: "Folder for PNG files (none: frames only)") var output: String?
    @Argument var clips: [String]

    func run() async throws {
        let maker = try PosterMaker(configuration: .init(width: width, height: height, concurrency: concurrency))
        // Warm the pool: one poster per player, untimed.
        let warm = (0..<concurrency).map { _ in PosterRequest(source: MediaSource(clips[0]), moment: .time(0)) }
        for await _ in maker.posters(for: warm) {}
        let requests = clips.enumerated().map { index, clip in
            PosterRequest(source: MediaSource(clip), moment: .time(time),
                          pngFile: output.map { URL(fileURLWithPath: $0).appendingPathComponent("\(index + 1).png") })
        }
        let before = ContinuousClock.now
        var failures = 0
        for await result in maker.posters(for: requests) {
            if case .failure = result.outcome { failures += 1 }
        }
        let seconds = before.duration(to: .now).inSeconds
        print(String(format: "{\"mode\": \"posters\", \"clips\": %d, \"seconds\": %.3f, \"posters_per_second\": %.2f, \"failures\": %d, \"concurrency\": %d}",
                     clips.count, seconds, Double(clips.count) / seconds, failures, concurrency))
        await maker.shutdown()
    }
}
