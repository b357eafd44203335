import Foundation
import PlayerKitCore

/// A media cache on disk shared by every player in the process: streamed media is downloaded
/// once per key while it plays, played from disk the next time, and precached ahead of need.
///
/// Written, as every PlayerKit feature, against the core's public API: players read through
/// a ``/PlayerKitCore/MediaStreamProvider`` (mpv's `stream_cb`), so mpv never fetches the URL
/// itself; HTTP goes through the system's libcurl; the index is an SQLite database (the system's SQLite).
///
/// ```swift
/// let cache = try MediaCache()                                 // ~/.cache/playerkit/media
/// var configuration = PlayerConfiguration()
/// configuration.streamProviders = [cache.streamProvider]
/// let player = try await Player.create(id: "feed-1", configuration: configuration)
/// let source = try cache.source(for: URL(string: "https://example.com/a.mp4")!, key: "video-a")
/// _ = try await player.load(source)                            // plays while it downloads
/// Task { try await cache.precache(try cache.source(for: next, key: "video-b"), .seconds(3)) }
/// ```
///
/// **One download per key.** Every reader (a player, or several) and every precache of a key
/// share one download; a reader that seeks ahead makes it fetch the needed range first (HTTP
/// Range); when the last reader closes and no precache wants more, the download stops and
/// the connection is closed. What arrived stays cached.
///
/// **Crash safety.** Bytes are written to the entry's file, flushed, and only then recorded
/// in the index; on opening, the cache drops ranges its files do not hold. A cached entry is
/// compared with the server (ETag, Last-Modified, length) on its first request in a run;
/// when they differ it is dropped and fetched again (``MediaCacheEvent/invalidated(key:reason:)``).
///
/// **Threading.** Every method is safe from any thread. A folder holds one cache at a time
/// (a lock file; a second one gets ``MediaCacheError/directoryInUse(path:)`` once the lock
/// stayed taken for 500 ms: a child process being spawned holds it for a moment too).
public final class MediaCache: MediaPrecaching {
    /// How the cache stores and fetches.
    public struct Configuration: Sendable, Hashable {
        /// The cache folder (made when missing). Default: `playerkit/media` in the user's cache folder (`$XDG_CACHE_HOME`, else `~/.cache`).
        public var directory: URL = MediaCache.defaultDirectory
        /// The most bytes kept on disk. Least recently used entries that no player reads and
        /// no precache wants are evicted to stay under it; entries in use are never evicted,
        /// so while they alone exceed it, the cache may too. Default 1 GiB.
        public var capacity: Int64 = 1 << 30
        /// The URL scheme players read through (``/PlayerKitCore/MediaStreamProvider/scheme``).
        var scheme: String = "playerkit-cache"
        /// How long connecting may take. Default 10 s.
        public var connectTimeout: Duration = .seconds(10)
        /// How long the server may send nothing before the download fails with
        /// ``MediaCacheError/timedOut(url:after:)`` (the player buffers meanwhile), and the bound
        /// of every read a player makes through the cache: a read returns bytes, the end, or
        /// ``/PlayerKitCore/MediaStreamError/timedOut(url:after:)`` within `readTimeout` plus
        /// 500 ms, whatever the server does (stalls, trickles, vanishes).
        /// Default 15 s.
        public var readTimeout: Duration = .seconds(15)
        /// How many times a failed connection (refused, reset, cut short) or an HTTP 5xx is
        /// tried again, resuming where it stopped. Default 3.
        public var retries: Int = 3
        /// The wait before the first retry; it doubles with each. Default 250 ms.
        public var retryDelay: Duration = .milliseconds(250)
        /// Redirects followed per request (0: none). Cycles always fail. Default 5.
        var maximumRedirects: Int = 5
        /// Whether a complete entry asks the server before it is played. Default ``Revalidation/never``.
        public var revalidation: Revalidation = .never
        /// The bitrate ``/PlayerKitCore/PrecacheAmount/seconds(_:)`` assumes when the media's header does not
        /// say its duration. Default 4 Mbit/s.
        var assumedBitsPerSecond: Int64 = 4_000_000
        /// The User-Agent header.
        public var userAgent: String = "PlayerKit"

