import ExampleSupport
import Foundation
import PlayerKit
import Testing
@testable import PlayerKitCache
#if canImport(Glibc)
import Glibc
#endif

/// A cache in a fresh folder, a loopback server of its own, and what the cache reported.
final class CacheHarness: Sendable {
    let directory: URL
    let server: LoopbackMediaServer
    let cache: MediaCache
    let events = Guarded<[MediaCacheEvent]>([])
    private let listener: Task<Void, Never>

    static let long = try! Data(contentsOf: URL(fileURLWithPath: Fixtures.fixture("long.mp4")))
    static let clipA = try! Data(contentsOf: URL(fileURLWithPath: Fixtures.clipA))
    static let clipB = try! Data(contentsOf: URL(fileURLWithPath: Fixtures.clipB))

    init(
        bytesPerSecond: Int? = nil, directory: URL? = nil, files: [String: Data]? = nil,
        configure: (inout MediaCache.Configuration) -> Void = { _ in }
    ) throws {
        self.directory = directory ?? FileManager.default.temporaryDirectory.appendingPathComponent("pk-cache-\(UUID().uuidString)")
        server = LoopbackMediaServer(files: files ?? ["long.mp4": Self.long, "clip-a.mp4": Self.clipA, "clip-b.mp4": Self.clipB], bytesPerSecond: bytesPerSecond)
        try server.start()
        var configuration = MediaCache.Configuration(directory: self.directory)
        configuration.retryDelay = .milliseconds(50)
        configure(&configuration)
        cache = try MediaCache(configuration: configuration)
        let stream = cache.events()
        let events = self.events
        listener = Task { for await event in stream { events.withLock { $0.append(event) } } }
    }

    var playerConfiguration: PlayerConfiguration {
        var configuration = Fixtures.headless
        configuration.streamProviders = [cache.streamProvider]
        return configuration
    }

    func source(_ name: String, key: String? = nil) throws -> MediaSource {
        try cache.source(for: server.url(name), key: key ?? name)
    }

    func saw(_ predicate: @escaping @Sendable (MediaCacheEvent) -> Bool) async -> Bool {
        await eventually(timeout: .seconds(20)) { self.events.withLock { $0.contains(where: predicate) } }
    }

    /// Every byte of `key` read through the cache's own provider, as mpv would read it: on a
    /// thread of its own (reads block like read(2); two of them on Swift's cooperative pool
    /// would hold both of its threads here, and with them the downloads they wait for).
    func readAll(_ key: String, name: String) async throws -> Data {
        let url = try source(name, key: key).description
        let provider = cache.streamProvider
        return try await offPool {
            let stream = try provider.open(url, player: "reader")
            defer { stream.close() }
            var data = Data()
            var buffer = [UInt8](repeating: 0, count: 65536)
            while true {
                let count = try buffer.withUnsafeMutableBytes { try stream.read(into: $0) }
                if count == 0 { break }
                data.append(contentsOf: buffer[0..<count])
            }
            return data
        }
    }

    func close() async {
        await cache.shutdown()
        listener.cancel()
        server.stop()
        try? FileManager.default.removeItem(at: directory)
    }
}

@Suite("Media cache", .timeLimit(.minutes(4)))
struct MediaCacheTests {
    @Test("a player plays while the item downloads; the second play reads the cache and makes no request")
    func playsWhileDownloadingThenFromCache() async throws {
        // The server holds back the second half of the item until the load has returned: the
        // first frame comes before the download ends however slow the machine (served at a
        // rate instead, a load in make test's parallel pass once took all of 10 s, 2026-11-26).
        let harness = try CacheHarness { $0.readTimeout = .seconds(120) }
        let size = Int64(CacheHarness.long.count)
        harness.server.setFault(.holdAt(offset: Int(size / 2)), for: "long.mp4")
        let (first, _) = try await Fixtures.player(configuration: harness.playerConfiguration)
        let info = try await first.load(try harness.source("long.mp4"))
        #expect(info.duration.map { abs($0 - 20) < 0.5 } == true)
        // The first frame came before the download finished.
        let atLoad = try #require(harness.cache.entry(forKey: "long.mp4"))
        #expect(atLoad.cachedBytes < size, "all \(atLoad.cachedBytes) bytes were there before the first frame")
        #expect(atLoad.readers == [first.id])
        harness.server.setFault(nil, for: "long.mp4")
        #expect(await harness.saw { $0 == .completed(key: "long.mp4", size: size) })
        let usage = harness.cache.usage(for: first.id)
        #expect(usage.bytesFromNetwork > 0)
        await first.shutdown()
        let requestsAfterFirst = harness.server.counts("long.mp4").requests

        let (second, events) = try await Fixtures.player(configuration: harness.playerConfiguration)
        _ = try await second.load(try harness.source("long.mp4"))
        try await second.seek(to: 15)
        #expect(await events.waitFor { if case .seekCompleted = $0.event { return true }; return false } != nil)
        #expect(harness.server.counts("long.mp4").requests == requestsAfterFirst, "the second play asked the server")
        let secondUsage = harness.cache.usage(for: second.id)
        #expect(secondUsage.bytesFromNetwork == 0 && secondUsage.bytesFromCache > 0)
        let entry = try #require(harness.cache.entry(forKey: "long.mp4"))
        #expect(entry.isComplete && entry.size == size && entry.bytesFromNetwork == size)
        await second.shutdown()
        #expect(try await harness.readAll("long.mp4", name: "long.mp4") == CacheHarness.long)
        await harness.close()
    }

