import Foundation

/// The Foundation `NotificationCenter` side of PlayerKit's events, for code written in the
/// Apple style: an adapter over the bus, off by default. Switch it on per bus with
/// ``PlayerEventBus/startPostingNotifications(to:)`` and off with
/// ``PlayerEventBus/stopPostingNotifications()``.
///
/// ```swift
/// PlayerEventBus.shared.startPostingNotifications()
/// NotificationCenter.default.addObserver(forName: PlayerNotification.name(for: .stateChanged), object: nil, queue: nil) { note in
///     guard let record = note.userInfo?[PlayerNotification.recordKey] as? PlayerEventRecord else { return }
///     print(record.playerID, record.event)
/// }
/// ```
///
/// Every event, a feature's too, is posted under the name of its kind
/// (``name(for:)``: `PlayerKit.<kind>`), with `object == nil` and the whole record (the
/// player's ID, the event, its sequence number and times) under ``recordKey``.
public enum PlayerNotification {
    /// `userInfo` key of the event record (a ``PlayerEventRecord``: ID, event, sequence number, time).
    public static let recordKey = "PlayerKit.record"

    /// The name the events of `kind` are posted under: `PlayerKit.<kind>`, for example
    /// `PlayerKit.stateChanged` or, for a feature's kind, `PlayerKit.fullscreen.ownershipChanged`.
    public static func name(for kind: PlayerEventKind) -> Notification.Name {
        Notification.Name("PlayerKit." + kind.rawValue)
    }

    static func post(_ record: PlayerEventRecord, to center: NotificationCenter) {
        center.post(name: name(for: record.event.kind), object: nil, userInfo: [recordKey: record])
    }
}
