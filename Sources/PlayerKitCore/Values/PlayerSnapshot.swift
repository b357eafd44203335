import Foundation

/// What a player's read-outs say at one moment: its state, item, position and audio settings.
/// ``Player/snapshot`` reads one; ``PlayerEvent/eventsLost(_:)`` carries the one rebuilt after
/// mpv's event queue overflowed.
public struct PlayerSnapshot: Sendable, Hashable, CustomStringConvertible {
    /// The state (``Player/state``).
    public let state: PlayerState
    /// The current item's source (as the app gave it, or as mpv names an entry of a playlist
    /// file); nil when nothing is loaded.
    public let source: String?
    /// The position in seconds; nil when nothing is loaded.
    public let position: Double?
    /// The current item's duration in seconds, when known.
    public let duration: Double?
    /// Whether mpv's `pause` is set.
    public let isPaused: Bool
    /// The volume, once mpv reported it.
    public let volume: Double?
    /// Whether audio is muted, once mpv reported it.
    public let isMuted: Bool?
    /// The playback speed, once mpv reported it.
    public let speed: Double?

    /// A snapshot with the given values (for tests and for features that build their own).
    public init(
        state: PlayerState, source: String?, position: Double?, duration: Double?, isPaused: Bool,
        volume: Double?, isMuted: Bool?, speed: Double?
    ) {
        self.state = state
        self.source = source
        self.position = position
        self.duration = duration
        self.isPaused = isPaused
        self.volume = volume
        self.isMuted = isMuted
        self.speed = speed
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
