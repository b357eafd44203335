import Foundation
import Testing

/// The public surface's promises that a reading of the sources can check (issue 41, item 4).
@Suite("The public surface", .timeLimit(.minutes(1)))
struct APISurfaceTests {
    /// The requirements of `MediaPlayer`: the declarations in the protocol's body.
    static func mediaPlayerRequirements() throws -> [String] {
        let path = Fixtures.repository.appendingPathComponent("Sources/PlayerKitCore/Player/MediaPlayer.swift").path
        let lines = try String(contentsOfFile: path, encoding: .utf8).components(separatedBy: "\n")
        let start = try #require(lines.firstIndex { $0.hasPrefix("public protocol MediaPlayer") })
        let end = try #require(lines[start...].firstIndex { $0 == "}" })
        return lines[(start + 1)..<end].map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { $0.hasPrefix("var ") || $0.hasPrefix("func ") || $0.hasPrefix("associatedtype ") || $0.hasPrefix("init(") }
    }

    /// 16 since `observeBufferedMedia()` (issue 50: what a live sync group needs of a player, as
    /// typed core API; it has a default implementation, so a conformer written for 15 still
    /// compiles). 18 since `statistics(timeout:)` and `observeStatistics(every:)` (issue 68: what
    /// the metrics product reads of every player; both have default implementations too). 20
    /// since `watchAlarms(_:)` and `observeLoudness(every:)` (issue 68, item 2: the alarms and
    /// loudness a multiview reads of every tile, a fake's too; default implementations as well).
    @Test("MediaPlayer, what an app implements to write a player of its own, has at most 20 requirements")
    func mediaPlayerIsSmall() throws {
        let requirements = try Self.mediaPlayerRequirements()
        #expect(requirements.count <= 20, "\(requirements.count): \(requirements.joined(separator: "; "))")
        // The read-outs come as one snapshot; the named commands are extension methods.
        #expect(requirements.contains { $0.hasPrefix("var snapshot: PlayerSnapshot") })
        #expect(!requirements.contains { $0.hasPrefix("func play(") || $0.hasPrefix("var position") })
    }
}
