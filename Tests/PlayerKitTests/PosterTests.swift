import ExampleSupport
@testable import PlayerKitCore
import Foundation
import PlayerKit
@testable import PlayerKitCache
import PlayerKitSupport
import Testing

/// Posters from a small pool of real players (issue 28): the frame at a time and the first
/// non-black frame, scaled without bars, saved as PNG files ffmpeg reads; typed failures naming
/// their items; a cancelled batch that leaves no item loaded; a cached source filling the cache.
@Suite("Posters", .timeLimit(.minutes(2)), .tags(.timingPass))
struct PosterTests {
    @Test("a batch: clip A at 1 s and a black leader's first red frame, scaled into a 160x160 box without bars, as PNG files ffmpeg reads; a missing file and random bytes fail by name; the pool holds no item after")
    func batch() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("pk-posters-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let players = Guarded<[Player]>([])
        // 30 s per item: the parallel pass of make test runs this beside some 270 other tests on
        // two cores (a 10 s bound was once not enough there for the leader's ten steps).
        let maker = try PosterMaker(configuration: .init(width: 160, height: 160, concurrency: 2, timeoutPerItem: .seconds(30))) { () async throws(PlayerError) -> any MediaPlayer in
            var configuration = PlayerConfiguration(videoOutput: .frames, audioOutput: .none)
            configuration.extraOptions["aid"] = "no"
            let player = try await Player.create(configuration: configuration)
            players.withLock { $0.append(player) }
            return player
        }
        let missing = folder.appendingPathComponent("missing.mp4").path
        let requests = [
            PosterRequest(source: MediaSource(Fixtures.clipA), moment: .time(1), pngFile: folder.appendingPathComponent("a.png")),
            PosterRequest(source: MediaSource(Fixtures.fixture("black-leader.mp4")), moment: .firstNonBlackFrame(within: 1),
                          pngFile: folder.appendingPathComponent("leader.png")),
            PosterRequest(source: MediaSource(missing), moment: .time(0)),
            PosterRequest(source: MediaSource(Fixtures.fixture("random-bytes.mp4")), moment: .time(0)),
        ]
        var results: [Int: Result<Poster, PosterError>] = [:]
        for await result in maker.posters(for: requests) { results[result.index] = result.outcome }
        #expect(results.count == 4)

        let a = try #require(try? results[0]?.get(), "clip A: \(String(describing: results[0]))")
        #expect(a.frame.info.format.width == 160 && a.frame.info.format.height == 120, "4:3 in a square box: \(a.frame.info.format.width)x\(a.frame.info.format.height)")
        #expect(abs(a.time - 1) < 0.5 / 30, "clip A's poster is at \(a.time)")
        let leader = try #require(try? results[1]?.get(), "the black leader: \(String(describing: results[1]))")
        #expect(leader.frame.info.format.width == 160 && leader.frame.info.format.height == 90)
        #expect(abs(leader.time - 10.0 / 30) < 0.5 / 30, "the first non-black frame is frame 10, at \(leader.time)")
        let red = try #require(leader.frame.averageColor(x: 0, y: 0, width: 160, height: 90))
        #expect(red.red > 180 && red.green < 80 && red.blue < 80, "\(red)")
        if case .failure(.loadFailed(let source, .fileNotFound(let path)))? = results[2] {
            #expect(source == MediaSource(missing) && path == missing)
        } else {
            Issue.record("a missing file: \(String(describing: results[2]))")
        }
        if case .failure(.loadFailed(let source, _))? = results[3] {
            #expect(source.description.hasSuffix("random-bytes.mp4"))
        } else {
            Issue.record("random bytes: \(String(describing: results[3]))")
        }
        // The PNG files are real PNGs at the poster's size.
        for (name, size) in [("a.png", "160x120"), ("leader.png", "160x90")] {
            let probe = try ChildProcess.run(URL(fileURLWithPath: "/usr/bin/ffprobe"), [
                "-v", "error", "-show_entries", "stream=width,height", "-of", "csv=s=x:p=0", folder.appendingPathComponent(name).path])
            #expect(probe.output.trimmingCharacters(in: .whitespacesAndNewlines) == size, "\(name): \(probe.output)")
        }
        #expect(players.withLock { $0.count } == 2)
        #expect(await eventually(timeout: .seconds(5)) { players.withLock { $0.allSatisfy { $0.position == nil } } },
                "\(players.withLock { $0.map { "\($0.state) \($0.position as Any)" } })")
        await maker.shutdown()
        #expect(players.withLock { $0.allSatisfy(\.isShutDown) })
        await #expect(throws: PosterError.shutDown) { try await maker.poster(for: requests[0]) }
    }

    @Test("an audio-only item gives noVideo, naming it; the maker goes on with the next item")
    func audioOnly() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("pk-posters-audio-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let audio = folder.appendingPathComponent("audio-only.m4a").path
        let made = try ChildProcess.run(URL(fileURLWithPath: "/usr/bin/ffmpeg"), [
            "-v", "error", "-f", "lavfi", "-i", "sine=frequency=440:duration=2", "-c:a", "aac", audio])
        #expect(FileManager.default.fileExists(atPath: audio), "ffmpeg: \(made.output)")
        let maker = try PosterMaker(configuration: .init(width: 160, height: 160, concurrency: 1, timeoutPerItem: .seconds(30))) { () async throws(PlayerError) -> any MediaPlayer in
            var configuration = PlayerConfiguration(videoOutput: .frames, audioOutput: .none)
            configuration.extraOptions["aid"] = "no"
            return try await Player.create(configuration: configuration)
        }
        await #expect(throws: PosterError.noVideo(MediaSource(audio))) {
            try await maker.poster(for: PosterRequest(source: MediaSource(audio), moment: .time(0)))
        }
        let poster = try await maker.poster(for: PosterRequest(source: MediaSource(Fixtures.clipA), moment: .time(1)))
        #expect(poster.frame.info.format.width == 160)
        await maker.shutdown()
    }

    @Test("a cancelled batch stops: items not started are never loaded, and the pool holds no item")
    func cancelled() async throws {
        let players = Guarded<[Player]>([])
        let maker = try PosterMaker(configuration: .init(width: 64, height: 64, concurrency: 2)) { () async throws(PlayerError) -> any MediaPlayer in
            let player = try await Player.create(configuration: PlayerConfiguration(videoOutput: .frames, audioOutput: .none))
            players.withLock { $0.append(player) }
            return player
        }
        let requests = (0..<40).map { _ in PosterRequest(source: MediaSource(Fixtures.clipA), moment: .time(2)) }
        var received = 0
        for await _ in maker.posters(for: requests) {
            received += 1
            if received == 2 { break }
        }
        #expect(received == 2)
        #expect(await eventually(timeout: .seconds(10)) { players.withLock { $0.allSatisfy { $0.position == nil } } })
        await maker.shutdown()
    }

    @Test("a poster of a source the media cache made reads through the cache: its bytes are cached for the player that plays it later")
    func throughTheCache() async throws {
        let harness = try CacheHarness()
        let maker = try PosterMaker(configuration: .init(width: 64, height: 48), streamProviders: [harness.cache.streamProvider])
        let source = try harness.source("clip-b.mp4")
        let poster = try await maker.poster(for: PosterRequest(source: source, moment: .time(0.5)))
        #expect(poster.frame.info.format.width == 64 && poster.frame.info.format.height == 48)
        let cached = harness.cache.entry(forKey: "clip-b.mp4")?.cachedBytes ?? 0
        #expect(cached > 0, "cached \(cached) bytes")
        await maker.shutdown()
        await harness.close()
    }
}
