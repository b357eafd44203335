import Foundation
import PlayerKit
@testable import PlayerKitCore
import PlayerKitSupport
import Testing

/// Live items in the pure parts (issue 66): the model fed synthetic mpv events and FFmpeg lines
/// on a manual clock, the reconnection's decisions, FFmpeg's words, and which player an FFmpeg
/// line is credited to. No core, no network.
@Suite("Live items: the model, the reconnection and FFmpeg's lines (pure)", .timeLimit(.minutes(1)))
struct LiveModelTests {
    /// A manual monotonic clock for the model.
    final class TestClock: Sendable {
        private let current = Locked(ContinuousClock.now)
        var now: ContinuousClock.Instant { current.withLock { $0 } }
        func advance(_ duration: Duration) { current.withLock { $0 += duration } }
    }

    private func events(_ outputs: [PlaybackModel.Output]) -> [PlayerEvent] {
        outputs.compactMap { if case .event(let event) = $0 { event } else { nil } }
    }

    /// A model playing a live HLS item (entry 1) loaded from `source`, its first frame shown.
    private func playingLive(_ source: String = "http://127.0.0.1:8000/cam/live.m3u8", clock: TestClock,
                             networkTimeout: Duration = .seconds(10), bufferingTimeout: Duration? = nil,
                             seekable: Bool = false, format: String = "hls", duration: MPVValue = .none) -> (PlaybackModel, MediaInfo?) {
        var model = PlaybackModel(positionInterval: .milliseconds(100), bufferingTimeout: bufferingTimeout, networkTimeout: networkTimeout)
        model.now = { [clock] in clock.now }
        _ = model.apply(.propertyChanged(observationID: 1, name: "pause", value: .flag(false)))
        _ = model.apply(.propertyChanged(observationID: 2, name: "playlist-count", value: .int(1)))
        _ = model.apply(.propertyChanged(observationID: 3, name: "playlist-pos", value: .int(0)))
        _ = model.awaitEntry(1, source: source)
        _ = model.apply(.startFile(entryID: 1))
        var info: MediaInfo?
        for case .requestProperties(let requests) in model.apply(.fileLoaded) {
            for request in requests {
                let value: MPVValue = switch request.name {
                case "duration": duration
                case "seekable": .flag(seekable)
                case "file-format": .string(format)
                case "track-list": .array([])
                case "path": .string(source)
                default: .none
                }
                for case .event(.mediaLoaded(let loaded)) in model.apply(.propertyReply(replyID: request.replyID, error: 0, name: request.name, value: value)) {
                    info = loaded
                }
            }
        }
        _ = model.apply(.playbackRestart)
        return (model, info)
    }

    private func ffmpeg(_ model: inout PlaybackModel, _ text: String, level: MPVEvent.LogLevel = .warn, clock: TestClock) -> [PlaybackModel.Output] {
        model.readFFmpegLine(level: level, text: text, at: clock.now)
    }

    @Test("a live HLS item (mpv cannot seek it) is live: no duration, no durationKnown at load nor as mpv's own duration grows; a file is not")
    func liveHasNoDuration() {
        let clock = TestClock()
        var (model, info) = playingLive(clock: clock, duration: .double(3))
        #expect(info?.isLive == true)
        #expect(info?.duration == nil)
        #expect(model.snapshot.isLive && model.snapshot.duration == nil)
        for seconds in [4.0, 5.0, 6.0] {
            #expect(events(model.apply(.propertyChanged(observationID: 4, name: "duration", value: .double(seconds)))).isEmpty)
        }
        #expect(model.snapshot.duration == nil)
        let (file, fileInfo) = playingLive("/media/clip.mp4", clock: clock, seekable: true, format: "mov,mp4,m4a,3gp,3g2,mj2", duration: .double(4))
        #expect(fileInfo?.isLive == false && fileInfo?.duration == 4)
        #expect(!file.snapshot.isLive)
    }

