/// The kind of a ``PlayerEvent``: what subscriptions filter on, and the stable name used in
/// JSON output, logs and `Notification` names.
///
/// An open set, like `Notification.Name`: the core defines the kinds of the events mpv reports
/// (below), and each feature defines the kinds of its own events in an extension, e.g.
/// `PlayerEventKind.fullscreenPolicy` in PlayerKitDisplay (the kind of every `FullscreenEvent`). An app's own feature does the same:
///
/// ```swift
/// extension PlayerEventKind {
///     static let exclusivePlaybackPaused = PlayerEventKind("myapp.exclusivePlaybackPaused")
/// }
/// ```
///
/// Names must be unique in the process; prefix your own with your app's or library's name.
public struct PlayerEventKind: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible,
    ExpressibleByStringLiteral
{
    /// The stable name, e.g. "stateChanged".
    public let rawValue: String

    /// A kind with this name.
    public init(rawValue: String) {
        self.rawValue = rawValue
    }

    /// A kind from a string literal: `let kind: PlayerEventKind = "stateChanged"`.
    public init(stringLiteral value: String) {
        self.rawValue = value
    }

    /// The name.
    public var description: String { rawValue }

    /// ``PlayerEvent/created``.
    public static let created: PlayerEventKind = "created"
    /// ``PlayerEvent/stateChanged(from:to:)``.
    public static let stateChanged: PlayerEventKind = "stateChanged"
    /// ``PlayerEvent/positionChanged(_:)``.
    public static let positionChanged: PlayerEventKind = "positionChanged"
    /// ``PlayerEvent/durationKnown(_:)``.
    public static let durationKnown: PlayerEventKind = "durationKnown"
    /// ``PlayerEvent/mediaLoaded(_:)``.
    public static let mediaLoaded: PlayerEventKind = "mediaLoaded"
    /// ``PlayerEvent/firstFrame``.
    public static let firstFrame: PlayerEventKind = "firstFrame"
    /// ``PlayerEvent/seekCompleted(position:)``.
    public static let seekCompleted: PlayerEventKind = "seekCompleted"
    /// ``PlayerEvent/bufferingProgress(percent:)``.
    public static let bufferingProgress: PlayerEventKind = "bufferingProgress"
    /// ``PlayerEvent/bufferedMediaChanged(_:)``.
    public static let bufferedMediaChanged: PlayerEventKind = "bufferedMediaChanged"
    /// ``PlayerEvent/statisticsUpdated(_:)``.
    public static let statisticsUpdated: PlayerEventKind = "statisticsUpdated"
    /// ``PlayerEvent/alarmRaised(_:)``.
    public static let alarmRaised: PlayerEventKind = "alarmRaised"
    /// ``PlayerEvent/alarmCleared(_:)``.
    public static let alarmCleared: PlayerEventKind = "alarmCleared"
    /// ``PlayerEvent/loudnessUpdated(_:)``.
    public static let loudnessUpdated: PlayerEventKind = "loudnessUpdated"
    /// ``PlayerEvent/volumeChanged(_:)``.
    public static let volumeChanged: PlayerEventKind = "volumeChanged"
    /// ``PlayerEvent/muteChanged(_:)``.
    public static let muteChanged: PlayerEventKind = "muteChanged"
    /// ``PlayerEvent/speedChanged(_:)``.
    public static let speedChanged: PlayerEventKind = "speedChanged"
    /// ``PlayerEvent/tracksChanged(_:)``.
    public static let tracksChanged: PlayerEventKind = "tracksChanged"
    /// ``PlayerEvent/videoDecoderChanged(_:)``.
    public static let videoDecoderChanged: PlayerEventKind = "videoDecoderChanged"
    /// ``PlayerEvent/fullscreenStateChanged(_:)``.
    public static let fullscreenStateChanged: PlayerEventKind = "fullscreenStateChanged"
    /// ``PlayerEvent/loopModeChanged(_:)``.
    public static let loopModeChanged: PlayerEventKind = "loopModeChanged"
    /// ``PlayerEvent/playlistChanged(_:)``.
    public static let playlistChanged: PlayerEventKind = "playlistChanged"
    /// ``PlayerEvent/propertyChanged(name:value:)``.
    public static let propertyChanged: PlayerEventKind = "propertyChanged"
    /// ``PlayerEvent/itemEnded(_:)``.
    public static let itemEnded: PlayerEventKind = "itemEnded"
    /// ``PlayerEvent/error(_:)``.
    public static let error: PlayerEventKind = "error"
    /// ``PlayerEvent/shuttingDown``.
    public static let shuttingDown: PlayerEventKind = "shuttingDown"
    /// ``PlayerEvent/shutDown``.
    public static let shutDown: PlayerEventKind = "shutDown"
    /// ``PlayerEvent/eventsLost(_:)``.
    public static let eventsLost: PlayerEventKind = "eventsLost"

    /// The kinds of the core's own events (not those of features), in the order they are listed here.
    static let coreKinds: [PlayerEventKind] = [
        .created, .stateChanged, .positionChanged, .durationKnown, .mediaLoaded, .firstFrame, .seekCompleted,
        .bufferingProgress, .bufferedMediaChanged, .statisticsUpdated, .alarmRaised, .alarmCleared, .loudnessUpdated, .volumeChanged, .muteChanged, .speedChanged, .tracksChanged,
        .videoDecoderChanged, .fullscreenStateChanged, .loopModeChanged, .playlistChanged, .propertyChanged, .itemEnded, .error, .eventsLost, .shuttingDown, .shutDown,
    ]
}
