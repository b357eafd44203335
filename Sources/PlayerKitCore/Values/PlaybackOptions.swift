/// How often an item repeats.
public enum LoopMode: Sendable, Hashable {
    /// Play once.
    case off
    /// Repeat forever, seamlessly (mpv's `loop-file=inf`).
    case forever
    /// Play the item this many times in total (2 = once more after the first play).
    /// Must be at least 1; 1 is the same as ``off``.
    case playCount(Int)
}

/// Which way playback runs.
public enum PlaybackDirection: Sendable, Hashable {
    /// From start to end (the default).
    case forward
    /// From end to start: positions count down (mpv's `play-dir=backward`).
    case backward
}

/// How exactly a seek lands.
public enum SeekPrecision: Sendable, Hashable {
    /// On the exact time asked for (decodes from the previous keyframe; slower).
    case exact
    /// On the nearest keyframe (fast, may be off by up to a GOP).
    case keyframe
}

/// Which way the video is mirrored: horizontally (left and right swapped), vertically (top and
/// bottom swapped), both, or neither (`[]`). Applies to everything the player shows,
/// windows and frames alike, from the moment it is set, also to later items.
public struct VideoFlip: OptionSet, Sendable, Hashable, CustomStringConvertible {
    /// The bits.
    public let rawValue: Int
    /// A flip from bits.
    public init(rawValue: Int) { self.rawValue = rawValue }

    /// Left and right swapped.
    public static let horizontal = VideoFlip(rawValue: 1 << 0)
    /// Top and bottom swapped.
    public static let vertical = VideoFlip(rawValue: 1 << 1)

    /// "none", "horizontal", "vertical" or "horizontal+vertical".
    public var description: String {
        var parts: [String] = []
        if contains(.horizontal) { parts.append("horizontal") }
        if contains(.vertical) { parts.append("vertical") }
        return parts.isEmpty ? "none" : parts.joined(separator: "+")
    }
}
