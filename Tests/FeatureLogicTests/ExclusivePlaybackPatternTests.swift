import Dispatch
import PlayerKitCore
@testable import PlayerKitTesting
import Synchronization
import Testing

/// README's "Your own features" handler, exactly as README shows it (the region below;
/// Scripts/check-snippets.py compares): when a player starts, every other playing player pauses.
func exclusivePlayback(players: [any MediaPlayer], bus: PlayerEventBus, myQueue: DispatchQueue) -> PlayerSubscription {
    // snippet: customFeature
    enum ExclusivePlaybackEvent: PlayerFeatureEvent {
        case pausedBecauseOf(PlayerID)
        var kind: PlayerEventKind { "myapp.exclusivePlaybackPaused" }
        var description: String { "pausedBecauseOf" }
    }
    // Players this handler paused whose pause has not shown yet: a start of theirs heard meanwhile
    // is older than the pause (two players started together both report `playing`).
    let pausing = Mutex<Set<PlayerID>>([])
    let watch = bus.subscribe(to: .all, kinds: [.stateChanged], delivery: .queue(myQueue)) { record in
        guard case .stateChanged(_, let state) = record.event else { return }
        guard state == .playing else { return pausing.withLock { _ = $0.remove(record.playerID) } }
        guard !pausing.withLock({ $0.contains(record.playerID) }) else { return }
        for other in players where other.id != record.playerID && other.state == .playing {
            pausing.withLock { _ = $0.insert(other.id) }
            try? other.send(.pause)
            other.publish(ExclusivePlaybackEvent.pausedBecauseOf(record.playerID))
        }
    }
    // end snippet
    return watch
}

/// The handler README showed before issue 41: it reads `other.state` when it hears a start, and
/// two players started together are both `playing` by then.
private func naiveExclusivePlayback(players: [any MediaPlayer], bus: PlayerEventBus, myQueue: DispatchQueue) -> PlayerSubscription {
    bus.subscribe(to: .all, kinds: [.stateChanged], delivery: .queue(myQueue)) { record in
        guard case .stateChanged(_, .playing) = record.event else { return }
        for other in players where other.id != record.playerID && other.state == .playing {
            try? other.send(.pause)
        }
    }
}

@Suite("README's exclusive-playback handler, on fakes that deliver as real pumps do", .timeLimit(.minutes(1)))
struct ExclusivePlaybackPatternTests {
    typealias Handler = @Sendable ([any MediaPlayer], PlayerEventBus, DispatchQueue) -> PlayerSubscription

    /// Two fakes under `handler`, started together (both play before either's events are
    /// heard), then every held event delivered, interleaved by `seed`, until nothing moves.
    /// Returns which of them play.
    private func startTogether(seed: UInt64, _ handler: Handler) async throws -> [Bool] {
        let clock = ManualClock()
        let bus = PlayerEventBus(label: "exclusive-\(seed)")
        let delivery = FakeEventDelivery.interleaved(seed: seed)
        let players = try (0..<2).map { _ in try FakePlayer(clock: clock, bus: bus, delivery: delivery) }
        let queue = DispatchQueue(label: "exclusive-\(seed)")
        let watch = handler(players, bus, queue)
        defer { watch.cancel() }
        for player in players { try await player.load("clip.mp4", startPaused: true) }
        try await settle(delivery, queue)
        for player in players { try await player.play() }
        try await settle(delivery, queue)
        for player in players { await player.shutdown() }
        delivery.deliverPending()
        return players.map { $0.commands.filter { $0 == .pause }.isEmpty }
    }

    /// Delivers held events and lets the handler's queue run them, until neither has work.
    private func settle(_ delivery: FakeEventDelivery, _ queue: DispatchQueue) async throws {
        for _ in 0..<100 {
            let delivered = delivery.deliverPending()
            await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in queue.async { done.resume() } }
            if delivered == 0, delivery.pendingCount == 0 { return }
        }
        Issue.record("events kept coming after 100 rounds")
    }

    @Test("without the pausing set, two players started together both pause, whichever is heard first (the race real players showed)",
          arguments: [UInt64(1), 2, 3, 4])
    func naiveHandlerPausesBoth(seed: UInt64) async throws {
        let playing = try await startTogether(seed: seed) { naiveExclusivePlayback(players: $0, bus: $1, myQueue: $2) }
        #expect(playing == [false, false], "seed \(seed)")
    }

    @Test("README's handler leaves exactly one of two players started together playing, under every interleaving")
    func readmeHandlerKeepsOne() async throws {
        var firstWins = 0
        for seed in UInt64(0)..<40 {
            let playing = try await startTogether(seed: seed) { exclusivePlayback(players: $0, bus: $1, myQueue: $2) }
            #expect(playing.filter { $0 }.count == 1, "seed \(seed): \(playing)")
            if playing.first == true { firstWins += 1 }
        }
        // The seeds really interleave: each player is heard first under some of them.
        #expect(firstWins > 0 && firstWins < 40, "\(firstWins) of 40")
    }
}
