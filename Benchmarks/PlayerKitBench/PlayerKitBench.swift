import ArgumentParser
import Dispatch
import ExampleSupport
import Foundation
import PlayerKit
import Synchronization

/// PlayerKit's side of the benchmarks. Each subcommand prints one JSON object; the driver
/// (Benchmarks/run.py) runs it next to the C floor and python-mpv and writes the table.
/// Build in release mode: `swift build -c release --product playerkit-bench`.
@main
struct PlayerKitBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "playerkit-bench",
        abstract: "PlayerKit benchmarks (run through Benchmarks/run.py).",
        subcommands: [RoundTrip.self, FanOut.self, Decode.self, TimeToFirstFrame.self, EventRate.self, Memory.self, Cycles.self, Churn.self, Ready.self,
                      Switch.self, Release.self, Realtime.self, Seams.self, Sync.self, SyncLoad.self, FrameStep.self, Posters.self, Autoplay.self, Frames.self, Cache.self, CacheLayouts.self, Serve.self, MPRISServe.self,
                      HealthAlarms.self, HealthLoudness.self, HealthCost.self, HealthTruth.self])
}

/// Percentiles of a list of microsecond figures, as the C and Python programs print them, and
/// any further figures (`"name": value`) after them.
func summary(_ values: [Double], extra: [(String, Double)] = []) -> String {
    let sorted = values.sorted()
    let mean = sorted.reduce(0, +) / Double(sorted.count)
    let more = extra.map { String(format: ", \"%@\": %.2f", $0.0, $0.1) }.joined()
    return String(format: "{\"p50_us\": %.2f, \"p99_us\": %.2f, \"mean_us\": %.2f, \"samples\": %d%@}",
                  sorted[sorted.count / 2], sorted[Int(Double(sorted.count) * 0.99)], mean, sorted.count, more)
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
        let target = Guarded<(player: PlayerID?, volume: Double, end: DispatchTime)>((nil, -1, .now()))
        // The delivery hop: from the record's time (taken on the event pump) to the handler.
        let hops = Guarded<[Double]>([])
        let subscription = bus.subscribe(to: .all, kinds: [.volumeChanged], delivery: immediate ? .immediate : .queue(nil)) { record in
            let now = DispatchTime.now()
            let hop = ContinuousClock.now.seconds(since: record.time) * 1e6
            guard case .volumeChanged(let volume) = record.event else { return }
            let hit = target.withLock { target -> Bool in
                guard target.player == record.playerID, target.volume == volume else { return false }
                target.end = now
                return true
            }
            if hit {
                hops.withLock { $0.append(hop) }
                arrived.signal()
            }
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
            // Sent, as from a handler or a UI callback: the time until the change is heard.
            try player.send(.setVolume(volume))
            guard arrived.wait(timeout: .now() + 10) == .success else { throw ValidationError("round trip timed out") }
            if k >= 0 { latencies.append(microseconds(start, target.withLock { $0.end })) }
        }
        subscription.cancel()
        let hopsTaken = hops.withLock { Array($0.suffix(latencies.count)) }
        print(summary(latencies, extra: [("hop_p50_us", ExampleStatistics.percentile(0.5, of: hopsTaken) ?? 0)]))
        let done = DispatchSemaphore(value: 0)
        Task {
            for player in created { await player.shutdown() }
            done.signal()
        }
        done.wait()
    }
}

/// Events a player publishes (``Player/publish(_:)``, a feature's events) -> handlers of N bus
/// subscribers of its ID, deliveries per second: the whole pipeline after the pump (numbering,
/// fan-out, subscriber queues), through public API only.
struct FanOut: ParsableCommand {
    @Option var subscribers = 10
    @Option var events = 100_000
    @Flag(help: "Deliver immediately on the publishing thread instead of on each subscriber's queue.") var immediate = false

    /// The event the benchmark publishes.
    struct Tick: PlayerFeatureEvent {
        let number: Int
        var kind: PlayerEventKind { "bench.tick" }
        var description: String { "tick(\(number))" }
    }

