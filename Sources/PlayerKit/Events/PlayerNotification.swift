import Foundation

/// The Foundation `NotificationCenter` side of PlayerKit's events, for code written in the
/// Apple style. Posting is off by default; switch it on per bus with
/// ``PlayerEventBus/startPostingNotifications(to:)`` and off with
/// ``PlayerEventBus/stopPostingNotifications()``.
///
/// ```swift
/// PlayerEventBus.shared.startPostingNotifications()
/// NotificationCenter.default.addObserver(forName: .playerDidChangeState, object: nil, queue: nil) { note in
///     let id = note.userInfo?[PlayerNotification.playerIDKey] as? PlayerID
///     let record = note.userInfo?[PlayerNotification.recordKey] as? PlayerEventRecord
/// }
/// ```
///
/// Every notification has `object == nil` and a `userInfo` with the player's ID under
/// ``playerIDKey`` (a ``PlayerID``), the event under ``eventKey`` (a ``PlayerEvent``) and the
/// whole record under ``recordKey`` (a ``PlayerEventRecord``).
public enum PlayerNotification {
    /// `userInfo` key of the player's ID (a ``PlayerID``).
    public static let playerIDKey = "PlayerKit.playerID"
    /// `userInfo` key of the typed event (a ``PlayerEvent``).
    public static let eventKey = "PlayerKit.event"
    /// `userInfo` key of the event record (a ``PlayerEventRecord``: ID, event, sequence number, time).
    public static let recordKey = "PlayerKit.record"

    /// The event kinds that are posted, and under which name.
    public static let names: [PlayerEvent.Kind: Notification.Name] = [
        .created: .playerWasCreated,
        .stateChanged: .playerDidChangeState,
        .positionChanged: .playerDidUpdatePosition,
        .mediaLoaded: .playerDidLoadMedia,
        .itemEnded: .playerDidEndItem,
        .error: .playerDidFail,
        .fullscreenChanged: .playerDidChangeFullscreen,
        .fullscreenOwnershipChanged: .playerDidChangeFullscreenOwnership,
        .loopWrapped: .playerDidWrapLoop,
        .shutDown: .playerDidShutDown,
    ]

    static var postedKinds: Set<PlayerEvent.Kind> { Set(names.keys) }

    static func post(_ record: PlayerEventRecord, to center: NotificationCenter) {
        guard let name = names[record.event.kind] else { return }
        center.post(name: name, object: nil, userInfo: [
            playerIDKey: record.playerID,
            eventKey: record.event,
            recordKey: record,
        ])
    }
}

extension Notification.Name {
    /// A player was created (``PlayerEvent/created``).
    public static let playerWasCreated = Notification.Name("PlayerKit.playerWasCreated")
    /// A player's state changed (``PlayerEvent/stateChanged(from:to:)``).
    public static let playerDidChangeState = Notification.Name("PlayerKit.playerDidChangeState")
    /// A player's position moved (``PlayerEvent/positionChanged(_:)``).
    public static let playerDidUpdatePosition = Notification.Name("PlayerKit.playerDidUpdatePosition")
    /// A player loaded an item (``PlayerEvent/mediaLoaded(_:)``).
    public static let playerDidLoadMedia = Notification.Name("PlayerKit.playerDidLoadMedia")
    /// A player's item ended (``PlayerEvent/itemEnded(_:)``).
    public static let playerDidEndItem = Notification.Name("PlayerKit.playerDidEndItem")
    /// A player reported an error (``PlayerEvent/error(_:)``).
    public static let playerDidFail = Notification.Name("PlayerKit.playerDidFail")
    /// A player entered or left fullscreen (``PlayerEvent/fullscreenChanged(_:)``).
    public static let playerDidChangeFullscreen = Notification.Name("PlayerKit.playerDidChangeFullscreen")
    /// A fullscreen policy's owner changed (``PlayerEvent/fullscreenOwnershipChanged(owner:)``).
    public static let playerDidChangeFullscreenOwnership = Notification.Name("PlayerKit.playerDidChangeFullscreenOwnership")
    /// A clip loop started its list over (``PlayerEvent/loopWrapped(count:seam:)``).
    public static let playerDidWrapLoop = Notification.Name("PlayerKit.playerDidWrapLoop")
    /// A player shut down (``PlayerEvent/shutDown``).
    public static let playerDidShutDown = Notification.Name("PlayerKit.playerDidShutDown")
}
