import ExampleSupport
import Foundation
import PlayerKit
import Testing
@testable import PlayerKitCache

/// The cache against origins as they are in the wild, through a real loopback server: every
/// read answered within its bound, the origin never asked more than the bytes justify.
@Suite("Media cache and hostile origins", .timeLimit(.minutes(3)), .tags(.waitPass))
struct CacheOriginTests {
    /// The bound a read through the cache promises, plus what a loaded test machine may add.
    static func bound(_ configuration: MediaCache.Configuration) -> Duration {
        configuration.readTimeout + MediaCache.readTimeoutSlack + .seconds(2)
    }

    /// Opens `name` through the cache's own provider (as mpv does), seeks, and reads once:
    /// returns the outcome and how long the read took.
    static func timedRead(
        _ harness: CacheHarness, _ name: String, at offset: Int64 = 0, count: Int = 65536
    ) async throws -> (Result<Int, MediaStreamError>, Duration) {
        let url = try harness.source(name).description
        let provider = harness.cache.streamProvider
        return try await offPool {
            let stream = try provider.open(url, player: "reader")
            defer { stream.close() }
            _ = try stream.seek(to: offset)
            var buffer = [UInt8](repeating: 0, count: count)
            let started = ContinuousClock.now
            let result: Result<Int, MediaStreamError>
            do {
                result = .success(try buffer.withUnsafeMutableBytes { try stream.read(into: $0) })
            } catch let error as MediaStreamError {
                result = .failure(error)
            } catch {
                result = .failure(.unreadable(url: url, reason: "\(error)"))
            }
            return (result, ContinuousClock.now - started)
        }
    }

    @Test("every connection of the host held by stalled downloads: another key's read is still answered within its bound")
    func saturatedHost() async throws {
        var files = ["long.mp4": CacheHarness.long]
        for index in 0..<8 { files["stalled-\(index).mp4"] = CacheHarness.clipA }
        let harness = try CacheHarness(files: files) {
            $0.readTimeout = .seconds(2)
            $0.connectTimeout = .seconds(2)
            $0.retries = 0
        }
        for index in 0..<8 { harness.server.setFault(.stall, for: "stalled-\(index).mp4") }
        let precaches = try (0..<8).map { index in
            let source = try harness.source("stalled-\(index).mp4")
            return Task { try await harness.cache.precache(source, .all) }
        }
        #expect(await eventually(timeout: .seconds(20)) { (0..<8).allSatisfy { harness.server.counts("stalled-\($0).mp4").requests >= 1 } })
        let (result, elapsed) = try await Self.timedRead(harness, "long.mp4")
        #expect(elapsed <= Self.bound(harness.cache.configuration), "the read took \(elapsed)")
        switch result {
        case .success(let count): #expect(count > 0)
        case .failure(let error): #expect(error == .timedOut(url: harness.server.url("long.mp4").absoluteString, after: .seconds(2)))
        }
        for task in precaches { task.cancel() }
        await harness.close()
    }

    @Test("a stalled origin: the read at the stall ends with timedOut within readTimeout plus the slack")
    func stalledOrigin() async throws {
        let harness = try CacheHarness { $0.readTimeout = .seconds(2); $0.retries = 1 }
        harness.server.setFault(.stall, for: "clip-a.mp4")
        let (result, elapsed) = try await Self.timedRead(harness, "clip-a.mp4")
        #expect(elapsed <= Self.bound(harness.cache.configuration), "the read took \(elapsed)")
        #expect(result == .failure(.timedOut(url: harness.server.url("clip-a.mp4").absoluteString, after: .seconds(2))))
        // One request, and one retry after the read timeout: no more.
        #expect(await eventually(timeout: .seconds(10)) { harness.server.counts("clip-a.mp4").requests >= 1 })
        #expect(harness.server.counts("clip-a.mp4").requests <= 2)
        await harness.close()
    }

    @Test("a trickling origin that ignores Range: a reader far ahead gets timedOut in bound; the origin is asked once")
    func tricklingRangeIgnoringOrigin() async throws {
        let harness = try CacheHarness { $0.readTimeout = .seconds(4); $0.retries = 0 }
        harness.server.setStyle([.ignoresRange, .chunked], for: "long.mp4")
        harness.server.setFault(.trickle(bytes: 200, every: .milliseconds(300)), for: "long.mp4")
        let (first, _) = try await Self.timedRead(harness, "long.mp4", count: 100)
        #expect((try? first.get()) == 100)
        let (result, elapsed) = try await Self.timedRead(harness, "long.mp4", at: 1_000_000)
        #expect(elapsed <= Self.bound(harness.cache.configuration), "the read took \(elapsed)")
        #expect(result == .failure(.timedOut(url: harness.server.url("long.mp4").absoluteString, after: .seconds(4))))
        // A range-ignoring origin is read from its start once per reader demand, never per read.
        #expect(harness.server.counts("long.mp4").requests <= 2, "\(harness.server.counts("long.mp4").requests) requests")
        await harness.close()
    }