    func run() throws {
        let bus = PlayerEventBus(label: "fanout")
        let player = try Player(id: "fanout", configuration: benchConfiguration(bus: bus))
        let expected = events * subscribers
        let delivered = Atomic<Int>(0)
        let finished = DispatchSemaphore(value: 0)
        let tokens = (0..<subscribers).map { _ in
            bus.subscribe(to: player.id, kinds: ["bench.tick"], delivery: immediate ? .immediate : .queue(nil)) { _ in
                if delivered.add(1, ordering: .relaxed).newValue == expected { finished.signal() }
            }
        }
        let start = DispatchTime.now()
        for number in 0..<events { player.publish(Tick(number: number)) }
        guard finished.wait(timeout: .now() + 120) == .success else { throw ValidationError("fan-out timed out") }
        let seconds = microseconds(start, .now()) / 1e6
        tokens.forEach { $0.cancel() }
        print(String(format: "{\"deliveries_per_second\": %.0f, \"deliveries\": %d, \"seconds\": %.4f, \"subscribers\": %d, \"immediate\": %@}",
                     Double(expected) / seconds, expected, seconds, subscribers, immediate ? "true" : "false"))
        let done = DispatchSemaphore(value: 0)
        Task {
            await player.shutdown()
            done.signal()
        }
        done.wait()
    }
}

// MARK: Workloads shared with Benchmarks/c/workloads.c and Benchmarks/python/workloads.py

/// Headless, silent players on a bus of their own: the same options as the C and Python programs.
func benchConfiguration(bus: PlayerEventBus, positionInterval: Duration = .milliseconds(250)) -> PlayerConfiguration {
    var configuration = PlayerConfiguration(videoOutput: .none, audioOutput: .none)
    configuration.eventBus = bus
    configuration.positionUpdateInterval = positionInterval
    return configuration
}

/// Process CPU time (user + system, all threads) in seconds.
func cpuSeconds() -> Double {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    return Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6
        + Double(usage.ru_stime.tv_sec) + Double(usage.ru_stime.tv_usec) / 1e6
}

/// Resident memory in MB, from /proc/self/status.
func residentMB() -> Double {
    guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return 0 }
    for line in status.split(separator: "\n") where line.hasPrefix("VmRSS:") {
        return (Double(line.split(separator: " ").dropFirst().first ?? "0") ?? 0) / 1024
    }
    return 0
}

func seconds(since start: DispatchTime) -> Double { microseconds(start, .now()) / 1e6 }

/// Counts events of some kinds on a bus and lets a caller wait for a number of them.
final class EventCounter: Sendable {
    private let tally = Tally()
    private let subscription: PlayerSubscription

    init(bus: PlayerEventBus, kinds: Set<PlayerEventKind>) {
        let tally = self.tally
        subscription = bus.subscribe(to: .all, kinds: kinds, delivery: .immediate) { _ in tally.increment() }
    }

    /// Returns once `target` events were counted.
    func wait(for target: Int) async {
        await tally.wait(for: target)
    }
}

func makePlayers(_ count: Int, configuration: PlayerConfiguration, loop: Bool) throws -> [Player] {
    try (0..<count).map { _ in
        let player = try Player(configuration: configuration)
        if loop { try player.send(.setLoop(.forever)) }  // carried out before the load that follows
        return player
    }
}

func startLoading(_ players: [Player], media: String) {
    for player in players { Task { _ = try? await player.load(MediaSource(media)) } }
}

/// N players play the clip to its end at once: CPU seconds and wall time.
struct Decode: AsyncParsableCommand {
    @Option var players = 1
    @Option var media: String

    func run() async throws {
        let bus = PlayerEventBus(label: "decode")
        let ended = EventCounter(bus: bus, kinds: [.itemEnded])
        let created = try makePlayers(players, configuration: benchConfiguration(bus: bus), loop: false)
        let cpu = cpuSeconds(), start = DispatchTime.now()
        startLoading(created, media: media)
        await ended.wait(for: players)
        print(String(format: "{\"cpu_s\": %.3f, \"wall_s\": %.3f}", cpuSeconds() - cpu, seconds(since: start)))
        for player in created { await player.shutdown() }
    }
}

