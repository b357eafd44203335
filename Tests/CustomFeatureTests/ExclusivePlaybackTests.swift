import Dispatch
import Foundation
import PlayerKitCore
import Testing

/// Records the feature's typed delegate calls and the generic ones, on the player's delegate queue.
final class ExclusiveDelegate: ExclusivePlaybackDelegate {
    let typedCalls: AsyncStream<(player: PlayerID, other: PlayerID)>
    private let typedSink: AsyncStream<(player: PlayerID, other: PlayerID)>.Continuation
    let generic: AsyncStream<PlayerEventRecord>
    private let genericSink: AsyncStream<PlayerEventRecord>.Continuation

    init() {
        (typedCalls, typedSink) = AsyncStream.makeStream()
        (generic, genericSink) = AsyncStream.makeStream()
    }

    func player(_ player: any MediaPlayer, didEmit record: PlayerEventRecord) {
        if record.event.kind == .exclusivePlaybackPaused { genericSink.yield(record) }
        if case .pausedBecauseOf(let other)? = record.event.feature(ExclusivePlaybackEvent.self) {
            self.player(player, wasPausedBecauseOf: other)
        }
    }

    func player(_ player: any MediaPlayer, wasPausedBecauseOf other: PlayerID) {
        typedSink.yield((player.id, other))
    }
}

/// The first element of `sequence`, or nil after `timeout`.
func firstElement<S: AsyncSequence & Sendable>(of sequence: S, timeout: Duration) async -> S.Element? where S.Element: Sendable {
    await withTaskGroup(of: S.Element?.self) { group in
        group.addTask {
            var iterator = sequence.makeAsyncIterator()
            return try? await iterator.next()
        }
        group.addTask {
            try? await Task.sleep(for: timeout)
            return nil
        }
        let result = await group.next() ?? nil
        group.cancelAll()
        return result
    }
}

@Suite("A feature of the app's own, on the core's public API", .timeLimit(.minutes(4)))
struct ExclusivePlaybackTests {
    static let clip = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Media/clip-a.mp4").path

    @Test("its own event reaches, by player ID, a bus subscriber, a delegate (generic and typed), an async stream and NotificationCenter")
    func customFeatureEvents() async throws {
        let bus = PlayerEventBus(label: "exclusive")
        var configuration = PlayerConfiguration(videoOutput: .none, audioOutput: .none)
        configuration.eventBus = bus
        let delegate = ExclusiveDelegate()
        let first = try await Player.create(id: PlayerID(stringLiteral: "exclusive-first-\(UUID().uuidString.prefix(8))"), configuration: configuration, delegate: delegate)
        let second = try await Player.create(id: PlayerID(stringLiteral: "exclusive-second-\(UUID().uuidString.prefix(8))"), configuration: configuration)
        let feature = ExclusivePlayback(players: [first, second])

        // Every channel, subscribed before anything happens.
        let (busRecords, busSink) = AsyncStream<PlayerEventRecord>.makeStream()
        let subscription = bus.subscribe(to: first.id, kinds: [.exclusivePlaybackPaused]) { busSink.yield($0) }
        let stream = first.events(kinds: [.exclusivePlaybackPaused])
        let everything = first.events()                          // one subscription hears all of it
        let secondStream = second.events(kinds: [.exclusivePlaybackPaused])
        let center = NotificationCenter()
        bus.startPostingNotifications(to: center)
        let (notes, noteSink) = AsyncStream<PlayerID>.makeStream()
        let observer = center.addObserver(forName: PlayerNotification.name(for: .exclusivePlaybackPaused), object: nil, queue: nil) { note in
            if let record = note.userInfo?[PlayerNotification.recordKey] as? PlayerEventRecord { noteSink.yield(record.playerID) }
        }
        defer {
            center.removeObserver(observer)
            bus.stopPostingNotifications()
            subscription.cancel()
        }

        try await first.perform(.setLoop(.forever))
        try await second.perform(.setLoop(.forever))
        try await first.load(MediaSource(Self.clip))
        try await second.load(MediaSource(Self.clip), startPaused: true)
        #expect(await stream.first(timeout: .milliseconds(1)) { _ in true } == nil)  // nothing yet

        // The second starts: the feature pauses the first and tells it why.
        try await second.play()
        let streamed = await stream.first(timeout: .seconds(15)) { _ in true }
        #expect(streamed?.playerID == first.id)
        #expect(streamed?.event.feature(ExclusivePlaybackEvent.self) == .pausedBecauseOf(second.id))
        let viaBus = await firstElement(of: busRecords, timeout: .seconds(15))
        #expect(viaBus?.playerID == first.id && viaBus?.event.kind == .exclusivePlaybackPaused)
        #expect(viaBus?.sequenceNumber == streamed?.sequenceNumber)
        let generic = await firstElement(of: delegate.generic, timeout: .seconds(15))
        #expect(generic?.sequenceNumber == streamed?.sequenceNumber)
        let typed = await firstElement(of: delegate.typedCalls, timeout: .seconds(15))
        #expect(typed?.player == first.id && typed?.other == second.id)
        #expect(await firstElement(of: notes, timeout: .seconds(15)) == first.id)
        // In order with the player's own events: after the state change to playing.
        let ordered = await everything.first(timeout: .seconds(15)) { $0.event.kind == .exclusivePlaybackPaused }
        #expect(ordered?.sequenceNumber == streamed?.sequenceNumber)
        // The feature really paused the first player; the second plays on and heard nothing.
        #expect(await reaches(first, .paused))
        #expect(second.state == .playing)
        #expect(await secondStream.first(timeout: .milliseconds(300)) { _ in true } == nil)

        withExtendedLifetime(feature) {}
        await first.shutdown()
        await second.shutdown()
    }

    /// Whether `player` is in `state` now or enters it within 15 s.
    private func reaches(_ player: Player, _ state: PlayerState) async -> Bool {
        let changes = player.events(kinds: [.stateChanged])
        if player.state == state { return true }
        return await changes.first(timeout: .seconds(15)) { _ in player.state == state } != nil
    }
}
