import ArgumentParser
import Dispatch
import ExampleSupport
import Foundation
import PlayerKit
import Synchronization

/// Issue 68's benchmark, PlayerKit's side (Benchmarks/health.py drives it).
///
/// - `health-alarms FILE`: plays FILE once with alarms watched at `--threshold` and prints one
///   JSON line per alarm event: its kind, start, end and the position the player showed when it
///   came (observed every frame), then `{"done": ...}` with the item's end.
/// - `health-loudness FILE`: plays FILE once with the meter observed every 100 ms; prints every
///   measurement and, at the item's end, the last one.
/// - `health-cost FILE`: `--players` players loop FILE for `--seconds`, with statistics at 1 Hz,
///   alarms and loudness as asked, and print the process's CPU seconds over the measured window.
struct HealthAlarms: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "health-alarms")
    @Option var threshold = 0.5
    @Option var speed = 1.0
    @Argument var file: String

    func run() async throws {
        let player = try await Player.create(id: "health", configuration: PlayerConfiguration(videoOutput: .none, audioOutput: .none))
        let seconds = Duration.milliseconds(Int64((threshold * 1000).rounded()))
        let watch = try await player.watchAlarms(AlarmThresholds(freeze: seconds, black: seconds, silence: seconds))
        let everyFrame = player.observeEveryFrame()
        let start = ContinuousClock.now
        // Every frame's position and its time (the pump's, as the alarms'), for the driver to
        // find the frame that showed a fault's start plus the threshold.
        let frames = Mutex<[(Double, Double)]>([])
        @Sendable func since(_ time: ContinuousClock.Instant) -> Double {
            Double((time - start).components.attoseconds) / 1e18 + Double((time - start).components.seconds)
        }
        let subscription = player.eventBus.subscribe(to: player.id, kinds: [.alarmRaised, .alarmCleared, .positionChanged], delivery: .immediate) { record in
            if case .positionChanged(let position) = record.event {
                frames.withLock { $0.append((position, since(record.time))) }
                return
            }
            let position = player.position ?? -1
            let (raised, alarm): (Bool, Alarm) = switch record.event {
            case .alarmRaised(let alarm): (true, alarm)
            case .alarmCleared(let alarm): (false, alarm)
            default: (false, Alarm(kind: .freeze, start: -1))
            }
            let t = since(record.time)
            ExampleSupport.printLine(String(format: "{\"event\": \"%@\", \"kind\": \"%@\", \"start\": %.4f, \"end\": %.4f, \"position\": %.4f, \"t\": %.4f}",
                                            raised ? "raised" : "cleared", alarm.kind.rawValue, alarm.start, alarm.end ?? -1, position, t))
        }
        let ended = player.events(kinds: [.itemEnded])
        if speed != 1 { try await player.perform(.setSpeed(speed)) }
        try await player.load(MediaSource(file))
        _ = await ended.first(timeout: .seconds(3600)) { _ in true }
        subscription.cancel()
        everyFrame.cancel()
        watch.cancel()
        let shown = frames.withLock { $0 }.map { String(format: "[%.4f, %.4f]", $0.0, $0.1) }.joined(separator: ", ")
        ExampleSupport.printLine("{\"done\": true, \"frames\": [\(shown)]}")
        await player.shutdown()
    }
}

struct HealthLoudness: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "health-loudness")
    @Argument var file: String

    func run() async throws {
        let player = try await Player.create(id: "loudness", configuration: PlayerConfiguration(videoOutput: .none, audioOutput: .none))
        let meter = try await player.observeLoudness(every: .milliseconds(100))
        let last = Mutex<Loudness?>(nil)
        let subscription = player.eventBus.subscribe(to: player.id, kinds: [.loudnessUpdated], delivery: .immediate) { record in
            guard case .loudnessUpdated(let loudness) = record.event else { return }
            last.withLock { $0 = loudness }
            let position = player.position ?? -1
            ExampleSupport.printLine(Self.line(loudness, extra: String(format: "\"position\": %.3f", position)))
        }
        let ended = player.events(kinds: [.itemEnded])
        try await player.load(MediaSource(file))
        _ = await ended.first(timeout: .seconds(3600)) { _ in true }
        subscription.cancel()
        if let final = last.withLock({ $0 }) { ExampleSupport.printLine(Self.line(final, extra: "\"final\": true")) }
        meter.cancel()
        await player.shutdown()
    }

    static func line(_ loudness: Loudness, extra: String) -> String {
        func value(_ figure: Double?) -> String { figure.map { String(format: "%.3f", $0) } ?? "null" }
        return "{\"M\": \(value(loudness.momentary)), \"S\": \(value(loudness.shortTerm)), \"I\": \(value(loudness.integrated)), \"TP\": \(value(loudness.truePeak)), \(extra)}"
    }
}