/// Create + load -> first frame, over several runs.
struct TimeToFirstFrame: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "ttff")
    @Option var runs = 30
    @Option var media: String
    @Option(help: "make the ready cores ready before the first run (Player.prepareReadyCores), as an app does at launch")
    var prepared = true

    func run() async throws {
        let bus = PlayerEventBus(label: "ttff")
        let firstFrames = EventCounter(bus: bus, kinds: [.firstFrame])
        var times: [Double] = []
        // As an app does at launch: the first player, too, takes a core made ready ahead. What
        // is timed is the user's wait, from asking for a player to its first frame.
        if prepared { try await Player.prepareReadyCores(for: benchConfiguration(bus: bus)) }
        for run in 1...runs {
            let start = DispatchTime.now()
            let player = try await Player.create(configuration: benchConfiguration(bus: bus))
            startLoading([player], media: media)
            await firstFrames.wait(for: run)
            times.append(microseconds(start, .now()) / 1000)
            await player.shutdown()
        }
        times.sort()
        print(String(format: "{\"p50_ms\": %.2f, \"p99_ms\": %.2f}", times[times.count / 2], times[Int(Double(times.count) * 0.99)]))
    }
}

/// Position events delivered per second with N looping players (every change reported).
struct EventRate: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "events")
    @Option var players = 16
    @Option var seconds: Double = 3
    @Option var media: String

    func run() async throws {
        let bus = PlayerEventBus(label: "events")
        let started = EventCounter(bus: bus, kinds: [.firstFrame])
        let created = try makePlayers(players, configuration: benchConfiguration(bus: bus, positionInterval: .zero), loop: true)
        startLoading(created, media: media)
        await started.wait(for: players)
        // A queue subscriber, as an app would have.
        let delivered = Atomic<Int>(0)
        let subscription = bus.subscribe(to: .all, kinds: [.positionChanged]) { _ in
            delivered.add(1, ordering: .relaxed)
        }
        let cpu = cpuSeconds()
        try await Task.sleep(for: .seconds(self.seconds))
        let total = delivered.load(ordering: .relaxed)
        print(String(format: "{\"events_per_second\": %.1f, \"cpu_s\": %.3f}", Double(total) / self.seconds, cpuSeconds() - cpu))
        subscription.cancel()
        for player in created { await player.shutdown() }
    }
}

/// Resident memory added per playing player.
struct Memory: AsyncParsableCommand {
    @Option var players = 1
    @Option var media: String

    func run() async throws {
        let bus = PlayerEventBus(label: "memory")
        let started = EventCounter(bus: bus, kinds: [.firstFrame])
        let before = residentMB()
        let created = try makePlayers(players, configuration: benchConfiguration(bus: bus), loop: true)
        startLoading(created, media: media)
        await started.wait(for: players)
        try await Task.sleep(for: .seconds(1))
        print(String(format: "{\"rss_added_per_player_mb\": %.2f}", (residentMB() - before) / Double(players)))
        for player in created { await player.shutdown() }
    }
}

/// Create + shutdown cycles: time per cycle and memory growth after the first ten.
struct Cycles: AsyncParsableCommand {
    @Option var count = 200

    func run() async throws {
        let bus = PlayerEventBus(label: "cycles")
        var warm = 0.0
        let start = DispatchTime.now()
        for index in 0..<count {
            let player = try await Player.create(configuration: benchConfiguration(bus: bus))
            await player.shutdown()
            if index == 9 { warm = residentMB() }
        }
        print(String(format: "{\"cycle_ms\": %.3f, \"rss_growth_mb\": %.2f}", microseconds(start, .now()) / 1000 / Double(count), residentMB() - warm))
    }
}

/// Creating a player that accepts a load, on an idle machine: `Player.create` as an app calls
/// it, with a core made ready ahead (`readyCores` 1, the default) and without (0), one run every
/// 0.3 s (so the pool has made the next core ready, 0.2 s after the last was taken, as on an idle
/// machine); each player shut down outside the timing. Prints p50 and p99 in ms, ready and
/// (`cold_`) without.
struct Ready: AsyncParsableCommand {
    @Option var runs = 50

