import Foundation
import Testing

/// Every input kept in Fuzz/Corpus/<target>/ (the seeds, and every input a fuzzer found that
/// crashed, hung or broke a check) through its target's check in the normal build: a fixed bug
/// stays fixed, and the checks keep holding for the real examples the seeds are.
@Suite("Fuzz corpora replayed (every parser of outside bytes)", .timeLimit(.minutes(2)))
struct CorpusReplayTests {
    static let corpora = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../../Fuzz/Corpus").standardizedFileURL

    @Test("every corpus input keeps every promise of its target", arguments: ParserFuzzTarget.allCases)
    func replay(_ target: ParserFuzzTarget) throws {
        let folder = Self.corpora.appendingPathComponent(target.rawValue)
        let names = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { !$0.hasPrefix(".") }.sorted()
        #expect(names.count >= 3, "\(folder.path) holds \(names.count) inputs: a target needs seeds")
        for name in names {
            let bytes = try [UInt8](Data(contentsOf: folder.appendingPathComponent(name)))
            let violations = target.check(bytes)
            #expect(violations.isEmpty, "\(target.rawValue)/\(name): \(violations)")
        }
    }
}
