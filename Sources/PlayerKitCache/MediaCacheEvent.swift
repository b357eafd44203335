import PlayerKitCore

/// What the media cache reports about a key. Every event goes to the streams of
/// ``MediaCache/events(bufferLimit:)->EventStream<MediaCacheEvent>``, its one channel. (1.0
/// also published each event on the bus for every player reading the key; a key's story is not
/// one player's, so 1.1 publishes it once, on the cache's stream.)
public enum MediaCacheEvent: PlayerFeatureEvent {
    /// A download of `key` began (or resumed) at byte `offset`.
    case downloadStarted(key: String, offset: Int64)
    /// More of `key` arrived: `cachedBytes` of `size` (nil while unknown) are cached.
    case progress(key: String, cachedBytes: Int64, size: Int64?)
    /// Every byte of `key` is cached.
    case completed(key: String, size: Int64)
    /// A download of `key` was stopped before it finished (no reader and no precache wants
    /// it any more); `cachedBytes` stay cached.
    case cancelled(key: String, cachedBytes: Int64)
    /// `key` was evicted to stay under the capacity, freeing `bytes`.
    case evicted(key: String, bytes: Int64)
    /// What was cached under `key` was dropped: it disagreed with the server, or was damaged.
    case invalidated(key: String, reason: String)
    /// A download of `key` failed after its retries.
    case failed(key: String, MediaCacheError)

    /// The key the event is about.
    var key: String {
        switch self {
        case .downloadStarted(let key, _), .progress(let key, _, _), .completed(let key, _), .cancelled(let key, _),
            .evicted(let key, _), .invalidated(let key, _), .failed(let key, _):
            return key
        }
    }

    /// `"cache"`: every event of ``MediaCacheEvent`` has this one kind (the events come on
    /// ``MediaCache/events(bufferLimit:)``, not on the bus; switch over the event).
    public var kind: PlayerEventKind { "cache" }

    /// One line naming the key.
    public var description: String {
        switch self {
        case .downloadStarted(let key, let offset): return "cacheDownloadStarted(\(key) at \(offset))"
        case .progress(let key, let cached, let size): return "cacheProgress(\(key): \(cached) of \(size.map(String.init) ?? "?") bytes)"
        case .completed(let key, let size): return "cacheCompleted(\(key): \(size) bytes)"
        case .cancelled(let key, let cached): return "cacheCancelled(\(key): \(cached) bytes kept)"
        case .evicted(let key, let bytes): return "cacheEvicted(\(key): \(bytes) bytes)"
        case .invalidated(let key, let reason): return "cacheInvalidated(\(key): \(reason))"
        case .failed(let key, let error): return "cacheFailed(\(key): \(error))"
        }
    }
}