    func run() async throws {
        let bus = PlayerEventBus(label: "ready")
        var figures: [Int: [Double]] = [:]
        for readyCores in [1, 0] {
            var configuration = benchConfiguration(bus: bus)
            configuration.readyCores = readyCores
            // The first player with these settings creates its core; the pool then makes the next.
            let first = try await Player.create(configuration: configuration)
            var times: [Double] = []
            for _ in 0..<runs {
                try await Task.sleep(for: .milliseconds(300))
                let start = DispatchTime.now()
                let player = try await Player.create(configuration: configuration)
                times.append(microseconds(start, .now()))
                await player.shutdown()
            }
            await first.shutdown()
            figures[readyCores] = times.sorted()
        }
        func percentile(_ list: [Double], _ fraction: Double) -> Double { list[min(list.count - 1, Int(Double(list.count) * fraction))] / 1000 }
        let (ready, cold) = (figures[1]!, figures[0]!)
        print(String(format: "{\"p50_ms\": %.3f, \"p99_ms\": %.3f, \"cold_p50_ms\": %.3f, \"cold_p99_ms\": %.3f}",
                     percentile(ready, 0.5), percentile(ready, 0.99), percentile(cold, 0.5), percentile(cold, 0.99)))
    }
}

/// Players that really decode, one after another: each cycle creates a player, loads the clip to
/// its first frame and shuts it down. Resident memory before the first cycle, after the 10th,
/// after the 50th and after the last, with freed memory handed back (malloc_trim) before each
/// reading. `--arenas N` sets the process's own bound on glibc's arenas as an app would
/// (`ProcessMemory.limitMallocArenas(to:)`); without it PlayerKit bounds them to 2 itself.
struct Churn: AsyncParsableCommand {
    @Option var count = 200
    @Option var media: String
    @Option var arenas: Int?
    /// `PlayerConfiguration.readyCores` (default: PlayerKit's).
    @Option var readyCores: Int?

    func run() async throws {
        if let arenas { try ProcessMemory.limitMallocArenas(to: arenas) }
        let bus = PlayerEventBus(label: "churn")
        ProcessMemory.releaseFreedMemory()
        let initial = residentMB()
        var warm = 0.0, after50 = -1.0
        let start = DispatchTime.now()
        var configuration = benchConfiguration(bus: bus)
        if let readyCores { configuration.readyCores = readyCores }
        for index in 0..<count {
            let player = try await Player.create(configuration: configuration)
            let frames = player.events(kinds: [.firstFrame])
            startLoading([player], media: media)
            for await _ in frames { break }
            frames.cancel()
            await player.shutdown()
            if index == 9 {
                ProcessMemory.releaseFreedMemory()
                warm = residentMB()
            }
            if index == 49 {
                ProcessMemory.releaseFreedMemory()
                after50 = residentMB()
            }
        }
        ProcessMemory.releaseFreedMemory()
        print(String(format: "{\"cycle_ms\": %.3f, \"rss_growth_mb\": %.2f, \"rss_mb\": %.2f, \"rss_start_mb\": %.2f, \"rss_50_mb\": %.2f}",
                     microseconds(start, .now()) / 1000 / Double(count), residentMB() - warm, residentMB(), initial, after50))
    }
}

/// Cold start (load -> first frame, playing) against a preloaded one (play() -> mpv's core
/// runs), each run on fresh idle players made outside the timing, as the standby player of an
/// A/B pair would be.
struct Switch: AsyncParsableCommand {
    @Option var runs = 20
    @Option var media: String

