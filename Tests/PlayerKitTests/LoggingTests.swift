import Logging
import Testing
import PlayerKit

/// Captures log records of every logger made after bootstrap (swift-log allows one bootstrap per process).
final class CapturedLogs: Sendable {
    struct Entry: Sendable {
        let label: String
        let level: Logger.Level
        let message: String
        let player: String?
    }

    static let shared: CapturedLogs = {
        let logs = CapturedLogs()
        LoggingSystem.bootstrap { label in CaptureHandler(label: label, sink: logs) }
        return logs
    }()

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
        sink.append(.init(label: label, level: event.level, message: event.message.description,
                          player: (event.metadata?["player"] ?? metadata["player"]).map { "\($0)" }))
    }
}

@Suite("Logging")
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
}
