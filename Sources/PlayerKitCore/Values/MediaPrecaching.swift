/// How much of an item's start a precacher fetches before a player opens it.
///
/// `@nonexhaustive`: a `switch` over it outside PlayerKit needs `@unknown default`.
@nonexhaustive
public enum PrecacheAmount: Sendable, Hashable {
    /// The first `n` bytes.
    case bytes(Int64)
    /// The first seconds, from the media's size and duration (PlayerKitCache's `MediaCache`
    /// reads an MP4's `mvhd`, else assumes a bitrate), plus its header.
    case seconds(Double)
    /// Everything.
    case all
}

/// Something that fetches the start of items before a player opens them: a media cache, as a
/// feature sees it. PlayerKitFeed's `AutoplayCoordinator` precaches the items near the viewport
/// through it, so the feed does not depend on the cache module; PlayerKitCache's `MediaCache`
/// conforms, and an app wires it (or its own) in.
///
/// **Threading.** Both methods may be called from any thread and task. `precache` suspends
/// while it fetches and must end promptly when its task is cancelled.
public protocol MediaPrecaching: AnyObject, Sendable {
    /// Whether `source` is one this precacher can fetch (for `MediaCache`: a source it made).
    /// Never waits.
    func canPrecache(_ source: MediaSource) -> Bool
    /// Fetches `amount` of the start of `source` and returns the bytes held when it is there.
    /// - Throws: the precacher's errors, including its own for a cancelled task.
    @discardableResult
    func precache(_ source: MediaSource, _ amount: PrecacheAmount) async throws -> Int64
}
