import ExampleSupport
import Foundation
import PlayerKit
import Testing

/// Network faults between a player and a real HTTP server on loopback, made by a fault proxy
/// the tests start: the server vanishing and coming back, a dead path, a trickle, a redirect
/// loop, a file that changes length. Nothing hangs, nothing crashes, errors are typed, and a
/// player on a local file next to it never notices.
@Suite("Network faults", .timeLimit(.minutes(4)), .tags(.waitPass))
struct NetworkFaultTests {
    static let long = try! Data(contentsOf: URL(fileURLWithPath: Fixtures.fixture("long.mp4")))

    /// A server with long.mp4 (20 s, 1.5 MB) at `bytesPerSecond`, a proxy in front of it, and
    /// a bystander player looping a local clip.
    private struct Rig {
        let server: LoopbackMediaServer
        let proxy: FaultProxy
        let bystander: Player
        let bystanderEvents: EventRecorder

        init(bytesPerSecond: Int? = nil) async throws {
            server = LoopbackMediaServer(files: ["long.mp4": NetworkFaultTests.long], bytesPerSecond: bytesPerSecond)
            try server.start()
            proxy = FaultProxy(upstreamPort: server.port)
            try proxy.start()
            (bystander, bystanderEvents) = try await Fixtures.player()
            try await bystander.perform(.setLoop(.forever))  // before loading: the item never ends
            try await bystander.load(.file(Fixtures.clipB))
        }

        var url: MediaSource { MediaSource(proxy.url("long.mp4").absoluteString) }

        /// The bystander still plays and never saw an error.
        func finish() async {
            #expect(bystander.state == .playing)
            #expect(!bystanderEvents.events.contains { if case .error = $0 { return true } else { return false } })
            await bystander.shutdown()
            proxy.stop()
            server.stop()
        }
    }

    private func waitForState(_ recorder: EventRecorder, _ state: PlayerState, after mark: UInt64, timeout: Duration = .seconds(30)) async -> Bool {
        await recorder.waitFor(timeout: timeout, after: mark) {
            if case .stateChanged(_, state) = $0.event { return true } else { return false }
        } != nil
    }

    private func position(_ recorder: EventRecorder, atLeast seconds: Double, timeout: Duration = .seconds(30)) async -> Bool {
        await recorder.waitFor(timeout: timeout) {
            if case .positionChanged(let position) = $0.event { return position >= seconds } else { return false }
        } != nil
    }

    @Test("the server vanishes mid-play and comes back: the player buffers, then plays on to the end")
    func serverVanishesAndReturns() async throws {
        // 90 kB/s for a 75 kB/s stream: it plays, but never gets far ahead, so the whole file is
        // not in mpv's cache when the server goes (however slowly a loaded machine plays).
        let rig = try await Rig(bytesPerSecond: 90_000)
        let (player, recorder) = try await Fixtures.player()
        try await player.load(rig.url)
        #expect(await position(recorder, atLeast: 0.5))
        let mark = recorder.mark
        rig.proxy.setMode(.down)
        #expect(await waitForState(recorder, .buffering, after: mark), "\(recorder.events.suffix(10))")
        rig.proxy.setMode(.pass)
        #expect(rig.proxy.isListening, "the proxy could not listen on its port again")
        #expect(await waitForState(recorder, .playing, after: mark), "\(recorder.events.suffix(10))")
        try? await player.seek(to: 17)  // shortens the test; the end below is what it checks
        let end = await recorder.waitFor(timeout: .seconds(60), after: mark) { if case .itemEnded = $0.event { return true } else { return false } }
        #expect(end?.event == .itemEnded(.finished), "\(String(describing: end?.event))")
        await player.shutdown()
        await rig.finish()
    }