    @Test("two players and a precache of one key share one download: no byte fetched twice")
    func oneDownloadPerKey() async throws {
        let harness = try CacheHarness(bytesPerSecond: 600_000)
        let size = Int64(CacheHarness.long.count)
        let source = try harness.source("long.mp4")
        let precache = Task { try await harness.cache.precache(source, .all) }
        let (left, _) = try await Fixtures.player(configuration: harness.playerConfiguration)
        let (right, _) = try await Fixtures.player(configuration: harness.playerConfiguration)
        async let a = left.load(source)
        async let b = right.load(source)
        _ = try await (a, b)
        #expect(try await precache.value == size)
        let entry = try #require(harness.cache.entry(forKey: "long.mp4"))
        #expect(entry.bytesFromNetwork == size, "downloaded \(entry.bytesFromNetwork) bytes for \(size)")
        // What the server sent: the file once, plus what was in flight when a request was
        // replaced by one a reader needed more: at most about a second of the server's rate and
        // the sockets' buffers (1 MB) per replaced request. (How often a reader jumps ahead of
        // the transfer depends on the machine's load; each byte is still stored once, above.)
        let counts = harness.server.counts("long.mp4")
        let allowance = Int64(max(0, counts.requests - 1)) * 1_000_000
        // Seen once in a clean-clone run (2026-11-22): the server sent the whole item twice in
        // two requests while the entry stored each byte once. A transfer thread waiting for the
        // cache's file queue with bytes in hand was taken for a stalled connection and replaced
        // (CacheStallRuleTests); it no longer is.
        #expect(counts.bodyBytes <= size + allowance, "the server sent \(counts.bodyBytes) bytes in \(counts.requests) requests for a \(size)-byte item: \(harness.server.requests.filter { $0.path == "/long.mp4" }.map(\.rangeStart))")
        await left.shutdown()
        await right.shutdown()
        await harness.close()
    }

    @Test("a player that leaves cancels the download (the server sees it close); other downloads go on")
    func leavingCancelsDownload() async throws {
        // 60 kB/s: the 1.5 MB item takes 25 s, so its request is still sending when the player
        // leaves, however long the load took (at 150 kB/s the server once saw no close in make
        // test's parallel pass, 2026-11-26).
        let harness = try CacheHarness(bytesPerSecond: 60_000)
        let (player, _) = try await Fixtures.player(configuration: harness.playerConfiguration)
        let other = Task { try await harness.cache.precache(try harness.source("clip-a.mp4"), .all) }
        _ = try await player.load(try harness.source("long.mp4"))
        // Read by the player, downloading (25 s at this rate).
        let reading = try #require(harness.cache.entry(forKey: "long.mp4"))
        #expect(reading.readers == [player.id] && reading.isDownloading)
        try await player.stop()
        #expect(await harness.saw { if case .cancelled(let key, _) = $0 { return key == "long.mp4" }; return false })
        #expect(await eventually { harness.cache.entry(forKey: "long.mp4")?.readers.isEmpty == true })
        #expect(await eventually { harness.server.counts("long.mp4").closedByClient >= 1 }, "the server never saw the connection close")
        let entry = try #require(harness.cache.entry(forKey: "long.mp4"))
        #expect(!entry.isComplete && !entry.isDownloading && entry.cachedBytes > 0)
        #expect(try await other.value == Int64(CacheHarness.clipA.count))
        // The player is still usable, and what was cached is kept and resumed from.
        _ = try await player.load(try harness.source("long.mp4"))
        #expect(await eventually { harness.server.requests.contains { $0.path == "/long.mp4" && $0.rangeStart > 0 } })
        await player.shutdown()
        await harness.close()
    }

