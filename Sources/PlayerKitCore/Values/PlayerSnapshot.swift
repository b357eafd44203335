import Foundation

/// What a player's read-outs say at one moment: its state, item, position and audio settings.
/// ``Player/snapshot`` reads one; ``PlayerEvent/eventsLost(_:)`` carries the one rebuilt after
/// mpv's event queue overflowed.
public struct PlayerSnapshot: Sendable, Hashable, CustomStringConvertible {
    /// The state (see ``PlayerState``).
    public var state: PlayerState
    /// The current item's source (as the app gave it, or as mpv names an entry of a playlist
    /// file); nil when nothing is loaded.
    public var source: String?
    /// The playback position in seconds; nil when nothing is loaded (before the first load,
    /// while a load is opening the item, after a stop or a failed item). Set when `load` returns.
    public var position: Double?
    /// The current item's duration in seconds; nil when nothing is loaded or the item has none
    /// (a live stream).
    public var duration: Double?
    /// Whether playback is paused (also true while ``PlayerState/ready``).
    public var isPaused: Bool
    /// The volume (100 is unchanged, up to mpv's `volume-max`), once the player reported it.
    public var volume: Double?
    /// Whether audio is muted, once the player reported it.
    public var isMuted: Bool?
    /// The playback speed (1 is normal), once the player reported it.
    public var speed: Double?
    /// How the current item repeats, once the player reported it.
    public var loopMode: LoopMode?
    /// Whether the player's video is fullscreen, once the player reported it.
    public var isFullscreen: Bool?
    /// Whether the current item's first frame was shown (``PlayerEvent/firstFrame``).
    public var hasShownFirstFrame: Bool
    /// The current item's video frame rate in frames per second (the selected video track's);
    /// nil while unknown, for audio-only media and containers that give none. Frame-accurate
    /// features (a sync group's frame steps) refuse a player without it, with a typed error.
    public var frameRate: Double?
    /// The current item as its ``PlayerEvent/mediaLoaded(_:)`` described it (source, duration,
    /// size, title, tracks at load); nil while no item is loaded: what a feature that starts
    /// following a player late reads instead of the event it missed.
    public var mediaInfo: MediaInfo?
    /// Where the player is in its playlist; nil for a player without playlists.
    public var playlist: PlaylistPosition?
    /// Whether the current item is a live stream (``MediaInfo/isLive``): then ``duration`` is nil.
    /// False while no item is loaded.
    public var isLive: Bool { mediaInfo?.isLive ?? false }

    /// A snapshot with the given values (for tests, and for players of an app's own).
    public init(
        state: PlayerState, source: String? = nil, position: Double? = nil, duration: Double? = nil, isPaused: Bool = false,
        volume: Double? = nil, isMuted: Bool? = nil, speed: Double? = nil, loopMode: LoopMode? = nil,
        isFullscreen: Bool? = nil, hasShownFirstFrame: Bool = false, frameRate: Double? = nil,
        mediaInfo: MediaInfo? = nil, playlist: PlaylistPosition? = nil
    ) {
        self.state = state
        self.source = source
        self.position = position
        self.duration = duration
        self.isPaused = isPaused
        self.volume = volume
        self.isMuted = isMuted
        self.speed = speed
        self.loopMode = loopMode
        self.isFullscreen = isFullscreen
        self.hasShownFirstFrame = hasShownFirstFrame
        self.frameRate = frameRate
        self.mediaInfo = mediaInfo
        self.playlist = playlist
    }

    /// E.g. "playing clip-a.mp4 at 1.250 of 4.000 s, volume 100, speed 1".
    public var description: String {
        var text = "\(state.rawValue)"
        if let source { text += " \(source)" }
        if let position { text += " at \(String(format: "%.3f", position))" }
        if let duration { text += " of \(String(format: "%.3f", duration)) s" }
        if let volume { text += ", volume \(volume.formatted())" }
        if isMuted == true { text += ", muted" }
        if let speed { text += ", speed \(speed.formatted())" }
        return text
    }
}