    @Test("the server vanishes for good: with a buffering timeout set, the player gives up on the item with a typed error and stays usable")
    func serverGoneBufferingTimeout() async throws {
        let rig = try await Rig(bytesPerSecond: 90_000)  // as above: never the whole file ahead
        var configuration = Fixtures.headless
        configuration.bufferingTimeout = .seconds(2)
        let (player, recorder) = try await Fixtures.player(configuration: configuration)
        try await player.load(rig.url)
        #expect(await position(recorder, atLeast: 0.5))
        let mark = recorder.mark
        rig.proxy.setMode(.down)
        let end = await recorder.waitFor(timeout: .seconds(30), after: mark) { if case .itemEnded = $0.event { return true } else { return false } }
        guard case .itemEnded(.error(.bufferingTimedOut(let source, let position, let after)))? = end?.event else {
            Issue.record("ended as \(String(describing: end?.event))")
            await player.shutdown()
            await rig.finish()
            return
        }
        #expect(source == rig.url.description)
        #expect(position.map { $0 >= 0.5 && $0 < 19 } == true, "\(String(describing: position))")
        #expect(after == .seconds(2))
        #expect(player.state == .failed)
        #expect(recorder.events.contains { if case .error(.bufferingTimedOut) = $0 { return true } else { return false } })
        // Usable: a local item loads and plays.
        try await player.load(.file(Fixtures.fixture("short-a.mp4")))
        #expect(await waitForState(recorder, .playing, after: mark))
        await player.shutdown()
        await rig.finish()
    }

    @Test("a dead path (connections accepted, nothing answered): the load fails after the network timeout the app set, typed")
    func deadPathNetworkTimeout() async throws {
        let rig = try await Rig()
        rig.proxy.setMode(.blackhole)
        var configuration = Fixtures.headless
        configuration.networkTimeout = .seconds(1)
        let (player, _) = try await Fixtures.player(configuration: configuration)
        let started = ContinuousClock.now
        await #expect {
            try await player.load(rig.url)
        } throws: { error in
            guard case PlayerError.loadFailed(let source, _) = error else { return false }
            return source == rig.url.description
        }
        // mpv's own 60 s would still be waiting.
        #expect(ContinuousClock.now - started < .seconds(30))
        rig.proxy.setMode(.pass)
        try await player.load(rig.url)
        await player.shutdown()
        await rig.finish()
    }

    @Test("a trickling server: the player loads, buffers on and off, and stop and shutdown still return")
    func trickle() async throws {
        let rig = try await Rig()
        rig.proxy.setMode(.trickle(bytesPerSecond: 30_000))
        let (player, recorder) = try await Fixtures.player()
        let info = try await player.load(rig.url)
        #expect(info.duration.map { abs($0 - 20) < 0.5 } == true)
        #expect(await waitForState(recorder, .buffering, after: 0, timeout: .seconds(30)))
        try await player.stop()
        #expect(await recorder.waitFor(timeout: .seconds(10)) { $0.event == .itemEnded(.stopped) } != nil)
        await player.shutdown()
        await rig.finish()
    }

    @Test("a redirect loop fails the load with a typed error; the player stays usable")
    func redirectLoop() async throws {
        let rig = try await Rig()
        rig.server.setFault(.redirect(to: "b.mp4"), for: "a.mp4")
        rig.server.setFault(.redirect(to: "a.mp4"), for: "b.mp4")
        let (player, _) = try await Fixtures.player()
        let source = MediaSource(rig.proxy.url("a.mp4").absoluteString)
        await #expect {
            try await player.load(source)
        } throws: { error in
            guard case PlayerError.loadFailed(let failed, _) = error else { return false }
            return failed == source.description
        }
        // The loop was followed (a redirect at least): a load that failed at its first answer
        // would pass the check above for another reason. (Once in a serial pass, 2026-11-28,
        // a.mp4 was asked for only once; its partner's count tells the next such run apart.)
        let asked = (a: rig.server.counts("a.mp4").requests, b: rig.server.counts("b.mp4").requests)
        #expect(asked.a + asked.b >= 2, "requests: a.mp4 \(asked.a), b.mp4 \(asked.b)")
        try await player.load(rig.url)
        await player.shutdown()
        await rig.finish()
    }

    @Test("the file changes length between requests: the item ends (typed), nothing hangs, the player stays usable")
    func lengthChanges() async throws {
        let rig = try await Rig()
        let (player, recorder) = try await Fixtures.player()
        try await player.load(rig.url)
        #expect(await position(recorder, atLeast: 0.5))
        // Now the server has a file half as long; a seek past its end needs a new request.
        rig.server.setFile("long.mp4", NetworkFaultTests.long.prefix(NetworkFaultTests.long.count / 2))
        let mark = recorder.mark
        try await player.seek(to: 16)
        let end = await recorder.waitFor(timeout: .seconds(60), after: mark) { if case .itemEnded = $0.event { return true } else { return false } }
        #expect(end != nil, "\(recorder.events.suffix(10))")
        try await player.load(.file(Fixtures.fixture("short-a.mp4")))
        await player.shutdown()
        await rig.finish()
    }
}
