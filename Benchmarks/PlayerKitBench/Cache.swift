import ArgumentParser
import Dispatch
import ExampleSupport
import Foundation
import PlayerKit
import PlayerKitCache

/// How the benchmarks' loopback servers pace a rate-limited response: a burst every 10 ms (20 KB
/// at 2 MB/s), closer to a TCP flow than the servers' 50 ms default; a response a client drops
/// midway (a seek) then wastes about a burst, as with a real server's buffers.
let benchPacing: Duration = .milliseconds(10)

/// The media cache, side by side in one run: time to first frame from the network (loopback,
/// throttled), through a cold cache, from a warm cache, from a plain local file, and through
/// mpv's own HTTP loading of the same URL; and the bytes the server sends when two players and
/// a precache want one item at once, through the cache and through mpv's own loading.
struct Cache: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "cache")
    @Option var runs = 10
    @Option var media: String
    @Option(help: "The server's rate, bytes per second.") var rate = 2_000_000

    func run() async throws {
        let data = try Data(contentsOf: URL(fileURLWithPath: media))
        let server = LoopbackMediaServer(files: ["clip.mp4": data], bytesPerSecond: rate, pacing: benchPacing)
        try server.start()
        let url = server.url("clip.mp4")
        let bus = PlayerEventBus(label: "cache")
        let firstFrames = EventCounter(bus: bus, kinds: [.firstFrame])
        var counted = 0
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("playerkit-bench-cache-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }

        /// Milliseconds from creating a player to its first frame of `source`.
        func firstFrame(_ source: MediaSource, configuration: PlayerConfiguration) async throws -> Double {
            let start = DispatchTime.now()
            let player = try await Player.create(configuration: configuration)
            Task { _ = try? await player.load(source) }
            counted += 1
            await firstFrames.wait(for: counted)
            let elapsed = microseconds(start, .now()) / 1000
            await player.shutdown()
            return elapsed
        }

        // Each run makes four players back to back (the local file's and the URL's follow the
        // warm cache's within milliseconds, and the next run's cold one follows the URL's): as an
        // app that makes players in bursts of four does, four cores are kept ready and made ready
        // at launch (PlayerConfiguration.readyCores). With fewer, the next run's first player
        // creates its own core while the pool waits to refill.
        func configuration() -> PlayerConfiguration {
            var configuration = benchConfiguration(bus: bus)
            configuration.readyCores = 4
            return configuration
        }
        try await Player.prepareReadyCores(for: configuration())
        var cold: [Double] = [], warm: [Double] = [], local: [Double] = [], direct: [Double] = []
        for run in 0..<runs {
            // A new cache each run: the first play comes from the network.
            let cache = try MediaCache(configuration: MediaCache.Configuration(directory: root.appendingPathComponent("run-\(run)")))
            var cached = configuration()
            cached.streamProviders = [cache.streamProvider]
            let source = try cache.source(for: url, key: "clip")
            cold.append(try await firstFrame(source, configuration: cached))
            // Let the download finish, then play again from disk.
            try await cache.precache(source, .all)
            warm.append(try await firstFrame(source, configuration: cached))
            local.append(try await firstFrame(MediaSource(media), configuration: configuration()))
            direct.append(try await firstFrame(.url(url), configuration: configuration()))
            await cache.shutdown()
        }

        // Two players and a precache want the same item at once.
        server.resetCounts()
        let cache = try MediaCache(configuration: MediaCache.Configuration(directory: root.appendingPathComponent("shared")))
        var configuration = benchConfiguration(bus: bus)
        configuration.streamProviders = [cache.streamProvider]
        let source = try cache.source(for: url, key: "clip")
        let players = try (0..<2).map { _ in try Player(configuration: configuration) }
        async let precached = cache.precache(source, .all)
        for player in players { Task { _ = try? await player.load(source) } }
        _ = try await precached
        let cachedBytes = server.totalBodyBytes
        for player in players { await player.shutdown() }
        await cache.shutdown()
        // mpv's own loading: each player fetches the URL itself (played to the end, as the cache did).
        server.resetCounts()
        let ends = EventCounter(bus: bus, kinds: [.itemEnded])
        let plain = try (0..<2).map { _ in try Player(configuration: benchConfiguration(bus: bus)) }
        for player in plain { Task { _ = try? await player.load(.url(url)) } }
        await ends.wait(for: 2)
        let directBytes = server.totalBodyBytes
        for player in plain { await player.shutdown() }
        server.stop()

        func p50(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }
        func p99(_ values: [Double]) -> Double { values.sorted()[min(values.count - 1, Int(Double(values.count) * 0.99))] }
        print(String(
            format: "{\"cold_p50_ms\": %.2f, \"warm_p50_ms\": %.2f, \"local_p50_ms\": %.2f, \"mpv_http_p50_ms\": %.2f, "
                + "\"cold_p99_ms\": %.2f, \"mpv_http_p99_ms\": %.2f, \"shared_bytes\": %lld, \"mpv_http_bytes\": %lld, \"size\": %d}",
            p50(cold), p50(warm), p50(local), p50(direct), p99(cold), p99(direct), cachedBytes, directBytes, data.count))
    }
}

