import Foundation
@testable import PlayerKitCore
import Testing

/// Players created and shut down one after another, in a child process of their own
/// (Tests/SoakProbe `--churn`), with glibc's default malloc settings: PlayerKit bounds the
/// arenas itself (`ArenaBound`), so no arena is made past two and resident memory levels off
/// instead of creeping; an app that chose its own bound keeps it.
@Suite("Churn: memory levels off without the app setting anything (real libmpv)", .timeLimit(.minutes(4)), .tags(.heavyPass))
struct ChurnSoakTests {
    struct Summary {
        let resident: [String: Int]
        let arenasBefore: Int
        let arenasAfter: Int
    }

    static func churn(_ cycles: Int, readyCores: Int, environment: [String: String]) async throws -> Summary {
        let probe = Fixtures.productsDirectory.appendingPathComponent("SoakProbe")
        let run = try await ChildProcess.runToEnd(
            probe, ["--churn", "\(cycles)", "--media", Fixtures.fixture("long.mp4"), "--ready-cores", "\(readyCores)"], environment: environment)
        try #require(run.status == 0, "SoakProbe --churn exited with \(run.status): \(run.output.suffix(1500))\n\(run.errors.suffix(1500))")
        let line = try #require(run.output.split(separator: "\n").last { $0.hasPrefix("{") }, "\(run.output.suffix(1500))")
        let json = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        return Summary(resident: json["resident"] as? [String: Int] ?? [:],
                       arenasBefore: json["arenasBefore"] as? Int ?? -1, arenasAfter: json["arenasAfter"] as? Int ?? -1)
    }

    /// The environment of this test process, less any malloc setting of its own.
    static var defaultEnvironment: [String: String] {
        ProcessInfo.processInfo.environment.filter { $0.key != "MALLOC_ARENA_MAX" && $0.key != "GLIBC_TUNABLES" }
    }

    /// Resident memory read after every 10th cycle steps up now and then by 10-15 MB (glibc lets
    /// an arena keep more on top once a larger block went back to the system) and then stays
    /// flat; the live heap grows by under 1 KB a cycle (heaptrack, 60 against 160 cycles). So the
    /// test bounds what the churn costs from the start: 36 MB here with the bound (debug build,
    /// the 320x240 clip), 100-112 MB with glibc's default (`MALLOC_ARENA_MAX=16`), where every
    /// arena keeps its own top. Without a ready core, whose blocks, kept while the churned players
    /// decode, move the readings by up to 10-20 MB more (Performance.md, "Memory under churn").
    @Test("160 players one after another, default malloc settings: no arena past two, and memory levels off low")
    func levelsOff() async throws {
        let summary = try await Self.churn(160, readyCores: 0, environment: Self.defaultEnvironment)
        // A sanitizer's allocator replaces glibc's (no arenas to bound, memory held in
        // quarantine): the churn still runs under it, the figures say nothing.
        guard !Fixtures.underSanitizer else { return }
        #expect(summary.arenasBefore > 0 && summary.arenasAfter > 0, "malloc_info unreadable: \(summary)")
        // glibc checks its bound without a lock: threads that make their first allocation at the
        // same moment may each pass it and make one more arena (3 were seen). Without the bound
        // there are 16 by now.
        #expect(summary.arenasAfter <= max(2, summary.arenasBefore) + 2, "arenas: \(summary.arenasBefore) before the first player, \(summary.arenasAfter) after")
        let start = try #require(summary.resident["start"]), end = try #require(summary.resident["end"])
        #expect(end - start < 64 << 20, "resident memory grew \((end - start) >> 20) MB over 160 cycles: \(summary.resident)")
    }

    @Test("a process that set MALLOC_ARENA_MAX keeps its own bound")
    func processChoiceKept() async throws {
        var environment = Self.defaultEnvironment
        environment["MALLOC_ARENA_MAX"] = "8"
        let summary = try await Self.churn(10, readyCores: 1, environment: environment)
        guard !Fixtures.underSanitizer else { return }
        #expect(summary.arenasAfter > 2, "arenas: \(summary.arenasBefore) before the first player, \(summary.arenasAfter) after")
    }

    @Test("the process's choice is read from MALLOC_ARENA_MAX and GLIBC_TUNABLES")
    func choiceRead() {
        #expect(ArenaBound.chosenByProcess(["MALLOC_ARENA_MAX": "4"]))
        #expect(ArenaBound.chosenByProcess(["GLIBC_TUNABLES": "glibc.malloc.check=0:glibc.malloc.arena_max=3"]))
        #expect(!ArenaBound.chosenByProcess(["GLIBC_TUNABLES": "glibc.malloc.check=0", "PATH": "/usr/bin"]))
    }
}