    @Test("a seek ahead fetches the range it needs first")
    func seekAheadFetchesRangeFirst() async throws {
        // Every request that reaches 400 kB stops there, so the range the seek needs can only
        // come from a request of its own. (A request that stalled once, then was served: a
        // reader waiting on the stall replaces it after 1 s, and the replacement fetched the
        // whole item before the seek when make test's parallel pass delayed the seek, 2026-11-26.)
        let harness = try CacheHarness { $0.readTimeout = .seconds(120) }
        harness.server.setFault(.holdAt(offset: 400_000), for: "long.mp4")
        let size = Int64(CacheHarness.long.count)
        let (player, events) = try await Fixtures.player(configuration: harness.playerConfiguration)
        _ = try await player.preload(try harness.source("long.mp4"))
        try await player.seek(to: 16)
        #expect(await events.waitFor(timeout: .seconds(30)) { if case .seekCompleted = $0.event { return true }; return false } != nil)
        let entry = try #require(harness.cache.entry(forKey: "long.mp4"))
        #expect(harness.server.requests.contains { $0.path == "/long.mp4" && $0.rangeStart > size / 2 },
                "requests: \(harness.server.requests), cached: \(entry.cachedRanges)")
        // The stalled request was abandoned (its connection closed) for the seek's.
        #expect(await eventually { harness.server.counts("long.mp4").closedByClient >= 1 })
        await player.shutdown()
        await harness.close()
    }

    @Test("eviction under a small cap removes what nobody uses and never what a player reads")
    func evictionUnderSmallCap() async throws {
        let harness = try CacheHarness { $0.capacity = 150_000 }
        try await harness.cache.precache(try harness.source("clip-b.mp4"), .all)
        let (player, events) = try await Fixtures.player(configuration: harness.playerConfiguration)
        // Paused until the precache below: a 4 s clip playing could end (and its reader close)
        // first on a loaded machine.
        _ = try await player.load(try harness.source("clip-a.mp4"), startPaused: true)
        // clip-a (117 kB) plus clip-b (36 kB) exceed the cap: clip-b, unused, goes.
        #expect(await harness.saw { $0 == .evicted(key: "clip-b.mp4", bytes: Int64(CacheHarness.clipB.count)) })
        // A precache while clip-a is open in a player goes over the cap rather than evicting clip-a.
        try await harness.cache.precache(try harness.source("clip-b.mp4"), .all)
        #expect(harness.cache.entry(forKey: "clip-a.mp4")?.isComplete == true)
        try await player.play()
        #expect(await events.waitFor { if case .itemEnded(.finished) = $0.event { return true }; return false } != nil)
        await player.shutdown()
        #expect(await eventually { harness.cache.cachedBytes <= 150_000 })
        await harness.close()
    }

    @Test("an item larger than the whole cache fails with capacityTooSmall; the cache stays usable")
    func capacityTooSmall() async throws {
        let harness = try CacheHarness { $0.capacity = 50_000 }
        let (player, _) = try await Fixtures.player(configuration: harness.playerConfiguration)
        await #expect(throws: PlayerError.self) { try await player.load(try harness.source("clip-a.mp4")) }
        #expect(await harness.saw { $0 == .failed(key: "clip-a.mp4", .capacityTooSmall(key: "clip-a.mp4", size: Int64(CacheHarness.clipA.count), capacity: 50_000)) })
        _ = try await player.load(try harness.source("clip-b.mp4"))
        await player.shutdown()
        await harness.close()
    }

    @Test("404, a reset in the middle of a body, a reset every time, a redirect loop: typed errors, retries resume")
    func serverFaults() async throws {
        // A read timeout long enough that a loaded machine's slow answer is not taken for a stall.
        let harness = try CacheHarness { $0.readTimeout = .seconds(10) }
        let (player, _) = try await Fixtures.player(configuration: harness.playerConfiguration)
        // 404
        harness.server.setFault(.notFound, for: "clip-b.mp4")
        await #expect(throws: PlayerError.self) { try await player.load(try harness.source("clip-b.mp4")) }
        #expect(await harness.saw { if case .failed("clip-b.mp4", .httpStatus(404, _)) = $0 { return true }; return false })
        // A body cut short (the server closes) 20 kB into a request that starts at 60 kB: the
        // retry resumes past 60 kB with a Range request, never from the start.
        try await harness.cache.precache(try harness.source("clip-a.mp4"), .bytes(60_000))
        harness.server.resetCounts()
        harness.server.setFault(.closeAfter(bytes: 20_000, times: 1), for: "clip-a.mp4")
        _ = try await player.load(try harness.source("clip-a.mp4"))
        #expect(await harness.saw { $0 == .completed(key: "clip-a.mp4", size: Int64(CacheHarness.clipA.count)) })
        let resumed = harness.server.requests.filter { $0.path == "/clip-a.mp4" }
        #expect(resumed.count >= 2 && resumed.allSatisfy { $0.hasRange && $0.rangeStart >= 60_000 }, "requests: \(resumed)")
        #expect(try await harness.readAll("clip-a.mp4", name: "clip-a.mp4") == CacheHarness.clipA)
        // A reset (RST) 20 kB into the body, once: retried (from wherever the bytes that
        // arrived before the reset end), completed, and the bytes are the server's.
        harness.server.setFault(.resetAfter(bytes: 20_000, times: 1), for: "clip-b.mp4")
        try await harness.cache.precache(try harness.source("clip-b.mp4", key: "clip-b-reset"), .all)
        #expect(harness.server.counts("clip-b.mp4").requests >= 2)
        #expect(try await harness.readAll("clip-b-reset", name: "clip-b.mp4") == CacheHarness.clipB)
        // A reset every time: fails after the retries, typed.
        harness.server.setFault(.resetAfter(bytes: 1000, times: nil), for: "long.mp4")
        await #expect(throws: PlayerError.self) { try await player.load(try harness.source("long.mp4")) }
        #expect(await harness.saw { if case .failed("long.mp4", .connectionFailed) = $0 { return true }; return false })
        // A redirect loop.
        harness.server.setFault(.redirect(to: "loop-b"), for: "loop-a")
        harness.server.setFault(.redirect(to: "loop-a"), for: "loop-b")
        await #expect(throws: MediaCacheError.self) { try await harness.cache.precache(try harness.source("loop-a"), .bytes(1)) }
        #expect(await harness.saw { if case .failed("loop-a", .tooManyRedirects) = $0 { return true }; return false })
        // Still usable.
        harness.server.setFault(nil, for: "clip-b.mp4")
        _ = try await player.load(try harness.source("clip-b.mp4"))
        await player.shutdown()
        await harness.close()
    }

    @Test("a stalled server: the player waits, the download fails after the timeout, shutdown stays prompt")
    func stalledServer() async throws {
        let harness = try CacheHarness { $0.readTimeout = .seconds(1) }
        harness.server.setFault(.stall, for: "long.mp4")
        let (player, _) = try await Fixtures.player(configuration: harness.playerConfiguration)
        await #expect(throws: PlayerError.self) { try await player.load(try harness.source("long.mp4")) }
        #expect(await harness.saw { if case .failed("long.mp4", .timedOut) = $0 { return true }; return false })
        // Shutdown while a read waits on a server that sends nothing.
        harness.server.setFault(.stall, for: "clip-a.mp4")
        let loading = Task { try await player.load(try harness.source("clip-a.mp4")) }
        // 30 s: in make test's parallel pass the task that loads may wait that long for a
        // thread of Swift's cooperative pool (FeatureLogicTests' eventually says the same); at
        // 15 s this failed in 2 runs of 3 on 2026-11-28, and passed every time alone.
        #expect(await eventually(timeout: .seconds(30)) { harness.server.counts("clip-a.mp4").requests >= 1 })
        let start = ContinuousClock.now
        await player.shutdown()
        #expect(ContinuousClock.now - start < .seconds(15))  // prompt, not stuck (a stall waits for good); room for a loaded machine
        _ = await loading.result
        await harness.close()
    }

    @Test("a file that changed on the server between runs is detected and fetched again")
    func changedBetweenRuns() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("pk-cache-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        // Run 1: part of the item.
        let run1 = try CacheHarness(directory: directory, files: ["item.mp4": CacheHarness.long])
        try await run1.cache.precache(try run1.source("item.mp4"), .bytes(300_000))
        await run1.cache.shutdown()
        run1.server.stop()
        // Run 2: the server now has another file under the same URL and key.
        let run2 = try CacheHarness(directory: directory, files: ["item.mp4": CacheHarness.clipA])
        let (player, _) = try await Fixtures.player(configuration: run2.playerConfiguration)
        let info = try await player.load(try run2.source("item.mp4"))
        #expect(info.duration.map { abs($0 - 4) < 0.3 } == true, "played \(String(describing: info.duration)) s, not the new 4 s clip")
        #expect(await run2.saw { if case .invalidated("item.mp4", _) = $0 { return true }; return false })
        await player.shutdown()
        #expect(try await run2.readAll("item.mp4", name: "item.mp4") == CacheHarness.clipA)
        await run2.cache.shutdown()
        // Run 3, revalidating: the complete entry is checked and refetched when it changed.
        run2.server.setFile("item.mp4", CacheHarness.clipB)
        let run3 = try CacheHarness(directory: directory, files: ["item.mp4": CacheHarness.clipB]) { $0.revalidation = .always }
        #expect(try await run3.readAll("item.mp4", name: "item.mp4") == CacheHarness.clipB)
        #expect(await run3.saw { if case .invalidated("item.mp4", _) = $0 { return true }; return false })
        await run3.close()
        await run2.close()
    }

    @Test("a process killed mid-download leaves a cache the next run repairs and plays correctly")
    func killedProcessIsRepaired() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("pk-cache-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        // The server sends 1.45 MB, then nothing: the probe records its first 1 MiB and waits.
        let server = LoopbackMediaServer(files: ["long.mp4": CacheHarness.long])
        server.setFault(.stallAfter(bytes: 1_450_000, times: nil), for: "long.mp4")
        try server.start()
        let probe = Fixtures.productsDirectory.appendingPathComponent("CacheCrashProbe")
        let (process, output) = try ChildProcess.start(probe, [directory.path, server.url("long.mp4").absoluteString, "long.mp4"])
        // Wait until the first 1 MiB is recorded, then kill it without warning. The record is due
        // when 1 MiB has arrived, and runs on the cache's file queue; the progress event of the
        // same piece may come before it, but every later piece is written through that queue
        // after the record, so the next progress event (256 KiB later) comes after it.
        let reached = try await offPool { () -> Bool in
            var text = ""
            while case let chunk = output.availableData, !chunk.isEmpty {
                text += String(decoding: chunk, as: UTF8.self)
                if let last = text.split(separator: "\n").last(where: { $0.hasPrefix("cached ") }),
                    let bytes = Int(last.dropFirst(7)), bytes >= (1 << 20) + (256 << 10)
                {
                    return true
                }
            }
            return false
        }
        kill(process.processIdentifier, SIGKILL)
        await ChildProcess.waitForExit(process)
        #expect(reached)
        server.stop()
        let harness = try CacheHarness(directory: directory, files: ["long.mp4": CacheHarness.long])
        let repaired = try #require(harness.cache.entry(forKey: "long.mp4"))
        #expect(!repaired.isComplete && repaired.cachedBytes >= 1 << 20, "kept \(repaired.cachedRanges)")
        let (player, events) = try await Fixtures.player(configuration: harness.playerConfiguration)
        _ = try await player.load(try harness.source("long.mp4"))
        try await player.seek(to: 19)
        #expect(await events.waitFor(timeout: .seconds(20)) { if case .itemEnded(.finished) = $0.event { return true }; return false } != nil)
        await player.shutdown()
        #expect(try await harness.readAll("long.mp4", name: "long.mp4") == CacheHarness.long)
        // The resumed download asked only for what was missing.
        #expect(!harness.server.requests.contains { $0.path == "/long.mp4" && $0.rangeStart == 0 })
        await harness.close()
    }

    @Test("hostile keys and URLs are refused with typed errors and nothing escapes the cache folder")
    func hostileKeysAndURLs() async throws {
        let harness = try CacheHarness()
        let url = harness.server.url("clip-a.mp4")
        for key in ["", "../../etc/passwd", "a/../../b", "./x", "line\nbreak", "nul\u{0}", String(repeating: "k", count: 3000)] {
            #expect(throws: MediaCacheError.self) { try harness.cache.source(for: url, key: key) }
            do {
                _ = try harness.cache.source(for: url, key: key)
            } catch {
                if case .invalidKey = error {} else { Issue.record("\(key.debugDescription): \(error)") }
            }
        }
        for bad in ["file:///etc/passwd", "ftp://127.0.0.1/a", "http:///nohost", "data:text/plain,hello"] {
            let url = try #require(URL(string: bad))
            do {
                _ = try harness.cache.source(for: url)
                Issue.record("\(bad) was accepted")
            } catch {
                if case .unsupportedURL = error {} else { Issue.record("\(bad): \(error)") }
            }
        }
        // Foundation percent-encodes a newline in a URL: what reaches the key and the request is
        // "%0A", never a raw line break.
        let newline = try harness.cache.source(for: try #require(URL(string: "http://127.0.0.1/a\nb")))
        #expect(harness.cache.key(of: newline) == "http://127.0.0.1/a%0Ab")
        // A source of another scheme, or a key never handed out, is refused.
        await #expect(throws: MediaCacheError.self) { try await harness.cache.precache(MediaSource("/etc/passwd"), .all) }
        #expect(throws: MediaStreamError.self) { _ = try harness.cache.streamProvider.open("playerkit-cache://2e2e2f2e2e2f", player: "x") }
        // Keys that look like paths but are fine are stored by number, never by name.
        let odd = "https://cdn.example/v/1?sig=../../x&t=%2F..%2F"
        try await harness.cache.precache(try harness.cache.source(for: url, key: odd), .all)
        let files = try FileManager.default.subpathsOfDirectory(atPath: harness.directory.path)
        #expect(files.allSatisfy { ["lock", "index.sqlite", "data"].contains($0) || $0.hasPrefix("data/") && $0.hasSuffix(".media") || $0.hasPrefix("index.sqlite-") },
                "unexpected files: \(files)")
        #expect(harness.cache.entry(forKey: odd)?.isComplete == true)
        await harness.close()
    }

    @Test("a folder whose lock is held for a moment (a child process being spawned holds a copy of the lock's descriptor until it execs) opens once it is let go")
    func lockHeldForAMoment() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("pk-cache-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        do {
            let first = try MediaCache(configuration: MediaCache.Configuration(directory: directory))
            await first.shutdown()
        }
        // Another open file description of the lock file, locked, as a forked child's copy is.
        let held = open(directory.appendingPathComponent("lock").path, O_RDWR | O_CLOEXEC)
        try #require(held >= 0)
        // Other tests spawn processes meanwhile, and a child between fork and exec holds the first
        // cache's lock too: take it as the library does, waiting a bounded while.
        let deadline = ContinuousClock.now + .seconds(5)
        var locked = flock(held, LOCK_EX | LOCK_NB) == 0
        while !locked && ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(5))
            locked = flock(held, LOCK_EX | LOCK_NB) == 0
        }
        try #require(locked, "the first cache's lock was not let go within 5 s")
        // Let go 50 ms in, on a thread of its own: on a global queue, behind the other tests'
        // work, the release once came after the cache's 500 ms wait (1 parallel pass in 12).
        Thread {
            Thread.sleep(forTimeInterval: 0.05)
            close(held)
        }.start()
        let second = try MediaCache(configuration: MediaCache.Configuration(directory: directory))
        await second.shutdown()
    }

    @Test("a second cache on the same folder is refused; a read-only or full folder gives typed errors")
    func folderProblems() async throws {
        let harness = try CacheHarness()
        #expect(throws: MediaCacheError.directoryInUse(path: harness.directory.standardizedFileURL.path)) {
            _ = try MediaCache(configuration: MediaCache.Configuration(directory: harness.directory))
        }
        await harness.close()
        guard getuid() == 0 else {
            print("folderProblems: read-only and full folders need root to mount a tmpfs; skipped")
            return
        }
        let mountPoint = FileManager.default.temporaryDirectory.appendingPathComponent("pk-mount-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: mountPoint, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: mountPoint) }
        guard try ChildProcess.run(URL(fileURLWithPath: "/bin/mount"), ["-t", "tmpfs", "-o", "ro,size=1m", "tmpfs", mountPoint.path]).status == 0 else {
            print("folderProblems: cannot mount a tmpfs here; skipped")
            return
        }
        do {
            _ = try MediaCache(configuration: MediaCache.Configuration(directory: mountPoint.appendingPathComponent("cache")))
            Issue.record("a read-only folder was accepted")
        } catch {
            if case .directoryUnusable = error {} else { Issue.record("read-only: \(error)") }
        }
        _ = try ChildProcess.run(URL(fileURLWithPath: "/bin/umount"), [mountPoint.path])
        // A full disk: 400 kB for a 1.5 MB item.
        #expect(try ChildProcess.run(URL(fileURLWithPath: "/bin/mount"), ["-t", "tmpfs", "-o", "size=400k", "tmpfs", mountPoint.path]).status == 0)
        defer { _ = try? ChildProcess.run(URL(fileURLWithPath: "/bin/umount"), [mountPoint.path]) }
        let full = try CacheHarness(directory: mountPoint.appendingPathComponent("cache"))
        await #expect(throws: MediaCacheError.self) { try await full.cache.precache(try full.source("long.mp4"), .all) }
        #expect(await full.saw { if case .failed("long.mp4", .diskFull) = $0 { return true }; return false })
        // What fits still works.
        try await full.cache.precache(try full.source("clip-b.mp4"), .all)
        await full.close()
    }

    @Test("precache by seconds uses the MP4 header's duration; cancelling stops the download")
    func precacheSecondsAndCancel() async throws {
        let harness = try CacheHarness(bytesPerSecond: 200_000)
        let size = Int64(CacheHarness.long.count)
        let bytes = try await harness.cache.precache(try harness.source("long.mp4"), .seconds(2))
        // 2 s of a 20 s item: about a tenth, plus the header.
        #expect(bytes > size / 20 && bytes < size / 4, "precached \(bytes) of \(size)")
        // clip-a stops coming after 20 kB, so its download is still under way at the cancel
        // however late this task sees it start (at 200 kB/s the whole clip took 0.6 s, which a
        // loaded machine could spend before the cancel).
        harness.server.setFault(.stallAfter(bytes: 20_000, times: nil), for: "clip-a.mp4")
        let task = Task { try await harness.cache.precache(try harness.source("clip-a.mp4"), .all) }
        #expect(await harness.saw { if case .downloadStarted("clip-a.mp4", _) = $0 { return true }; return false })
        harness.cache.cancelPrecache(key: "clip-a.mp4")
        await #expect(throws: MediaCacheError.cancelled(key: "clip-a.mp4")) { try await task.value }
        #expect(await eventually { harness.cache.entry(forKey: "clip-a.mp4")?.isDownloading == false })
        // Task cancellation works the same way.
        let cancelled = Task { try await harness.cache.precache(try harness.source("clip-b.mp4"), .all) }
        cancelled.cancel()
        await #expect(throws: MediaCacheError.self) { try await cancelled.value }
        await harness.close()
    }

    @Test("cached items play inside timelines (edl); the cache's events come on its one stream, none on the player's bus")
    func timelinesAndBus() async throws {
        let harness = try CacheHarness()
        let (player, events) = try await Fixtures.player(configuration: harness.playerConfiguration)
        let joined = try await player.load(MediaSource.joined([try harness.source("clip-a.mp4"), try harness.source("clip-b.mp4")]))
        #expect(joined.duration.map { abs($0 - 8) < 0.3 } == true)
        #expect(await harness.saw { if case .completed("clip-b.mp4", _) = $0 { return true }; return false })
        // The player's own events went on meanwhile; none of them is the cache's (1.0 sent each
        // cache event on the bus too: two channels for one story).
        #expect(await events.waitFor { record in record.event.kind == .positionChanged || record.event.kind == .stateChanged } != nil)
        #expect(!events.records.contains { record in
            if case .feature(let event) = record.event { return event is MediaCacheEvent }
            return false
        })
        await player.shutdown()
        await harness.close()
    }
}