    func run() async throws {
        let bus = PlayerEventBus(label: "switch")
        var cold: [Double] = []
        var warm: [Double] = []
        for _ in 0..<runs {
            let a = try await Player.create(configuration: benchConfiguration(bus: bus))
            let b = try await Player.create(configuration: benchConfiguration(bus: bus))
            let frames = a.events(kinds: [.firstFrame])
            var start = DispatchTime.now()
            startLoading([a], media: media)
            for await _ in frames { break }
            frames.cancel()
            cold.append(microseconds(start, .now()) / 1000)
            try await b.preload(MediaSource(media))
            // Until mpv's core runs, heard as the C and Python programs hear it: an observation
            // of `core-idle` that turns false (PlayerKit's own `playing` state follows the
            // request at once).
            let changes = b.events(kinds: [.propertyChanged])
            let observation = try b.observeProperty("core-idle")
            start = DispatchTime.now()
            // Handed over, as the C program's request: the wait is for mpv's notification, as
            // there, not for the awaited form's answer (which can come after it).
            try b.send(.play)
            for await record in changes {
                if case .propertyChanged("core-idle", .flag(false)) = record.event { break }
            }
            warm.append(microseconds(start, .now()) / 1000)
            observation.cancel()
            changes.cancel()
            await a.shutdown()
            await b.shutdown()
        }
        cold.sort()
        warm.sort()
        print(String(format: "{\"cold_p50_ms\": %.3f, \"preloaded_p50_ms\": %.3f}", cold[runs / 2], warm[runs / 2]))
    }
}

/// Resident memory per player while N players play, after they release their media, and
/// (C, python-mpv) after an explicit malloc_trim, which PlayerKit's release does itself.
struct Release: AsyncParsableCommand {
    @Option var players = 8
    @Option var media: String

    func run() async throws {
        let bus = PlayerEventBus(label: "release")
        let started = EventCounter(bus: bus, kinds: [.firstFrame])
        let before = residentMB()
        let budget = try DecoderBudget(limit: players)
        let created = try makePlayers(players, configuration: benchConfiguration(bus: bus), loop: true)
        for player in created { Task { try? await budget.load(MediaSource(media), into: player) } }
        await started.wait(for: players)
        try await Task.sleep(for: .seconds(1))
        let active = residentMB()
        for player in created { try budget.release(player) }
        try await Task.sleep(for: .seconds(1))
        let released = residentMB()
        print(String(format: "{\"active_mb_per_player\": %.2f, \"released_mb_per_player\": %.2f, \"trimmed_mb_per_player\": %.2f}",
                     (active - before) / Double(players), (released - before) / Double(players), (released - before) / Double(players)))
        for player in created { await player.shutdown() }
    }
}

/// N looping players: frames dropped over some seconds (0 when all keep real time).
struct Realtime: AsyncParsableCommand {
    @Option var players = 8
    @Option var seconds: Double = 5
    @Option var media: String

    func run() async throws {
        let bus = PlayerEventBus(label: "realtime")
        let started = EventCounter(bus: bus, kinds: [.firstFrame])
        let created = try makePlayers(players, configuration: benchConfiguration(bus: bus), loop: true)
        startLoading(created, media: media)
        await started.wait(for: players)
        func drops(_ player: Player) async -> Int64 {
            let frames = (try? await player.property("frame-drop-count"))?.intValue ?? 0
            return frames + ((try? await player.property("decoder-frame-drop-count"))?.intValue ?? 0)
        }
        var base: [Int64] = []
        for player in created { base.append(await drops(player)) }
        try await Task.sleep(for: .seconds(self.seconds))
        var dropped: Int64 = 0
        for (player, before) in zip(created, base) { dropped += await drops(player) - before }
        print(String(format: "{\"dropped\": %lld, \"frames\": %.0f}", dropped, Double(players) * self.seconds * 30))
        for player in created { await player.shutdown() }
    }
}

/// A ClipLoop over the clips: every frame's (wall, position), as the C and Python programs
/// print them for the same loop, so the driver measures every seam the same way.
struct Seams: AsyncParsableCommand {
    @Option var seconds: Double = 12
    @Argument var clips: [String]

