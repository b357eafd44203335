import Foundation
@testable import PlayerKitCore
import PlayerKitSupport
import Testing

/// Every awaited command, read, load and shutdown is bounded by a timeout (10 s for a command,
/// 120 s for a load). Once the wait has ended, its timeout is withdrawn at once and what it held
/// (the caller's continuation, the operation) is released, not kept until the deadline: a feed
/// or an app sending commands back to back would otherwise hold thousands of finished waits.
/// The timeouts are the process's (`Deadlines.shared`), so this runs in the serial pass, alone.
@Suite("Finished waits release their timeouts at once (real libmpv)", .serialized, .timeLimit(.minutes(2)), .tags(.timingPass))
struct FinishedWaitsTests {
    /// The timeouts pending before the test: none once an earlier test's waits are over (a
    /// command's timeout is 10 s), else as many as are left (then a later count can only be lower).
    static func settledCount() async -> Int {
        let deadline = ContinuousClock.now + .seconds(12)
        while Deadlines.shared.pendingCount > 0, ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(20))
        }
        return Deadlines.shared.pendingCount
    }

    @Test("commands, reads, a load and a shutdown leave no timeout pending once answered")
    func answeredWaitsLeaveNothingPending() async throws {
        let before = await Self.settledCount()
        let player = try await Player.create(configuration: Fixtures.headless)
        _ = try await player.load(.file(Fixtures.fixture("short-a.mp4")), startPaused: true)
        for index in 0..<50 {
            try await player.perform(.setVolume(Double(index)))
            _ = try await player.property("volume")
        }
        let group = try await [player.command(["set", "pause", "yes"])]
        #expect(group.count == 1)
        #expect(Deadlines.shared.pendingCount <= before,
                "a wait that ended keeps its timeout: \(Deadlines.shared.pendingCount - before) pending")
        await player.shutdown()
        #expect(Deadlines.shared.pendingCount <= before,
                "shutdown's wait kept its timeout: \(Deadlines.shared.pendingCount - before) pending")
    }

    @Test("waits whose timeout races their answer leave nothing pending, whichever came first")
    func racedWaitsLeaveNothingPending() async throws {
        let before = await Self.settledCount()
        let player = try await Player.create(configuration: Fixtures.headless)
        // Timeouts due as the command is sent: some end timed out, some answered.
        for index in 0..<50 {
            do {
                try await player.perform(.setVolume(Double(index)), timeout: .microseconds(index * 2 + 1))
            } catch {
                guard case .timedOut = error else { throw error }
            }
        }
        #expect(Deadlines.shared.pendingCount <= before)
        await player.shutdown()
        #expect(Deadlines.shared.pendingCount <= before)
    }
}