@Suite("Media cache and the autoplay coordinator", .timeLimit(.minutes(4)))
struct AutoplayCacheTests {
    @Test("the coordinator precaches items near the viewport and cancels the precache of items that move away")
    func precachesNearViewport() async throws {
        // Slow enough that no precache of the 1.5 MB item finishes during the test.
        let harness = try CacheHarness(bytesPerSecond: 50_000)
        var settings = AutoplayCoordinator.Settings()
        settings.settleDelay = .milliseconds(50)
        settings.precacheDistance = 1
        settings.precacheAmount = .all
        settings.preparesPosters = false
        let coordinator = try AutoplayCoordinator(settings: settings, cache: harness.cache)
        let decisions = Guarded<[AutoplayCoordinator.Decision]>([])
        var players: [Player] = []
        for index in 0..<6 {
            let (player, _) = try await Fixtures.player(configuration: harness.playerConfiguration)
            try coordinator.add("item-\(index)", player: player, source: try harness.source("long.mp4", key: "item-\(index)"))
            players.append(player)
        }
        let heard = PlayerEventBus.shared.subscribe(to: .players(Set(players.map(\.id))), kinds: [.autoplayDecision], delivery: .immediate) { record in
            if case .decision(let decision)? = record.event.feature(AutoplayEvent.self) { decisions.withLock { $0.append(decision) } }
        }
        defer { heard.cancel() }
        func saw(_ action: AutoplayCoordinator.Decision.Action, _ item: String) async -> Bool {
            await eventually { decisions.withLock { $0.contains { $0.action == action && $0.item == item } } }
        }
        // Item 0 half visible (below the threshold, so nothing plays): items 0 and 1 precache.
        try coordinator.reportVisibility(0.5, of: "item-0")
        #expect(await saw(.precache, "item-0"))
        #expect(await saw(.precache, "item-1"))
        #expect(!decisions.withLock { $0.contains { $0.item == "item-2" } })
        #expect(await eventually { harness.server.counts("long.mp4").requests >= 2 })
        // Scroll to item 4: items 3, 4 and 5 precache; items 0 and 1 are cancelled, and the
        // server sees their connections close.
        try coordinator.reportVisibility(0, of: "item-0")
        try coordinator.reportVisibility(0.5, of: "item-4")
        #expect(await saw(.cancelPrecache, "item-0"))
        #expect(await saw(.cancelPrecache, "item-1"))
        #expect(await saw(.precache, "item-5"))
        #expect(await eventually { harness.server.counts("long.mp4").closedByClient >= 2 })
        #expect(await eventually { harness.cache.entry(forKey: "item-1")?.isDownloading == false })
        #expect(await eventually { harness.cache.entry(forKey: "item-5")?.isDownloading == true })
        for player in players { await player.shutdown() }
        await harness.close()
    }
}

