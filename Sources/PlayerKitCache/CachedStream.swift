import Foundation
import PlayerKitCore
#if canImport(Glibc)
import Glibc
#endif

/// The cache's ``/PlayerKitCore/MediaStreamProvider``: `scheme://<key as hex>`.
final class CacheStreamProvider: MediaStreamProvider {
    let scheme: String
    let store: CacheStore

    init(scheme: String, store: CacheStore) {
        self.scheme = scheme
        self.store = store
    }

    /// The key in a URL of this provider, or nil.
    func key(of url: String) -> String? {
        let prefix = scheme + "://"
        guard url.lowercased().hasPrefix(prefix) else { return nil }
        let hex = Array(url.utf8.dropFirst(prefix.utf8.count))
        guard !hex.isEmpty, hex.count % 2 == 0 else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(hex.count / 2)
        var index = 0
        while index < hex.count {
            guard let high = Self.nibble(hex[index]), let low = Self.nibble(hex[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
            index += 2
        }
        return String(validating: bytes, as: UTF8.self)
    }

    private static func nibble(_ character: UInt8) -> UInt8? {
        switch character {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return character - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return character - UInt8(ascii: "a") + 10
        default: return nil
        }
    }

    func open(_ url: String, player: PlayerID) throws(MediaStreamError) -> any MediaByteStream {
        guard let key = key(of: url) else { throw .notFound(url: url) }
        do {
            return CachedStream(store: store, opened: try store.openReader(key: key, player: player), url: url)
        } catch .unknownSource {
            throw .notFound(url: url)
        } catch {
            throw .unreadable(url: url, reason: "\(error)")
        }
    }
}

/// One player's read of one entry, on mpv's demuxer thread. Every call returns within the
/// cache's read bound (``MediaCache/Configuration/readTimeout`` plus
/// ``MediaCache/readTimeoutSlack``), on the monotonic clock.
final class CachedStream: MediaByteStream, @unchecked Sendable {
    // @unchecked: `fd` and `isClosed` are touched under `state`; the rest is immutable.
    let store: CacheStore
    let opened: CacheStore.OpenedReader
    let url: String
    private let state = NSLock()
    private var fd: Int32
    private var isClosed = false

    init(store: CacheStore, opened: CacheStore.OpenedReader, url: String) {
        self.store = store
        self.opened = opened
        self.url = url
        self.fd = open(store.path(of: opened), O_RDONLY | O_CLOEXEC)
    }

    deinit { if fd >= 0 { Glibc.close(fd) } }

    func read(into buffer: UnsafeMutableRawBufferPointer) throws(MediaStreamError) -> Int {
        guard buffer.count > 0 else { return 0 }
        switch store.read(opened, maximum: buffer.count) {
        case .bytes(let offset, let count, let fromCache):
            let descriptor = state.withLock { fd }
            guard descriptor >= 0 else { throw .unreadable(url: url, reason: "the cache file cannot be opened") }
            let read = pread(descriptor, buffer.baseAddress, count, off_t(offset))
            guard read > 0 else {
                throw .unreadable(url: url, reason: read < 0 ? String(cString: strerror(errno)) : "the cache file ended early")
            }
            store.didRead(opened, count: read, fromCache: fromCache)
            return read
        case .end, .size:
            return 0
        case .failed(let error):
            throw error
        }
    }

    func seek(to offset: Int64) throws(MediaStreamError) -> Int64 {
        guard !state.withLock({ isClosed }) else { throw .cancelled }
        store.seekReader(opened, to: max(0, offset))
        return max(0, offset)
    }

    var size: Int64? {
        if case .size(let size) = store.read(opened, maximum: 0) { return size }
        return nil
    }

    func cancel() {
        store.cancelReader(opened)
    }

    func close() {
        let descriptor: Int32? = state.withLock {
            guard !isClosed else { return nil }
            isClosed = true
            defer { fd = -1 }
            return fd
        }
        guard let descriptor else { return }
        if descriptor >= 0 { Glibc.close(descriptor) }
        store.closeReader(opened)
    }
}