    @Test("an origin that vanishes mid-body: the waiting read fails within its bound, typed")
    func vanishingOrigin() async throws {
        let harness = try CacheHarness(bytesPerSecond: 300_000) { $0.readTimeout = .seconds(3); $0.retries = 2; $0.connectTimeout = .seconds(1) }
        let (first, _) = try await Self.timedRead(harness, "long.mp4", count: 1000)
        #expect((try? first.get()) ?? 0 > 0)
        harness.server.stop()
        let (result, elapsed) = try await Self.timedRead(harness, "long.mp4", at: 1_400_000)
        #expect(elapsed <= Self.bound(harness.cache.configuration), "the read took \(elapsed)")
        guard case .failure(let error) = result else {
            Issue.record("read \(result) from a server that is gone")
            await harness.close()
            return
        }
        switch error {
        case .timedOut, .unreadable: break
        default: Issue.record("failed with \(error)")
        }
        await harness.close()
    }

    @Test("a 416 for a read past the end: the reader gets the end at once; the length is learnt, asked once")
    func rangePastTheEnd() async throws {
        let harness = try CacheHarness()
        let size = Int64(CacheHarness.clipA.count)
        let (result, elapsed) = try await Self.timedRead(harness, "clip-a.mp4", at: size + 100)
        #expect(result == .success(0))
        #expect(elapsed <= Self.bound(harness.cache.configuration), "the read took \(elapsed)")
        #expect(harness.cache.entry(forKey: "clip-a.mp4")?.size == size)
        #expect(harness.server.counts("clip-a.mp4").requests == 1)
        // Nothing was dropped for it: a read of the start is served.
        let (start, _) = try await Self.timedRead(harness, "clip-a.mp4", count: 1000)
        #expect(start == .success(1000))
        await harness.close()
    }

    @Test("an origin with no length that ignores Range plays to its end through a player, is cached once, and is not hammered")
    func lengthlessRangeIgnoringOrigin() async throws {
        let harness = try CacheHarness()
        harness.server.setStyle([.chunked, .ignoresRange], for: "clip-a.mp4")
        let (player, events) = try await Fixtures.player(configuration: harness.playerConfiguration)
        _ = try await player.load(try harness.source("clip-a.mp4"))
        let end = await events.waitFor(timeout: .seconds(40)) { if case .itemEnded = $0.event { return true }; return false }
        #expect({ if case .itemEnded(.finished)? = end?.event { return true }; return false }(), "ended as \(String(describing: end?.event))")
        let size = Int64(CacheHarness.clipA.count)
        #expect(await eventually(timeout: .seconds(10)) { harness.cache.entry(forKey: "clip-a.mp4").map { $0.size == $0.cachedBytes } == true })
        let entry = try #require(harness.cache.entry(forKey: "clip-a.mp4"))
        #expect(entry.size == size)
        let requests = harness.server.counts("clip-a.mp4").requests
        #expect(requests <= 3, "\(requests) requests to an origin that sends the whole file each time")
        #expect(harness.server.counts("clip-a.mp4").bodyBytes <= size * 3)
        await player.shutdown()
        // The second play comes from the cache alone.
        let (second, secondEvents) = try await Fixtures.player(configuration: harness.playerConfiguration)
        _ = try await second.load(try harness.source("clip-a.mp4"))
        #expect(await secondEvents.waitFor(timeout: .seconds(30)) { if case .itemEnded(.finished) = $0.event { return true }; return false } != nil)
        #expect(harness.server.counts("clip-a.mp4").requests == requests)
        await second.shutdown()
        #expect(try await harness.readAll("clip-a.mp4", name: "clip-a.mp4") == CacheHarness.clipA)
        await harness.close()
    }

    @Test("a stall mid-play: bufferingTimeout gives up the item through the cache exactly as through mpv's own HTTP")
    func bufferingTimeoutThroughTheCache() async throws {
        let harness = try CacheHarness(bytesPerSecond: 500_000) { $0.readTimeout = .seconds(20) }
        harness.server.setFault(.stallAt(offset: 200_000), for: "long.mp4")
        var outcomes: [String] = []
        for throughCache in [false, true] {
            var configuration = throughCache ? harness.playerConfiguration : Fixtures.headless
            configuration.bufferingTimeout = .seconds(2)
            let (player, events) = try await Fixtures.player(configuration: configuration)
            let source = throughCache ? try harness.source("long.mp4") : MediaSource(harness.server.url("long.mp4").absoluteString)
            _ = try await player.load(source)
            let end = await events.waitFor(timeout: .seconds(40)) { if case .itemEnded = $0.event { return true }; return false }
            if case .itemEnded(.error(.bufferingTimedOut(_, _, let after)))? = end?.event {
                outcomes.append("bufferingTimedOut after \(after)")
            } else {
                outcomes.append("\(String(describing: end?.event))")
            }
            #expect(player.state == .failed)
            await player.shutdown()
        }
        #expect(outcomes == ["bufferingTimedOut after 2.0 seconds", "bufferingTimedOut after 2.0 seconds"], "\(outcomes)")
        await harness.close()
    }
}
