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

/// Which timestamps a player's positions count in (``PlayerCommand/setTimestampOrigin(_:)``).
public enum TimestampOrigin: Sendable, Hashable {
    /// From the item's start: its first frame is at 0, whatever timestamp its source gave it
    /// (the default).
    case itemStart
    /// The source's own presentation timestamps, as its container has them: a live stream joined
    /// mid-way, or a file cut from a longer recording, starts where its timestamps say. Angles of
    /// one event encoded from one clock carry the same timestamp for the same moment, so their
    /// positions can be compared directly.
    case source
}

/// When a player reports that the next frame is shown (``PlayerCommand/setPositionTiming(_:)``):
/// the moment a ``PlayerEvent/positionChanged(_:)`` record is stamped with, which is what a
/// feature that times frames measures.
public enum PositionTiming: Sendable, Hashable {
    /// When the frame is handed to the video output, up to 50 ms before it is due (the
    /// default: the output then has time to draw it). A player whose frames the app draws
    /// (``PlayerConfiguration/VideoOutput/frames``) hands each frame over when it is due, and so
    /// reports ``whenDue`` either way.
    case whenQueued
    /// When the frame is due on screen: a frame change is timed within a fraction of a
    /// millisecond (Documentation/Performance.md).
    case whenDue
}

/// Which clock a player's video follows (``PlayerCommand/setVideoClock(_:)``).
public enum VideoClock: Sendable, Hashable {
    /// Its own audio's: frames wait for the sound, for lip sync (the default). A player whose
    /// sound goes to no output (``PlayerConfiguration/AudioOutput/none``) keeps ``independent``
    /// whatever it is told: nobody hears its sound, which the null output plays on the system's
    /// time anyway, and video that waited for it came up to a millisecond off its due time.
    case audio
    /// The system's monotonic clock, independent of the audio: for a muted player whose speed
    /// is trimmed to stay on another clock (each trim moves the audio, and video that followed
    /// it would move by a few milliseconds).
    case independent
}

/// How far a player holds its source, in media time (``PlayerEvent/bufferedMediaChanged(_:)``,
/// while a ``MediaPlayer/observeBufferedMedia()`` observation lives). Times are positions, in
/// the player's ``TimestampOrigin``.
public struct BufferedMedia: Sendable, Hashable, CustomStringConvertible {
    /// The position up to which the player has its source in memory; nil when unknown (nothing
    /// read yet).
    public var cachedUntil: Double?
    /// The position up to which the player can seek within what it has: the end of the furthest
    /// seekable range. On a live stream it ends about a segment before ``cachedUntil`` (at the
    /// last segment's first keyframe), and a seek past it is refused. Nil when unknown.
    public var seekableUntil: Double?

    /// A buffer read-out.
    public init(cachedUntil: Double?, seekableUntil: Double?) {
        self.cachedUntil = cachedUntil
        self.seekableUntil = seekableUntil
    }

    /// E.g. "cached until 12.480, seekable until 11.000".
    public var description: String {
        let cached = cachedUntil.map { String(format: "%.3f", $0) } ?? "?"
        let seekable = seekableUntil.map { String(format: "%.3f", $0) } ?? "?"
        return "cached until \(cached), seekable until \(seekable)"
    }
}
