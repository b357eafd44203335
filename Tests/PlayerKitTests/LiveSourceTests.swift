import Foundation
import Logging
import PlayerKit
import PlayerKitSupport
import Testing

/// Live sources whose origin goes away (issue 66), against the project's own live origin on
/// loopback (Scripts/live-origin.py), killed, frozen or failing, and started again on its port.
/// Judged by events, with bounds far above what each step takes.
@Suite("Live sources: a lost origin is not an end (real libmpv, a loopback origin)", .timeLimit(.minutes(3)), .tags(.livePass))
struct LiveSourceTests {
    /// A small scene: one origin serves `angles` cameras, 1 s segments in a 6-segment window.
    static func originArguments(angles: Int) -> [String] {
        ["--angles", "\(angles)", "--size", "160x90", "--fps", "30", "--seconds", "120", "--segment", "1", "--window", "6"]
    }

    /// A headless camera with a log of its own.
    static func camera(_ name: String, logs: CapturedLogs, networkTimeout: Duration = .seconds(60),
                       bufferingTimeout: Duration? = nil) async throws -> (player: Player, recorder: EventRecorder) {
        var configuration = Fixtures.headless
        configuration.logger = logs.logger(label: "camera")
        // Verbose: FFmpeg's lines naming each URL a camera opens are in its log, for the credit checks.
        configuration.mpvLogLevel = .verbose
        configuration.networkTimeout = networkTimeout
        configuration.bufferingTimeout = bufferingTimeout
        return try await Fixtures.player(id: Fixtures.uniqueID(name), configuration: configuration)
    }

    /// The FFmpeg lines (module `ffmpeg...`) logged for `player`.
    static func ffmpegLines(of player: Player, in logs: CapturedLogs) -> [String] {
        logs.all.filter { entry in
            entry.player == player.id.rawValue && entry.metadata["module"].map { "\($0)".hasPrefix("ffmpeg") } == true
        }.map(\.message)
    }

    static func ended(_ record: PlayerEventRecord) -> Bool {
        if case .itemEnded = record.event { return true } else { return false }
    }

