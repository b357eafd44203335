import ExampleSupport
import Foundation
@testable import PlayerKitCore
import PlayerKitSupport
import Testing

/// mpv cores made ready ahead of the players that take them (`PlayerConfiguration.readyCores`).
/// Each test gives its players an `extraOptions` marker of its own, so its cores are kept apart
/// from every other test's (the pool keys cores by their options). The pool is the process's,
/// and keeps cores for the last four settings players were made with: next to the parallel
/// pass's players, this suite's ready cores were let go as theirs came; it runs in the serial
/// pass (its tests take a fraction of a second).
@Suite("Ready cores: a player takes a core made ahead, the one it would have created (real libmpv)", .serialized, .timeLimit(.minutes(2)), .tags(.timingPass))
struct ReadyCoresTests {
    /// A headless configuration whose cores only this test's players share.
    static func configuration(readyCores: Int = 1) -> PlayerConfiguration {
        var configuration = Fixtures.headless
        configuration.extraOptions["title"] = "ready-cores-\(UUID().uuidString.prefix(8))"
        configuration.readyCores = readyCores
        return configuration
    }

    static func options(_ configuration: PlayerConfiguration) -> [(String, String)] {
        configuration.mpvOptions(for: "any")
    }

    /// Waits (bounded) until `count` cores with `configuration`'s options are ready.
    static func ready(_ count: Int, for configuration: PlayerConfiguration, timeout: Duration = .seconds(20)) async -> Bool {
        let deadline = ContinuousClock.now + timeout
        while CorePool.shared.readyCount(options: options(configuration)) != count {
            guard ContinuousClock.now < deadline else { return false }
            try? await Task.sleep(for: .milliseconds(5))
        }
        return true
    }

    /// What a player's core says of the options PlayerKit sets, and of a few it leaves alone.
    static let compared = [
        "vo", "ao", "hwdec", "idle", "keep-open", "video-sync", "audio-pitch-correction", "network-timeout", "config",
        "input-default-bindings", "ytdl", "osc", "vid", "aid", "sid", "title", "speed", "volume", "mute", "pause", "loop-file",
        "cache", "demuxer-max-bytes", "video-timing-offset",
    ]

    static func values(of player: Player) async throws -> [String: String] {
        var values: [String: String] = [:]
        for name in compared { values[name] = "\(try await player.property(name))" }
        return values
    }

    @Test("the first player creates its core and one is made ready behind it; the next takes that one, which sets the options as a core created for it does, names the player to the sound server, and plays; one is made ready again")
    func nextPlayerTakesTheReadyCore() async throws {
        let configuration = Self.configuration()
        let (first, _) = try await Fixtures.player(configuration: configuration)
        defer { Task { await first.shutdown() } }
        #expect(!first.core.handle.madeAhead)
        #expect(await Self.ready(1, for: configuration), "no core was made ready")
        let (second, events) = try await Fixtures.player(configuration: configuration)
        defer { Task { await second.shutdown() } }
        #expect(second.core.handle.madeAhead, "the second player created a core of its own")
        // The core it would have created: the same options and defaults as the first player's.
        #expect(try await Self.values(of: second) == Self.values(of: first))
        #expect(try await second.property("audio-client-name") == .string(second.id.rawValue))
        #expect(try await first.property("audio-client-name") == .string(first.id.rawValue))
        try await second.load(MediaSource.file(Fixtures.clipA))
        #expect(await events.waitFor(timeout: .seconds(20)) { $0.event == .firstFrame } != nil)
        #expect(await Self.ready(1, for: configuration), "the pool was not filled again")
        await Player.releaseReadyCores()
        #expect(CorePool.shared.readyCount(options: Self.options(configuration)) == 0)
    }

    /// Holds the pool's next refill before it creates a core, until ``release()``: the refill
    /// is "making a core" meanwhile. Only the first creation is held.
    final class HeldRefill: Sendable {
        private let gate = DispatchSemaphore(value: 0)
        private let held = Locked(false)
        private let armed = Locked(true)