    @Test("mpv's duration of a live item observed after its load and before its info is read publishes nothing (a camera published durationKnown(0.367) so); a file's comes once, before mediaLoaded")
    func durationBeforeTheInfo() {
        for (format, seekable, live) in [("hls", false, true), ("mov,mp4,m4a,3gp,3g2,mj2", true, false)] {
            var model = PlaybackModel()
            _ = model.awaitEntry(1, source: "http://h/x")
            _ = model.apply(.startFile(entryID: 1))
            var outputs = model.apply(.fileLoaded)
            outputs += model.apply(.propertyChanged(observationID: 3, name: "duration", value: .double(0.367)))
            for case .requestProperties(let requests) in outputs {
                for request in requests {
                    let value: MPVValue = switch request.name {
                    case "duration": .double(0.367)
                    case "seekable": .flag(seekable)
                    case "file-format": .string(format)
                    default: .none
                    }
                    outputs += model.apply(.propertyReply(replyID: request.replyID, error: 0, name: request.name, value: value))
                }
            }
            let all = events(outputs)
            let durations = all.filter { if case .durationKnown = $0 { true } else { false } }
            #expect(durations == (live ? [] : [.durationKnown(0.367)]), "\(format): \(all)")
            if !live, let known = all.firstIndex(of: .durationKnown(0.367)) {
                #expect(all[(known + 1)...].contains { if case .mediaLoaded = $0 { true } else { false } })
            }
        }
    }

    @Test("a source mpv cannot seek whose duration grows as it plays is found live then: no more durationKnown")
    func growingDurationBecomesLive() {
        let clock = TestClock()
        var (model, info) = playingLive("http://cam.example/stream.ts", clock: clock, format: "mpegts", duration: .double(2))
        #expect(info?.isLive == false)
        #expect(events(model.apply(.propertyChanged(observationID: 4, name: "duration", value: .double(3)))).isEmpty)
        #expect(model.snapshot.isLive)
        #expect(model.snapshot.duration == nil)
        #expect(events(model.apply(.propertyChanged(observationID: 4, name: "duration", value: .double(4)))).isEmpty)
    }

    @Test("a live source FFmpeg gave up on is lost, not finished: buffering, attempts backing off (0, 0.5, 1, 2 s), and back to playing at the attempt's first frame, the same item (no end, no second first frame)")
    func lostLiveSourceReconnects() throws {
        let clock = TestClock()
        var (model, _) = playingLive(clock: clock)
        #expect(model.state == .playing)
        _ = ffmpeg(&model, "http: Opening 'http://127.0.0.1:8000/cam/live.m3u8' for reading", level: .verbose, clock: clock)
        _ = ffmpeg(&model, "tcp: Connection to tcp://127.0.0.1:8000 failed: Connection refused", level: .error, clock: clock)
        _ = ffmpeg(&model, "hls: Failed to reload playlist 0", clock: clock)
        clock.advance(.seconds(2))
        let lost = model.apply(.endFile(entryID: 1, reason: .endOfFile, error: 0))
        #expect(events(lost) == [.stateChanged(from: .playing, to: .buffering)])
        guard case .scheduleReconnect(let first, var generation)? = lost.first(where: { if case .scheduleReconnect = $0 { true } else { false } }) else {
            Issue.record("no reconnection scheduled: \(lost)")
            return
        }
        #expect(first == .zero)
        var delays: [Duration] = []
        for attempt in 1...4 {
            let due = model.reconnectDue(generation: generation)
            guard case .reopen(let index, _, let number, let cause)? = due.first else {
                Issue.record("attempt \(attempt): \(due)")
                return
            }
            #expect(index == 0 && number == attempt)
            #expect(cause == .connectionRefused(server: "127.0.0.1:8000"))
            _ = model.apply(.startFile(entryID: 1))
            #expect(model.state == .buffering)
            let failed = model.apply(.endFile(entryID: 1, reason: .error, error: -13))
            let processed = failed + model.drained()
            #expect(events(processed).filter { if case .stateChanged = $0 { false } else { true } }.isEmpty, "\(processed)")
            guard case .scheduleReconnect(let delay, let next)? = processed.first(where: { if case .scheduleReconnect = $0 { true } else { false } }) else {
                Issue.record("attempt \(attempt) scheduled nothing: \(processed)")
                return
            }
            delays.append(delay)
            generation = next
            clock.advance(delay)
        }
        #expect(delays == [.milliseconds(500), .seconds(1), .seconds(2), .seconds(4)])
        // A stale timer does nothing.
        #expect(model.reconnectDue(generation: generation - 1).filter { if case .reopen = $0 { true } else { false } }.isEmpty)
        // The next attempt opens the source: the item plays again.
        _ = model.reconnectDue(generation: generation)
        var back = model.apply(.startFile(entryID: 1))
        back += model.apply(.fileLoaded)
        // mpv's reports of the item between the loss and the attempt's load are of no item.
        #expect(model.state == .buffering)
        back += model.apply(.playbackRestart)
        let all = events(back)
        #expect(all.contains(.stateChanged(from: .buffering, to: .playing)), "\(all)")
        #expect(!all.contains(.firstFrame) && !all.contains { if case .itemEnded = $0 { true } else { false } } && !all.contains { if case .mediaLoaded = $0 { true } else { false } }, "\(all)")
        #expect(model.snapshot.isLive)
    }

