/// The read-outs of a player's settings, and of the current picture's size and title, as mpv
/// last reported them or a setter set them: one of `PlaybackModel`'s sub-machines, pure, with
/// one job. It turns each observed value into the change event it makes (`volumeChanged`,
/// `muteChanged`, `speedChanged`, `loopModeChanged`, `fullscreenStateChanged`,
/// `playlistChanged`), or none: the first observation only sets the baseline (mpv always sends
/// an initial value), and a setter's value is reported even before any observation.
///
/// Whether an observation is stale (made before a setter's value) is decided before it comes
/// here, by `SetterConfirmation`; what depends on the item (the duration, tracks, the decoder,
/// buffering) stays with the composer.
struct SettingsMirror: Sendable {
    /// The properties it mirrors (mpv's names).
    static let names: Set<String> = [
        "volume", "volume-max", "mute", "speed", "loop-file", "playlist-pos", "playlist-count", "play-dir",
        "fullscreen", "hwdec", "audio-device", "media-title", "width", "height",
    ]

    private(set) var volume: Double?
    /// mpv's `volume-max` (130 unless changed), so a volume above it is refused without a
    /// blocking read.
    private(set) var volumeMaximum: Double?
    private(set) var isMuted: Bool?
    private(set) var speed: Double?
    private(set) var loopMode: LoopMode?
    /// mpv's `playlist-pos` (-1: none) and `playlist-count`, as last observed. A new core's
    /// playlist is empty, so that is the baseline: mpv's first report may come only after a load
    /// has filled it (its initial value is read when the pump gets to it), and must count as a
    /// change then.
    private var playlistIndex: Int? = -1
    private var playlistCount: Int? = 0
    /// ``playlistIndex`` and ``playlistCount`` as last reported.
    private(set) var playlist: PlaylistPosition? = PlaylistPosition(index: nil, count: 0)
    private(set) var playbackDirection: PlaybackDirection?
    private(set) var isFullscreen: Bool?
    private(set) var isHardwareDecodingEnabled: Bool?
    /// mpv's `audio-device`.
    private(set) var audioDevice: String?
    private(set) var mediaTitle: String?
    private var width: Int?
    private var height: Int?
    /// The mirroring last set (``PlayerCommand/setFlip(_:)``; mpv reports no property for it).
    var flip: VideoFlip = []

    /// The video size, once a frame was decoded.
    var videoSize: VideoSize? {
        guard let width, let height, width > 0, height > 0 else { return nil }
        return VideoSize(width: width, height: height)
    }

    /// A new item started: its picture's size is not known yet.
    mutating func itemStarted() {
        width = nil
        height = nil
    }

    /// An observed (or confirmed, or set: `fromSetter`) value of property `name`: the events it
    /// makes, or nil when `name` is not one of ``names``.
    mutating func apply(_ name: String, _ value: MPVValue, fromSetter: Bool) -> [PlayerEvent]? {
        switch name {
        case "volume":
            return Self.changed(&volume, to: value.doubleValue, reportFirst: fromSetter) { .volumeChanged($0) }
        case "mute":
            return Self.changed(&isMuted, to: value.boolValue, reportFirst: fromSetter) { .muteChanged($0) }
        case "speed":
            return Self.changed(&speed, to: value.doubleValue, reportFirst: fromSetter) { .speedChanged($0) }
        case "loop-file":
            return Self.changed(&loopMode, to: Self.loopMode(value), reportFirst: fromSetter) { .loopModeChanged($0) }
        case "playlist-pos":
            playlistIndex = value.intValue.map(Int.init) ?? playlistIndex
            return playlistChanged()
        case "playlist-count":
            playlistCount = value.intValue.map(Int.init) ?? playlistCount
            return playlistChanged()
        case "play-dir":
            switch value.stringValue {
            case "forward"?: playbackDirection = .forward
            case "backward"?: playbackDirection = .backward
            default: break
            }
        case "fullscreen":
            // A player starts windowed. mpv reports an observed property only when it differs
            // from what it last reported, so a fullscreen set (a command, a key in mpv's window)
            // before the pump read the initial `false` arrives as the first value: a change.
            return Self.changed(&isFullscreen, to: value.boolValue, reportFirst: fromSetter || value.boolValue == true) {
                .fullscreenStateChanged($0)
            }
        case "hwdec":
            if let mode = value.stringValue { isHardwareDecodingEnabled = mode != "no" }
        case "volume-max":
            volumeMaximum = value.doubleValue
        case "width":
            width = value.intValue.map(Int.init)
        case "height":
            height = value.intValue.map(Int.init)
        case "media-title":
            mediaTitle = value.stringValue
        case "audio-device":
            audioDevice = value.stringValue
        default:
            return nil
        }
        return []
    }

    /// Stores a new value; reports it when it differs from a known earlier value (the first
    /// observation only sets the baseline: mpv always sends an initial value). A setter's
    /// value is reported also when no earlier value is known (`reportFirst`).
    private static func changed<Value: Equatable>(
        _ stored: inout Value?, to newValue: Value?, reportFirst: Bool = false, _ event: (Value) -> PlayerEvent
    ) -> [PlayerEvent] {
        defer { if newValue != nil { stored = newValue } }
        guard let newValue, stored != newValue, stored != nil || reportFirst else { return [] }
        return [event(newValue)]
    }

    /// A new ``playlist`` from the observed index and count, reported when it differs from an
    /// earlier one (the first is the baseline, as mpv's initial values are).
    private mutating func playlistChanged() -> [PlayerEvent] {
        guard let count = playlistCount, let index = playlistIndex else { return [] }
        let position = PlaylistPosition(index: index >= 0 && index < count ? index : nil, count: max(count, 0))
        return Self.changed(&playlist, to: position) { .playlistChanged($0) }
    }

    /// mpv's `loop-file` value ("no"/false, "inf", or a count of repeats) as a ``LoopMode``.
    static func loopMode(_ value: MPVValue) -> LoopMode? {
        switch value {
        case .flag(let on): return on ? .forever : .off
        case .string("inf"), .string("yes"): return .forever
        case .string("no"): return .off
        case .string(let text): return Int(text).map { $0 <= 0 ? .off : .playCount($0 + 1) }
        default: return value.intValue.map { $0 <= 0 ? .off : .playCount(Int($0) + 1) }
        }
    }
}