/// First frame through a cold media cache against mpv's own HTTP, item by item (sizes and
/// `moov` layouts), runs interleaved so that noise hits both alike; and the bytes the server sent
/// for a cold play that goes on to cache the whole item, over the item's size. Prints one JSON
/// line: an array with one object per item.
struct CacheLayouts: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "cache-layouts")
    @Option var runs = 5
    @Option(parsing: .upToNextOption, help: "The items, one file each.") var media: [String]
    @Option(help: "The server's rate, bytes per second (each connection).") var rate = 2_000_000

    func run() async throws {
        let bus = PlayerEventBus(label: "cache-layouts")
        let firstFrames = EventCounter(bus: bus, kinds: [.firstFrame])
        var counted = 0
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("playerkit-bench-layouts-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }

        /// Milliseconds from creating a player to its first frame of `source`, and the player
        /// (still playing).
        func firstFrame(_ source: MediaSource, configuration: PlayerConfiguration) async throws -> (Double, Player) {
            let start = DispatchTime.now()
            let player = try await Player.create(configuration: configuration)
            Task { _ = try? await player.load(source) }
            counted += 1
            await firstFrames.wait(for: counted)
            return (microseconds(start, .now()) / 1000, player)
        }
        func firstFrame(_ source: MediaSource, configuration: PlayerConfiguration) async throws -> Double {
            let (elapsed, player) = try await firstFrame(source, configuration: configuration)
            await player.shutdown()
            return elapsed
        }

        var items: [String] = []
        for (index, path) in media.enumerated() {
            let data = try Data(contentsOf: URL(fileURLWithPath: path))
            let server = LoopbackMediaServer(files: ["item.mp4": data], bytesPerSecond: rate, pacing: benchPacing)
            try server.start()
            let url = server.url("item.mp4")
            var cold: [Double] = [], direct: [Double] = []
            var sentOverSize = 0.0, requests = 0
            for run in 0..<runs {
                if run % 2 == 1 { direct.append(try await firstFrame(.url(url), configuration: benchConfiguration(bus: bus))) }
                let cache = try MediaCache(configuration: MediaCache.Configuration(
                    directory: root.appendingPathComponent("item-\(index)-run-\(run)")))
                var configuration = benchConfiguration(bus: bus)
                configuration.streamProviders = [cache.streamProvider]
                let source = try cache.source(for: url, key: "item")
                server.resetCounts()
                let (elapsed, player) = try await firstFrame(source, configuration: configuration)
                cold.append(elapsed)
                if run == 0 {
                    // The first run goes on, still playing, until the whole item is cached:
                    // every byte it cost.
                    try await cache.precache(source, .all)
                    sentOverSize = Double(server.totalBodyBytes) / Double(data.count)
                    requests = server.counts("item.mp4").requests
                }
                await player.shutdown()
                await cache.shutdown()
                if run % 2 == 0 { direct.append(try await firstFrame(.url(url), configuration: benchConfiguration(bus: bus))) }
            }
            server.stop()
            func p50(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }
            items.append(String(
                format: "{\"media\": \"%@\", \"size\": %d, \"cold_p50_ms\": %.2f, \"mpv_http_p50_ms\": %.2f, "
                    + "\"sent_over_size\": %.4f, \"requests\": %d}",
                URL(fileURLWithPath: path).lastPathComponent, data.count, p50(cold), p50(direct), sentOverSize, requests))
        }
        print("[" + items.joined(separator: ", ") + "]")
    }
}

/// Serves one file on loopback at a given rate until killed, printing its URL (for the C and
/// python-mpv side of the cache benchmark).
struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "serve")
    @Option var media: String
    @Option var rate = 2_000_000

    func run() async throws {
        let server = LoopbackMediaServer(files: ["clip.mp4": try Data(contentsOf: URL(fileURLWithPath: media))], bytesPerSecond: rate,
                                         pacing: benchPacing)
        try server.start()
        ExampleSupport.printLine(server.url("clip.mp4").absoluteString)
        while true { try await Task.sleep(for: .seconds(3600)) }
    }
}
