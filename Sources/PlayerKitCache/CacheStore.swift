import AsyncHTTPClient
import Foundation
import Logging
import NIOCore
import NIOHTTP1
import PlayerKitCore
import PlayerKitSupport
#if canImport(Glibc)
import Glibc
#endif

/// One entry of the cache in memory. Only touched under ``CacheStore``'s condition.
final class CacheEntry: @unchecked Sendable {
    // @unchecked: every mutable property is touched only under the store's condition.
    let id: Int64
    let key: String
    var url: URL
    var size: Int64?
    var etag: String?
    var lastModified: String?
    /// Bytes on disk (written), committed or not.
    var ranges: ByteRanges
    /// Bytes recorded in the index (written and flushed).
    var committed: ByteRanges
    var lastAccess: Double
    /// Bumped when the cached bytes are dropped (the origin changed).
    var generation = 0
    var readers: [UInt64: Reader] = [:]
    var precaches: [UInt64: Precache] = [:]
    var transfer: Transfer?
    /// A response's validators were compared with the cached ones during this run.
    var validated = false
    var failure: MediaCacheError?
    var fd: Int32 = -1
    var bytesFromNetwork: Int64 = 0
    var servedFromCache: Int64 = 0
    var servedFromNetwork: Int64 = 0
    var uncommittedBytes: Int64 = 0
    var lastProgress: Int64 = 0
    var completionReported = false

    struct Reader {
        let player: PlayerID
        var position: Int64 = 0
        var waitingAt: Int64?
        var generation: Int
        var bytesRead: Int64 = 0
        /// What was cached when the stream opened: bytes served from here count as cache.
        var cachedAtOpen: ByteRanges
    }

    struct Precache {
        var target: Int64
        var continuation: CheckedContinuation<Int64, any Error>?
    }

    init(id: Int64, key: String, url: URL, lastAccess: Double) {
        self.id = id
        self.key = key
        self.url = url
        self.ranges = ByteRanges()
        self.committed = ByteRanges()
        self.lastAccess = lastAccess
    }

    var isComplete: Bool { size.map { ranges.contains(0..<$0) } ?? false }
    var inUse: Bool { !readers.isEmpty || !precaches.isEmpty || transfer != nil }
    var readerPlayers: [PlayerID] { Array(Set(readers.values.map(\.player))) }
}

/// A download of one entry: one task that runs one HTTP request after another, where the
/// readers and precaches need bytes. Only touched under ``CacheStore``'s condition.
final class Transfer: @unchecked Sendable {
    // @unchecked: touched only under the store's condition.
    var task: Task<Void, Never>?
    var request: Task<Void, any Error>?
    /// Stop after the current request (no reader and no precache wants more).
    var stop = false
    /// Plan the next request now (a reader waits somewhere the current one will not reach soon).
    var restart = false
    var active = false
    var offset: Int64 = 0
    var end: Int64?
    var reportedStart = false
    /// When the current request started, and how many bytes it brought since.
    var requestStarted = ContinuousClock.now
    var requestBytes: Int64 = 0
    /// When the last bytes arrived (or the request started).
    var lastBytes = ContinuousClock.now
    /// A stalled request was replaced and no bytes came since: the next stall is left to the
    /// read timeout (a dead server fails instead of being asked again and again).
    var replacedStall = false

    /// How far ahead of the download a reader may wait instead of asking for its own range:
    /// what the download brings in a second at its rate so far (256 KiB to 2 MiB), and nothing
    /// when it has brought nothing for 2 seconds (a stalled connection is replaced).
    func waitWindow(now: ContinuousClock.Instant) -> Int64 {
        if now - lastBytes > .seconds(2) { return 0 }
        let elapsed = max(0.05, (now - requestStarted).inSeconds)
        let rate = Double(requestBytes) / elapsed
        return min(2 << 20, max(256 << 10, Int64(rate)))
    }
}

/// The cache's engine: entries, downloads, readers. Everything mutable is under `condition`;
/// file reads and writes, index writes and HTTP happen outside it.
final class CacheStore: @unchecked Sendable {
    // @unchecked: every mutable property is touched only under `condition`.
    let configuration: MediaCache.Configuration
    let directory: URL
    let dataDirectory: URL
    let index: CacheIndex
    let client: HTTPClient
    let logger: Logger
    private var lockFD: Int32
    let condition = NSCondition()
    private var entries: [String: CacheEntry] = [:]
    /// URLs handed out by ``MediaCache/source(for:key:)`` this run, by key (survive eviction).
    private var origins: [String: URL] = [:]
    private var usage: [PlayerID: MediaCacheUsage] = [:]
    private var nextID: UInt64 = 0
    private var cancelledPrecaches: Set<UInt64> = []
    private(set) var isShutDown = false
    private var subscribers: [UInt64: AsyncStream<MediaCacheEvent>.Continuation] = [:]
    private let eventQueue = DispatchQueue(label: "PlayerKit.cache.events")
    static let commitEvery: Int64 = 1 << 20
    static let progressEvery: Int64 = 256 << 10

