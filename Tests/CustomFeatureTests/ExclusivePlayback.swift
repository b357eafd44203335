import Dispatch
import Foundation
import PlayerKitCore

// A feature of an app's own, built from the core's public API alone, as an app would build it
// (this target imports PlayerKitCore and nothing else of PlayerKit, without @testable): when one
// player of the group starts playing, every other playing member pauses, and hears why through
// its own event pipeline.

/// What ``ExclusivePlayback`` tells a player it paused.
enum ExclusivePlaybackEvent: PlayerDelegateEvent {
    /// This player was paused because `other` started playing.
    case pausedBecauseOf(PlayerID)

    var kind: PlayerEventKind { .exclusivePlaybackPaused }

    var notificationName: Notification.Name? { .playerWasPausedForAnother }

    var description: String {
        switch self {
        case .pausedBecauseOf(let other): return "pausedBecauseOf(\(other))"
        }
    }

    func dispatch(to delegate: any PlayerDelegate, from player: Player) {
        guard let delegate = delegate as? any ExclusivePlaybackDelegate else { return }
        switch self {
        case .pausedBecauseOf(let other): delegate.player(player, wasPausedBecauseOf: other)
        }
    }
}

/// The feature's typed delegate method.
protocol ExclusivePlaybackDelegate: PlayerDelegate {
    func player(_ player: Player, wasPausedBecauseOf other: PlayerID)
}

extension PlayerEventKind {
    static let exclusivePlaybackPaused = PlayerEventKind("tests.exclusivePlaybackPaused")
}

extension Notification.Name {
    static let playerWasPausedForAnother = Notification.Name("tests.playerWasPausedForAnother")
}

/// One player of a group plays at a time.
///
/// Follows the PlayerKit feature model: its handler runs on a serial queue of its own (never on
/// a player's event pump) and drives the players with `send`, which does not wait for mpv.
final class ExclusivePlayback: Sendable {
    let players: [Player]
    private let queue = DispatchQueue(label: "tests.exclusive-playback")
    private let subscriptions: [PlayerSubscription]

    init(players: [Player]) {
        self.players = players
        let queue = queue
        subscriptions = players.map { player in
            player.eventBus.subscribe(to: player.id, kinds: [.stateChanged], delivery: .queue(queue)) { record in
                guard case .stateChanged(_, .playing) = record.event else { return }
                Self.started(record.playerID, among: players)
            }
        }
    }

    deinit {
        for subscription in subscriptions { subscription.cancel() }
    }

    private static func started(_ id: PlayerID, among players: [Player]) {
        for other in players where other.id != id && other.state == .playing {
            try? other.send(.pause)
            other.publish(ExclusivePlaybackEvent.pausedBecauseOf(id))
        }
    }
}
