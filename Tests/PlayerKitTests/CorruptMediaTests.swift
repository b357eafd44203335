import Foundation
import PlayerKit
import Testing

/// Corrupted media never takes the process down: a deterministic corpus of mutations of the
/// shipped clips (Scripts/make-corpus.py), played through 8 players in one child process
/// (Tests/CorpusProbe), so that a crash is seen as the process's death, not the suite's.
@Suite("Corrupted media", .timeLimit(.minutes(10)), .tags(.heavyPass))
struct CorruptMediaTests {
    @Test("every file of the corpus (over 200 mutations) plays or fails with a typed error; no crash; memory settles")
    func corpus() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("playerkit-corpus-\(UUID().uuidString.prefix(8))")
        defer { try? FileManager.default.removeItem(at: folder) }
        let script = Fixtures.repository.appendingPathComponent("Scripts/make-corpus.py")
        let made = try await ChildProcess.runToEnd(URL(fileURLWithPath: "/usr/bin/env"), ["python3", script.path, folder.path])
        try #require(made.status == 0, "\(made.errors)")
        let manifest = try JSONSerialization.jsonObject(with: Data(contentsOf: folder.appendingPathComponent("manifest.json"))) as? [String: Any]
        let files = (manifest?["files"] as? [[String: Any]])?.compactMap { $0["file"] as? String } ?? []
        #expect(files.count >= 200)
        let kinds = Set((manifest?["files"] as? [[String: Any]])?.compactMap { $0["kind"] as? String } ?? [])
        #expect(kinds.isSuperset(of: ["truncation", "flipped bytes", "wrong box size", "zero-size track", "absurd dimensions", "track removed", "image"]))

        // One malloc arena (ProcessMemory.limitMallocArenas): what stays after a pass is then what
        // is still allocated, not which arenas the suite's load spread the frees over
        // (Documentation/Reliability.md has the figures with 2 and with glibc's default).
        let probe = Fixtures.productsDirectory.appendingPathComponent("CorpusProbe")
        let run = try await ChildProcess.runToEnd(probe, [folder.path, Fixtures.clipA, "--arenas", "1"])
        #expect(run.status == 0, "CorpusProbe exited with \(run.status): \(run.errors.suffix(4000))")
        let lines = run.output.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
        let outcomes = lines.filter { $0["outcome"] != nil }
        #expect(Set(outcomes.compactMap { $0["file"] as? String }) == Set(files))
        for line in outcomes {
            let outcome = line["outcome"] as? String
            #expect(outcome == "played" || outcome == "failed", "\(line)")
        }
        // Failures are typed PlayerErrors naming the file.
        for line in outcomes where line["outcome"] as? String == "failed" {
            let detail = line["detail"] as? String ?? ""
            let file = line["file"] as? String ?? "?"
            #expect(detail.contains(file), "\(line)")
        }
        let summary = try #require(lines.first { $0["summary"] != nil })
        let afterFirst = summary["afterFirstPassBytes"] as? Int ?? 0
        let final = summary["finalBytes"] as? Int ?? Int.max
        // A second pass over the whole corpus ends where the first did, within what fragmentation
        // moves (about 10 MB here): nothing grows per file (a leak of 100 kB per file would add
        // 43 MB).
        // Only with glibc's heap bounded as asked: under AddressSanitizer's allocator (which
        // refuses the bound and holds freed memory in quarantine) the figures say nothing.
        // ThreadSanitizer's allocator replaces glibc's too (the bound is accepted and means
        // nothing): `make test-tsan` says so with PLAYERKIT_SANITIZER.
        let underSanitizer = ProcessInfo.processInfo.environment["ASAN_OPTIONS"] != nil
            || ProcessInfo.processInfo.environment["PLAYERKIT_SANITIZER"] != nil
        #expect(summary["arenasLimited"] as? Bool == true || underSanitizer, "glibc refused the arena bound: \(summary)")
        if summary["arenasLimited"] as? Bool == true, !underSanitizer {
            #expect(final <= afterFirst + 40 << 20, "\(summary)")
        }
        print("corpus: \(summary)")
    }
}
