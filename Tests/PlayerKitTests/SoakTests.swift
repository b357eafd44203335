import Foundation
import PlayerKit
import Testing

/// The soak (Tests/SoakProbe): 20 seconds (60 under `make test-long`) of random operations from 8 tasks on up to 32 players,
/// seeded, in a child process; invariants are checked by the probe as it runs. `make test` runs
/// this suite on its own after the rest (it loads both cores); `make soak MINUTES=30` runs the
/// probe for longer with a random seed.
@Suite("Soak", .timeLimit(.minutes(10)), .tags(.heavyPass))
struct SoakTests {
    @Test("20 s (60 s in make test-long) of random operations on up to 32 players: no crash, no stuck call, gapless sequence numbers, documented transitions, typed errors, bounded memory")
    func soak() async throws {
        let probe = Fixtures.productsDirectory.appendingPathComponent("SoakProbe")
        let run = try await ChildProcess.runToEnd(probe, ["--seconds", "\(Fixtures.soakSeconds)", "--seed", "20261122"])
        if run.status != 0 {
            // A crash report lists every thread (200 and more here): keep all of it in a file, and
            // show the crash's own part, where the backtracer names the crashed thread.
            let log = FileManager.default.temporaryDirectory.appendingPathComponent("playerkit-soak-\(UUID().uuidString.prefix(8)).log")
            try? (run.output + "\n--- stderr ---\n" + run.errors).write(to: log, atomically: true, encoding: .utf8)
            let report = run.output + "\n" + run.errors
            let crash = ["Program crashed", "crashed:", "Fatal error", "Assertion"].lazy
                .compactMap { report.range(of: $0) }.first
                .map { String(report[$0.lowerBound...].prefix(6000)) } ?? "(no crash report)"
            Issue.record("SoakProbe exited with \(run.status); its whole output: \(log.path)\n\(crash)\n…\n\(run.output.suffix(1500))\n\(run.errors.suffix(1500))")
        }
        let summaryLine = run.output.split(separator: "\n").last { $0.hasPrefix("{") }
        let summary = try #require(summaryLine.flatMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        })
        #expect((summary["violations"] as? [String])?.isEmpty == true, "\(summary["violations"] ?? "?")")
        let operations = summary["operations"] as? [String: Int] ?? [:]
        for kind in ["create", "load", "seek", "pause", "play", "speed", "stop", "release", "shutdown", "subscribe", "fullscreen", "sync-join", "sync-leave"] {
            #expect((operations[kind] ?? 0) > 0, "no \(kind) in \(operations)")
        }
        let errors = summary["errors"] as? [String: Int] ?? [:]
        #expect(errors["untyped"] == nil)
        // Memory: bounded while 32 players churn, and back near where it began once they are gone.
        let baseline = summary["baselineBytes"] as? Int ?? 0
        let peak = summary["peakBytes"] as? Int ?? Int.max
        let final = summary["finalBytes"] as? Int ?? Int.max
        #expect(peak < 1_536 << 20, "\(summary)")
        #expect(final < baseline + 256 << 20, "\(summary)")
        print("soak: \(summary)")
    }
}
