import Foundation
import Logging
import Testing
import PlayerKit
import PlayerKitSupport

/// Captures log records of every logger made after bootstrap (swift-log allows one bootstrap per process).
final class CapturedLogs: Sendable {
    struct Entry: Sendable {
        let label: String
        let level: Logger.Level
        let message: String
        let player: String?
        var metadata: Logger.Metadata = [:]
    }

    static let shared: CapturedLogs = {
        let logs = CapturedLogs()
        LoggingSystem.bootstrap { label in CaptureHandler(label: label, sink: logs) }
        return logs
    }()

    /// A sink of its own, for loggers an app makes (not through the bootstrap).
    init() {}

    /// A logger that writes to this sink.
    func logger(label: String) -> Logger {
        Logger(label: label) { CaptureHandler(label: $0, sink: self) }
    }

    private let entries = Locked<[Entry]>([])
    var all: [Entry] { entries.withLock { $0 } }
    func append(_ entry: Entry) { entries.withLock { $0.append(entry) } }
}

struct CaptureHandler: LogHandler {
    let label: String
    let sink: CapturedLogs
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .trace

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        let all = metadata.merging(event.metadata ?? [:]) { $1 }
        sink.append(.init(label: label, level: event.level, message: event.message.description,
                          player: all["player"].map { "\($0)" }, metadata: all))
    }
}

@Suite("Logging", .timeLimit(.minutes(4)))
struct LoggingTests {
    @Test("mpv's log messages go to swift-log with mapped levels and the player's ID")
    func mpvLogToSwiftLog() async throws {
        let logs = CapturedLogs.shared
        var configuration = Fixtures.headless
        configuration.mpvLogLevel = .verbose
        let (player, recorder) = try await Fixtures.player(id: Fixtures.uniqueID("logs"), configuration: configuration)
        defer { Task { await player.shutdown() } }
        do {
            try await player.load(.file(Fixtures.fixture("random-bytes.mp4")))
        } catch {}
        #expect(await recorder.waitForState(.failed))
        try await player.load(.file(Fixtures.clipA))

        let mine = logs.all.filter { $0.label == "PlayerKit.mpv" && $0.player == player.id.rawValue }
        #expect(!mine.isEmpty)
        // mpv's "v" messages map to debug; the failed open is logged at warning or error.
        #expect(mine.contains { $0.level == .debug })
        #expect(mine.contains { ($0.level == .error || $0.level == .warning) })
        #expect(mine.allSatisfy { $0.message.hasPrefix("[") })
    }

    @Test("audioOutput .none logs no error: pause, seek or load, then play (mpv's null output's spurious start() line is dropped)")
    func silentOutputLogsNoError() async throws {
        let sink = CapturedLogs()
        var configuration = Fixtures.headless
        configuration.logger = sink.logger(label: "app.silent")
        configuration.mpvLogLevel = .warn
        let (player, _) = try await Fixtures.player(id: Fixtures.uniqueID("silent"), configuration: configuration)
        try await player.load(.file(Fixtures.fixture("long.mp4")), startPaused: true)
        try await player.perform(.seek(to: 1, precision: .exact))
        try await player.perform(.play)
        #expect(await eventually { (player.position ?? 0) > 1.2 })
        try await player.perform(.pause)
        try await player.load(.file(Fixtures.fixture("long.mp4")), startPaused: true)
        try await player.perform(.play)
        #expect(await eventually { (player.position ?? 0) > 0.2 })
        await player.shutdown()
        // FFmpeg's lines are left out: libmpv hands FFmpeg's process-wide log to one core (the
        // first one alive, mpv's av_log.c), so in make test's parallel pass this player can log
        // other players' decoder lines (a CUDA probe, an h264 seek's "co located POCs
        // unavailable"; 2026-11-28, a clean-clone run). The null output's line is mpv's own.
        let errors = sink.all.filter { $0.level >= .error && $0.metadata["module"].map { "\($0)".hasPrefix("ffmpeg") } != true }
        #expect(errors.isEmpty, "\(errors.map(\.message))")
    }

    @Test("a logger given per player gets that player's messages, PlayerKit's and mpv's, at that player's mpv level")
    func loggerPerPlayer() async throws {
        let process = CapturedLogs.shared
        let verboseSink = CapturedLogs(), quietSink = CapturedLogs()
        var verbose = Fixtures.headless
        verbose.logger = verboseSink.logger(label: "app.verbose")
        verbose.mpvLogLevel = .debug
        var quiet = Fixtures.headless
        quiet.logger = quietSink.logger(label: "app.quiet")
        quiet.mpvLogLevel = .warn
        let (loud, _) = try await Fixtures.player(id: Fixtures.uniqueID("loud"), configuration: verbose)
        let (calm, _) = try await Fixtures.player(id: Fixtures.uniqueID("calm"), configuration: quiet)
        for player in [loud, calm] {
            do {
                _ = try await player.load(.file(Fixtures.fixture("random-bytes.mp4")))
                Issue.record("random bytes loaded")
            } catch {}
            _ = try await player.load(.file(Fixtures.clipA), startPaused: true)
        }
        await loud.shutdown()
        await calm.shutdown()

        let loudLines = verboseSink.all, calmLines = quietSink.all
        #expect(loudLines.allSatisfy { $0.player == loud.id.rawValue && $0.label == "app.verbose" })
        #expect(calmLines.allSatisfy { $0.player == calm.id.rawValue && $0.label == "app.quiet" })
        let loudMPV = loudLines.filter { $0.metadata["source"] == "PlayerKit.mpv" }
        #expect(loudMPV.contains { $0.level == .debug }, "mpv's debug lines reach the verbose player's logger")
        #expect(loudMPV.allSatisfy { $0.metadata["module"] != nil })
        #expect(loudLines.contains { $0.metadata["source"] == "PlayerKit" }, "PlayerKit's own lines too")
        // The quiet player: mpv's warnings and errors only (the failed open), no debug lines.
        let calmMPV = calmLines.filter { $0.metadata["source"] == "PlayerKit.mpv" }
        #expect(!calmMPV.isEmpty)
        #expect(calmMPV.allSatisfy { $0.level >= .warning })
        // Nothing of either went to the process's loggers.
        #expect(!process.all.contains { $0.player == loud.id.rawValue || $0.player == calm.id.rawValue })
    }

    @Test("a failure at run time carries mpv's own error lines: a window with no X display",
          .enabled(if: ProcessInfo.processInfo.environment["DISPLAY"] == nil, "the test process has an X display"))
    func runtimeFailureCarriesMPVReason() async throws {
        var configuration = Fixtures.headless
        configuration.videoOutput = .window
        configuration.videoDriver = "x11"
        let (player, recorder) = try await Fixtures.player(configuration: configuration)
        var failure: PlayerError?
        do {
            _ = try await player.load(.file(Fixtures.clipA))
        } catch {
            failure = error
        }
        if failure == nil {
            let ended = await recorder.waitFor(timeout: .seconds(15)) {
                if case .error = $0.event { return true } else { return false }
            }
            if case .error(let error)? = ended?.event { failure = error }
        }
        let error = try #require(failure, "the player played with no display: \(recorder.events.map(\.description))")
        let description = "\(error)"
        #expect(description.contains("X11") || description.lowercased().contains("display"), "\(description)")
        await player.shutdown()
    }
}
