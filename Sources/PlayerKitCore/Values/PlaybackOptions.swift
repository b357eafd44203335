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