    func run() async throws {
        let bus = PlayerEventBus(label: "seams")
        let samples = Guarded<[(Double, Double)]>([])
        let player = try await Player.create(configuration: benchConfiguration(bus: bus, positionInterval: .zero))
        let subscription = bus.subscribe(to: player.id, kinds: [.positionChanged], delivery: .immediate) { record in
            guard case .positionChanged(let position) = record.event else { return }
            let wall = Double(DispatchTime.now().uptimeNanoseconds) / 1e9
            samples.withLock { $0.append((wall, position)) }
        }
        let loop = try ClipLoop(player: player, clips: clips.map { MediaSource($0) })
        try await loop.start()
        try await Task.sleep(for: .seconds(self.seconds))
        loop.stop()
        subscription.cancel()
        let taken = samples.withLock { $0 }
        print("{\"samples\": [" + taken.map { String(format: "[%.6f, %.6f]", $0.0, $0.1) }.joined(separator: ", ") + "]}")
        await player.shutdown()
    }
}

/// Two players over the two clips, each looping in one timeline, either in a SyncGroup or
/// started the naive way (one `load` after the other): the drift between them at every frame of
/// either, |(wall - position) of one - (wall - position) of the other|, as the C and Python
/// programs measure the naive way.
struct Sync: AsyncParsableCommand {
    @Option var seconds: Double = 20
    @Flag var naive = false
    @Argument var clips: [String]

    func run() async throws {
        let bus = PlayerEventBus(label: "sync")
        let players = try (0..<2).map { _ in try Player(configuration: benchConfiguration(bus: bus, positionInterval: .zero)) }
        let offsets = Guarded<[PlayerID: Double]>([:])
        let spreads = Guarded<[Double]>([])
        let origin = ContinuousClock.now
        let subscription = bus.subscribe(to: .all, kinds: [.positionChanged], delivery: .immediate) { record in
            guard case .positionChanged(let position) = record.event else { return }
            let time = record.time.seconds(since: origin)
            let spread = offsets.withLock { offsets -> Double? in
                offsets[record.playerID] = time - position
                guard offsets.count == 2, let low = offsets.values.min(), let high = offsets.values.max() else { return nil }
                return high - low
            }
            if let spread { spreads.withLock { $0.append(spread) } }
        }
        // Measured on frame changes: mpv reports a new position when its frame is due, not when
        // it queues the frame up to 50 ms earlier (by half a frame or not, at random), so the
        // spread below is that of the moments the two show the same frame (Performance.md,
        // "Timing a frame change"). The C and Python programs set the same.
        for player in players { try await player.setProperty("video-timing-offset", to: .double(0)) }
        let sources = clips.prefix(2).map { MediaSource.joined([MediaSource($0)], repeated: 100) }
        var group: SyncGroup?
        if naive {
            for (player, source) in zip(players, sources) { try await player.load(source) }
        } else {
            let synced = try SyncGroup(players: players)
            try await synced.load(sources)
            try await synced.play()
            group = synced
        }
        try await Task.sleep(for: .seconds(self.seconds))
        _ = group
        subscription.cancel()
        let sorted = spreads.withLock { $0 }.sorted()
        print(String(format: "{\"p50_ms\": %.3f, \"p99_ms\": %.3f, \"max_ms\": %.3f, \"frames\": %d}",
                     sorted[sorted.count / 2] * 1000, sorted[Int(Double(sorted.count) * 0.99)] * 1000, (sorted.last ?? 0) * 1000, sorted.count))
        for player in players { await player.shutdown() }
    }
}