    @Test("a reconnection gives up after networkTimeout with networkFailed naming the cause; a stop between attempts ends the item stopped; a live source that ends with no trouble finished")
    func reconnectionEnds() throws {
        let clock = TestClock()
        var (model, _) = playingLive(clock: clock, networkTimeout: .seconds(3))
        _ = ffmpeg(&model, "http: HTTP error 404 Not Found", clock: clock)
        _ = ffmpeg(&model, "hls: Failed to reload playlist 0", clock: clock)
        let lost = model.apply(.endFile(entryID: 1, reason: .endOfFile, error: 0))
        guard case .scheduleReconnect(_, let generation)? = lost.first(where: { if case .scheduleReconnect = $0 { true } else { false } }) else {
            Issue.record("\(lost)")
            return
        }
        clock.advance(.seconds(4))
        let given = events(model.reconnectDue(generation: generation))
        guard case .error(.networkFailed(let source, .httpStatus(404, "Not Found"), let after))? = given.first else {
            Issue.record("\(given)")
            return
        }
        #expect(source == "http://127.0.0.1:8000/cam/live.m3u8" && after >= .seconds(3))
        #expect(given.contains { if case .itemEnded(.error(.networkFailed)) = $0 { true } else { false } })
        #expect(model.state == .failed)

        var (stopped, _) = playingLive(clock: clock)
        _ = ffmpeg(&stopped, "hls: Failed to reload playlist 0", clock: clock)
        _ = stopped.apply(.endFile(entryID: 1, reason: .endOfFile, error: 0))
        stopped.noteStopping()
        let stop = events(stopped.stopRequested())
        #expect(stop.first == .itemEnded(.stopped), "\(stop)")
        #expect(stopped.state == .idle)

        var (ended, _) = playingLive(clock: clock)
        let finished = events(ended.apply(.endFile(entryID: 1, reason: .endOfFile, error: 0)))
        #expect(finished.contains(.itemEnded(.finished)), "\(finished)")
    }

    @Test("the buffering timeout bounds a reconnection: given up at once between attempts, after the attempt opening is stopped otherwise; a live item that buffers with known trouble says why instead of bufferingTimedOut")
    func bufferingTimeoutBoundsReconnection() throws {
        let clock = TestClock()
        var (model, _) = playingLive(clock: clock, networkTimeout: .seconds(60), bufferingTimeout: .seconds(2))
        _ = ffmpeg(&model, "hls: keepalive request failed for 'http://127.0.0.1:8000/cam/live.m3u8' with error: 'Connection timed out' when parsing playlist", clock: clock)
        _ = ffmpeg(&model, "hls: Failed to reload playlist 0", clock: clock)
        let lost = model.apply(.endFile(entryID: 1, reason: .endOfFile, error: 0))
        guard case .scheduleReconnect(_, let generation)? = lost.first(where: { if case .scheduleReconnect = $0 { true } else { false } }) else {
            Issue.record("\(lost)")
            return
        }
        _ = model.reconnectDue(generation: generation)
        _ = model.apply(.startFile(entryID: 1))
        // Buffering is seen at a tick, and given up 2 s later: the attempt in flight is stopped.
        _ = model.poll(now: clock.now)
        clock.advance(.milliseconds(2100))
        #expect(model.poll(now: clock.now).contains(.stopItem))
        let stopped = model.apply(.endFile(entryID: 1, reason: .stop, error: 0))
        let given = events(stopped + model.drained())
        #expect(given.contains { if case .error(.networkFailed(_, .timedOut, _)) = $0 { true } else { false } }, "\(given)")

        // Buffering before FFmpeg gave up (the origin hangs): the watchdog's error names it.
        var (hung, _) = playingLive(clock: clock, bufferingTimeout: .seconds(2))
        _ = ffmpeg(&hung, "hls: keepalive request failed for 'http://127.0.0.1:8000/cam/live.m3u8' with error: 'Connection timed out' when parsing playlist", clock: clock)
        _ = hung.apply(.propertyChanged(observationID: 5, name: "paused-for-cache", value: .flag(true)))
        #expect(hung.state == .buffering)
        _ = hung.poll(now: clock.now)
        clock.advance(.milliseconds(2100))
        #expect(hung.poll(now: clock.now).contains(.stopItem))
        let ended = events(hung.apply(.endFile(entryID: 1, reason: .stop, error: 0)))
        #expect(ended.contains { if case .error(.networkFailed(_, .timedOut, _)) = $0 { true } else { false } }, "\(ended)")
    }

