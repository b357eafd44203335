import ExampleSupport
import Foundation
import MetricsTestKit
import PlayerKit
import PlayerKitMetrics
import PlayerKitSupport
import PlayerKitTesting
import Prometheus
import Testing

/// PlayerKitMetrics (issue 68, item 3): every player's statistics and events through
/// swift-metrics, with swift-metrics' test backend on a fake, swift-prometheus's text output
/// from a real player, and the metrics example scraped over loopback by curl.
@Suite("Player metrics", .timeLimit(.minutes(2)))
struct MetricsTests {
    private static func dimensions(_ id: String) -> [(String, String)] {
        [("player", id), ("app", "tests"), ("wall", "north")]
    }

    @Test("on a fake, with the test backend: counters go up by each sample's increase, gauges take the figures, stalls and start-up are timed, detach destroys")
    func fakeWithTestBackend() async throws {
        let backend = TestMetrics()
        let clock = ManualClock()
        let fake = try FakePlayer(id: "metrics-fake", clock: clock,
                                  media: ["clip.mp4": .init(duration: 60, loadTime: .milliseconds(200))])
        let metrics = PlayerMetrics(labels: [("app", "tests")], factory: backend)
        try metrics.attach(fake, labels: [("wall", "north")], every: .seconds(1))
        let dimensions = Self.dimensions("metrics-fake")
        let loading = Task { try await fake.load("clip.mp4") }
        #expect(await eventually(timeout: .seconds(10)) { fake.state == .loading }, "the load waits on the clock")
        clock.advance(by: .milliseconds(200))
        _ = try await loading.value
        var statistics = PlaybackStatistics()
        statistics.framesRendered = 100
        statistics.framesDroppedByOutput = 2
        statistics.bufferAhead = 3.5
        fake.setStatistics(statistics)
        clock.advance(by: .seconds(1))
        let rendered = { @Sendable in backend.counterTotal(label: "playerkit_frames_rendered_total", dimensions: dimensions) }
        #expect(await eventually(timeout: .seconds(10)) { rendered() == 100 }, "\(rendered())")
        #expect(backend.counterTotal(label: "playerkit_frames_dropped_total", dimensions: dimensions + [("by", "output")]) == 2)
        #expect(try backend.expectMeter("playerkit_buffer_ahead_seconds", dimensions).lastValue == 3.5)
        #expect(backend.meters(label: "playerkit_declared_bitrate_bits_per_second").isEmpty, "a figure never known has no gauge")
        #expect(try backend.expectMeter("playerkit_state", dimensions + [("state", "playing")]).lastValue == 1)
        #expect(try backend.expectTimer("playerkit_time_to_first_frame_seconds", dimensions).lastValue == 200_000_000)
        // The next sample's increase; then a new item's smaller count counts from zero.
        statistics.framesRendered = 150
        fake.setStatistics(statistics)
        clock.advance(by: .seconds(1))
        #expect(await eventually(timeout: .seconds(10)) { rendered() == 150 }, "\(rendered())")
        statistics.framesRendered = 20
        fake.setStatistics(statistics)
        clock.advance(by: .seconds(1))
        #expect(await eventually(timeout: .seconds(10)) { rendered() == 170 }, "\(rendered())")
        // A stall: counted when it begins, timed when it ends.
        fake.stall(for: .seconds(2))
        clock.advance(by: .seconds(2))
        #expect(await eventually(timeout: .seconds(10)) {
            (try? backend.expectTimer("playerkit_stall_duration_seconds", dimensions).lastValue) == 2_000_000_000
        })
        #expect(backend.counterTotal(label: "playerkit_stalls_total", dimensions: dimensions) == 1)
        #expect(backend.counterTotal(label: "playerkit_events_total", dimensions: dimensions + [("kind", "statisticsUpdated")]) >= 3)
        metrics.detach("metrics-fake")
        #expect(backend.counters(label: "playerkit_frames_rendered_total").isEmpty, "detached: its metrics are gone")
        #expect(backend.meters(label: "playerkit_state").isEmpty)
        await fake.shutdown()
    }

    @Test("alarms and loudness on a fake: counted and timed by kind, an active gauge per kind, loudness gauges; gone at detach")
    func alarmsWithTestBackend() async throws {
        let backend = TestMetrics()
        let clock = ManualClock()
        let fake = try FakePlayer(id: "metrics-alarms", clock: clock, media: ["clip.mp4": .init(duration: 60)])
        let metrics = PlayerMetrics(labels: [("app", "tests")], factory: backend)
        try metrics.attach(fake, labels: [("wall", "north")], every: .seconds(1))
        let dimensions = Self.dimensions("metrics-alarms")
        let watch = try await fake.watchAlarms(AlarmThresholds(freeze: .seconds(1)))
        let loudness = try await fake.observeLoudness(every: .milliseconds(500))
        try await fake.load("clip.mp4")
        clock.advance(by: .seconds(2))
        fake.raiseAlarm(.freeze)
        let freeze = dimensions + [("kind", "freeze")]
        #expect(await eventually(timeout: .seconds(10)) { (try? backend.expectMeter("playerkit_alarm_active", freeze).lastValue) == 1 })
        #expect(backend.counterTotal(label: "playerkit_alarms_total", dimensions: freeze) == 1)
        clock.advance(by: .milliseconds(1500))
        fake.clearAlarm(.freeze)
        #expect(await eventually(timeout: .seconds(10)) { (try? backend.expectMeter("playerkit_alarm_active", freeze).lastValue) == 0 })
        // Raised at 2 s with its fault 1 s before (the threshold), cleared at 3.5 s: 2.5 s.
        #expect(try backend.expectTimer("playerkit_alarm_duration_seconds", freeze).lastValue == 2_500_000_000)
        fake.setLoudness(Loudness(momentary: -23, shortTerm: -24, truePeak: -3))
        clock.advance(by: .milliseconds(500))
        #expect(await eventually(timeout: .seconds(10)) { (try? backend.expectMeter("playerkit_loudness_momentary_lufs", dimensions).lastValue) == -23 })
        #expect(try backend.expectMeter("playerkit_true_peak_dbtp", dimensions).lastValue == -3)
        #expect(backend.meters(label: "playerkit_loudness_integrated_lufs").isEmpty, "a figure never known has no gauge")
        metrics.detach("metrics-alarms")
        #expect(backend.counters(label: "playerkit_alarms_total").isEmpty)
        #expect(backend.meters(label: "playerkit_alarm_active").isEmpty)
        #expect(backend.timers(label: "playerkit_alarm_duration_seconds").isEmpty)
        watch.cancel()
        loudness.cancel()
        await fake.shutdown()
    }

    @Test("an interval out of range is refused as the player refuses it; nothing is attached")
    func badInterval() throws {
        let backend = TestMetrics()
        let fake = try FakePlayer(id: "metrics-bad", clock: ManualClock())
        let metrics = PlayerMetrics(factory: backend)
        #expect(throws: PlaybackStatistics.intervalRefused(.milliseconds(1))) {
            try metrics.attach(fake, every: .milliseconds(1))
        }
        #expect(backend.meters.isEmpty && backend.counters.isEmpty)
    }

    @Test("a real player through swift-prometheus: its frames, state and decoder in the text output; its series end when it shuts down")
    func realPlayerPrometheus() async throws {
        let registry = PrometheusCollectorRegistry()
        let metrics = PlayerMetrics(labels: [("app", "tests")], factory: PrometheusMetricsFactory(registry: registry))
        let (player, _) = try await Fixtures.player(id: "metrics-real")
        try await player.perform(.setLoop(.forever))
        try metrics.attach(player, every: .milliseconds(200))
        try await player.load(.file(Fixtures.clipA))
        let text = { @Sendable in registry.emitToString() }
        #expect(await eventually(timeout: .seconds(20)) {
            Self.value(in: text(), "playerkit_frames_rendered_total{player=\"metrics-real\",app=\"tests\"}").map { $0 > 10 } == true
        }, "\(text())")
        #expect(Self.value(in: text(), "playerkit_state{player=\"metrics-real\",app=\"tests\",state=\"playing\"}") == 1)
        #expect(Self.value(in: text(), "playerkit_hardware_decoding{player=\"metrics-real\",app=\"tests\"}") == 0)
        #expect(Self.value(in: text(), "playerkit_time_to_first_frame_seconds_count{player=\"metrics-real\",app=\"tests\"}") == 1)
        await player.shutdown()
        #expect(await eventually(timeout: .seconds(10)) { !text().contains("player=\"metrics-real\"") }, "\(text())")
    }

    @Test("the metrics example serves /metrics on loopback, and curl scrapes every player's series")
    func exampleScrapedByCurl() async throws {
        let child = try ChildProcess.startKeepingErrors(
            try ChildProcess.example("playerkit-metrics-server"),
            ["--port", "0", "--json", "--players", "2", "--interval", "0.25", "--seconds", "30"])
        defer { if child.process.isRunning { child.process.terminate() } }
        let reader = JSONLineReader(child.output)
        let first = await reader.next()
        let address = try #require(first?["value"] as? String, "\(String(describing: first))")
        #expect(address.hasPrefix("http://127.0.0.1:"))
        // A statistics line comes once the players play; then the scrape has both.
        let line = await reader.next()
        #expect(line?["event"] as? String == "statisticsUpdated")
        let scraped = Locked("")
        #expect(await eventually(timeout: .seconds(20)) {
            guard let (status, output) = try? ChildProcess.run(URL(fileURLWithPath: "/usr/bin/curl"), ["-s", "--max-time", "5", address]),
                  status == 0 else { return false }
            scraped.withLock { $0 = output }
            return ["player-1", "player-2"].allSatisfy { id in
                Self.value(in: output, "playerkit_frames_rendered_total{player=\"\(id)\",app=\"playerkit-metrics-server\",clip=\"\(id == "player-1" ? "clip-a" : "clip-b")\"}").map { $0 > 0 } == true
            }
        }, "\(scraped.withLock { $0 })")
        #expect(scraped.withLock { $0 }.contains("# TYPE playerkit_frames_rendered_total counter"))
        child.process.interrupt()
        await ChildProcess.waitForExit(child.process)
        #expect(child.process.terminationStatus == 0, "\((try? String(contentsOf: child.errors, encoding: .utf8)) ?? "")")
    }

    /// The value of the series `series` (name and labels, as printed) in Prometheus text output.
    static func value(in text: String, _ series: String) -> Double? {
        for line in text.split(separator: "\n") where line.hasPrefix(series + " ") {
            return Double(line.dropFirst(series.count + 1))
        }
        return nil
    }
}