        /// The defaults, with the folder `directory` when one is given (nil: the default folder,
        /// see ``directory``).
        public init(directory: URL? = nil) {
            if let directory { self.directory = directory }
        }
    }

    /// When a complete entry is checked against the server.
    public enum Revalidation: Sendable, Hashable {
        /// Never: a complete entry plays with no network request at all (a partial entry is
        /// still checked on its first request of a run).
        case never
        /// On its first use in each run: a one-byte request compares ETag, Last-Modified and length.
        case always
    }

    /// What a read's bound adds to ``Configuration/readTimeout``: a read through the cache
    /// returns within `readTimeout + readTimeoutSlack` (500 ms), on the monotonic clock.
    static let readTimeoutSlack: Duration = TransferMachine.Settings.readSlack

    /// The configuration the cache was made with.
    let configuration: Configuration
    let store: CacheStore
    private let provider: CacheStreamProvider

    /// `$XDG_CACHE_HOME/playerkit/media`, or `~/.cache/playerkit/media`.
    static var defaultDirectory: URL {
        let environment = ProcessInfo.processInfo.environment
        let base = environment["XDG_CACHE_HOME"].flatMap { $0.hasPrefix("/") ? URL(fileURLWithPath: $0, isDirectory: true) : nil }
            ?? FileManager.default.homeDirectoryForCurrentUser.appendingPathComponent(".cache", isDirectory: true)
        return base.appendingPathComponent("playerkit", isDirectory: true).appendingPathComponent("media", isDirectory: true)
    }

    /// Opens (or makes) the cache in `configuration.directory`, repairing what a crash left.
    /// - Throws: ``MediaCacheError/directoryUnusable(path:reason:)`` (cannot be made or
    ///   written), ``MediaCacheError/directoryInUse(path:)``, ``MediaCacheError/indexFailed(reason:)``,
    ///   ``MediaCacheError/invalidKey(_:reason:)`` for a bad scheme or capacity.
    public init(configuration: Configuration = Configuration()) throws(MediaCacheError) {
        guard configuration.capacity > 0 else {
            throw .directoryUnusable(path: configuration.directory.path, reason: "capacity \(configuration.capacity) is not positive")
        }
        guard Self.isValidScheme(configuration.scheme) else {
            throw .unsupportedURL(configuration.scheme, reason: "a stream scheme is lowercase letters, digits, +, - and ., starting with a letter")
        }
        self.configuration = configuration
        self.store = try CacheStore(configuration: configuration)
        self.provider = CacheStreamProvider(scheme: configuration.scheme, store: store)
    }

    /// The provider players read through: put it in ``/PlayerKitCore/PlayerConfiguration/streamProviders``.
    public var streamProvider: any MediaStreamProvider { provider }

    /// A source that plays `url` through the cache under `key` (default: the URL itself, for
    /// URLs whose address is stable; give a key of your own for signed or rotating URLs).
    /// Load it on a player whose configuration has ``streamProvider``. The URL may change
    /// between calls with the same key; the latest is fetched.
    /// - Throws: ``MediaCacheError/unsupportedURL(_:reason:)`` (not http or https, no host,
    ///   control characters), ``MediaCacheError/invalidKey(_:reason:)``, ``MediaCacheError/shutDown``.
    public func source(for url: URL, key: String? = nil) throws(MediaCacheError) -> MediaSource {
        let url = try Self.validated(url)
        let key = key ?? url.absoluteString
        try Self.validate(key: key)
        try store.register(url: url, key: key)
        let hex = key.utf8.map { String(format: "%02x", $0) }.joined()
        return MediaSource("\(configuration.scheme)://\(hex)")
    }

    /// Whether `source` is one of this cache's (`key(of:)` knows it): what a feature
    /// precaching through ``/PlayerKitCore/MediaPrecaching`` asks first.
    public func canPrecache(_ source: MediaSource) -> Bool {
        key(of: source) != nil
    }

