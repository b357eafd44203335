import Dispatch
import Foundation
import PlayerKit

/// Paths of the shipped media and test fixtures, and helpers to make players for tests.
enum Fixtures {
    /// Whether the long measurement windows run at their full length: `make test-long` sets
    /// `PLAYERKIT_LONG_WINDOWS=1`. `make test` must finish in ten minutes on two cores, so it
    /// measures drift over 6 s (180 frames per player at 30 fps: p99 is the second-worst) and
    /// soaks for 20 s; `make test-long` measures over 20 s and soaks for 60 s.
    static let longWindows = ProcessInfo.processInfo.environment["PLAYERKIT_LONG_WINDOWS"] == "1"
    /// Seconds of play a drift test measures: 6, or 20 under `make test-long`.
    static var driftWindowSeconds: Int { longWindows ? 20 : 6 }
    /// Seconds the soak runs: 20, or 60 under `make test-long`.
    static var soakSeconds: Int { longWindows ? 60 : 20 }

    static let repository = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    static func media(_ name: String) -> String { repository.appendingPathComponent("Media/\(name)").path }
    static func fixture(_ name: String) -> String { repository.appendingPathComponent("Tests/Fixtures/\(name)").path }

    static var clipA: String { media("clip-a.mp4") }
    static var clipB: String { media("clip-b.mp4") }

    static let delegateQueueKey = DispatchSpecificKey<String>()

    /// A concurrent queue all test delegates run on (through each player's serial wrapper),
    /// marked so a recorder can check where it is called.
    static let delegateQueue: DispatchQueue = {
        let queue = DispatchQueue(label: "tests.delegates", attributes: .concurrent)
        queue.setSpecific(key: delegateQueueKey, value: "tests.delegates")
        return queue
    }()

    /// Headless, silent: what every test player uses unless it needs more.
    /// Whether a sanitizer runs the tests (`make test-tsan` says so with PLAYERKIT_SANITIZER; ASan
    /// builds set ASAN_OPTIONS): its allocator stands in for glibc's, and timings stretch.
    static var underSanitizer: Bool {
        ProcessInfo.processInfo.environment["ASAN_OPTIONS"] != nil || ProcessInfo.processInfo.environment["PLAYERKIT_SANITIZER"] != nil
    }

    static var headless: PlayerConfiguration {
        var configuration = PlayerConfiguration(videoOutput: .none, audioOutput: .none)
        configuration.positionUpdateInterval = .milliseconds(100)
        configuration.delegateQueue = delegateQueue
        return configuration
    }

    /// A new player with a recorder attached, made with ``Player/create(id:configuration:delegate:)``
    /// (off the cooperative thread pool: creating an mpv core takes a process-wide lock for
    /// several milliseconds, and with the whole suite creating players at once, waiting for it
    /// on the pool's two threads starved every other test for a second or more).
    static func player(id: PlayerID? = nil, configuration: PlayerConfiguration = headless) async throws -> (Player, EventRecorder) {
        let recorder = EventRecorder()
        let player = try await Player.create(id: id, configuration: configuration, delegate: recorder)
        return (player, recorder)
    }

    /// A unique custom ID for a test (tests run in parallel in one process).
    static func uniqueID(_ prefix: String) -> PlayerID {
        PlayerID(stringLiteral: "\(prefix)-\(UUID().uuidString.prefix(8))")
    }

    /// The directory of the test binary, where SwiftPM also puts the example executables.
    static var productsDirectory: URL {
        URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
    }
}
