import Foundation
import PlayerKit
import PlayerKitAnalysis
import Testing

/// FFmpeg's log callback is one for the whole process. An analysis (PlayerKitAnalysis decodes
/// with FFmpeg in the app's process) must not take it from the players: their models read
/// FFmpeg's lines to name a load error's reason and a live source's loss (issue 67, item 7).
/// The analysis is one that fails at once (a file that is not there): it opens the file with
/// FFmpeg all the same, which is where 1.1 took FFmpeg's callback.
@Suite("FFmpeg's log after an analysis", .timeLimit(.minutes(2)))
struct AnalysisLogTests {
    /// The reasons of a load that must fail: nothing listens on loopback's port 1.
    private func refusedReasons(_ player: Player, sourceLocation: SourceLocation = #_sourceLocation) async -> [String] {
        let source = MediaSource("http://127.0.0.1:1/clip.mp4")
        do {
            try await player.load(source)
            Issue.record("\(source) loaded", sourceLocation: sourceLocation)
        } catch {
            guard case .loadFailed(_, let mpvError) = error else {
                Issue.record("unexpected error \(error)", sourceLocation: sourceLocation)
                return []
            }
            return mpvError.logMessages
        }
        return []
    }

    @Test("a player's load error names FFmpeg's reason (connection refused) before and after an analysis in the same process")
    func loadErrorAfterAnalysis() async throws {
        let (player, _) = try await Fixtures.player()
        defer { Task { await player.shutdown() } }
        let before = await refusedReasons(player)
        #expect(before.contains { $0.contains("Connection refused") }, "before the analysis: \(before)")

        let missing = URL(fileURLWithPath: "/nonexistent/pk-analysis-\(UUID().uuidString).mp4")
        do {
            _ = try await QualityComparison(reference: missing, rendition: missing).run()
            Issue.record("an analysis of \(missing.path) succeeded")
        } catch {
            guard case .cannotOpen(let path, _) = error else { Issue.record("unexpected \(error)"); return }
            #expect(path == missing.path)
        }

        let after = await refusedReasons(player)
        #expect(after.contains { $0.contains("Connection refused") }, "after the analysis: \(after)")
    }
}
