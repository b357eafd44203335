// The code blocks of Documentation/Health.md, compiled by `make test` (the DocSnippets test target builds them;
// Scripts/check-snippets.py checks that each block shown is the region here). Not run.
import Foundation
import PlayerKit
import PlayerKitMetrics
import PlayerKitTesting
import Prometheus

func snippet_read(player: Player) async throws {
    // snippet: read
    let statistics = try await player.statistics()          // mpv's figures, read at once, with the tally
    if statistics.stallCount > 0 {
        print("stalled \(statistics.stallCount) times, \(statistics.stallTime) in all, longest \(statistics.longestStall)")
    }
    print("decoder:", statistics.videoDecoder?.description ?? "no video")
    // end snippet
}

func snippet_observe(player: Player) async throws {
    // snippet: observe
    let observation = try player.observeStatistics(every: .seconds(1))   // counts frames from now on
    for await record in player.events(kinds: [.statisticsUpdated]) {
        guard case .statisticsUpdated(let statistics) = record.event else { continue }
        let fps = statistics.renderedFrameRate.map { String(format: "%.1f", $0) } ?? "-"
        let dropped = (statistics.framesDroppedByDecoder ?? 0) + (statistics.framesDroppedByOutput ?? 0)
        print("\(record.playerID): \(fps) fps, \(dropped) dropped, \(statistics.bufferAhead ?? 0) s ahead")
    }
    observation.cancel()                                   // or let it go: no more sampling, no frame count
    // end snippet
}

func snippet_fake(clock: ManualClock) async throws {
    // snippet: fake
    let fake = try FakePlayer(id: "tile-3", clock: clock, media: ["cam.mp4": .init(duration: 60)])
    var starving = PlaybackStatistics()
    starving.stallCount = 4
    starving.bufferAhead = 0.2
    fake.setStatistics(starving)                           // what the app's health code should see
    let observation = try fake.observeStatistics(every: .seconds(1))
    clock.advance(by: .seconds(1))                         // one statisticsUpdated(starving)
    observation.cancel()
    // end snippet
}

func snippet_metrics(camera: Player, lobby: Player) throws {
    // snippet: metrics
    let registry = PrometheusCollectorRegistry()                // or MetricsSystem.bootstrap(...) once
    let metrics = PlayerMetrics(labels: [("app", "control-room")], factory: PrometheusMetricsFactory(registry: registry))
    try metrics.attach(camera, labels: [("wall", "north")])   // statistics every second, and its events
    try metrics.attach(lobby, labels: [("wall", "south")], every: .seconds(5))
    let page = registry.emitToString()                         // what a scrape of /metrics gets
    // playerkit_frames_rendered_total{player="camera",app="control-room",wall="north"} 1530
    metrics.detach(lobby.id)                                   // its series end
    _ = page
    // end snippet
}

func snippet_alarms(camera: Player) async throws {
    // snippet: alarms
    var thresholds = AlarmThresholds()                     // 2 s of a still picture, of black, of silence
    thresholds.silence = .seconds(5)                       // a studio with pauses
    let watch = try await camera.watchAlarms(thresholds)   // the detectors join the camera's own chains
    for await record in camera.events(kinds: [.alarmRaised, .alarmCleared]) {
        switch record.event {
        case .alarmRaised(let alarm):
            print("\(record.playerID): \(alarm.kind) since \(alarm.start) s")
        case .alarmCleared(let alarm):
            print("\(record.playerID): \(alarm.kind) over, \(alarm.duration ?? 0) s")
        default: break
        }
    }
    watch.cancel()                                         // the detectors leave; raised alarms clear
    // end snippet
}

func snippet_loudness(camera: Player) async throws {
    // snippet: loudness
    let meter = try await camera.observeLoudness(every: .milliseconds(200))
    for await record in camera.events(kinds: [.loudnessUpdated]) {
        guard case .loudnessUpdated(let loudness) = record.event else { continue }
        let momentary = loudness.momentary.map { String(format: "%.1f LUFS", $0) } ?? "silent"
        print("\(record.playerID): \(momentary), peak \(loudness.truePeak ?? -.infinity) dBTP")
    }
    meter.cancel()
    // end snippet
}

func snippet_fakeAlarms(clock: ManualClock) async throws {
    // snippet: fakeAlarms
    let fake = try FakePlayer(id: "tile-4", clock: clock, media: ["cam.mp4": .init(duration: 60)])
    let watch = try await fake.watchAlarms(AlarmThresholds())  // fake.alarmThresholds reads them back
    try await fake.load("cam.mp4")
    clock.advance(by: .seconds(10))
    fake.raiseAlarm(.freeze)                               // alarmRaised, its start 2 s back
    clock.advance(by: .seconds(3))
    fake.clearAlarm(.freeze)                               // alarmCleared, 5 s long
    watch.cancel()
    // end snippet
}