    @Test("a request that fails with no reason named, networkTimeout after it began or while the player starved, timed out")
    func silentFailureTimedOut() {
        var reconnection = LiveReconnection(networkTimeout: .seconds(3))
        let start = ContinuousClock.now
        reconnection.read("http: Opening 'http://h/live.m3u8' for reading", isPlaylist: true, at: start)
        reconnection.read("hls: Failed to reload playlist 0", isPlaylist: true, at: start + .milliseconds(3050))
        #expect(reconnection.trouble == .timedOut && reconnection.sourceGaveUp)
        var quick = LiveReconnection(networkTimeout: .seconds(3))
        quick.read("http: Opening 'http://h/live.m3u8' for reading", isPlaylist: true, at: start)
        quick.read("hls: Failed to reload playlist 0", isPlaylist: true, at: start + .milliseconds(20))
        #expect(quick.trouble == .other("hls: Failed to reload playlist 0"))
        // Waiting for data that did not come, whenever the request began: timed out.
        var starving = LiveReconnection(networkTimeout: .seconds(3))
        starving.read("http: Opening 'http://h/seg_5.ts' for reading", isPlaylist: true, at: start)
        starving.read("hls: Failed to reload playlist 0", isPlaylist: true, at: start + .milliseconds(20), starving: true)
        #expect(starving.trouble == .timedOut)
    }

    @Test("FFmpeg's words: refused (with its server), HTTP status and reason, timed out, reset, closed, host not found, unreachable; other lines name no failure",
          arguments: [
              ("tcp: Connection to tcp://127.0.0.1:8000 failed: Connection refused", NetworkFailure.connectionRefused(server: "127.0.0.1:8000")),
              ("http: HTTP error 404 Not Found", .httpStatus(404, reason: "Not Found")),
              ("hls: keepalive request failed for 'http://h/x.m3u8' with error: 'Server returned 503 Service Unavailable' when parsing playlist", .httpStatus(503, reason: "Service Unavailable")),
              ("hls: keepalive request failed for 'http://h/x.m3u8' with error: 'Connection timed out' when parsing playlist", .timedOut),
              ("tcp: Connection to tcp://h:80 failed: Connection timed out", .timedOut),
              ("http: Connection reset by peer", .connectionReset),
              ("hls: keepalive request failed for 'http://h/x.m3u8' with error: 'End of file' when parsing playlist", .connectionClosed),
              ("tcp: Failed to resolve hostname cam.invalid: Name or service not known", .hostNotFound(host: "cam.invalid")),
              ("tcp: Connection to tcp://10.0.0.9:80 failed: No route to host", .unreachable),
          ])
    func failures(line: String, expected: NetworkFailure) {
        #expect(LiveReconnection.failure(in: line) == expected)
    }

    @Test("lines that are not network failures")
    func notFailures() {
        for line in ["hls: Failed to reload playlist 0", "h264: error while decoding MB 3 4", "http: Opening 'http://h/a.ts' for reading", "hls: Skip ('#EXT-X-VERSION:3')"] {
            #expect(LiveReconnection.failure(in: line) == nil, "\(line)")
        }
    }

    // MARK: Attribution