    /// The key of a source made by ``source(for:key:)``, or nil.
    func key(of source: MediaSource) -> String? {
        guard case .url(let url) = source.location else { return nil }
        return provider.key(of: url)
    }

    /// Downloads the start of `source` (made by ``source(for:key:)``) now, sharing the
    /// download with any player reading it. Returns the bytes cached when `amount` is there
    /// (``/PlayerKitCore/PrecacheAmount``: ``/PlayerKitCore/PrecacheAmount/seconds(_:)`` uses the
    /// media's `mvhd` duration, else `assumedBitsPerSecond`).
    /// Cancel it by cancelling the awaiting task: that ends it with
    /// ``MediaCacheError/cancelled(key:)`` and stops the download unless a player reads it.
    /// - Throws: ``MediaCacheError`` (``MediaCacheError/unknownSource(_:)`` for a source of
    ///   another cache, the download's failure, cancellation, ``MediaCacheError/shutDown``).
    @discardableResult
    public func precache(_ source: MediaSource, _ amount: PrecacheAmount) async throws(MediaCacheError) -> Int64 {
        guard let key = key(of: source), store.origin(ofKey: key) != nil else { throw .unknownSource(source.description) }
        switch amount {
        case .bytes(let count):
            return try await store.precache(key: key, target: max(0, count))
        case .all:
            return try await store.precache(key: key, target: Int64.max)
        case .seconds(let seconds):
            // First the header (where an MP4 says its duration), then the share of the rest.
            let head: Int64 = 64 << 10
            _ = try await store.precache(key: key, target: head)
            let size = store.size(ofKey: key)
            var headerEnd: Int64 = 0
            var duration: Double?
            if let bytes = store.cachedBytes(key: key, range: 0..<min(head, size ?? head)) {
                let info = MP4Header.parse(bytes)
                headerEnd = info.moovEnd ?? 0
                duration = info.duration
                if let moovEnd = info.moovEnd, moovEnd > Int64(bytes.count), moovEnd <= 16 << 20 {
                    _ = try await store.precache(key: key, target: moovEnd)
                    if let more = store.cachedBytes(key: key, range: 0..<moovEnd) { duration = MP4Header.parse(more).duration }
                }
            }
            let target: Int64
            if let size, let duration, duration > 0 {
                target = headerEnd + Int64((Double(size - headerEnd) * min(1, seconds / duration)).rounded(.up))
            } else {
                target = headerEnd + Int64(seconds * Double(configuration.assumedBitsPerSecond) / 8)
            }
            return try await store.precache(key: key, target: max(target, headerEnd))
        }
    }

    /// Stops every precache of `key` (their callers get ``MediaCacheError/cancelled(key:)``);
    /// the download stops unless a player reads the key.
    func cancelPrecache(key: String) {
        store.cancelPrecaches(key: key)
    }

    /// What is cached under `key`, or nil.
    func entry(forKey key: String) -> MediaCacheEntry? { store.entry(forKey: key) }

    /// Every entry, sorted by key.
    public var entries: [MediaCacheEntry] { store.allEntries }

    /// The bytes on disk, over every entry.
    var cachedBytes: Int64 { store.totalBytes }

    /// How many bytes `player` read through the cache in this process, split by where they
    /// came from (already cached, or downloaded while it played).
    public func usage(for player: PlayerID) -> MediaCacheUsage { store.usage(for: player) }

    /// The cache's events from now on, for every key: the one place they come (a key's story is
    /// not about one player, and several read it). Keeps the newest `bufferLimit` events for a
    /// slow reader. The stream ends at ``shutdown()``.
    public func events(bufferLimit: Int = EventStream<MediaCacheEvent>.defaultBufferLimit) -> EventStream<MediaCacheEvent> {
        store.subscribe(bufferLimit: bufferLimit)
    }