@Suite("Media cache logic", .timeLimit(.minutes(4)))
struct MediaCacheLogicTests {
    @Test("byte ranges merge, clip, and find gaps")
    func byteRanges() {
        var ranges = ByteRanges()
        ranges.insert(10..<20)
        ranges.insert(30..<40)
        ranges.insert(20..<25)
        #expect(ranges.ranges == [10..<25, 30..<40])
        #expect(ranges.count == 25)
        #expect(ranges.firstGap(from: 0, below: 100) == 0)
        #expect(ranges.firstGap(from: 12, below: 100) == 25)
        #expect(ranges.firstGap(from: 30, below: 40) == nil)
        #expect(ranges.contiguousCount(from: 12) == 13)
        #expect(ranges.nextStart(after: 12) == 30)
        ranges.insert(0..<50)
        #expect(ranges.ranges == [0..<50])
        ranges.clip(to: 35)
        #expect(ranges.ranges == [0..<35] && ranges.contains(5..<35) && !ranges.contains(5..<36))
    }

    @Test("the MP4 header parse finds the movie's duration and where its header ends")
    func mp4Header() throws {
        let bytes = [UInt8](CacheHarness.long.prefix(256 << 10))
        let header = MP4Header.parse(bytes)
        #expect(header.duration.map { abs($0 - 20) < 0.2 } == true)
        #expect((header.moovEnd ?? 0) > 0 && (header.moovEnd ?? 0) < 256 << 10)
        #expect(MP4Header.parse([UInt8](repeating: 0xff, count: 100)) == MP4Header())
        #expect(MP4Header.parse([]) == MP4Header())
    }

