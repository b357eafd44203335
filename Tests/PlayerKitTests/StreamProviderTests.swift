import Foundation
import Testing
import PlayerKit
import PlayerKitCache
import PlayerKitSupport

/// A provider of the tests' own: clips served from memory under "pkmem://<name>", counting
/// what mpv asks of it; a "stall" item blocks every read until it is cancelled.
final class MemoryStreamProvider: MediaStreamProvider, @unchecked Sendable {
    // @unchecked: `counts` is Locked, `items` immutable.
    let scheme: String
    let items: [String: Data]
    struct Counts: Sendable { var openedBy: [PlayerID] = []; var opens = 0, reads = 0, seeks = 0, cancels = 0, closes = 0, bytes = 0 }
    let counts = Locked(Counts())

    init(scheme: String = "pkmem", items: [String: Data]) {
        self.scheme = scheme
        self.items = items
    }

    func open(_ url: String, player: PlayerID) throws(MediaStreamError) -> any MediaByteStream {
        counts.withLock { $0.openedBy.append(player) }
        let name = String(url.dropFirst(scheme.count + 3))
        if name == "stall" {
            counts.withLock { $0.opens += 1 }
            return MemoryStream(data: Data(count: 1 << 20), provider: self, stalls: true)
        }
        guard let data = items[name] else { throw .notFound(url: url) }
        counts.withLock { $0.opens += 1 }
        return MemoryStream(data: data, provider: self, stalls: false)
    }
}

final class MemoryStream: MediaByteStream, @unchecked Sendable {
    // @unchecked: `offset` and `cancelled` under `condition`.
    let data: Data
    let provider: MemoryStreamProvider
    let stalls: Bool
    private let condition = NSCondition()
    private var offset = 0
    private var cancelled = false

    init(data: Data, provider: MemoryStreamProvider, stalls: Bool) {
        self.data = data
        self.provider = provider
        self.stalls = stalls
    }

    func read(into buffer: UnsafeMutableRawBufferPointer) throws(MediaStreamError) -> Int {
        condition.lock()
        defer { condition.unlock() }
        provider.counts.withLock { $0.reads += 1 }
        if stalls {
            while !cancelled { condition.wait() }  // a server that never answers
        }
        guard !cancelled else { throw .cancelled }
        let count = min(buffer.count, data.count - offset)
        guard count > 0 else { return 0 }
        data.withUnsafeBytes { source in
            buffer.baseAddress!.copyMemory(from: source.baseAddress!.advanced(by: offset), byteCount: count)
        }
        offset += count
        provider.counts.withLock { $0.bytes += count }
        return count
    }

    func seek(to offset: Int64) throws(MediaStreamError) -> Int64 {
        condition.lock()
        defer { condition.unlock() }
        provider.counts.withLock { $0.seeks += 1 }
        guard !cancelled else { throw .cancelled }
        self.offset = Int(max(0, min(offset, Int64(data.count))))
        return Int64(self.offset)
    }

    var size: Int64? { Int64(data.count) }

    func cancel() {
        condition.lock()
        cancelled = true
        condition.broadcast()
        condition.unlock()
        provider.counts.withLock { $0.cancels += 1 }
    }

    func close() {
        provider.counts.withLock { $0.closes += 1 }
    }
}

@Suite("Streams the app serves (custom protocols)", .timeLimit(.minutes(4)))
struct StreamProviderTests {
    static func provider() throws -> MemoryStreamProvider {
        MemoryStreamProvider(items: [
            "clip-a": try Data(contentsOf: URL(fileURLWithPath: Fixtures.clipA)),
            "clip-b": try Data(contentsOf: URL(fileURLWithPath: Fixtures.clipB)),
        ])
    }

    static func configuration(_ providers: [any MediaStreamProvider]) -> PlayerConfiguration {
        var configuration = Fixtures.headless
        configuration.streamProviders = providers
        return configuration
    }

