import Foundation
import Testing

/// The guides' tables cannot drift from the code: every case of `PlayerEvent` has a row in
/// UsingPlayers.md's event table, every `PlayerCommand` one in its command table, and every
/// feature event kind a PlayerKit module declares appears in Events.md's table of features'
/// events. The cases and kinds are read from the sources themselves, so a case added without its
/// row fails here by name.
@Suite("The guides' tables list every event, command and feature event kind", .timeLimit(.minutes(1)))
struct DocumentationTablesTests {
    static let root = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    static func read(_ path: String) throws -> String {
        try String(contentsOf: root.appendingPathComponent(path), encoding: .utf8)
    }

    /// The cases an enum declares, one `case name` per line at the enum's top level (its `switch`
    /// statements' `case .name:` lines start with a dot and are not counted).
    static func cases(of enumName: String, in path: String) throws -> [String] {
        let source = try read(path)
        guard let start = source.range(of: "public enum \(enumName)") else { return [] }
        var names: [String] = []
        for line in source[start.upperBound...].split(separator: "\n", omittingEmptySubsequences: false) {
            if line == "}" { break }
            guard line.hasPrefix("    case "), !line.hasPrefix("    case .") else { continue }
            let name = line.dropFirst("    case ".count).prefix { $0.isLetter || $0.isNumber }
            if !name.isEmpty { names.append(String(name)) }
        }
        return names
    }

    /// The first column of the rows of the Markdown table whose header row is `header`.
    static func firstColumn(of header: String, in path: String) throws -> [String] {
        let lines = try read(path).split(separator: "\n", omittingEmptySubsequences: false)
        guard let headerIndex = lines.firstIndex(where: { $0.hasPrefix(header) }) else { return [] }
        return lines[(headerIndex + 2)...].prefix { $0.hasPrefix("|") }.map { row in
            String(row.dropFirst().prefix { $0 != "|" })
        }
    }

    /// Whether `cell` names `name` in backticks, alone or with arguments: `` `name` ``,
    /// `` `name(...)` ``, `` `.name` `` or `` `.name(...)` ``.
    static func names(_ cell: String, _ name: String) -> Bool {
        ["`\(name)`", "`\(name)(", "`.\(name)`", "`.\(name)("].contains { cell.contains($0) }
    }

    /// The cases of `enumName` (declared in `source`, at least `minimum` of them) that have no row in
    /// the table headed `header` of UsingPlayers.md.
    static func casesMissing(_ enumName: String, source: String, minimum: Int, header: String) throws -> [String] {
        let cases = try cases(of: enumName, in: source)
        #expect(cases.count >= minimum, "read \(cases) from \(source)")
        let rows = try firstColumn(of: header, in: "Documentation/UsingPlayers.md")
        #expect(!rows.isEmpty, "no table headed \(header) in UsingPlayers.md")
        return cases.filter { name in !rows.contains { names($0, name) } }
    }

    @Test("every PlayerEvent case has a row in UsingPlayers.md's event table")
    func eventTable() throws {
        let missing = try Self.casesMissing("PlayerEvent", source: "Sources/PlayerKitCore/Values/PlayerEvent.swift",
                                            minimum: 21, header: "| event | when |")
        #expect(missing.isEmpty, "PlayerEvent cases without a row in UsingPlayers.md's event table: \(missing)")
    }

    @Test("every PlayerCommand case has a row in UsingPlayers.md's command table")
    func commandTable() throws {
        let missing = try Self.casesMissing("PlayerCommand", source: "Sources/PlayerKitCore/Values/PlayerCommand.swift",
                                            minimum: 17, header: "| command | does |")
        #expect(missing.isEmpty, "PlayerCommand cases without a row in UsingPlayers.md's command table: \(missing)")
    }

    @Test("every feature event kind a module declares is in Events.md's table of features' events")
    func featureKinds() throws {
        let modules = ["Display", "Resources", "Sync", "Feed", "Sequencer", "Cache", "Rooms", "MPRIS"]
        var kinds: [String] = []
        for module in modules {
            let folder = Self.root.appendingPathComponent("Sources/PlayerKit\(module)")
            for file in try FileManager.default.contentsOfDirectory(atPath: folder.path) where file.hasSuffix(".swift") {
                let source = try Self.read("Sources/PlayerKit\(module)/\(file)")
                let lines = source.split(separator: "\n")
                for (index, line) in lines.enumerated() where line.contains(": PlayerEventKind = \"") {
                    guard let start = line.range(of: "public static let ") else { continue }
                    // A deprecated kind no event has any more (1.0's `.cache`) needs no row.
                    if index > 0, lines[index - 1].contains("@available(*, deprecated") { continue }
                    kinds.append(String(line[start.upperBound...].prefix { $0 != ":" }))
                }
            }
        }
        #expect(kinds.count >= 7, "read \(kinds) from the feature modules")
        let rows = try Self.firstColumn(of: "| feature | event type | kinds |", in: "Documentation/Events.md")
        let table = try Self.read("Documentation/Events.md").split(separator: "\n").filter { $0.hasPrefix("| `") }.joined(separator: "\n")
        #expect(!rows.isEmpty, "no feature table in Events.md")
        let missing = kinds.filter { !Self.names(table, $0) }
        #expect(missing.isEmpty, "feature event kinds missing from Events.md's table: \(missing)")
    }
}