    init(configuration: MediaCache.Configuration) throws(MediaCacheError) {
        self.configuration = configuration
        let directory = configuration.directory.standardizedFileURL
        self.directory = directory
        self.dataDirectory = directory.appendingPathComponent("data", isDirectory: true)
        var logger = Logger(label: "PlayerKit.cache")
        logger[metadataKey: "cache"] = "\(directory.path)"
        self.logger = logger
        let path = directory.path
        do {
            try FileManager.default.createDirectory(at: dataDirectory, withIntermediateDirectories: true)
        } catch {
            throw .directoryUnusable(path: path, reason: Self.reason(of: error))
        }
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: dataDirectory.path, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw .directoryUnusable(path: path, reason: "not a folder")
        }
        let fd = open(directory.appendingPathComponent("lock").path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw .directoryUnusable(path: path, reason: String(cString: strerror(errno))) }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            close(fd)
            throw .directoryInUse(path: path)
        }
        // A folder that can be opened but not written (read-only mount) fails here, not later.
        let probe = directory.appendingPathComponent(".probe-\(getpid())").path
        let probeFD = open(probe, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        if probeFD < 0 {
            let reason = String(cString: strerror(errno))
            close(fd)
            throw .directoryUnusable(path: path, reason: reason)
        }
        close(probeFD)
        unlink(probe)
        self.lockFD = fd
        do throws(MediaCacheError) {
            self.index = try CacheIndex(path: directory.appendingPathComponent("index.sqlite").path)
        } catch {
            close(fd)
            throw error
        }
        var httpConfiguration = HTTPClient.Configuration(
            redirectConfiguration: configuration.maximumRedirects > 0
                ? .follow(max: configuration.maximumRedirects, allowCycles: false) : .disallow,
            timeout: .init(connect: .init(configuration.connectTimeout), read: .init(configuration.readTimeout)),
            decompression: .disabled)
        httpConfiguration.httpVersion = .http1Only
        self.client = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: httpConfiguration)
        do throws(MediaCacheError) {
            try repair()
        } catch {
            close(fd)
            let client = self.client
            Task { try? await client.shutdown() }
            throw error
        }
    }

    deinit {
        for entry in entries.values where entry.fd >= 0 { close(entry.fd) }
        if lockFD >= 0 { close(lockFD) }
        let client = self.client
        if !isShutDown { Task { try? await client.shutdown() } }
    }

    static func reason(of error: any Error) -> String {
        if let error = error as? CocoaError, let underlying = error.userInfo[NSUnderlyingErrorKey] as? NSError,
            underlying.domain == NSPOSIXErrorDomain
        {
            return String(cString: strerror(Int32(underlying.code)))
        }
        return "\(error)"
    }

    /// Runs `body` under the lock (callable from async code, unlike lock()/unlock()).
    func locked<T>(_ body: () throws -> T) rethrows -> T {
        condition.lock()
        defer { condition.unlock() }
        return try body()
    }

    func dataPath(_ id: Int64) -> String { dataDirectory.appendingPathComponent("\(id).media").path }

    /// Loads the index and makes it agree with the files: ranges past a data file's end (a
    /// crash between writing and flushing) are dropped, files no entry owns are deleted.
    private func repair() throws(MediaCacheError) {
        let records = try index.loadAll()
        var owned: Set<String> = []
        for record in records {
            guard let url = URL(string: record.url) else {
                try index.delete(id: record.id)
                continue
            }
            let entry = CacheEntry(id: record.id, key: record.key, url: url, lastAccess: record.lastAccess)
            entry.size = record.size
            entry.etag = record.etag
            entry.lastModified = record.lastModified
            var ranges = record.ranges
            let path = dataPath(record.id)
            var info = stat()
            let fileSize: Int64 = stat(path, &info) == 0 ? Int64(info.st_size) : 0
            if let last = ranges.ranges.last, last.upperBound > fileSize {
                ranges.clip(to: fileSize)
                logger.warning(
                    "cache entry repaired: its file is shorter than its index says",
                    metadata: ["key": "\(record.key)", "file": "\(fileSize)", "index": "\(last.upperBound)"])
            }
            if let size = entry.size, let last = ranges.ranges.last, last.upperBound > size {
                ranges.clip(to: size)
            }
            if ranges != record.ranges { try index.commitRanges(id: record.id, ranges) }
            entry.ranges = ranges
            entry.committed = ranges
            entry.completionReported = entry.isComplete
            entries[record.key] = entry
            owned.insert("\(record.id).media")
        }
        let files = (try? FileManager.default.contentsOfDirectory(atPath: dataDirectory.path)) ?? []
        for file in files where !owned.contains(file) {
            unlink(dataDirectory.appendingPathComponent(file).path)
        }
    }

    // MARK: Keys and sources

    func register(url: URL, key: String) throws(MediaCacheError) {
        condition.lock()
        defer { condition.unlock() }
        guard !isShutDown else { throw .shutDown }
        origins[key] = url
        if let entry = entries[key], entry.url != url, !entry.inUse { entry.url = url }
    }

    func origin(ofKey key: String) -> URL? {
        condition.lock()
        defer { condition.unlock() }
        return origins[key] ?? entries[key]?.url
    }

    /// The entry for `key`, made (and recorded in the index) when missing. Under the lock.
    private func entryLocked(_ key: String) throws(MediaCacheError) -> CacheEntry {
        if let entry = entries[key] {
            if let url = origins[key], url != entry.url, !entry.inUse { entry.url = url }
            return entry
        }
        guard let url = origins[key] else { throw .unknownSource(key) }
        let now = Date().timeIntervalSince1970
        let id: Int64
        do throws(MediaCacheError) {
            id = try index.insert(key: key, url: url.absoluteString, now: now)
        } catch .diskFull {
            // The disk is full (of this cache, often): make room from what nobody uses, once.
            guard evictLocked(bytes: 1 << 20) > 0 else { throw .diskFull(path: directory.path) }
            id = try index.insert(key: key, url: url.absoluteString, now: now)
        }
        let entry = CacheEntry(id: id, key: key, url: url, lastAccess: now)
        entries[key] = entry
        return entry
    }

    private func openFileLocked(_ entry: CacheEntry) throws(MediaCacheError) {
        guard entry.fd < 0 else { return }
        let path = dataPath(entry.id)
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            let code = errno
            throw code == ENOSPC ? .diskFull(path: path) : .fileFailed(path: path, reason: String(cString: strerror(code)))
        }
        entry.fd = fd
    }

    /// Closes the file of an entry nobody uses. Under the lock.
    private func closeIfIdleLocked(_ entry: CacheEntry) {
        guard !entry.inUse, entry.fd >= 0 else { return }
        close(entry.fd)
        entry.fd = -1
    }

    private func nextIDLocked() -> UInt64 {
        nextID += 1
        return nextID
    }

    // MARK: Readers (mpv's demuxer thread)

    struct OpenedReader {
        let entry: CacheEntry
        let readerID: UInt64
    }

    func openReader(key: String, player: PlayerID) throws(MediaCacheError) -> OpenedReader {
        condition.lock()
        defer { condition.unlock() }
        guard !isShutDown else { throw .shutDown }
        let entry = try entryLocked(key)
        try openFileLocked(entry)
        let id = nextIDLocked()
        entry.readers[id] = CacheEntry.Reader(player: player, generation: entry.generation, cachedAtOpen: entry.ranges)
        entry.failure = nil
        entry.lastAccess = Date().timeIntervalSince1970
        try? index.touch(id: entry.id, now: entry.lastAccess)
        if needsNetworkLocked(entry) { ensureTransferLocked(entry, for: nil) }
        return OpenedReader(entry: entry, readerID: id)
    }

    /// Whether the entry must talk to the server: bytes missing, or a revalidation asked for.
    private func needsNetworkLocked(_ entry: CacheEntry) -> Bool {
        !entry.isComplete || (configuration.revalidation == .always && !entry.validated)
    }

    /// Whether reads must wait for the server's answer before serving cached bytes.
    private func mustValidateLocked(_ entry: CacheEntry) -> Bool {
        !entry.validated && (!entry.isComplete || configuration.revalidation == .always)
    }

    enum ReadOutcome {
        case bytes(Int64, servedFromCache: Bool)
        case end
    }

    /// Waits until bytes at the reader's position are cached (or the end, a failure, a
    /// cancellation); returns how many can be read there. Blocks like read(2).
    func waitForBytes(
        _ opened: OpenedReader, maximum: Int, cancelled: () -> Bool
    ) throws(MediaStreamError) -> (count: Int, offset: Int64, fd: Int32, fromCache: Bool)? {
        let entry = opened.entry
        condition.lock()
        defer { condition.unlock() }
        while true {
            guard var reader = entry.readers[opened.readerID] else { throw .cancelled }
            if cancelled() || isShutDown { throw .cancelled }
            if reader.generation != entry.generation {
                guard reader.bytesRead == 0 else {
                    throw .unreadable(url: entry.url.absoluteString, reason: "the media changed on the server while it played")
                }
                reader.generation = entry.generation
                reader.cachedAtOpen = entry.ranges
                entry.readers[opened.readerID] = reader
            }
            let position = reader.position
            if mustValidateLocked(entry) {
                if let failure = entry.failure, entry.transfer == nil { throw .unreadable(url: entry.url.absoluteString, reason: "\(failure)") }
                ensureTransferLocked(entry, for: nil)
                _ = condition.wait(until: Date(timeIntervalSinceNow: 0.1))
                continue
            }
            if let size = entry.size, position >= size {
                entry.readers[opened.readerID]?.waitingAt = nil
                return nil
            }
            let available = entry.ranges.contiguousCount(from: position)
            if available > 0 {
                let count = Int(min(Int64(maximum), available))
                let fromCache = reader.cachedAtOpen.contains(position..<(position + Int64(count)))
                entry.readers[opened.readerID]?.waitingAt = nil
                return (count, position, entry.fd, fromCache)
            }
            if let failure = entry.failure, entry.transfer == nil {
                throw .unreadable(url: entry.url.absoluteString, reason: "\(failure)")
            }
            entry.readers[opened.readerID]?.waitingAt = position
            ensureTransferLocked(entry, for: position)
            _ = condition.wait(until: Date(timeIntervalSinceNow: 0.1))
        }
    }

    func didRead(_ opened: OpenedReader, count: Int, fromCache: Bool) {
        condition.lock()
        defer { condition.unlock() }
        guard var reader = opened.entry.readers[opened.readerID] else { return }
        reader.position += Int64(count)
        reader.bytesRead += Int64(count)
        opened.entry.readers[opened.readerID] = reader
        if fromCache {
            opened.entry.servedFromCache += Int64(count)
            usage[reader.player, default: MediaCacheUsage()].bytesFromCache += Int64(count)
        } else {
            opened.entry.servedFromNetwork += Int64(count)
            usage[reader.player, default: MediaCacheUsage()].bytesFromNetwork += Int64(count)
        }
    }

    func seekReader(_ opened: OpenedReader, to offset: Int64) {
        condition.lock()
        defer { condition.unlock() }
        opened.entry.readers[opened.readerID]?.position = offset
    }

    /// The entry's size; waits for the server's answer when it is not known yet.
    func size(of opened: OpenedReader, cancelled: () -> Bool) -> Int64? {
        let entry = opened.entry
        condition.lock()
        defer { condition.unlock() }
        while mustValidateLocked(entry) {
            if cancelled() || isShutDown || entry.readers[opened.readerID] == nil { break }
            if entry.failure != nil, entry.transfer == nil { break }
            ensureTransferLocked(entry, for: nil)
            _ = condition.wait(until: Date(timeIntervalSinceNow: 0.1))
        }
        return entry.size
    }

    func wake() {
        condition.lock()
        condition.broadcast()
        condition.unlock()
    }

    func closeReader(_ opened: OpenedReader) {
        let entry = opened.entry
        condition.lock()
        entry.readers[opened.readerID] = nil
        entry.lastAccess = Date().timeIntervalSince1970
        try? index.touch(id: entry.id, now: entry.lastAccess)
        if entry.readers.isEmpty, entry.precaches.isEmpty, let transfer = entry.transfer {
            stopLocked(transfer)
        }
        closeIfIdleLocked(entry)
        evictIfNeededLocked()
        condition.unlock()
    }

    // MARK: Transfers

    private func stopLocked(_ transfer: Transfer) {
        transfer.stop = true
        transfer.request?.cancel()
        condition.broadcast()
    }

    /// Starts a download of `entry` if none runs; when a reader waits at `position` that the
    /// running request will not reach soon, makes it plan again from there. Under the lock.
    private func ensureTransferLocked(_ entry: CacheEntry, for position: Int64?) {
        guard !isShutDown else { return }
        if let transfer = entry.transfer {
            if transfer.stop {
                // A reader came back before the stop took effect: plan again instead.
                transfer.stop = false
                transfer.restart = true
                transfer.active = false
                return
            }
            guard let position, transfer.active, !transfer.restart else { return }
            let window = transfer.waitWindow(now: .now)
            if window == 0, transfer.replacedStall { return }
            let reachesSoon = transfer.offset <= position && position < transfer.offset + window
                && position < (transfer.end ?? Int64.max)
            if !reachesSoon {
                if window == 0 { transfer.replacedStall = true }
                transfer.restart = true
                transfer.active = false
                transfer.request?.cancel()
            }
            return
        }
        let transfer = Transfer()
        entry.transfer = transfer
        transfer.task = Task { [self] in await run(entry, transfer) }
    }

    /// The next request for `entry`, or nil when nobody needs more. Under the lock.
    private func planLocked(_ entry: CacheEntry, _ transfer: Transfer) -> (start: Int64, end: Int64?)? {
        if transfer.stop || isShutDown { return nil }
        let limit = entry.size ?? Int64.max
        if entry.isComplete {
            // A revalidation of a complete entry: one byte, to compare the validators.
            if mustValidateLocked(entry) { return (0, 1) }
            return nil
        }
        var start: Int64?
        var cap = limit
        let waiting = entry.readers.values.compactMap(\.waitingAt).filter { $0 < limit && entry.ranges.contiguousCount(from: $0) == 0 }
        if let position = waiting.min() {
            start = position
        } else if !entry.readers.isEmpty {
            let from = entry.readers.values.map(\.position).min() ?? 0
            start = entry.ranges.firstGap(from: from, below: limit) ?? entry.ranges.firstGap(from: 0, below: limit)
        } else if let target = entry.precaches.values.map(\.target).max() {
            cap = min(limit, target)
            start = entry.ranges.firstGap(from: 0, below: cap)
        } else if mustValidateLocked(entry) {
            start = entry.ranges.firstGap(from: 0, below: limit)
        }
        guard let start else { return nil }
        var end: Int64? = entry.ranges.nextStart(after: start)
        if cap < Int64.max { end = min(end ?? cap, cap) }
        return (start, end)
    }

    private struct Restart: Error {}

    private func run(_ entry: CacheEntry, _ transfer: Transfer) async {
        var attempt = 0
        var invalidations = 0
        while true {
            let next: (request: Task<Void, any Error>, start: Int64)? = locked {
                let plan = planLocked(entry, transfer)
                transfer.restart = false
                guard let plan else {
                    transfer.request = nil
                    return nil
                }
                transfer.offset = plan.start
                transfer.end = plan.end
                transfer.active = true
                transfer.requestStarted = .now
                transfer.lastBytes = .now
                transfer.requestBytes = 0
                let request = Task { [self] in try await fetch(entry, transfer, from: plan.start, to: plan.end) }
                transfer.request = request
                return (request, plan.start)
            }
            guard let next else { break }
            if !transfer.reportedStart {
                transfer.reportedStart = true
                emit(.downloadStarted(key: entry.key, offset: next.start), entry: entry)
            }
            do {
                try await next.request.value
                attempt = 0
            } catch is Restart {
                continue
            } catch {
                let stopped = locked { transfer.stop || transfer.restart || isShutDown }
                if stopped { continue }
                let failure = classify(error, entry: entry)
                if case .originChanged = failure, invalidations < 2 {
                    invalidations += 1
                    continue
                }
                if failure.isRetryable, attempt < configuration.retries {
                    let delay = configuration.retryDelay * (1 << attempt)
                    attempt += 1
                    logger.info("download failed; retrying", metadata: ["key": "\(entry.key)", "error": "\(failure)", "attempt": "\(attempt)"])
                    try? await Task.sleep(for: delay)
                    continue
                }
                fail(entry, transfer, failure)
                return
            }
        }
        finish(entry, transfer)
    }

    /// The download ended: nothing more is wanted, or it was stopped.
    private func finish(_ entry: CacheEntry, _ transfer: Transfer) {
        commit(entry)
        condition.lock()
        let stopped = transfer.stop && !entry.isComplete
        let cached = entry.ranges.count
        entry.transfer = nil
        transfer.active = false
        var resumptions = settlePrecachesLocked(entry, cancelledBecauseStopped: false)
        if !isShutDown, !entry.precaches.isEmpty || !entry.readers.isEmpty, needsNetworkLocked(entry) {
            // Someone came (back) while this download was ending: another one serves them.
            ensureTransferLocked(entry, for: nil)
        } else {
            resumptions += settlePrecachesLocked(entry, cancelledBecauseStopped: true)
        }
        closeIfIdleLocked(entry)
        evictIfNeededLocked()
        condition.broadcast()
        let players = entry.readerPlayers
        condition.unlock()
        resume(resumptions)
        if stopped, !isShutDown { emit(.cancelled(key: entry.key, cachedBytes: cached), entry: entry, players: players) }
    }

    private func fail(_ entry: CacheEntry, _ transfer: Transfer, _ failure: MediaCacheError) {
        commit(entry)
        condition.lock()
        entry.failure = failure
        entry.transfer = nil
        transfer.active = false
        var resumptions: [(CheckedContinuation<Int64, any Error>, Result<Int64, MediaCacheError>)] = []
        for (id, precache) in entry.precaches {
            if let continuation = precache.continuation { resumptions.append((continuation, .failure(failure))) }
            entry.precaches[id] = nil
        }
        closeIfIdleLocked(entry)
        condition.broadcast()
        let players = entry.readerPlayers
        condition.unlock()
        resume(resumptions)
        logger.warning("download failed", metadata: ["key": "\(entry.key)", "error": "\(failure)"])
        emit(.failed(key: entry.key, failure), entry: entry, players: players)
    }

    private func classify(_ error: any Error, entry: CacheEntry) -> MediaCacheError {
        let url = entry.url.absoluteString
        if let error = error as? MediaCacheError { return error }
        if let error = error as? HTTPClientError {
            switch error {
            case .readTimeout, .deadlineExceeded: return .timedOut(url: url, after: configuration.readTimeout)
            case .connectTimeout: return .timedOut(url: url, after: configuration.connectTimeout)
            case .redirectCycleDetected, .redirectLimitReached: return .tooManyRedirects(url: url)
            default: return .connectionFailed(url: url, reason: "\(error)")
            }
        }
        return .connectionFailed(url: url, reason: "\(error)")
    }

    /// One HTTP request: bytes [start, end) (end nil: to the end), written as they arrive.
    private func fetch(_ entry: CacheEntry, _ transfer: Transfer, from start: Int64, to end: Int64?) async throws {
        let (url, generation) = locked { (entry.url, entry.generation) }
        var request = HTTPClientRequest(url: url.absoluteString)
        request.headers.add(name: "Range", value: "bytes=\(start)-\(end.map { String($0 - 1) } ?? "")")
        request.headers.add(name: "User-Agent", value: configuration.userAgent)
        let response = try await client.execute(request, deadline: .distantFuture, logger: nil)
        var skip: Int64 = 0
        let total: Int64?
        switch response.status.code {
        case 206:
            guard let range = response.headers.first(name: "Content-Range").flatMap(Self.parseContentRange),
                range.start == start
            else {
                throw MediaCacheError.originChanged(key: entry.key, reason: "the server sent a range other than the one asked for")
            }
            total = range.total
        case 200:
            total = response.headers.first(name: "Content-Length").flatMap { Int64($0) }
            skip = start
        case 416:
            let range = response.headers.first(name: "Content-Range").flatMap(Self.parseContentRange)
            invalidate(entry, reason: "the server has \(range?.total.map(String.init) ?? "fewer") bytes, not \(entry.size.map(String.init) ?? "?")")
            throw MediaCacheError.originChanged(key: entry.key, reason: "range \(start)- is past the end of the media")
        default:
            throw MediaCacheError.httpStatus(Int(response.status.code), url: url.absoluteString)
        }
        let etag = response.headers.first(name: "ETag")
        let lastModified = response.headers.first(name: "Last-Modified")
        try accept(entry, generation: generation, size: total, etag: etag, lastModified: lastModified, start: start)
        var offset = start
        for try await var buffer in response.body {
            if skip > 0 {
                let dropped = min(Int64(buffer.readableBytes), skip)
                buffer.moveReaderIndex(forwardBy: Int(dropped))
                skip -= dropped
                if buffer.readableBytes == 0 { continue }
            }
            let count = buffer.readableBytes
            try buffer.withUnsafeReadableBytes { bytes in try write(entry, bytes, at: offset) }
            let next = offset + Int64(count)
            let reachedCached = try received(entry, transfer, range: offset..<next, generation: generation)
            offset = next
            if reachedCached { return }
        }
        if let total, offset < min(total, end ?? total) {
            throw MediaCacheError.connectionFailed(url: url.absoluteString, reason: "the body ended at byte \(offset) of \(min(total, end ?? total))")
        }
    }

    static func parseContentRange(_ value: String) -> (start: Int64, total: Int64?)? {
        // "bytes 100-199/1000", "bytes 100-199/*", "bytes */1000"
        let parts = value.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "bytes" else { return nil }
        let spec = parts[1].split(separator: "/", maxSplits: 1)
        guard spec.count == 2 else { return nil }
        let total = Int64(spec[1])
        if spec[0] == "*" { return (-1, total) }
        guard let start = spec[0].split(separator: "-").first.flatMap({ Int64($0) }) else { return nil }
        return (start, total)
    }

    /// Checks the server's validators against what is cached; drops the entry when they differ.
    private func accept(
        _ entry: CacheEntry, generation: Int, size: Int64?, etag: String?, lastModified: String?, start: Int64
    ) throws {
        condition.lock()
        var reason: String?
        if !entry.ranges.isEmpty || entry.size != nil {
            if let old = entry.etag, let etag, old != etag {
                reason = "ETag \(old) became \(etag)"
            } else if let old = entry.lastModified, let lastModified, old != lastModified {
                reason = "Last-Modified \(old) became \(lastModified)"
            } else if let old = entry.size, let size, old != size {
                reason = "length \(old) became \(size)"
            }
        }
        condition.unlock()
        if let reason {
            invalidate(entry, reason: reason)
            if start != 0 { throw MediaCacheError.originChanged(key: entry.key, reason: reason) }
        }
        condition.lock()
        entry.size = size ?? entry.size
        entry.etag = etag
        entry.lastModified = lastModified
        entry.validated = true
        let id = entry.id, url = entry.url.absoluteString, storedSize = entry.size
        let tooLarge = (storedSize ?? 0) > configuration.capacity
        condition.broadcast()
        condition.unlock()
        try index.updateOrigin(id: id, url: url, size: storedSize, etag: etag, lastModified: lastModified)
        if tooLarge, let storedSize {
            throw MediaCacheError.capacityTooSmall(key: entry.key, size: storedSize, capacity: configuration.capacity)
        }
    }

    /// Drops every cached byte of `entry` (it disagrees with the server).
    private func invalidate(_ entry: CacheEntry, reason: String) {
        condition.lock()
        entry.generation += 1
        entry.ranges = ByteRanges()
        entry.committed = ByteRanges()
        entry.size = nil
        entry.etag = nil
        entry.lastModified = nil
        entry.completionReported = false
        entry.lastProgress = 0
        if entry.fd >= 0 { _ = ftruncate(entry.fd, 0) }
        let id = entry.id
        let players = entry.readerPlayers
        condition.broadcast()
        condition.unlock()
        try? index.commitRanges(id: id, ByteRanges())
        logger.info("cache entry dropped", metadata: ["key": "\(entry.key)", "reason": "\(reason)"])
        emit(.invalidated(key: entry.key, reason: reason), entry: entry, players: players)
    }

    private func write(_ entry: CacheEntry, _ bytes: UnsafeRawBufferPointer, at offset: Int64) throws {
        let path = dataPath(entry.id)
        condition.lock()
        let fd = entry.fd
        condition.unlock()
        var written = 0
        var evictedForSpace = false
        while written < bytes.count {
            let result = pwrite(fd, bytes.baseAddress!.advanced(by: written), bytes.count - written, off_t(offset) + off_t(written))
            if result < 0 {
                let code = errno
                if code == EINTR { continue }
                if code == ENOSPC, !evictedForSpace {
                    // Make room by evicting what nobody uses, then try once more.
                    evictedForSpace = true
                    condition.lock()
                    let freed = evictLocked(bytes: Int64(bytes.count) * 4)
                    condition.unlock()
                    if freed > 0 { continue }
                }
                throw code == ENOSPC ? MediaCacheError.diskFull(path: path) : MediaCacheError.fileFailed(path: path, reason: String(cString: strerror(code)))
            }
            written += result
        }
    }

    /// Records bytes that were written; returns whether the request ran into cached bytes
    /// (or its end), so it should stop. Throws ``Restart`` when a reader wants another range.
    private func received(_ entry: CacheEntry, _ transfer: Transfer, range: Range<Int64>, generation: Int) throws -> Bool {
        condition.lock()
        guard entry.generation == generation else {
            condition.unlock()
            throw Restart()
        }
        let before = entry.ranges.count
        let nextCached = entry.ranges.nextStart(after: range.lowerBound)
        entry.ranges.insert(range)
        let added = entry.ranges.count - before
        entry.bytesFromNetwork += Int64(range.count)
        entry.uncommittedBytes += added
        transfer.offset = range.upperBound
        transfer.requestBytes += Int64(range.count)
        transfer.lastBytes = .now
        transfer.replacedStall = false
        let cached = entry.ranges.count
        var events: [MediaCacheEvent] = []
        if cached - entry.lastProgress >= Self.progressEvery || entry.isComplete {
            entry.lastProgress = cached
            events.append(.progress(key: entry.key, cachedBytes: cached, size: entry.size))
        }
        if entry.isComplete, !entry.completionReported {
            entry.completionReported = true
            events.append(.completed(key: entry.key, size: entry.size ?? cached))
        }
        let resumptions = settlePrecachesLocked(entry, cancelledBecauseStopped: false)
        let complete = entry.isComplete
        let shouldCommit = entry.uncommittedBytes >= Self.commitEvery || complete
        let stop = transfer.stop || transfer.restart || isShutDown
        let reachedCached = nextCached.map { range.upperBound >= $0 } ?? false
        let reachedEnd = transfer.end.map { range.upperBound >= $0 } ?? false
        // A precache with no reader stops at its target.
        let precacheDone = entry.readers.isEmpty && !entry.precaches.isEmpty
            && entry.precaches.values.allSatisfy { entry.ranges.contains(0..<min($0.target, entry.size ?? $0.target)) }
        evictIfNeededLocked()
        condition.broadcast()
        let players = entry.readerPlayers
        condition.unlock()
        // Recorded before it is reported: a progress event's bytes are in the index when the
        // commit was due.
        if shouldCommit { commit(entry) }
        resume(resumptions)
        for event in events { emit(event, entry: entry, players: players) }
        if stop { throw Restart() }
        return reachedCached || reachedEnd || complete || precacheDone
    }

    /// Flushes the entry's file and records its ranges in the index.
    func commit(_ entry: CacheEntry) {
        condition.lock()
        let fd = entry.fd
        let ranges = entry.ranges
        let changed = ranges != entry.committed
        entry.uncommittedBytes = 0
        condition.unlock()
        guard changed else { return }
        if fd >= 0 { _ = fdatasync(fd) }
        do {
            try index.commitRanges(id: entry.id, ranges)
            condition.lock()
            entry.committed = ranges
            condition.unlock()
        } catch {
            logger.error("cache index write failed", metadata: ["key": "\(entry.key)", "error": "\(error)"])
        }
    }

    // MARK: Precache

    func precache(key: String, target: Int64) async throws(MediaCacheError) -> Int64 {
        let (entry, id) = try addPrecache(key: key, target: target)
        do {
            return try await withTaskCancellationHandler {
                try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Int64, any Error>) in
                    startPrecache(entry, id: id, target: target, continuation: continuation)
                }
            } onCancel: {
                cancelPrecache(id: id, entry: entry)
            }
        } catch let error as MediaCacheError {
            throw error
        } catch {
            throw .cancelled(key: key)
        }
    }

    private func addPrecache(key: String, target: Int64) throws(MediaCacheError) -> (CacheEntry, UInt64) {
        condition.lock()
        defer { condition.unlock() }
        guard !isShutDown else { throw .shutDown }
        let entry = try entryLocked(key)
        try openFileLocked(entry)
        let id = nextIDLocked()
        entry.precaches[id] = CacheEntry.Precache(target: target, continuation: nil)
        entry.failure = nil
        return (entry, id)
    }

    private func startPrecache(_ entry: CacheEntry, id: UInt64, target: Int64, continuation: CheckedContinuation<Int64, any Error>) {
        condition.lock()
        if cancelledPrecaches.remove(id) != nil || entry.precaches[id] == nil {
            entry.precaches[id] = nil
            closeIfIdleLocked(entry)
            condition.unlock()
            continuation.resume(throwing: MediaCacheError.cancelled(key: entry.key))
            return
        }
        entry.precaches[id]?.continuation = continuation
        if let size = entry.size, entry.ranges.contains(0..<min(target, size)), !mustValidateLocked(entry) {
            entry.precaches[id] = nil
            let cached = entry.ranges.count
            closeIfIdleLocked(entry)
            condition.unlock()
            continuation.resume(returning: cached)
            return
        }
        ensureTransferLocked(entry, for: nil)
        condition.unlock()
    }

    private func cancelPrecache(id: UInt64, entry: CacheEntry) {
        condition.lock()
        guard let precache = entry.precaches[id] else {
            cancelledPrecaches.insert(id)
            condition.unlock()
            return
        }
        entry.precaches[id] = nil
        if precache.continuation == nil { cancelledPrecaches.insert(id) }
        if entry.readers.isEmpty, entry.precaches.isEmpty, let transfer = entry.transfer { stopLocked(transfer) }
        closeIfIdleLocked(entry)
        condition.unlock()
        precache.continuation?.resume(throwing: MediaCacheError.cancelled(key: entry.key))
    }

    func cancelPrecaches(key: String) {
        condition.lock()
        guard let entry = entries[key] else {
            condition.unlock()
            return
        }
        let precaches = entry.precaches
        entry.precaches = [:]
        for (id, precache) in precaches where precache.continuation == nil { cancelledPrecaches.insert(id) }
        if entry.readers.isEmpty, let transfer = entry.transfer { stopLocked(transfer) }
        closeIfIdleLocked(entry)
        condition.unlock()
        for precache in precaches.values { precache.continuation?.resume(throwing: MediaCacheError.cancelled(key: key)) }
    }

    /// Precaches that are now satisfied (or end because the download stopped). Under the lock.
    private func settlePrecachesLocked(
        _ entry: CacheEntry, cancelledBecauseStopped: Bool
    ) -> [(CheckedContinuation<Int64, any Error>, Result<Int64, MediaCacheError>)] {
        var resumptions: [(CheckedContinuation<Int64, any Error>, Result<Int64, MediaCacheError>)] = []
        let validated = !mustValidateLocked(entry)
        for (id, precache) in entry.precaches {
            guard let continuation = precache.continuation else { continue }
            if validated, let size = entry.size, entry.ranges.contains(0..<min(precache.target, size)) {
                resumptions.append((continuation, .success(entry.ranges.count)))
                entry.precaches[id] = nil
            } else if cancelledBecauseStopped {
                resumptions.append((continuation, .failure(.cancelled(key: entry.key))))
                entry.precaches[id] = nil
            }
        }
        return resumptions
    }

    private func resume(_ resumptions: [(CheckedContinuation<Int64, any Error>, Result<Int64, MediaCacheError>)]) {
        for (continuation, result) in resumptions {
            switch result {
            case .success(let value): continuation.resume(returning: value)
            case .failure(let error): continuation.resume(throwing: error)
            }
        }
    }

    /// Reads bytes `range` of a cached entry (for the MP4 header parse), or nil when they are
    /// not all cached.
    func cachedBytes(key: String, range: Range<Int64>) -> [UInt8]? {
        condition.lock()
        guard let entry = entries[key], entry.ranges.contains(range) else {
            condition.unlock()
            return nil
        }
        let path = dataPath(entry.id)
        condition.unlock()
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var bytes = [UInt8](repeating: 0, count: Int(range.count))
        let read = bytes.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, off_t(range.lowerBound)) }
        return read == bytes.count ? bytes : nil
    }

    func size(ofKey key: String) -> Int64? {
        condition.lock()
        defer { condition.unlock() }
        return entries[key]?.size
    }

    // MARK: Eviction

    private var totalLocked: Int64 { entries.values.reduce(0) { $0 + $1.ranges.count } }

    /// Evicts least recently used entries nobody uses until the total fits the capacity.
    private func evictIfNeededLocked() {
        let excess = totalLocked - configuration.capacity
        if excess > 0 { _ = evictLocked(bytes: excess) }
    }

    /// Evicts unused entries, oldest access first, until `bytes` are freed; returns the bytes freed.
    private func evictLocked(bytes: Int64) -> Int64 {
        var freed: Int64 = 0
        let candidates = entries.values.filter { !$0.inUse && !$0.ranges.isEmpty }.sorted { $0.lastAccess < $1.lastAccess }
        for entry in candidates where freed < bytes {
            let size = entry.ranges.count
            if entry.fd >= 0 {
                close(entry.fd)
                entry.fd = -1
            }
            unlink(dataPath(entry.id))
            try? index.delete(id: entry.id)
            entries[entry.key] = nil
            freed += size
            let key = entry.key
            eventQueue.async { [self] in deliver(.evicted(key: key, bytes: size), players: []) }
        }
        return freed
    }

    // MARK: Read-outs

    func entry(forKey key: String) -> MediaCacheEntry? {
        condition.lock()
        defer { condition.unlock() }
        return entries[key].map(Self.snapshot)
    }

    var allEntries: [MediaCacheEntry] {
        condition.lock()
        defer { condition.unlock() }
        return entries.values.map(Self.snapshot).sorted { $0.key < $1.key }
    }

    var totalBytes: Int64 {
        condition.lock()
        defer { condition.unlock() }
        return totalLocked
    }

    func usage(for player: PlayerID) -> MediaCacheUsage {
        condition.lock()
        defer { condition.unlock() }
        return usage[player] ?? MediaCacheUsage()
    }

    private static func snapshot(_ entry: CacheEntry) -> MediaCacheEntry {
        MediaCacheEntry(
            key: entry.key, url: entry.url, size: entry.size, cachedRanges: entry.ranges, isComplete: entry.isComplete,
            readers: entry.readerPlayers.sorted(), isDownloading: entry.transfer != nil,
            lastAccess: Date(timeIntervalSince1970: entry.lastAccess), bytesFromNetwork: entry.bytesFromNetwork,
            bytesServedFromCache: entry.servedFromCache, bytesServedFromNetwork: entry.servedFromNetwork)
    }

    // MARK: Events

    func subscribe(bufferLimit: Int) -> AsyncStream<MediaCacheEvent> {
        let (stream, continuation) = AsyncStream.makeStream(of: MediaCacheEvent.self, bufferingPolicy: .bufferingNewest(bufferLimit))
        condition.lock()
        let id = nextIDLocked()
        subscribers[id] = continuation
        condition.unlock()
        continuation.onTermination = { [weak self] _ in
            guard let self else { return }
            condition.lock()
            subscribers[id] = nil
            condition.unlock()
        }
        return stream
    }

    private func emit(_ event: MediaCacheEvent, entry: CacheEntry, players: [PlayerID]? = nil) {
        let players = players ?? {
            condition.lock()
            defer { condition.unlock() }
            return entry.readerPlayers
        }()
        eventQueue.async { [self] in deliver(event, players: players) }
    }

    /// On the event queue: in order, never under the lock.
    private func deliver(_ event: MediaCacheEvent, players: [PlayerID]) {
        condition.lock()
        let subscribers = Array(self.subscribers.values)
        condition.unlock()
        for subscriber in subscribers { subscriber.yield(event) }
        for id in players { Player.live(id)?.publish(event) }
    }

    // MARK: Shutdown

    func shutdown() async {
        guard let (tasks, resumptions, subscribers) = beginShutdown() else { return }
        for continuation in resumptions { continuation.resume(throwing: MediaCacheError.shutDown) }
        for task in tasks { await task.value }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            eventQueue.async { continuation.resume() }
        }
        for subscriber in subscribers { subscriber.finish() }
        try? await client.shutdown()
        releaseFolder()
    }

    /// Closes the files and frees the folder for another cache (after shutdown).
    private func releaseFolder() {
        condition.lock()
        defer { condition.unlock() }
        for entry in entries.values where entry.fd >= 0 {
            close(entry.fd)
            entry.fd = -1
        }
        if lockFD >= 0 {
            close(lockFD)
            lockFD = -1
        }
    }

    private func beginShutdown() -> (
        [Task<Void, Never>], [CheckedContinuation<Int64, any Error>], [AsyncStream<MediaCacheEvent>.Continuation]
    )? {
        condition.lock()
        defer { condition.unlock() }
        guard !isShutDown else { return nil }
        isShutDown = true
        var tasks: [Task<Void, Never>] = []
        var resumptions: [CheckedContinuation<Int64, any Error>] = []
        for entry in entries.values {
            if let transfer = entry.transfer {
                stopLocked(transfer)
                if let task = transfer.task { tasks.append(task) }
            }
            for precache in entry.precaches.values { if let continuation = precache.continuation { resumptions.append(continuation) } }
            entry.precaches = [:]
        }
        let subscribers = Array(self.subscribers.values)
        self.subscribers = [:]
        condition.broadcast()
        return (tasks, resumptions, subscribers)
    }
}

extension MediaCacheError {
    /// Failures worth another try: the network, not the server's answer or the disk.
    var isRetryable: Bool {
        switch self {
        case .connectionFailed: return true
        case .httpStatus(let status, _): return status >= 500
        default: return false
        }
    }
}