        init() {
            CorePool.beforeRefillCreatesForTests.withLock { hook in
                hook = { [self] in
                    guard armed.withLock({ armed in defer { armed = false }; return armed }) else { return }
                    held.withLock { $0 = true }
                    // Test code on the pool's queue; released by the test (bounded: 20 s).
                    _ = gate.wait(timeout: .now() + 20)
                }
            }
        }

        /// Waits (bounded) until the refill is held.
        func whenHeld(timeout: Duration = .seconds(20)) async -> Bool {
            let deadline = ContinuousClock.now + timeout
            while !held.withLock({ $0 }) {
                guard ContinuousClock.now < deadline else { return false }
                try? await Task.sleep(for: .milliseconds(2))
            }
            return true
        }

        func release() {
            CorePool.beforeRefillCreatesForTests.withLock { $0 = nil }
            gate.signal()
        }
    }

    /// Waits (bounded) until `count` claims wait for the core being made for `configuration`.
    static func waiting(_ count: Int, for configuration: PlayerConfiguration, timeout: Duration = .seconds(20)) async -> Bool {
        let deadline = ContinuousClock.now + timeout
        while CorePool.shared.waitingClaims(options: options(configuration)) != count {
            guard ContinuousClock.now < deadline else { return false }
            try? await Task.sleep(for: .milliseconds(2))
        }
        return true
    }

    @Test("a player created while no core is ready but the pool is making one waits for that core instead of creating a second one beside it")
    func createWaitsForTheCoreBeingMade() async throws {
        let configuration = Self.configuration()
        try await Player.prepareReadyCores(for: configuration)
        let (first, _) = try await Fixtures.player(configuration: configuration)
        defer { Task { await first.shutdown() } }
        #expect(first.core.handle.madeAhead)
        let held = HeldRefill()
        defer { held.release() }
        CorePool.shared.refillNow(options: Self.options(configuration))
        #expect(await held.whenHeld(), "the refill did not start")
        let second = Task { try await Fixtures.player(configuration: configuration).0 }
        #expect(await Self.waiting(1, for: configuration), "the player did not wait for the core being made")
        held.release()
        let player = try await second.value
        defer { Task { await player.shutdown() } }
        #expect(player.core.handle.madeAhead, "the player created a core of its own")
        #expect(CorePool.shared.waitingClaims(options: Self.options(configuration)) == 0)
        // The pool is made whole again behind it.
        #expect(await Self.ready(1, for: configuration))
        await Player.releaseReadyCores()
    }

    @Test("the wait for a core being made is bounded: when it runs out the taker creates its own, and the core made meanwhile is kept ready")
    func waitForTheCoreBeingMadeIsBounded() async throws {
        let configuration = Self.configuration()
        let options = Self.options(configuration)
        try await Player.prepareReadyCores(for: configuration)
        @Sendable func claim(wait: Duration) async -> PreparedCore? {
            await withCheckedContinuation { continuation in
                CorePool.shared.claim(options: options, keep: 1, wait: wait) { continuation.resume(returning: $0) }
            }
        }
        // The ready core, at once.
        let ready = await claim(wait: .seconds(10))
        #expect(ready?.madeAhead == true)
        ready?.destroy()
        let held = HeldRefill()
        defer { held.release() }
        CorePool.shared.refillNow(options: options)
        #expect(await held.whenHeld(), "the refill did not start")
        let started = ContinuousClock.now
        let none = await claim(wait: .milliseconds(100))
        #expect(none == nil, "a core was handed over while the refill was held")
        #expect(ContinuousClock.now - started >= .milliseconds(100), "the claim did not wait")
        #expect(CorePool.shared.waitingClaims(options: options) == 0)
        held.release()
        #expect(await Self.ready(1, for: configuration), "the core made meanwhile was not kept ready")
        await Player.releaseReadyCores()
    }

