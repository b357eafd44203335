import Foundation
import Testing
import PlayerKitSupport

/// Reads the library's sources for waits: none may measure its deadline on the wall clock or
/// wait without a bound, and every file that waits is listed in Documentation/Reliability.md
/// ("Waits and their bounds"), so a new wait cannot slip in unlisted.
@Suite("The library's waits", .timeLimit(.minutes(2)))
struct WaitAuditTests {
    /// Modules whose waits are being reworked on another branch (none now).
    static let reworkedElsewhere: Set<String> = []

    /// What no library source may contain, and why.
    static let forbidden: [(token: String, why: String)] = [
        ("NSCondition", "its timed waits take a Date, on the wall clock: use MonotonicCondition"),
        ("NSConditionLock", "its timed waits take a Date, on the wall clock"),
        ("Date(timeIntervalSinceNow", "a deadline on the wall clock"),
        ("addingTimeInterval", "a deadline on the wall clock"),
        ("distantFuture", "a wait without a bound"),
        ("Thread.sleep", "sleeping instead of waiting for an event, on a thread that could do nothing else"),
        ("usleep(", "sleeping instead of waiting for an event"),
        (".wait()", "a semaphore, group or condition wait without a bound"),
    ]

    /// What makes a line a wait, for the listing check.
    static let waitPattern = try! NSRegularExpression(pattern: [
        #"\.sync \{"#, #"\.sync\("#, #"\bsync \{"#, #"withChecked(Throwing)?Continuation"#, #"withUnsafe(Throwing)?Continuation"#,
        #"for (try )?await "#, #"Task\.sleep"#, #"\.wait\("#, #"mpv_terminate_destroy"#, #"mpv_command_ret"#,
        #"mpv_set_property\("#, #"mpv_get_property\("#, #"mpv_render_context_render"#, #"lockExclusive"#,
        #"\bpoll\(&"#, #"\.enter\(\)"#, #"waitpid"#, #"futureResult"#, #"\.run \{"#,
    ].joined(separator: "|"))

    /// Every library source file, with its lines outside comments.
    static func sources() throws -> [(path: String, module: String, lines: [(number: Int, text: String)])] {
        let root = Fixtures.repository.appendingPathComponent("Sources")
        guard let walker = FileManager.default.enumerator(at: root, includingPropertiesForKeys: nil) else { return [] }
        var files: [(String, String, [(Int, String)])] = []
        for case let url as URL in walker where url.pathExtension == "swift" {
            let relative = String(url.path.dropFirst(root.path.count + 1))
            let module = String(relative.prefix { $0 != "/" })
            let lines = try String(contentsOf: url, encoding: .utf8).components(separatedBy: "\n").enumerated().compactMap { index, line -> (Int, String)? in
                let code = line.trimmingCharacters(in: .whitespaces)
                guard !code.hasPrefix("//") else { return nil }
                // Drop a trailing comment (crudely: none of these tokens appear in string literals).
                let withoutComment = code.range(of: " //").map { String(code[..<$0.lowerBound]) } ?? code
                return (index + 1, withoutComment)
            }
            files.append((relative, module, lines))
        }
        return files.sorted { $0.0 < $1.0 }
    }

    @Test("no library wait measures its deadline on the wall clock or waits without a bound")
    func noUnboundedOrWallClockWaits() throws {
        var found: [String] = []
        for file in try Self.sources() where !Self.reworkedElsewhere.contains(file.module) {
            for line in file.lines {
                for rule in Self.forbidden where line.text.contains(rule.token) {
                    found.append("Sources/\(file.path):\(line.number): \(rule.token): \(rule.why)")
                }
            }
        }
        #expect(found.isEmpty, "\n\(found.joined(separator: "\n"))")
    }

    /// Issue 41: no public method waits for mpv. Every request after a core's creation is
    /// asynchronous (`mpv_command_async`, `mpv_set_property_async`, `mpv_get_property_async`);
    /// the one synchronous read left is `MPVHandle.property`, which only the creation of a core
    /// uses (its catalog of protocols and commands).
    @Test("no library source makes a synchronous mpv request but a core's creation")
    func noSynchronousRequests() throws {
        var found: [String] = []
        for file in try Self.sources() {
            for line in file.lines {
                for token in ["mpv_command(", "mpv_command_ret(", "mpv_command_node(", "mpv_command_string(", "mpv_set_property(", "mpv_set_property_string("]
                where line.text.contains(token) {
                    found.append("Sources/\(file.path):\(line.number): \(token)")
                }
                if line.text.contains("mpv_get_property("), file.path != "PlayerKitCore/Engine/MPVHandle.swift" {
                    found.append("Sources/\(file.path):\(line.number): mpv_get_property(")
                }
                if line.text.contains("handle.property("), file.path != "PlayerKitCore/Engine/MPVCatalog.swift" {
                    found.append("Sources/\(file.path):\(line.number): handle.property( (a synchronous read) outside a core's creation")
                }
            }
        }
        #expect(found.isEmpty, "\n\(found.joined(separator: "\n"))")
    }

    @Test("every source file that waits is listed in Reliability.md's table of waits")
    func everyWaitIsListed() throws {
        let document = try String(contentsOf: Fixtures.repository.appendingPathComponent("Documentation/Reliability.md"), encoding: .utf8)
        let section = try #require(document.range(of: "## Waits and their bounds"), "Reliability.md has no section \"Waits and their bounds\"")
        let table = document[section.lowerBound...]
        var unlisted: [String] = []
        for file in try Self.sources() {
            let waits = file.lines.filter { line in
                Self.waitPattern.firstMatch(in: line.text, range: NSRange(line.text.startIndex..., in: line.text)) != nil
            }
            guard let first = waits.first else { continue }
            let name = (file.path as NSString).lastPathComponent
            if !table.contains(name) { unlisted.append("Sources/\(file.path):\(first.number): \(first.text)") }
        }
        #expect(unlisted.isEmpty, "files with waits that the table does not name:\n\(unlisted.joined(separator: "\n"))")
    }
}
