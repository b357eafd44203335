import Foundation
import Testing

/// Every input kept in Fuzz/Corpus/<target>/ (the seeds, and every input a fuzzer found that
/// crashed, hung or broke a check) through its target's check in the normal build: a fixed bug
/// stays fixed, and the checks keep holding for the real examples the seeds are.
@Suite("Fuzz corpora replayed (every parser of outside bytes)", .timeLimit(.minutes(2)))
struct CorpusReplayTests {
    static let corpora = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../../Fuzz/Corpus").standardizedFileURL

    static let root = corpora.deletingLastPathComponent().deletingLastPathComponent()

    @Test("every target has its executable in Fuzz/Package.swift, its name in Scripts/fuzz.sh and its row in Reliability.md", arguments: ParserFuzzTarget.allCases)
    func listed(_ target: ParserFuzzTarget) throws {
        let package = try String(contentsOf: Self.root.appendingPathComponent("Fuzz/Package.swift"), encoding: .utf8)
        let script = try String(contentsOf: Self.root.appendingPathComponent("Scripts/fuzz.sh"), encoding: .utf8)
        let reliability = try String(contentsOf: Self.root.appendingPathComponent("Documentation/Reliability.md"), encoding: .utf8)
        #expect(package.contains("\"\(target.rawValue)\")"), "Fuzz/Package.swift has no executable for \(target.rawValue)")
        let all = script.split(separator: "\n").first { $0.hasPrefix("all=") } ?? ""
        #expect(all.split(whereSeparator: { $0 == " " || $0 == "\"" }).contains(Substring(target.rawValue)), "Scripts/fuzz.sh's all= lacks \(target.rawValue)")
        #expect(script.contains("\(target.rawValue))"), "Scripts/fuzz.sh's binary_of lacks \(target.rawValue)")
        #expect(reliability.contains("`\(target.rawValue)`: "), "Reliability.md has no row for \(target.rawValue)")
    }

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
