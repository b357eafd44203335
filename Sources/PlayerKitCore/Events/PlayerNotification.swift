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

    /// The core's event kinds that are posted, and under which name. A feature's events are
    /// posted under their ``PlayerFeatureEvent/notificationName``, when they give one.
    public static let names: [PlayerEventKind: Notification.Name] = [
        .created: .playerWasCreated,
        .stateChanged: .playerDidChangeState,
        .positionChanged: .playerDidUpdatePosition,
        .mediaLoaded: .playerDidLoadMedia,
        .tracksChanged: .playerDidChangeTracks,
        .videoDecoderChanged: .playerDidChangeVideoDecoder,
        .itemEnded: .playerDidEndItem,
        .error: .playerDidFail,
        .eventsLost: .playerDidLoseEvents,
        .shutDown: .playerDidShutDown,
    ]

    /// The name `record` is posted under, if any.
    public static func name(for record: PlayerEventRecord) -> Notification.Name? {
        if case .feature(let event) = record.event { return event.notificationName }
        return names[record.event.kind]
    }

    static func post(_ record: PlayerEventRecord, to center: NotificationCenter) {
        guard let name = name(for: record) else { return }
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
    /// A player's tracks changed (``PlayerEvent/tracksChanged(_:)``).
    public static let playerDidChangeTracks = Notification.Name("PlayerKit.playerDidChangeTracks")
    /// A player's video decoder changed (``PlayerEvent/videoDecoderChanged(_:)``).
    public static let playerDidChangeVideoDecoder = Notification.Name("PlayerKit.playerDidChangeVideoDecoder")
    /// A player's item ended (``PlayerEvent/itemEnded(_:)``).
    public static let playerDidEndItem = Notification.Name("PlayerKit.playerDidEndItem")
    /// A player reported an error (``PlayerEvent/error(_:)``).
    public static let playerDidFail = Notification.Name("PlayerKit.playerDidFail")
    /// Some of a player's events were lost and its state rebuilt (``PlayerEvent/eventsLost(_:)``).
    public static let playerDidLoseEvents = Notification.Name("PlayerKit.playerDidLoseEvents")
    /// A player shut down (``PlayerEvent/shutDown``).
    public static let playerDidShutDown = Notification.Name("PlayerKit.playerDidShutDown")
}