    @Test("readyCores 0 does not wait for a core being made: the player creates its own")
    func noPoolNoWait() async throws {
        var configuration = Self.configuration()
        try await Player.prepareReadyCores(for: configuration)
        let (first, _) = try await Fixtures.player(configuration: configuration)
        defer { Task { await first.shutdown() } }
        let held = HeldRefill()
        defer { held.release() }
        CorePool.shared.refillNow(options: Self.options(configuration))
        #expect(await held.whenHeld(), "the refill did not start")
        configuration.readyCores = 0
        let (second, _) = try await Fixtures.player(configuration: configuration)
        defer { Task { await second.shutdown() } }
        #expect(!second.core.handle.madeAhead)
        held.release()
        #expect(await Self.ready(0, for: configuration))
        await Player.releaseReadyCores()
    }

    @Test("the pool is made whole at the taker's first frame, when its load no longer shares the machine, not only a fixed while after the take")
    func refilledAtTheFirstFrame() async throws {
        // Only the first frame can refill within this test.
        let delay = CorePool.refillDelay.withLock { delay in defer { delay = .seconds(600) }; return delay }
        defer { CorePool.refillDelay.withLock { $0 = delay } }
        let configuration = Self.configuration()
        try await Player.prepareReadyCores(for: configuration)
        let (player, events) = try await Fixtures.player(configuration: configuration)
        defer { Task { await player.shutdown() } }
        #expect(player.core.handle.madeAhead)
        #expect(CorePool.shared.readyCount(options: Self.options(configuration)) == 0)
        try await player.load(MediaSource.file(Fixtures.clipA))
        #expect(await events.waitFor(timeout: .seconds(20)) { $0.event == .firstFrame } != nil)
        #expect(await Self.ready(1, for: configuration), "the pool was not filled at the first frame")
        await Player.releaseReadyCores()
    }

    @Test("readyCores 0 keeps no core ready, and lets go of ready ones at the next creation; readyCores 2 keeps two")
    func howManyAreKept() async throws {
        var configuration = Self.configuration(readyCores: 2)
        let (first, _) = try await Fixtures.player(configuration: configuration)
        defer { Task { await first.shutdown() } }
        #expect(await Self.ready(2, for: configuration))
        configuration.readyCores = 0
        let (second, _) = try await Fixtures.player(configuration: configuration)
        defer { Task { await second.shutdown() } }
        #expect(second.core.handle.madeAhead)
        #expect(await Self.ready(0, for: configuration), "ready cores kept with readyCores 0")
        let (third, _) = try await Fixtures.player(configuration: configuration)
        defer { Task { await third.shutdown() } }
        #expect(!third.core.handle.madeAhead)
        #expect(CorePool.shared.readyCount(options: Self.options(configuration)) == 0)
    }

    @Test("ready cores are kept for the last four settings players were made with: a player with settings of its own each time leaves no ready core behind for each")
    func keptForTheLatestSettings() async throws {
        var configurations: [PlayerConfiguration] = []
        var players: [Player] = []
        defer { for player in players { Task { await player.shutdown() } } }
        for _ in 0..<6 {
            let configuration = Self.configuration()
            configurations.append(configuration)
            players.append(try await Fixtures.player(configuration: configuration).0)
        }
        // The last four settings get their core (other tests' players may push the earliest out).
        #expect(await Self.ready(1, for: configurations[5]))
        for configuration in configurations.prefix(2) {
            #expect(CorePool.shared.readyCount(options: Self.options(configuration)) == 0)
        }
        await Player.releaseReadyCores()
    }

