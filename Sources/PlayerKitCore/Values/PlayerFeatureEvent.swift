import Foundation

/// An event that a feature (PlayerKit's own, or an app's) publishes about one player, through
/// that player's ordered pipeline: ``Player/publish(_:)`` numbers it with the player's other
/// events and delivers it, as ``PlayerEvent/feature(_:)-swift.enum.case``, to the player's delegate, to bus
/// subscribers of its ID, to async sequences and to NotificationCenter.
///
/// This is the core's extension point: a feature adds an event type of its own, never a case
/// to a core enum.
///
/// ```swift
/// enum ExclusivePlaybackEvent: PlayerFeatureEvent {
///     case pausedBecauseOf(PlayerID)
///     var kind: PlayerEventKind { "myapp.exclusivePlaybackPaused" }
///     var description: String { ... }
/// }
/// player.publish(ExclusivePlaybackEvent.pausedBecauseOf(other.id))
/// ```
///
/// A delegate hears it in ``PlayerDelegate/player(_:didEmit:)``
/// (`record.event.feature(ExclusivePlaybackEvent.self)`).
public protocol PlayerFeatureEvent: Sendable, Hashable, CustomStringConvertible {
    /// The event's kind: what subscriptions filter on, its name in JSON and logs, and (through
    /// ``PlayerNotification/name(for:)``) its NotificationCenter name.
    var kind: PlayerEventKind { get }
}

extension PlayerFeatureEvent {
    /// Whether this event equals `other`, whatever `other`'s type (false across types).
    func isEqual(to other: any PlayerFeatureEvent) -> Bool {
        guard let other = other as? Self else { return false }
        return self == other
    }
}