    @Test("four cameras of one origin: killed, each goes to buffering (no end, no error); started again on its port, each plays again; live all along, with no duration and no durationKnown; FFmpeg's lines each credited to its own camera")
    func killedOriginReconnects() async throws {
        let origin = try await LiveOrigin.start(Self.originArguments(angles: 4))
        var restarted: LiveOrigin?
        defer {
            origin.stop()
            restarted?.stop()
        }
        let logs = CapturedLogs()
        var cameras: [(player: Player, recorder: EventRecorder)] = []
        for index in 0..<4 { cameras.append(try await Self.camera("cam\(index)", logs: logs)) }
        let all = cameras
        defer { for camera in all { Task { await camera.player.shutdown() } } }
        for (index, camera) in all.enumerated() {
            let info = try await camera.player.load(MediaSource(origin.angles[index]))
            #expect(info.isLive, "\(camera.player.id): \(info)")
            #expect(info.duration == nil, "\(camera.player.id): \(info)")
        }
        for camera in all { #expect(await camera.recorder.waitForState(.playing, timeout: .seconds(30)), "\(camera.player.id)") }
        // A few segments played: mpv's own duration (how much it has read) grew meanwhile.
        let playedFrom = all.map { $0.player.position ?? 0 }
        #expect(await eventually(timeout: .seconds(30)) { zip(all, playedFrom).allSatisfy { ($0.0.player.position ?? 0) > $0.1 + 2.5 } })
        for camera in all {
            #expect(camera.player.snapshot.isLive, "\(camera.player.id)")
            #expect(camera.player.snapshot.duration == nil, "\(camera.player.id): \(camera.player.snapshot)")
            let durations = camera.recorder.events.filter { if case .durationKnown = $0 { true } else { false } }
            #expect(durations.isEmpty, "\(camera.player.id) published \(durations)")
        }

        // The origin dies: every camera waits for it, none ends.
        let marks = all.map(\.recorder.mark)
        origin.stop()
        for (camera, mark) in zip(all, marks) {
            #expect(await camera.recorder.waitForState(.buffering, timeout: .seconds(30), after: mark), "\(camera.player.id) did not buffer: \(camera.recorder.events.suffix(8))")
        }
        // Still waiting seconds later (it reconnects, attempt after attempt): no end comes.
        #expect(await all[0].recorder.waitFor(timeout: .seconds(6), after: marks[0], Self.ended) == nil)
        for (camera, mark) in zip(all, marks) {
            let after = camera.recorder.records.filter { $0.sequenceNumber > mark }
            #expect(!after.contains(where: Self.ended), "\(camera.player.id) ended: \(after.map(\.event))")
            #expect(!after.contains { if case .error = $0.event { true } else { false } }, "\(camera.player.id): \(after.map(\.event))")
            #expect(camera.player.state == .buffering, "\(camera.player.id): \(camera.player.state)")
        }

        // Back on its port, where its window is now: every camera plays again.
        restarted = try await origin.restarted()
        for (camera, mark) in zip(all, marks) {
            #expect(await camera.recorder.waitForState(.playing, timeout: .seconds(40), after: mark), "\(camera.player.id) did not come back: \(camera.recorder.events.suffix(8))")
        }
        let resumedFrom = all.map { $0.player.position ?? 0 }
        #expect(await eventually(timeout: .seconds(20)) { zip(all, resumedFrom).allSatisfy { ($0.0.player.position ?? 0) > $0.1 + 1 } })
        for (camera, mark) in zip(all, marks) {
            let after = camera.recorder.records.filter { $0.sequenceNumber > mark }.map(\.event)
            #expect(!after.contains { if case .itemEnded = $0 { true } else { false } }, "\(camera.player.id): \(after)")
            #expect(!after.contains { if case .firstFrame = $0 { true } else { false } }, "\(camera.player.id): a second first frame: \(after)")
            #expect(!after.contains { if case .durationKnown = $0 { true } else { false } }, "\(camera.player.id): \(after)")
            #expect(camera.player.snapshot.isLive)
        }
        // FFmpeg's lines that name a camera's angle are logged for that camera only.
        for (index, camera) in all.enumerated() {
            let lines = Self.ffmpegLines(of: camera.player, in: logs)
            let foreign = lines.filter { line in (0..<4).contains { $0 != index && line.contains("/angle-\($0)/") } }
            #expect(foreign.isEmpty, "\(camera.player.id) was credited with: \(foreign.prefix(3))")
        }
    }

    @Test("playerkit-live-cameras --json: two live cameras load live, play, and the summary says how often each waited for its source (none here) and that it plays")
    func liveCamerasExample() async throws {
        let origin = try await LiveOrigin.start(Self.originArguments(angles: 2))
        defer { origin.stop() }
        let (status, output, errors) = try await ChildProcess.runToEnd(ChildProcess.example("playerkit-live-cameras"), ["--json", "--seconds", "5"] + origin.angles)
        #expect(status == 0, "exit status \(status): \(errors.suffix(2000))")
        let objects = try exampleJSONLines(output)
        for camera in ["cam-1", "cam-2"] {
            let mine = objects.filter { $0["player"] as? String == camera }
            #expect(mine.contains { $0["event"] as? String == "mediaLoaded" && $0["live"] as? Bool == true }, "\(camera): \(mine)")
            #expect(mine.contains { $0["event"] as? String == "stateChanged" && $0["state"] as? String == "playing" }, "\(camera)")
            let summary = try #require(mine.first { $0["event"] as? String == "summary" }, "\(camera): no summary")
            #expect(summary["state"] as? String == "playing" && summary["live"] as? Bool == true && summary["count"] as? Int == 0, "\(summary)")
        }
    }

    @Test("four cameras of four origins fail at once (killed, 404, frozen, 503): each gives up with networkFailed naming its own cause, after buffering within networkTimeout 3 s and bufferingTimeout 8 s; each stays usable; FFmpeg's lines name only its own origin")
    func fourFailuresNameTheirOwnCauses() async throws {
        var origins: [LiveOrigin] = []
        for _ in 0..<4 { origins.append(try await LiveOrigin.start(Self.originArguments(angles: 1))) }
        let servers = origins
        defer { for origin in servers { origin.thaw(); origin.stop() } }
        let logs = CapturedLogs()
        var cameras: [(player: Player, recorder: EventRecorder)] = []
        for index in 0..<4 {
            cameras.append(try await Self.camera("fail\(index)", logs: logs, networkTimeout: .seconds(3), bufferingTimeout: .seconds(8)))
        }
        let all = cameras
        defer { for camera in all { Task { await camera.player.shutdown() } } }
        for (index, camera) in all.enumerated() { try await camera.player.load(MediaSource(servers[index].angles[0])) }
        for camera in all { #expect(await camera.recorder.waitForState(.playing, timeout: .seconds(30)), "\(camera.player.id)") }
        let marks = all.map(\.recorder.mark)
        // At once: refused, 404, silent, 503.
        servers[0].stop()
        try await servers[1].control("fail", angle: 0, status: 404)
        servers[2].freeze()
        try await servers[3].control("fail", angle: 0, status: 503)
        var causes: [NetworkFailure?] = []
        for (index, camera) in all.enumerated() {
            let failed = await camera.recorder.waitFor(timeout: .seconds(60), after: marks[index]) {
                if case .error(.networkFailed) = $0.event { true } else { false }
            }
            guard case .error(.networkFailed(let source, let cause, let waited))? = failed?.event else {
                Issue.record("\(camera.player.id): no networkFailed: \(camera.recorder.events.suffix(10))")
                causes.append(nil)
                continue
            }
            #expect(source == servers[index].angles[0], "\(camera.player.id): \(source)")
            #expect(waited > .zero, "\(camera.player.id): it gave up without trying")
            causes.append(cause)
            // Buffering, not an end, came first; then the failure ends the item.
            let later = camera.recorder.records.filter { $0.sequenceNumber > marks[index] }.map(\.event)
            #expect(later.contains(PlayerEvent.stateChanged(from: .playing, to: .buffering)), "\(camera.player.id): \(later)")
            #expect(!later.contains(PlayerEvent.itemEnded(.finished)), "\(camera.player.id): \(later)")
            #expect(await camera.recorder.waitForState(.failed, timeout: .seconds(10), after: marks[index]), "\(camera.player.id)")
        }
        #expect(causes[0] == .connectionRefused(server: "127.0.0.1:\(servers[0].port)"), "refused: \(String(describing: causes[0]))")
        if case .httpStatus(404, _)? = causes[1] {} else { Issue.record("404: \(String(describing: causes[1]))") }
        #expect(causes[2] == .timedOut, "frozen: \(String(describing: causes[2])); its FFmpeg lines: \(Self.ffmpegLines(of: all[2].player, in: logs).suffix(12))")
        if case .httpStatus(503, _)? = causes[3] {} else { Issue.record("503: \(String(describing: causes[3]))") }
        // Each camera's FFmpeg lines name its own origin's port, never another's.
        for (index, camera) in all.enumerated() {
            let lines = Self.ffmpegLines(of: camera.player, in: logs)
            let foreign = lines.filter { line in servers.indices.contains { $0 != index && line.contains(":\(servers[$0].port)") } }
            #expect(foreign.isEmpty, "\(camera.player.id) was credited with: \(foreign.prefix(3))")
        }
        // Each player stays usable.
        for camera in all {
            let mark = camera.recorder.mark
            try await camera.player.load(.file(Fixtures.clipA))
            #expect(await camera.recorder.waitFor(timeout: .seconds(20), after: mark) { $0.event == .firstFrame } != nil, "\(camera.player.id)")
        }
    }
}