    @Test("a player plays and seeks through the app's stream; mpv never opens the URL itself; streams are closed")
    func playsThroughProvider() async throws {
        let provider = try Self.provider()
        let (player, events) = try await Fixtures.player(configuration: Self.configuration([provider]))
        // Paused on its first frame, so the seek below finds it loaded however busy the machine.
        let info = try await player.preload("pkmem://clip-a")
        #expect(info.duration.map { abs($0 - 4) < 0.1 } == true)
        try await player.seek(to: 3)
        #expect(await events.waitFor { if case .seekCompleted(let position) = $0.event { return (position ?? 0) >= 2.9 }; return false } != nil)
        let counts = provider.counts.withLock { $0 }
        #expect(counts.opens >= 1 && counts.reads > 0 && counts.seeks >= 1 && counts.bytes > 0)
        // The provider learns which player reads.
        #expect(!counts.openedBy.isEmpty && counts.openedBy.allSatisfy { $0 == player.id })
        // Two clips of the app's stream in one timeline (what loops and sync groups build).
        let joined = try await player.load(MediaSource.joined(["pkmem://clip-a", "pkmem://clip-b"]))
        #expect(joined.duration.map { abs($0 - 8) < 0.2 } == true)
        await player.shutdown()
        let after = provider.counts.withLock { $0 }
        #expect(after.closes == after.opens, "opened \(after.opens), closed \(after.closes)")
    }

    @Test("an unknown name fails the load with a typed error, a stalled stream ends at once on stop and shutdown; the player stays usable")
    func failuresAndStalls() async throws {
        let provider = try Self.provider()
        let (player, _) = try await Fixtures.player(configuration: Self.configuration([provider]))
        await #expect {
            try await player.load("pkmem://missing")
        } throws: { error in
            if case PlayerError.loadFailed(let source, _) = error { return source == "pkmem://missing" }
            return false
        }
        // A stream whose reads never return until cancelled (a server that never answers).
        let stalled = Task { try await player.load("pkmem://stall") }
        #expect(await eventually { provider.counts.withLock { $0.reads } > 0 })
        let began = ContinuousClock.now
        try await player.stop()
        _ = await stalled.result
        #expect(ContinuousClock.now - began < .seconds(15))  // prompt, not stuck (a stall waits for good); room for a loaded machine
        #expect(await eventually { provider.counts.withLock { $0.cancels } > 0 })
        // Usable: the next load plays.
        _ = try await player.load("pkmem://clip-b", startPaused: true)
        #expect(player.state == .ready)
        // Shutdown during a stalled read is prompt too.
        let again = Task { try await player.load("pkmem://stall") }
        #expect(await eventually { provider.counts.withLock { $0.opens } >= 3 })
        let shutdownBegan = ContinuousClock.now
        await player.shutdown()
        _ = await again.result
        #expect(ContinuousClock.now - shutdownBegan < .seconds(15))  // prompt, not stuck (a stall waits for good); room for a loaded machine
        let counts = provider.counts.withLock { $0 }
        #expect(counts.closes == counts.opens)
    }

    @Test("malformed, duplicate and mpv's own schemes are refused at creation with typed errors naming them")
    func badSchemes() async throws {
        for scheme in ["HTTP", "1abc", "", "with space", "a/b"] {
            #expect(throws: PlayerError.self) {
                try Player(configuration: Self.configuration([MemoryStreamProvider(scheme: scheme, items: [:])]))
            }
        }
        #expect(throws: PlayerError.invalidArgument(name: "stream scheme", value: "http", reason: "is one of mpv's own protocols")) {
            try Player(configuration: Self.configuration([MemoryStreamProvider(scheme: "http", items: [:])]))
        }
        #expect(throws: PlayerError.invalidArgument(name: "stream scheme", value: "pkmem", reason: "is registered twice")) {
            try Player(configuration: Self.configuration([MemoryStreamProvider(items: [:]), MemoryStreamProvider(items: [:])]))
        }
        // A scheme registered on one player is unknown to another.
        let plain = try await Player.create(configuration: Fixtures.headless)
        defer { Task { await plain.shutdown() } }
        await #expect(throws: PlayerError.unsupportedScheme(scheme: "pkmem", source: "pkmem://clip-a")) {
            _ = try await plain.preloadCheck("pkmem://clip-a")
        }
    }
}

extension Player {
    /// Whether a load of `source` would pass the player's checks: loads it paused (for tests).
    func preloadCheck(_ source: MediaSource) async throws(PlayerError) {
        try await append(source)
    }
}