/// A SyncGroup's `load` and `play` with N members: how long the load takes (every member
/// paused on its first frame), and the start skew, the spread of the moments the members'
/// `stateChanged(to: .playing)` records were taken after `play()`. Players are made and the
/// group formed outside the timing; each run uses new players.
struct SyncLoad: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "sync-load")
    @Option var members = 2
    @Option var runs = 10
    @Argument var clips: [String]

    func run() async throws {
        var loads: [Double] = []
        var skews: [Double] = []
        for run in 0..<runs {
            let bus = PlayerEventBus(label: "sync-load")
            var players: [Player] = []
            for _ in 0..<members { players.append(try await Player.create(configuration: benchConfiguration(bus: bus))) }
            let starts = players.map { $0.events(kinds: [.stateChanged], bufferLimit: 16) }
            let group = try SyncGroup(players: players)
            let sources = (0..<members).map { MediaSource(clips[($0 + run) % clips.count]) }
            let before = ContinuousClock.now
            try await group.load(sources)
            loads.append(before.duration(to: .now).inSeconds * 1000)
            try await group.play()
            var times: [ContinuousClock.Instant] = []
            for stream in starts {
                let record = await stream.first(timeout: .seconds(5)) { record in
                    if case .stateChanged(_, .playing) = record.event { return true }
                    return false
                }
                if let record { times.append(record.time) }
                stream.cancel()
            }
            if times.count == members, let first = times.min(), let last = times.max() {
                skews.append(first.duration(to: last).inSeconds * 1000)
            }
            group.invalidate()
            for player in players { await player.shutdown() }
        }
        loads.sort()
        skews.sort()
        print(String(format: "{\"members\": %d, \"runs\": %d, \"load_p50_ms\": %.2f, \"load_max_ms\": %.2f, \"skew_p50_ms\": %.3f, \"skew_max_ms\": %.3f, \"skew_samples\": %d}",
                     members, runs, loads[loads.count / 2], loads.last ?? 0, skews.isEmpty ? -1 : skews[skews.count / 2], skews.last ?? -1, skews.count))
    }
}

/// Autoplay decision latency: from the moment scrolling settled (the last visibility report
/// plus the settle delay) to the coordinator's play decision, and to the chosen item playing.
struct Autoplay: AsyncParsableCommand {
    @Option var runs = 20
    @Option var media: String

    func run() async throws {
        let bus = PlayerEventBus(label: "autoplay")
        var settings = AutoplayCoordinator.Settings()
        settings.preparesPosters = false
        let coordinator = try AutoplayCoordinator(settings: settings)
        let decided = Guarded<[String: DispatchTime]>([:])
        // Each decision is published on its item's player: heard as it is delivered.
        let heard = bus.subscribe(to: .all, kinds: [.autoplayDecision], delivery: .immediate) { record in
            guard case .decision(let decision)? = record.event.feature(AutoplayEvent.self), decision.action == .play else { return }
            decided.withLock { $0[decision.item] = .now() }
        }
        defer { heard.cancel() }
        let players = try (0..<2).map { _ in try Player(configuration: benchConfiguration(bus: bus)) }
        for (index, player) in players.enumerated() { try coordinator.add("item-\(index)", player: player, source: MediaSource(media)) }
        let settleNanoseconds = UInt64(settings.settleDelay.inSeconds * 1e9)
        var decisions: [Double] = []
        var playing: [Double] = []
        for run in 0..<runs {
            let winner = run % 2, other = 1 - winner
            let stream = players[winner].events(kinds: [.stateChanged])
            try coordinator.reportVisibility(0, of: "item-\(other)")
            try coordinator.reportVisibility(1, of: "item-\(winner)")
            let settled = DispatchTime(uptimeNanoseconds: DispatchTime.now().uptimeNanoseconds + settleNanoseconds)
            for await record in stream {
                if case .stateChanged(_, .playing) = record.event { break }
            }
            stream.cancel()
            let reached = DispatchTime.now()
            guard let decision = decided.withLock({ $0.removeValue(forKey: "item-\(winner)") }) else { continue }
            decisions.append(Double(Int64(decision.uptimeNanoseconds) - Int64(settled.uptimeNanoseconds)) / 1e6)
            playing.append(Double(Int64(reached.uptimeNanoseconds) - Int64(settled.uptimeNanoseconds)) / 1e6)
        }
        decisions.sort()
        playing.sort()
        print(String(format: "{\"decision_p50_ms\": %.3f, \"decision_p99_ms\": %.3f, \"playing_p50_ms\": %.3f}",
                     decisions[decisions.count / 2], decisions[Int(Double(decisions.count) * 0.99)], playing[playing.count / 2]))
        for player in players { await player.shutdown() }
    }
}
