// The example test of Documentation/Testing.md, as an app would write it: the app's own
// orchestration ("when a player's item ends, the next player starts"), tested on fake players
// and a manual clock. Scripts/check-snippets.py checks that the guide shows this region as it is.
// snippet: guide
import PlayerKitCore
import PlayerKitTesting
import Testing

/// The app's code: plays its players one after another, each starting when the one before ends.
final class Playlist: Sendable {
    private let subscriptions: [PlayerSubscription]

    init(_ players: [any MediaPlayer]) {
        subscriptions = zip(players, players.dropFirst()).map { current, next in
            current.eventBus.subscribe(to: current.id, kinds: [.itemEnded], delivery: .immediate) { record in
                if case .itemEnded(.finished) = record.event { try? next.send(.play) }
            }
        }
    }
}

@Test("the next player starts when the one before ends, and not before", .timeLimit(.minutes(1)))
func nextStartsWhenOneEnds() async throws {
    let clock = ManualClock()
    let bus = PlayerEventBus(label: "playlist-test")
    let first = try FakePlayer(clock: clock, bus: bus, defaultMedia: .init(duration: 3))
    let second = try FakePlayer(clock: clock, bus: bus, defaultMedia: .init(duration: 5))
    let playlist = Playlist([first, second])

    try await first.load("intro.mp4")
    try await second.load("main.mp4", startPaused: true)

    clock.advance(by: .milliseconds(2_900))
    #expect(second.state == .ready)              // the first has not ended yet

    clock.advance(by: .milliseconds(100))        // 3 s: the first ends, the second starts
    #expect(first.state == .ended)
    #expect(second.state == .playing)

    clock.advance(by: .seconds(2))
    #expect(second.position == 2)

    withExtendedLifetime(playlist) {}
    await first.shutdown()
    await second.shutdown()
}
// end snippet
