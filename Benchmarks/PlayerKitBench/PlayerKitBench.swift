import ArgumentParser
import Dispatch
import Foundation
import PlayerKit
import Synchronization

/// PlayerKit's side of the benchmarks. Each subcommand prints one JSON object; the driver
/// (Benchmarks/run.py) runs it next to the C floor and python-mpv and writes the table.
/// Build in release mode: `swift build -c release --product playerkit-bench`.
@main
struct PlayerKitBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "playerkit-bench",
        abstract: "PlayerKit benchmarks (run through Benchmarks/run.py).",
        subcommands: [RoundTrip.self, FanOut.self])
}

/// Percentiles of a list of microsecond figures, as the C and Python programs print them.
func summary(_ values: [Double]) -> String {
    let sorted = values.sorted()
    let mean = sorted.reduce(0, +) / Double(sorted.count)
    return String(format: "{\"p50_us\": %.2f, \"p99_us\": %.2f, \"mean_us\": %.2f, \"samples\": %d}",
                  sorted[sorted.count / 2], sorted[Int(Double(sorted.count) * 0.99)], mean, sorted.count)
}

func microseconds(_ start: DispatchTime, _ end: DispatchTime) -> Double {
    Double(end.uptimeNanoseconds - start.uptimeNanoseconds) / 1000
}

/// Set a property on a player -> the bus subscriber's handler runs with the change.
struct RoundTrip: ParsableCommand {
    @Option var players = 1
    @Option var samples = 2000
    @Option var media: String
    @Flag(help: "Deliver to the subscriber immediately instead of on its queue.") var immediate = false
    @Option(help: "Microseconds to wait before each sample (0: back to back).") var gapUs = 0

    func run() throws {
        let bus = PlayerEventBus(label: "bench")
        var configuration = PlayerConfiguration(videoOutput: .none, audioOutput: .none)
        configuration.eventBus = bus
        let group = DispatchGroup()
        let created = try (0..<players).map { _ in try Player(configuration: configuration) }
        for player in created {
            group.enter()
            Task {
                _ = try? await player.load(MediaSource(media), startPaused: true)
                group.leave()
            }
        }
        group.wait()

        // The handler notes when it ran and wakes the measuring thread.
        let arrived = DispatchSemaphore(value: 0)
        let target = Locked<(player: PlayerID?, volume: Double, end: DispatchTime)>((nil, -1, .now()))
        let subscription = bus.subscribe(to: .all, kinds: [.volumeChanged], delivery: immediate ? .immediate : .queue(nil)) { record in
            let now = DispatchTime.now()
            guard case .volumeChanged(let volume) = record.event else { return }
            let hit = target.withLock { target -> Bool in
                guard target.player == record.playerID, target.volume == volume else { return false }
                target.end = now
                return true
            }
            if hit { arrived.signal() }
        }
        let warmup = samples / 10
        var latencies: [Double] = []
        latencies.reserveCapacity(samples)
        for k in -warmup..<samples {
            let player = created[(k + warmup) % players]
            // With a gap, each sample starts from a quiet machine, as in the C and Python programs.
            if gapUs > 0 { usleep(UInt32(gapUs)) }
            let volume = 20.0 + Double((k + warmup) % 50)
            target.withLock { $0 = (player.id, volume, .now()) }
            let start = DispatchTime.now()
            try player.setVolume(volume)
            guard arrived.wait(timeout: .now() + 10) == .success else { throw ValidationError("round trip timed out") }
            if k >= 0 { latencies.append(microseconds(start, target.withLock { $0.end })) }
        }
        subscription.cancel()
        print(summary(latencies))
        let done = DispatchSemaphore(value: 0)
        Task {
            for player in created { await player.shutdown() }
            done.signal()
        }
        done.wait()
    }
}

/// Events published on a bus -> handlers of N subscribers, deliveries per second.
struct FanOut: ParsableCommand {
    @Option var subscribers = 10
    @Option var events = 100_000
    /// Records per publish call (the pump publishes each event as soon as mpv gives it, so 1
    /// is the common case; bursts of API-made events go as one batch).
    @Option var batch = 1
    @Flag(help: "Deliver immediately on the publishing thread instead of on each subscriber's queue.") var immediate = false

    func run() throws {
        let bus = PlayerEventBus(label: "fanout")
        let id: PlayerID = "fanout"
        let expected = events * subscribers
        let delivered = Atomic<Int>(0)
        let finished = DispatchSemaphore(value: 0)
        let tokens = (0..<subscribers).map { _ in
            bus.subscribe(to: id, delivery: immediate ? .immediate : .queue(nil)) { _ in
                if delivered.add(1, ordering: .relaxed).newValue == expected { finished.signal() }
            }
        }
        let records = (0..<events).map {
            PlayerEventRecord(playerID: id, event: .positionChanged(Double($0)), sequenceNumber: UInt64($0 + 1), timestamp: Date())
        }
        let start = DispatchTime.now()
        var index = 0
        while index < records.count {
            let end = min(index + batch, records.count)
            bus.publish(Array(records[index..<end]))
            index = end
        }
        guard finished.wait(timeout: .now() + 120) == .success else { throw ValidationError("fan-out timed out") }
        let seconds = microseconds(start, .now()) / 1e6
        tokens.forEach { $0.cancel() }
        print(String(format: "{\"deliveries_per_second\": %.0f, \"deliveries\": %d, \"seconds\": %.4f, \"subscribers\": %d, \"batch\": %d, \"immediate\": %@}",
                     Double(expected) / seconds, expected, seconds, subscribers, batch, immediate ? "true" : "false"))
    }
}
