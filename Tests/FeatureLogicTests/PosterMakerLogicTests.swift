@testable import PlayerKitCore
@testable import PlayerKitPosters
import PlayerKitSupport
import PlayerKitTesting
import Testing

/// The poster maker's decisions on fake players and a manual clock (issue 28): the pool's bound,
/// per-item timeouts on the clock, the black-frame search and its limit, typed failures by item,
/// a cancelled batch that loads nothing more, bad configurations.
@Suite("PosterMaker's decisions, on fake players and a manual clock", .timeLimit(.minutes(1)))
struct PosterMakerLogicTests {
    let bus = PlayerEventBus(label: "poster-logic")
    let clock = ManualClock()

    func maker(concurrency: Int = 2, media: [String: FakePlayer.Media], made: Locked<[FakePlayer]>) throws -> PosterMaker {
        try PosterMaker(configuration: .init(width: 64, height: 64, concurrency: concurrency, timeoutPerItem: .seconds(5)),
                        clock: clock) { [clock, bus] () async throws(PlayerError) -> any MediaPlayer in
            let player = try FakePlayer(clock: clock, bus: bus, media: media, defaultMedia: nil)
            made.withLock { $0.append(player) }
            return player
        }
    }

    @Test("six items of 1 s loads on a pool of two: never more than two players, done in 3 s of clock time; results name their items")
    func boundedPool() async throws {
        let made = Locked<[FakePlayer]>([])
        let red = RGBColor(red: 200, green: 30, blue: 30)
        var media: [String: FakePlayer.Media] = [:]
        for index in 0..<6 { media["\(index).mp4"] = .init(duration: 4, loadTime: .seconds(1), frameColor: red) }
        let maker = try maker(media: media, made: made)
        let requests = (0..<6).map { PosterRequest(source: MediaSource("\($0).mp4"), moment: .time(0)) }
        let collected = Locked<[PosterResult]>([])
        let batch = Task { for await result in maker.posters(for: requests) { collected.withLock { $0.append(result) } } }
        for second in 1...3 {
            #expect(await eventually { made.withLock { $0.filter { $0.state == .loading }.count } == 2 }, "second \(second)")
            clock.advance(by: .seconds(1))
        }
        await batch.value
        let results = collected.withLock { $0 }
        #expect(made.withLock { $0.count } == 2)
        #expect(Set(results.map(\.index)) == Set(0..<6))
        for result in results {
            let poster = try result.outcome.get()
            #expect(poster.source == requests[result.index].source)
            #expect(poster.frame.info.format.width == 64 && poster.frame.info.format.height == 48)          // 320x240 in 64x64: no bars
            #expect(poster.frame.averageColor(x: 0, y: 0, width: 64, height: 48) == red)
        }
        await maker.shutdown()
        #expect(made.withLock { $0.allSatisfy(\.isShutDown) })
    }

    @Test("within a batch no player is unloaded between items (an unload racing the next item's load cancelled it); once, at the batch's end")
    func noUnloadBetweenItems() async throws {
        let made = Locked<[FakePlayer]>([])
        let red = RGBColor(red: 200, green: 30, blue: 30)
        var media: [String: FakePlayer.Media] = [:]
        for index in 0..<4 { media["\(index).mp4"] = .init(duration: 4, loadTime: .zero, frameColor: red) }
        let maker = try maker(concurrency: 1, media: media, made: made)
        let requests = (0..<4).map { PosterRequest(source: MediaSource("\($0).mp4"), moment: .time(0)) }
        var results: [PosterResult] = []
        for await result in maker.posters(for: requests) { results.append(result) }
        #expect(results.allSatisfy { (try? $0.outcome.get()) != nil }, "\(results.map(\.outcome))")
        let player = try #require(made.withLock { $0.first })
        // The pool holds no item between batches: released once, after the last item.
        #expect(await eventually { player.releaseCount == 1 }, "released \(player.releaseCount) times")
        #expect(player.releaseCount == 1)
        await maker.shutdown()
    }

