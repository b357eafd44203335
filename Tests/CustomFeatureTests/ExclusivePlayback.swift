import Dispatch
import Foundation
import PlayerKitCore
import Synchronization

// A feature of an app's own, built from the core's public API alone, as an app would build it
// (this target imports PlayerKitCore and nothing else of PlayerKit, without @testable): when one
// player of the group starts playing, every other playing member pauses, and hears why through
// its own event pipeline.

/// What ``ExclusivePlayback`` tells a player it paused.
enum ExclusivePlaybackEvent: PlayerFeatureEvent {
    /// This player was paused because `other` started playing.
    case pausedBecauseOf(PlayerID)

    var kind: PlayerEventKind { .exclusivePlaybackPaused }

    var description: String {
        switch self {
        case .pausedBecauseOf(let other): return "pausedBecauseOf(\(other))"
        }
    }
}

/// The feature's typed delegate method, which an app's delegate calls from
/// `player(_:didEmit:)` (`record.event.feature(ExclusivePlaybackEvent.self)`).
protocol ExclusivePlaybackDelegate: PlayerDelegate {
    func player(_ player: any MediaPlayer, wasPausedBecauseOf other: PlayerID)
}

extension PlayerEventKind {
    static let exclusivePlaybackPaused = PlayerEventKind(rawValue: "tests.exclusivePlaybackPaused")
}

/// One player of a group plays at a time.
///
/// Follows the PlayerKit feature model: its handler runs on a serial queue of its own (never on
/// a player's event pump) and drives the players with `send`, which does not wait for mpv.
final class ExclusivePlayback: Sendable {
    let players: [Player]
    private let queue = DispatchQueue(label: "tests.exclusive-playback")
    private let subscriptions: [PlayerSubscription]
    /// Players this feature paused whose pause has not shown yet: a start of theirs heard
    /// meanwhile is older than the pause (players started together all report `playing`).
    private let pausing = Pausing()

    init(players: [Player]) {
        self.players = players
        let queue = queue
        let pausing = pausing
        subscriptions = players.map { player in
            player.eventBus.subscribe(to: player.id, kinds: [.stateChanged], delivery: .queue(queue)) { record in
                guard case .stateChanged(_, let state) = record.event else { return }
                guard state == .playing else { return pausing.set.withLock { _ = $0.remove(record.playerID) } }
                Self.started(record.playerID, among: players, pausing: pausing)
            }
        }
    }

    deinit {
        for subscription in subscriptions { subscription.cancel() }
    }

    private static func started(_ id: PlayerID, among players: [Player], pausing: Pausing) {
        guard !pausing.set.withLock({ $0.contains(id) }) else { return }
        for other in players where other.id != id && other.state == .playing {
            pausing.set.withLock { _ = $0.insert(other.id) }
            try? other.send(.pause)
            other.publish(ExclusivePlaybackEvent.pausedBecauseOf(id))
        }
    }
}

/// The players ``ExclusivePlayback`` paused whose pause has not shown yet.
final class Pausing: Sendable {
    let set = Mutex<Set<PlayerID>>([])
}