    @Test("prepareReadyCores makes the cores ready before any player: the first player takes one made ahead and plays; the number is the configuration's, ready ones beyond it are let go")
    func preparedAtLaunch() async throws {
        var configuration = Self.configuration(readyCores: 2)
        #expect(CorePool.shared.readyCount(options: Self.options(configuration)) == 0)
        try await Player.prepareReadyCores(for: configuration)
        // Returned once they are ready, not later.
        #expect(CorePool.shared.readyCount(options: Self.options(configuration)) == 2)
        let (first, events) = try await Fixtures.player(configuration: configuration)
        defer { Task { await first.shutdown() } }
        #expect(first.core.handle.madeAhead, "the first player created a core of its own")
        try await first.load(MediaSource.file(Fixtures.clipA))
        #expect(await events.waitFor(timeout: .seconds(20)) { $0.event == .firstFrame } != nil)
        configuration.readyCores = 0
        try await Player.prepareReadyCores(for: configuration)
        #expect(CorePool.shared.readyCount(options: Self.options(configuration)) == 0)
        await Player.releaseReadyCores()
    }

    @Test("prepareReadyCores makes the process's first load warm, once: a throwaway core plays the built-in clip (H.264 and AAC) to its first frame before the call returns; a second call does not play it again")
    func firstLoadWarmedOnce() async throws {
        try await Player.prepareReadyCores(for: Self.configuration(readyCores: 1))
        // Returned once it had finished, with the clip's first frame: the built-in bytes decode.
        #expect(DecoderWarmUp.outcome == .firstFrame)
        #expect(DecoderWarmUp.starts == 1)
        try await Player.prepareReadyCores(for: Self.configuration(readyCores: 1))
        #expect(DecoderWarmUp.starts == 1, "the warm-up ran again")
        await Player.releaseReadyCores()
    }

    @Test("the warm-up also reads what this libmpv can do (protocols, commands, properties), so that the first player does not wait for those reads: the same catalog a player's core gives")
    func warmUpReadsTheCatalog() async throws {
        MPVCatalog.forgetForTests()
        let outcome = await withCheckedContinuation { continuation in
            DecoderWarmUp.play(DecoderWarmUp.clip, timeout: .seconds(10)) { continuation.resume(returning: $0) }
        }
        #expect(outcome == .firstFrame)
        #expect(MPVCatalog.isKnown, "the warm-up did not keep the catalog")
        let (player, _) = try await Fixtures.player(configuration: Self.configuration(readyCores: 0))
        defer { Task { await player.shutdown() } }
        var lists: [String: MPVValue] = [:]
        for name in MPVCatalog.listProperties { lists[name] = try player.core.handle.property(name) }
        let read = MPVCatalog(lists: lists)
        #expect(try MPVCatalog.shared(using: player.core.handle) == read)
        #expect(read.protocols.contains("file") && read.commands.contains("loadfile") && read.properties.contains("time-pos"))
    }

    @Test("after prepareReadyCores, FFmpeg's messages go to mpv's log, not to standard error: the throwaway warm-up core is not the process's first, whose log FFmpeg writes to (a child process plays through a stream provider, which makes FFmpeg warn)")
    func ffmpegMessagesStayInTheLog() async throws {
        let probe = Fixtures.productsDirectory.appendingPathComponent("SoakProbe")
        let run = try await ChildProcess.runToEnd(probe, ["--ffmpeg-log", "--media", Fixtures.clipA])
        try #require(run.status == 0, "SoakProbe --ffmpeg-log exited with \(run.status): \(run.output.suffix(1500))\n\(run.errors.suffix(1500))")
        #expect(run.output.contains("\"firstFrame\": true"))
        #expect(!run.errors.contains("Protocol name not provided"), "FFmpeg wrote to standard error: \(run.errors.suffix(1500))")
    }

    /// The nice value of each of the process's threads whose name starts with `prefix`, and the
    /// main thread's (Linux: /proc/self/task/*/stat, field 19).
    static func niceValues(prefix: String) -> (threads: [String: [Int]], main: Int) {
        func nice(_ stat: String) -> Int? {
            guard let close = stat.lastIndex(of: ")") else { return nil }
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            return fields.count > 16 ? Int(fields[16]) : nil
        }
        var threads: [String: [Int]] = [:]
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
        for task in tasks {
            guard let name = try? String(contentsOfFile: "/proc/self/task/\(task)/comm", encoding: .utf8)
                .trimmingCharacters(in: .whitespacesAndNewlines), name.hasPrefix(prefix),
                let stat = try? String(contentsOfFile: "/proc/self/task/\(task)/stat", encoding: .utf8),
                let value = nice(stat) else { continue }
            threads[name, default: []].append(value)
        }
        let main = (try? String(contentsOfFile: "/proc/self/stat", encoding: .utf8)).flatMap(nice) ?? 0
        return (threads, main)
    }