    @Test("a load longer than the item's timeout fails on the clock, naming the item; the player goes on with the next")
    func timeout() async throws {
        let made = Locked<[FakePlayer]>([])
        let maker = try maker(concurrency: 1, media: ["slow.mp4": .init(loadTime: .seconds(60)), "quick.mp4": .init()], made: made)
        let collected = Locked<[PosterResult]>([])
        let batch = Task {
            for await result in maker.posters(for: [PosterRequest(source: "slow.mp4", moment: .time(0)), PosterRequest(source: "quick.mp4", moment: .time(0))]) {
                collected.withLock { $0.append(result) }
            }
        }
        #expect(await eventually { made.withLock { $0.first?.state == .loading } })
        clock.advance(by: .seconds(6))
        await batch.value
        let results = collected.withLock { $0 }.sorted { $0.index < $1.index }
        guard results.count == 2 else { Issue.record("\(results.count) results"); return }
        if case .failure(.timedOut(let source, .seconds(5))) = results[0].outcome {
            #expect(source == "slow.mp4")
        } else {
            Issue.record("slow: \(results[0].outcome)")
        }
        #expect((try? results[1].outcome.get()) != nil)
        await maker.shutdown()
    }

    @Test("an all-black item has no non-black frame within the span; failures are typed by item; bad configurations are refused by value")
    func failures() async throws {
        let made = Locked<[FakePlayer]>([])
        let maker = try maker(media: ["black.mp4": .init(duration: 1), "broken.mp4": .unplayable(source: "broken.mp4"),
                                      "sound.mp3": .init(videoSize: nil)], made: made)
        await #expect(throws: PosterError.noNonBlackFrame("black.mp4", within: 0.2)) {
            try await maker.poster(for: PosterRequest(source: "black.mp4", moment: .firstNonBlackFrame(within: 0.2)))
        }
        await #expect(throws: PosterError.noVideo("sound.mp3")) { try await maker.poster(for: PosterRequest(source: "sound.mp3", moment: .time(0))) }
        do {
            _ = try await maker.poster(for: PosterRequest(source: "broken.mp4"))
            Issue.record("an unplayable item made a poster")
        } catch {
            if case .loadFailed(let source, _) = error { #expect(source == "broken.mp4") } else { Issue.record("\(error)") }
        }
        await #expect(throws: PosterError.loadFailed("missing.mp4", .fileNotFound(path: "missing.mp4"))) {
            try await maker.poster(for: PosterRequest(source: "missing.mp4"))
        }
        #expect(throws: PosterError.invalidConfiguration("concurrency 0", reason: "must be between 1 and 16")) {
            try PosterMaker(configuration: .init(concurrency: 0))
        }
        #expect(throws: PosterError.invalidConfiguration("timeout 0.0 seconds", reason: "must be positive")) {
            try PosterMaker(configuration: .init(timeoutPerItem: .zero))
        }
        #expect(throws: PosterError.self) { try PosterMaker(configuration: .init(width: 0, height: 10)) }
        await maker.shutdown()
    }

    @Test("cancelling a batch loads no item that had not started")
    func cancel() async throws {
        let made = Locked<[FakePlayer]>([])
        var media: [String: FakePlayer.Media] = [:]
        for index in 0..<10 { media["\(index).mp4"] = .init(loadTime: .seconds(1)) }
        let maker = try maker(concurrency: 1, media: media, made: made)
        let batch = Task { for await _ in maker.posters(for: (0..<10).map { PosterRequest(source: MediaSource("\($0).mp4"), moment: .time(0)) }) {} }
        #expect(await eventually { made.withLock { $0.first?.state == .loading } })
        batch.cancel()
        await batch.value
        clock.advance(by: .seconds(20))
        let loads = made.withLock { $0.first?.commands.count ?? 0 }
        #expect(made.withLock { $0.count } == 1)
        #expect(loads <= 2, "commands after the cancel: \(made.withLock { $0.first?.commands ?? [] })")
        await maker.shutdown()
    }
}
