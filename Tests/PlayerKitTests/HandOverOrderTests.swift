import Foundation
@testable import PlayerKitCore
import PlayerKitSupport
import Testing

/// A command's read-outs reach queued handlers before the command reaches mpv (so their threads
/// are woken first: issue 53's latency at rest), and a command a handler sends in reaction still
/// reaches mpv after the command that caused it. The test holds the sending thread between the
/// two (a hook of the core's, for tests), long enough for a reaction to overtake if it could.
/// The hook is the process's: this runs in the serial pass.
@Suite("Commands reach mpv in the order their causes did (real libmpv)", .serialized, .timeLimit(.minutes(1)), .tags(.timingPass))
struct HandOverOrderTests {
    @Test("a queued handler hears a setter before mpv has it, and its reaction reaches mpv after it")
    func reactionStaysBehindItsCause() async throws {
        let player = try await Player.create(configuration: Fixtures.headless)
        _ = try await player.load(.file(Fixtures.fixture("long.mp4")), startPaused: true)
        try await player.perform(.setVolume(30))

        let heard = Locked<ContinuousClock.Instant?>(nil)
        let reacted = AsyncStream<Result<MPVValue, PlayerError>>.makeStream()
        let subscription = player.eventBus.subscribe(to: player.id, kinds: [.volumeChanged]) { record in
            guard case .volumeChanged(55) = record.event else { return }
            heard.withLock { $0 = .now }
            // In reaction: one more, relative to what mpv has.
            Task {
                do throws(PlayerError) {
                    reacted.continuation.yield(.success(try await player.command(["add", "volume", "1"])))
                } catch {
                    reacted.continuation.yield(.failure(error))
                }
            }
        }
        defer { subscription.cancel() }
        // The sending thread waits here (once) until the handler has heard the read-out and its
        // reaction has had time to reach mpv, were it not held behind this command.
        let held = Locked(false)
        PlayerCore.beforeHandOverForTests.withLock { hook in
            hook = {
                let first = held.withLock { wasHeld -> Bool in
                    defer { wasHeld = true }
                    return !wasHeld
                }
                guard first else { return }
                let deadline = ContinuousClock.now + .seconds(2)
                while heard.withLock({ $0 }) == nil, ContinuousClock.now < deadline {}
                let heardAt = heard.withLock { $0 } ?? .now
                while ContinuousClock.now < heardAt + .milliseconds(30) {}
            }
        }
        defer { PlayerCore.beforeHandOverForTests.withLock { $0 = nil } }

        let sent = Task.detached { try player.send(.setVolume(55)) }
        try await sent.value
        #expect(heard.withLock { $0 } != nil, "the queued handler heard the read-out before the command was handed to mpv")
        var results = reacted.stream.makeAsyncIterator()
        let reaction = await results.next()
        #expect(reaction.map { (try? $0.get()) != nil } == true, "the reaction failed: \(String(describing: reaction))")
        let volume = try await player.property("volume")
        #expect(volume.doubleValue == 56, "mpv's volume is \(String(describing: volume.doubleValue)): the reaction reached mpv before its cause")
        await player.shutdown()
    }
}