struct HealthCost: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "health-cost")
    @Option var players = 4
    @Option var seconds = 20.0
    @Flag var statistics = false
    @Flag var alarms = false
    @Flag var loudness = false
    @Argument var file: String

    func run() async throws {
        var created: [Player] = []
        var keep: [PropertyObservation] = []
        for index in 0..<players {
            let player = try await Player.create(id: try PlayerID(validating: "cost-\(index)"), configuration: PlayerConfiguration(videoOutput: .none, audioOutput: .none))
            try await player.perform(.setLoop(.forever))
            if statistics { keep.append(try player.observeStatistics(every: .seconds(1))) }
            if alarms { keep.append(try await player.watchAlarms(AlarmThresholds())) }
            if loudness { keep.append(try await player.observeLoudness(every: .milliseconds(100))) }
            try await player.load(MediaSource(file))
            created.append(player)
        }
        // Past the start-up: the window measures playing players only.
        try await Task.sleep(for: .seconds(2))
        let (cpu0, wall0) = (Self.cpuSeconds(), ContinuousClock.now)
        try await Task.sleep(for: Duration.milliseconds(Int64(seconds * 1000)))
        let (cpu1, wall1) = (Self.cpuSeconds(), ContinuousClock.now)
        let wall = Double((wall1 - wall0).components.seconds) + Double((wall1 - wall0).components.attoseconds) / 1e18
        ExampleSupport.printLine(String(format: "{\"cpu_s\": %.4f, \"wall_s\": %.4f, \"players\": %d}", cpu1 - cpu0, wall, players))
        keep.removeAll()
        for player in created { await player.shutdown() }
    }

    static func cpuSeconds() -> Double {
        var usage = rusage()
        getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage)
        return Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6 + Double(usage.ru_stime.tv_sec) + Double(usage.ru_stime.tv_usec) / 1e6
    }
}

/// `health-truth SOURCE`: plays SOURCE once (or for `--seconds`) with statistics every
/// `--interval` and prints each sample beside independent counts taken in the same process:
/// with `--frames`, the new frames a ``FrameOutput`` got and the gaps between them (the picture
/// standing still); always the state changes. Times are `CLOCK_MONOTONIC` seconds, the clock
/// Python's `time.monotonic()` reads, so the driver lines them up with its server's log.
struct HealthTruth: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "health-truth")
    @Flag var frames = false
    @Option var seconds = 600.0
    @Option var interval = 1.0
    @Argument var source: String

    func run() async throws {
        let configuration = PlayerConfiguration(videoOutput: frames ? .frames : .none, audioOutput: .none)
        let player = try await Player.create(id: "truth", configuration: configuration)
        // New frames the output got, and when (for the gaps).
        let got = Mutex<(count: Int, last: Double?, gaps: [(Double, Double)])>((0, nil, []))
        let output = try frames ? player.makeFrameOutput(FrameFormat(width: 64, height: 48)) : nil
        output?.setFrameHandler { frame in
            guard frame.info.isNewFrame else { return }
            let now = Self.monotonic()
            got.withLock { got in
                if let last = got.last, now - last > 0.25 { got.gaps.append((last, now - last)) }
                got.count += 1
                got.last = now
            }
        }
        let subscription = player.eventBus.subscribe(to: player.id, kinds: [.statisticsUpdated, .stateChanged], delivery: .immediate) { record in
            switch record.event {
            case .statisticsUpdated(let statistics):
                ExampleSupport.printLine(Self.line("stats", statistics, frames: got.withLock { $0.count }, position: player.position))
            case .stateChanged(let from, let to):
                ExampleSupport.printLine(String(format: "{\"type\": \"state\", \"from\": \"%@\", \"to\": \"%@\", \"t\": %.4f}", "\(from)", "\(to)", Self.monotonic()))
            default: break
            }
        }
        let observation = try player.observeStatistics(every: .milliseconds(Int64((interval * 1000).rounded())))
        let ended = player.events(kinds: [.itemEnded])
        ExampleSupport.printLine(String(format: "{\"type\": \"start\", \"t\": %.4f}", Self.monotonic()))
        try await player.load(MediaSource(source))
        _ = await ended.first(timeout: .milliseconds(Int64(seconds * 1000))) { _ in true }
        let final = try await player.statistics()
        let (count, gaps) = got.withLock { ($0.count, $0.gaps) }
        ExampleSupport.printLine(Self.line("final", final, frames: count, position: player.position))
        let shown = gaps.map { String(format: "[%.4f, %.4f]", $0.0, $0.1) }.joined(separator: ", ")
        ExampleSupport.printLine("{\"type\": \"gaps\", \"gaps\": [\(shown)]}")
        subscription.cancel()
        observation.cancel()
        output?.close()
        await player.shutdown()
    }

    static func line(_ type: String, _ statistics: PlaybackStatistics, frames: Int, position: Double?) -> String {
        func value<T>(_ figure: T?) -> String { figure.map { "\($0)" } ?? "null" }
        func seconds(_ duration: Duration) -> String {
            String(format: "%.4f", Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18)
        }
        return "{\"type\": \"\(type)\", \"t\": \(String(format: "%.4f", monotonic())), \"rendered\": \(value(statistics.framesRendered)), "
            + "\"dropped_output\": \(value(statistics.framesDroppedByOutput)), \"dropped_decoder\": \(value(statistics.framesDroppedByDecoder)), "
            + "\"arriving\": \(value(statistics.arrivingBitrate)), \"stalls\": \(statistics.stallCount), \"stall_time\": \(seconds(statistics.stallTime)), "
            + "\"longest_stall\": \(seconds(statistics.longestStall)), \"position\": \(value(position)), \"frames\": \(frames)}"
    }

    /// `CLOCK_MONOTONIC`, in seconds.
    static func monotonic() -> Double {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
    }
}