    @Test("a thread is claimed by the URL it opens: a player's source, or a URL in its folder; a URL two players share claims nothing; a claimed thread keeps its claim, unless it names one other player's URL")
    func claimsByURL() {
        var attribution = FFmpegLineAttribution()
        let cam0 = attribution.register(), cam1 = attribution.register(), twin = attribution.register()
        attribution.noteSource("http://o:8000/angle-0/live.m3u8", for: cam0)
        attribution.noteSource("http://o:8000/angle-1/live.m3u8", for: cam1)
        attribution.noteSource("http://o:8000/angle-1/live.m3u8", for: twin)  // the same stream twice
        #expect(attribution.claim(current: nil, text: "hls: Opening 'http://o:8000/angle-0/seg_00012.ts' for reading") == cam0)
        #expect(attribution.claim(current: nil, text: "http: Opening 'http://o:8000/angle-0/live.m3u8' for reading") == cam0)
        // Two players read angle 1: its lines are nobody's, unless the thread was claimed already.
        #expect(attribution.claim(current: nil, text: "hls: HLS request for url 'http://o:8000/angle-1/seg_00002.ts'") == nil)
        #expect(attribution.claim(current: cam1, text: "hls: HLS request for url 'http://o:8000/angle-1/seg_00002.ts'") == cam1)
        // A line naming no URL stays with the thread's claim, or nobody's.
        #expect(attribution.claim(current: cam0, text: "http: HTTP error 404 Not Found") == cam0)
        #expect(attribution.claim(current: nil, text: "http: HTTP error 404 Not Found") == nil)
        // A claimed thread naming another player's URL is that player's now.
        #expect(attribution.claim(current: cam1, text: "hls: Opening 'http://o:8000/angle-0/seg_00013.ts' for reading") == cam0)
        // A player gone: its threads' lines are nobody's.
        attribution.unregister(cam0)
        #expect(attribution.claim(current: cam0, text: "http: HTTP error 404 Not Found") == nil)
        #expect(attribution.claim(current: nil, text: "hls: Opening 'http://o:8000/angle-0/seg_00014.ts' for reading") == nil)
    }

    @Test("an unclaimed thread that connects to a server is the player opening something from it, when only one is; none when two are, or none is")
    func claimsByServer() {
        var attribution = FFmpegLineAttribution()
        let a = attribution.register(), b = attribution.register()
        attribution.noteSource("http://127.0.0.1:9001/live.m3u8", for: a)
        attribution.noteOpening("http://127.0.0.1:9001/live.m3u8", for: a)
        attribution.noteSource("http://127.0.0.1:9002/live.m3u8", for: b)
        attribution.noteOpening("http://127.0.0.1:9002/live.m3u8", for: b)
        #expect(attribution.claim(current: nil, text: "tcp: Starting connection attempt to 127.0.0.1 port 9001") == a)
        #expect(attribution.claim(current: nil, text: "tcp: Connection to tcp://127.0.0.1:9002 failed: Connection refused") == b)
        attribution.noteOpening("http://127.0.0.1:9001/other.m3u8", for: b)
        #expect(attribution.claim(current: nil, text: "tcp: Connection to tcp://127.0.0.1:9001 failed: Connection refused") == nil)
        attribution.noteOpening(nil, for: a)
        attribution.noteOpening(nil, for: b)
        #expect(attribution.claim(current: nil, text: "tcp: Connection to tcp://127.0.0.1:9001 failed: Connection refused") == nil)
    }

    @Test("URLs and servers in FFmpeg's lines")
    func reading() {
        #expect(FFmpegLineAttribution.urls(in: "hls: keepalive request failed for 'http://h:1/a/b.m3u8?x=1' with error: 'x'") == ["http://h:1/a/b.m3u8?x=1"])
        #expect(FFmpegLineAttribution.urls(in: "tcp: Connection to tcp://127.0.0.1:8000 failed") == [])
        #expect(FFmpegLineAttribution.folder(of: "http://h/live/cam.m3u8?token=1") == "http://h/live/")
        #expect(FFmpegLineAttribution.server(of: "https://Cam.Example/live.m3u8") == "cam.example:443")
        #expect(FFmpegLineAttribution.server(of: "rtsp://user:pw@10.0.0.2/stream") == "10.0.0.2:554")
        #expect(FFmpegLineAttribution.server(of: "http://[::1]:8080/x") == "::1:8080")
        #expect(FFmpegLineAttribution.server(of: "/media/file.mp4") == nil)
    }
}
