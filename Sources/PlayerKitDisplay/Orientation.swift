/// A screen's orientation, as the app (or an ``OrientationSource``) reports it.
public enum Orientation: String, Sendable, Hashable, Codable, CaseIterable, CustomStringConvertible {
    /// Upright, taller than wide.
    case portrait
    /// Upside down, taller than wide.
    case portraitUpsideDown
    /// Turned left, wider than tall.
    case landscapeLeft
    /// Turned right, wider than tall.
    case landscapeRight

    /// Whether the screen is wider than tall.
    var isLandscape: Bool { self == .landscapeLeft || self == .landscapeRight }

    /// The name, e.g. "landscapeLeft".
    public var description: String { rawValue }
}

/// A source of orientation changes: an `AsyncSequence` of ``Orientation`` that an adapter
/// produces and ``FullscreenPolicy/follow(_:)`` consumes. The first element is the current
/// orientation. A source that cannot work (no display, no sensor) ends by throwing
/// ``FullscreenPolicyError/orientationSourceUnavailable(_:)``.
public protocol OrientationSource: AsyncSequence, Sendable where Element == Orientation {}