    @Test("Content-Range and Content-Length parsing: malformed or impossible values count as absent")
    func contentRange() {
        #expect(HTTPHeadReader.contentRange("bytes 100-199/1000")! == (100, 1000))
        #expect(HTTPHeadReader.contentRange("bytes 0-0/*")!.total == nil)
        #expect(HTTPHeadReader.contentRange("bytes */1000")! == (-1, 1000))
        for malformed in ["items 1-2/3", "bytes 200-100/1000", "bytes 100-1000/1000", "bytes -5-10/100", "bytes 1-2/-3",
                          "bytes +1-2/3", "bytes 1-2", "bytes */*", "bytes 99999999999999999999-1/2", "bytes 1-2/3/4"] {
            #expect(HTTPHeadReader.contentRange(malformed) == nil, "\(malformed)")
        }
        #expect(HTTPHeadReader.count("1234") == 1234)
        for malformed in ["-5", "+5", " 5", "5 ", "", "1e3", "9999999999999999999"] {
            #expect(HTTPHeadReader.count(malformed) == nil, "\(malformed)")
        }
        #expect(HTTPHeadReader.status("206") == 206)
        for malformed in ["-20", "+20", "20", "2000", "099"] { #expect(HTTPHeadReader.status(Substring(malformed)) == 0) }
    }
}