    @Test("a ready core's threads, and the threads its player starts, run at the process's priority, as a core created for the player does: the pool does not make them on a low-priority thread, whose priority mpv's threads would inherit")
    func readyCoresRunAtTheProcessPriority() async throws {
        let configuration = Self.configuration(readyCores: 2)
        try await Player.prepareReadyCores(for: configuration)
        let (player, events) = try await Fixtures.player(configuration: configuration)
        defer { Task { await player.shutdown() } }
        #expect(player.core.handle.madeAhead)
        try await player.load(MediaSource.file(Fixtures.clipA))
        #expect(await events.waitFor(timeout: .seconds(20)) { $0.event == .firstFrame } != nil)
        // The pool's refill, at that first frame, made another.
        #expect(await Self.ready(2, for: configuration))
        let (threads, main) = Self.niceValues(prefix: "mpv/")
        #expect(!threads.isEmpty, "no mpv thread found")
        for (name, values) in threads {
            #expect(values.allSatisfy { $0 == main }, "\(name): nice \(values), the process's \(main)")
        }
        await Player.releaseReadyCores()
    }

    @Test("a warm-up is bounded: a source that never answers is given up at its timeout and its core destroyed; bytes that are no media end it at once")
    func warmUpIsBounded() async throws {
        let server = LoopbackMediaServer(files: ["silent.mp4": Data(count: 4096)])
        server.setFault(.stall, for: "silent.mp4")
        try server.start()
        defer { server.stop() }
        func play(_ source: String, timeout: Duration) async -> DecoderWarmUp.Outcome {
            await withCheckedContinuation { continuation in
                DecoderWarmUp.play(source, timeout: timeout) { continuation.resume(returning: $0) }
            }
        }
        let started = ContinuousClock.now
        #expect(await play(server.url("silent.mp4").absoluteString, timeout: .milliseconds(300)) == .timedOut)
        // Not the network timeout (60 s): destroying the core cancelled the read that hung.
        #expect(ContinuousClock.now - started < .seconds(15))
        #expect(await play("hex://00ff00ff00ff", timeout: .seconds(10)) == .ended)
    }

    @Test("prepareReadyCores refuses an option mpv refuses, by name, and a readyCores outside 0...16; a player is made after")
    func preparingRefusesBadSettings() async throws {
        var configuration = Self.configuration(readyCores: 1)
        configuration.extraOptions["no-such-option"] = "1"
        await #expect {
            try await Player.prepareReadyCores(for: configuration)
        } throws: { error in
            guard case PlayerError.invalidOption(let name, let value, _) = error else { return false }
            return name == "no-such-option" && value == "1"
        }
        #expect(CorePool.shared.readyCount(options: Self.options(configuration)) == 0)
        await #expect(throws: PlayerError.invalidArgument(name: "readyCores", value: "17", reason: "must be from 0 to 16")) {
            try await Player.prepareReadyCores(for: Self.configuration(readyCores: 17))
        }
        let (player, _) = try await Fixtures.player(configuration: Self.configuration(readyCores: 0))
        await player.shutdown()
    }

    @Test("a readyCores outside 0...16 is refused by name, and the next player is made", arguments: [-1, 17])
    func outOfRangeIsRefused(count: Int) async throws {
        let configuration = Self.configuration(readyCores: count)
        await #expect(throws: PlayerError.invalidArgument(name: "readyCores", value: "\(count)", reason: "must be from 0 to 16")) {
            _ = try await Player.create(configuration: configuration)
        }
        let (player, _) = try await Fixtures.player(configuration: Self.configuration(readyCores: 0))
        await player.shutdown()
    }
}
