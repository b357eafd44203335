/// Why the media cache refused a request, or why a download failed. Each case names the
/// offending value. `@nonexhaustive`: new cases may come without breaking apps.
@nonexhaustive
public enum MediaCacheError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A cache key the cache refuses (empty, too long, control characters, "." or ".." path
    /// segments). Keys never become file names, but a key that looks like a path is refused.
    case invalidKey(String, reason: String)
    /// A URL the cache does not fetch (not http or https, no host, control characters).
    case unsupportedURL(String, reason: String)
    /// A ``/PlayerKitCore/MediaSource`` that this cache did not make.
    case unknownSource(String)
    /// The cache folder cannot be made, written or opened (read-only, not a folder).
    case directoryUnusable(path: String, reason: String)
    /// Another ``MediaCache`` (in this or another process) has the folder.
    case directoryInUse(path: String)
    /// The server answered with an HTTP status that is not success.
    case httpStatus(Int, url: String)
    /// The connection failed: refused, reset, closed in the middle of a body (after retries).
    case connectionFailed(url: String, reason: String)
    /// The server sent nothing for longer than ``MediaCache/Configuration/readTimeout``
    /// (or could not be reached within ``MediaCache/Configuration/connectTimeout``).
    case timedOut(url: String, after: Duration)
    /// Redirects went round in a cycle or past `maximumRedirects`.
    case tooManyRedirects(url: String)
    /// The server's answer does not fit what was cached (ETag, Last-Modified or length changed,
    /// or a malformed range): the entry was dropped and is fetched again.
    case originChanged(key: String, reason: String)
    /// The disk holding the cache folder is full.
    case diskFull(path: String)
    /// Writing or reading the cache's files failed for another reason.
    case fileFailed(path: String, reason: String)
    /// The item is larger than the whole cache (``MediaCache/Configuration/capacity``).
    case capacityTooSmall(key: String, size: Int64, capacity: Int64)
    /// The download or precache was cancelled (the awaiting task was cancelled, or the last
    /// reader went away).
    case cancelled(key: String)
    /// The index database failed.
    case indexFailed(reason: String)
    /// The cache was shut down.
    case shutDown

    /// A sentence naming the offending value.
    public var description: String {
        switch self {
        case .invalidKey(let key, let reason): return "cache key \(key.debugDescription) is refused: \(reason)"
        case .unsupportedURL(let url, let reason): return "URL \(url.debugDescription) cannot be cached: \(reason)"
        case .unknownSource(let source): return "\(source) is not a source of this media cache"
        case .directoryUnusable(let path, let reason): return "cache folder \(path) cannot be used: \(reason)"
        case .directoryInUse(let path): return "cache folder \(path) is in use by another media cache"
        case .httpStatus(let status, let url): return "\(url) answered HTTP \(status)"
        case .connectionFailed(let url, let reason): return "connection to \(url) failed: \(reason)"
        case .timedOut(let url, let after): return "\(url) sent nothing for \(after)"
        case .tooManyRedirects(let url): return "\(url) redirects in a loop or too many times"
        case .originChanged(let key, let reason): return "the media under key \(key.debugDescription) changed on the server: \(reason)"
        case .diskFull(let path): return "the disk holding \(path) is full"
        case .fileFailed(let path, let reason): return "cache file \(path) failed: \(reason)"
        case .capacityTooSmall(let key, let size, let capacity):
            return "\(key.debugDescription) is \(size) bytes, more than the cache's capacity of \(capacity) bytes"
        case .cancelled(let key): return "the download of \(key.debugDescription) was cancelled"
        case .indexFailed(let reason): return "the cache index failed: \(reason)"
        case .shutDown: return "the media cache was shut down"
        }
    }
}