    /// Stops every download (recording what arrived), fails pending precaches with
    /// ``MediaCacheError/shutDown``, makes streams still open fail their reads, and closes the
    /// HTTP client. Returns when all of that is done. Safe to call more than once. Without it,
    /// the cache closes when its last user (the cache, its provider, players' streams) goes.
    public func shutdown() async {
        await store.shutdown()
    }

    // MARK: Validation

    static func isValidScheme(_ scheme: String) -> Bool {
        guard let first = scheme.unicodeScalars.first, ("a"..."z").contains(first) else { return false }
        return scheme.unicodeScalars.allSatisfy { ("a"..."z").contains($0) || ("0"..."9").contains($0) || "+-.".unicodeScalars.contains($0) }
    }

    /// The longest key accepted, in UTF-8 bytes.
    static let maximumKeyLength = 2048

    static func validate(key: String) throws(MediaCacheError) {
        guard !key.isEmpty else { throw .invalidKey(key, reason: "it is empty") }
        guard key.utf8.count <= maximumKeyLength else { throw .invalidKey(String(key.prefix(64)) + "…", reason: "it is longer than \(maximumKeyLength) bytes") }
        if key.unicodeScalars.contains(where: { $0.value < 0x20 || (0x7f...0x9f).contains($0.value) }) {
            throw .invalidKey(key, reason: "it has control characters")
        }
        // The path part: after a scheme's "://", before a query or fragment.
        let afterScheme = key.range(of: "://").map { String(key[$0.upperBound...]) } ?? key
        let path = afterScheme.split(whereSeparator: { $0 == "?" || $0 == "#" }).first.map(String.init) ?? ""
        if path.split(separator: "/", omittingEmptySubsequences: false).contains(where: { $0 == ".." || $0 == "." }) {
            throw .invalidKey(key, reason: "it has a \".\" or \"..\" path segment")
        }
    }

    static func validated(_ url: URL) throws(MediaCacheError) -> URL {
        let string = url.absoluteString
        if string.unicodeScalars.contains(where: { $0.value < 0x21 || (0x7f...0x9f).contains($0.value) }) {
            throw .unsupportedURL(string, reason: "it has spaces or control characters")
        }
        guard let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https" else {
            throw .unsupportedURL(string, reason: "only http and https are fetched")
        }
        guard let host = url.host, !host.isEmpty else { throw .unsupportedURL(string, reason: "it has no host") }
        if string.count > 8192 { throw .unsupportedURL(String(string.prefix(64)) + "…", reason: "it is longer than 8192 characters") }
        return url
    }
}


/// What is cached under one key (one of ``MediaCache/entries``).
public struct MediaCacheEntry: Sendable, Hashable {
    /// The key.
    public let key: String
    /// The URL it is fetched from (the latest given).
    let url: URL
    /// The total size the server reported, nil before its first answer.
    public let size: Int64?
    /// The byte ranges on disk.
    let cachedRanges: ByteRanges
    /// Whether every byte is cached (`size == cachedBytes`).
    let isComplete: Bool
    /// The players reading it now (a player reads an entry while its item is loaded), by ID.
    public let readers: [PlayerID]
    /// Whether a download of it runs now, or waits to retry after a failure.
    public let isDownloading: Bool
    /// When a player last opened or closed it.
    let lastAccess: Date
    /// Bytes downloaded for it in this process.
    let bytesFromNetwork: Int64
    /// Bytes players read that were cached when they opened it.
    public let bytesServedFromCache: Int64
    /// Bytes players read that arrived while they played.
    let bytesServedFromNetwork: Int64
    /// The bytes on disk.
    public var cachedBytes: Int64 { cachedRanges.count }
}

/// Bytes one player read through the cache (``MediaCache/usage(for:)``).
public struct MediaCacheUsage: Sendable, Hashable {
    /// Bytes that arrived from the network while it read them.
    public var bytesFromNetwork: Int64 = 0
    /// Bytes that were already cached.
    public var bytesFromCache: Int64 = 0
    /// No bytes.
    init() {}
}
