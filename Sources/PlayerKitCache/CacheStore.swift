import Dispatch
import Foundation
import Logging
import PlayerKitCore
import PlayerKitSupport
#if canImport(Glibc)
import Glibc
#endif

/// One entry of the cache in memory: its ``TransferMachine`` and what carries out its actions.
/// Every mutable property is touched only under ``CacheStore``'s lock.
final class CacheEntry: @unchecked Sendable {
    // @unchecked: mutable state is touched only under the store's lock.
    let id: Int64
    let key: String
    var url: URL
    var machine: TransferMachine
    var lastAccess: Double
    /// The player of each reader.
    var players: [UInt64: PlayerID] = [:]
    /// Each reader's answer slot, signalled when the machine answers it.
    var waiters: [UInt64: Waiter] = [:]
    var precacheContinuations: [UInt64: CheckedContinuation<Int64, any Error>] = [:]
    /// The running request's task, by request ID.
    var requests: [UInt64: Task<Void, Never>] = [:]
    var servedFromCache: Int64 = 0
    var servedFromNetwork: Int64 = 0
    /// The tick armed for the machine's next deadline.
    var armedTick: ContinuousClock.Instant?
    /// The cached byte count last added to the store's total.
    var countedBytes: Int64

    init(id: Int64, key: String, url: URL, machine: TransferMachine, lastAccess: Double) {
        self.id = id
        self.key = key
        self.url = url
        self.machine = machine
        self.lastAccess = lastAccess
        self.countedBytes = machine.ranges.count
    }

    var inUse: Bool { machine.inUse || !precacheContinuations.isEmpty }
    var readerPlayers: [PlayerID] { Array(Set(players.values)) }
}

/// One reader's answer slot: the machine's answer, and a semaphore the reader waits on.
final class Waiter: @unchecked Sendable {
    // @unchecked: `answer` is touched only under the store's lock; the semaphore is thread-safe.
    var answer: TransferMachine.ReadAnswer?
    let semaphore = DispatchSemaphore(value: 0)
}

/// The cache's engine: entries, downloads, readers.
///
/// Concurrency, Architecture.md's model: one lock (`lock`) around the state (the entries, each
/// with its pure ``TransferMachine``); it is held only to feed a machine an input and take the
/// actions it returns, never across I/O or app code. The actions run outside it, each on the
/// executor its kind needs:
/// - file writes, flushes, truncation, the SQLite index and making a new entry run on one serial
///   queue (`io`), in the order they were asked for;
/// - each HTTP request runs on libcurl on a thread of its own (`HTTPTransfer`: libcurl's easy
///   interface blocks), and writes what it receives through `io`;
/// - events are delivered on one serial queue (`eventQueue`), in the order the lock saw them;
/// - a reader is mpv's demuxer thread inside a stream callback, which libmpv requires to block:
///   it waits on its own semaphore until the machine's answer or its deadline, on the
///   monotonic clock. No other PlayerKit thread ever waits on a reader.
final class CacheStore: @unchecked Sendable {
    // @unchecked: every mutable property is touched only under `lock` (lockFD: set in init,
    // cleared once at shutdown under `lock`).
    let configuration: MediaCache.Configuration
    let directory: URL
    let dataDirectory: URL
    let index: CacheIndex
    let logger: Logger
    let settings: TransferMachine.Settings
    private var lockFD: Int32
    let lock = NSLock()
    /// File and index work, in order.
    let io = DispatchQueue(label: "PlayerKit.cache.io")
    private var entries: [String: CacheEntry] = [:]
    /// URLs handed out by ``MediaCache/source(for:key:)`` this run, by key (survive eviction).
    private var origins: [String: URL] = [:]
    var usage: [PlayerID: MediaCacheUsage] = [:]
    private var nextID: UInt64 = 0
    private var cancelledPrecaches: Set<UInt64> = []
    private var total: Int64 = 0
    private(set) var isShutDown = false
    /// The cache's events, to every sequence asked for (yielded on the event queue, in order).
    private let broadcast = EventBroadcast<MediaCacheEvent>()
    private let eventQueue = DispatchQueue(label: "PlayerKit.cache.events")

    init(configuration: MediaCache.Configuration) throws(MediaCacheError) {
        self.configuration = configuration
        self.settings = TransferMachine.Settings(
            readTimeout: configuration.readTimeout, retries: configuration.retries, retryDelay: configuration.retryDelay,
            revalidateAlways: configuration.revalidation == .always, capacity: configuration.capacity)
        let directory = configuration.directory.standardizedFileURL
        self.directory = directory
        self.dataDirectory = directory.appendingPathComponent("data", isDirectory: true)
        var logger = Logger(label: "PlayerKit.cache")
        logger[metadataKey: "cache"] = "\(directory.path)"
        // Every input and action of the transfer machines, for a failure in the field.
        if ProcessInfo.processInfo.environment["PLAYERKIT_CACHE_TRACE"] != nil { logger.logLevel = .trace }
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
        guard Self.lock(fd, waitingUpTo: Self.lockWait) else {
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
        do throws(MediaCacheError) {
            try repair()
        } catch {
            close(fd)
            throw error
        }
    }

    deinit {
        if lockFD >= 0 { close(lockFD) }
    }

    /// How long a cache waits for its folder's lock before it says the folder is in use. Not
    /// only another cache holds it: a child process that any thread of the app is spawning holds
    /// a copy of the lock's descriptor (and so the lock) from its fork until its exec closes it,
    /// which took long enough under load for a cache opened right after another's shutdown to be
    /// refused (a clean-clone test run, 2026-11-28).
    static let lockWait: Duration = .milliseconds(500)

    /// Takes the exclusive lock on `fd`, trying again every 5 ms until `limit` has passed on the
    /// monotonic clock.
    private static func lock(_ fd: Int32, waitingUpTo limit: Duration) -> Bool {
        let deadline = ContinuousClock.now + limit
        while flock(fd, LOCK_EX | LOCK_NB) != 0 {
            guard errno == EWOULDBLOCK || errno == EINTR, ContinuousClock.now < deadline else { return false }
            var pause = timespec(tv_sec: 0, tv_nsec: 5_000_000)
            nanosleep(&pause, nil)
        }
        return true
    }

    static func reason(of error: any Error) -> String {
        if let error = error as? CocoaError, let underlying = error.userInfo[NSUnderlyingErrorKey] as? NSError,
            underlying.domain == NSPOSIXErrorDomain
        {
            return String(cString: strerror(Int32(underlying.code)))
        }
        return "\(error)"
    }

    func locked<T>(_ body: () throws -> T) rethrows -> T {
        lock.lock()
        defer { lock.unlock() }
        return try body()
    }

    func dataPath(_ id: Int64) -> String { dataDirectory.appendingPathComponent("\(id).media").path }

    private func machine(key: String, url: URL, size: Int64?, etag: String?, lastModified: String?, ranges: ByteRanges) -> TransferMachine {
        TransferMachine(key: key, url: url.absoluteString, settings: settings, size: size, etag: etag, lastModified: lastModified, ranges: ranges)
    }

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
            if let size = record.size, let last = ranges.ranges.last, last.upperBound > size { ranges.clip(to: size) }
            if ranges != record.ranges { try index.commitRanges(id: record.id, ranges) }
            let entry = CacheEntry(
                id: record.id, key: record.key, url: url,
                machine: machine(key: record.key, url: url, size: record.size, etag: record.etag, lastModified: record.lastModified, ranges: ranges),
                lastAccess: record.lastAccess)
            entries[record.key] = entry
            total += entry.countedBytes
            owned.insert("\(record.id).media")
        }
        let files = (try? FileManager.default.contentsOfDirectory(atPath: dataDirectory.path)) ?? []
        for file in files where !owned.contains(file) {
            unlink(dataDirectory.appendingPathComponent(file).path)
        }
    }

    // MARK: Keys and sources

    func register(url: URL, key: String) throws(MediaCacheError) {
        lock.lock()
        defer { lock.unlock() }
        guard !isShutDown else { throw .shutDown }
        origins[key] = url
        if let entry = entries[key], entry.url != url, !entry.inUse {
            entry.url = url
            entry.machine.url = url.absoluteString
        }
    }

    func origin(ofKey key: String) -> URL? {
        locked { origins[key] ?? entries[key]?.url }
    }

    /// The entry for `key`, made (and recorded in the index) when missing. Making one runs on
    /// `io`, the executor of the store's file and index work, so the store's one lock is never
    /// held across the index insert and two readers asking for a new key at once make it once.
    /// Blocks on `io` when it makes one: call it off Swift's cooperative pool (async code uses
    /// ``makeEntryOnIO(_:)`` through ``onIO(_:)``).
    func entry(for key: String) throws(MediaCacheError) -> CacheEntry {
        if let found = try existingEntry(key) { return found }
        return try io.sync { [self] () -> Result<CacheEntry, MediaCacheError> in
            do throws(MediaCacheError) { return .success(try makeEntryOnIO(key)) } catch { return .failure(error) }
        }.get()
    }

    /// The entry for `key` when there is one (its URL brought up to date when it is idle).
    private func existingEntry(_ key: String) throws(MediaCacheError) -> CacheEntry? {
        let existing: (CacheEntry?, Bool) = locked {
            let entry = entries[key]
            if let entry, let url = origins[key], url != entry.url, !entry.inUse {
                entry.url = url
                entry.machine.url = url.absoluteString
            }
            return (entry, isShutDown)
        }
        guard !existing.1 else { throw .shutDown }
        return existing.0
    }

    /// ``entry(for:)``'s work on `io`: the entry another caller made meanwhile, or a new one
    /// recorded in the index. Runs only on `io`, one at a time.
    private func makeEntryOnIO(_ key: String) throws(MediaCacheError) -> CacheEntry {
        if let found = try existingEntry(key) { return found }
        guard let url = locked({ origins[key] }) else { throw .unknownSource(key) }
        let now = Date().timeIntervalSince1970
        let id: Int64
        do throws(MediaCacheError) {
            id = try index.insert(key: key, url: url.absoluteString, now: now)
        } catch .diskFull {
            // The disk is full (of this cache, often): make room from what nobody uses, once.
            guard evict(bytes: 1 << 20, now: true) > 0 else { throw .diskFull(path: directory.path) }
            id = try index.insert(key: key, url: url.absoluteString, now: now)
        }
        let entry = CacheEntry(
            id: id, key: key, url: url, machine: machine(key: key, url: url, size: nil, etag: nil, lastModified: nil, ranges: ByteRanges()),
            lastAccess: now)
        locked { entries[key] = entry }
        return entry
    }

    func nextIDLocked() -> UInt64 {
        nextID += 1
        return nextID
    }

    // MARK: Feeding the machines

    /// Feeds `input` to the entry's machine, under the lock: starts and cancels request tasks,
    /// answers readers, keeps the total; returns the actions to carry out after unlocking.
    func feedLocked(_ entry: CacheEntry, _ input: TransferMachine.Input) -> [TransferMachine.Action] {
        let actions = entry.machine.handle(input)
        if logger.logLevel <= .trace {
            logger.trace("\(entry.key): \(input) -> \(actions)")
        }
        return applyLocked(actions, to: entry)
    }

    /// Continuations taken out under the lock, resumed by ``perform(_:for:)`` after it.
    private var pendingResumptions: [UInt64: CheckedContinuation<Int64, any Error>] = [:]

    /// Feeds `input` and carries out what it asks for.
    func feed(_ entry: CacheEntry, _ input: TransferMachine.Input) {
        lock.lock()
        let actions = feedLocked(entry, input)
        lock.unlock()
        perform(actions, for: entry)
    }

    /// Carries out a machine's actions outside the lock: file and index work on `io`, events,
    /// precaches; then arms the next tick and evicts what the capacity asks.
    func perform(_ actions: [TransferMachine.Action], for entry: CacheEntry) {
        for action in actions {
            switch action {
            case .truncateFile:
                let path = dataPath(entry.id)
                io.async { _ = truncate(path, 0) }
            case .record:
                io.async { [self] in record(entry) }
            case .recordOrigin:
                io.async { [self] in recordOrigin(entry) }
            case .settlePrecache(let id, let result):
                guard let continuation = locked({ pendingResumptions.removeValue(forKey: id) }) else { continue }
                switch result {
                case .success(let bytes): continuation.resume(returning: bytes)
                case .failure(let error): continuation.resume(throwing: error)
                }
            case .emit(let event):
                if case .failed(_, let error) = event {
                    logger.warning("download failed", metadata: ["key": "\(entry.key)", "error": "\(error)"])
                }
                if case .invalidated(_, let reason) = event {
                    logger.info("cache entry dropped", metadata: ["key": "\(entry.key)", "reason": "\(reason)"])
                }
                eventQueue.async { [self] in deliver(event) }
            case .startRequest, .cancelRequest, .receiveBody, .answer:
                break
            }
        }
        armTick(entry)
        evictIfNeeded()
    }

    /// Schedules a tick at the machine's next deadline, unless one is armed as early.
    private func armTick(_ entry: CacheEntry) {
        let due: ContinuousClock.Instant? = locked {
            guard let deadline = entry.machine.nextDeadline else { return nil }
            if let armed = entry.armedTick, armed <= deadline { return nil }
            entry.armedTick = deadline
            return deadline
        }
        guard let due else { return }
        let delay = max(.zero, due - .now)
        let nanoseconds = Int(delay.components.seconds) * 1_000_000_000 + Int(delay.components.attoseconds / 1_000_000_000)
        DispatchQueue.global().asyncAfter(deadline: .now() + .nanoseconds(nanoseconds + 1_000_000)) { [weak self] in
            guard let self else { return }
            let stillOurs: Bool = locked {
                guard entry.armedTick == due else { return false }
                entry.armedTick = nil
                return true
            }
            if stillOurs { feed(entry, .tick(.now)) }
        }
    }

    // MARK: Index and file (on `io`)

    /// Flushes the entry's file and records its ranges as they are now.
    private func record(_ entry: CacheEntry) {
        let ranges = locked { entry.machine.ranges }
        let fd = open(dataPath(entry.id), O_RDONLY | O_CLOEXEC)
        if fd >= 0 {
            _ = fdatasync(fd)
            close(fd)
        }
        do {
            try index.commitRanges(id: entry.id, ranges)
            locked { _ = entry.machine.handle(.recorded(ranges)) }
        } catch {
            logger.error("cache index write failed", metadata: ["key": "\(entry.key)", "error": "\(error)"])
        }
    }

    private func recordOrigin(_ entry: CacheEntry) {
        let (url, size, etag, lastModified) = locked { (entry.url.absoluteString, entry.machine.size, entry.machine.etag, entry.machine.lastModified) }
        do {
            try index.updateOrigin(id: entry.id, url: url, size: size, etag: etag, lastModified: lastModified)
        } catch {
            logger.error("cache index write failed", metadata: ["key": "\(entry.key)", "error": "\(error)"])
        }
    }

    /// Runs `body` on `io` and returns its result, suspending (not blocking) the caller.
    private func onIO<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { continuation in io.async { continuation.resume(returning: body()) } }
    }

    // MARK: Requests

    /// One HTTP request: bytes [start, end) (end nil: to the end), written as they arrive. The
    /// transfer's callbacks run on its own thread, which waits for `io` to write each piece.
    private func fetch(_ entry: CacheEntry, request id: UInt64, start: Int64, end: Int64?) async {
        let url = locked { entry.url }
        let transfer = HTTPTransfer(
            url: url.absoluteString, range: "\(start)-\(end.map { String($0 - 1) } ?? "")", userAgent: configuration.userAgent,
            connectTimeout: configuration.connectTimeout, readTimeout: configuration.readTimeout,
            maximumRedirects: configuration.maximumRedirects)
        let path = dataPath(entry.id)
        let body = BodyTarget()
        let outcome = await transfer.run(onHead: { [self] head in
            let machineHead = TransferMachine.ResponseHead(head)
            let (accepted, rest) = locked {
                let accepted = entry.machine.handle(.responseHead(request: id, machineHead, .now))
                if logger.logLevel <= .trace { logger.trace("\(entry.key): head \(machineHead) -> \(accepted)") }
                return (accepted, applyLocked(accepted, to: entry))
            }
            perform(rest, for: entry)
            var bodyStart: Int64?
            for case .receiveBody(id, let at) in accepted { bodyStart = at }
            guard let bodyStart else { return false }
            let fd = io.sync { open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600) }
            guard fd >= 0 else {
                let code = errno
                let error: MediaCacheError = code == ENOSPC ? .diskFull(path: path) : .fileFailed(path: path, reason: String(cString: strerror(code)))
                feed(entry, .requestFailed(request: id, error, .now))
                return false
            }
            body.fd = fd
            body.offset = bodyStart
            return true
        }, onBody: { [self] bytes in
            // Alive, before the write (which waits for `io`): a reader that waits meanwhile must
            // not take the request for stalled and replace it, or the server sends what is
            // already on its way again (two whole transfers of one key, seen under load).
            feed(entry, .bodyArriving(request: id, .now))
            let at = body.offset
            let written = io.sync { () -> Result<Bool, MediaCacheError> in
                // Only the current request writes (a replaced one may still be delivering).
                guard locked({ entry.machine.request?.id == id }) else { return .success(false) }
                return write(bytes, to: body.fd, at: at, path: path).map { true }
            }
            switch written {
            case .success(true):
                body.offset = at + Int64(bytes.count)
                feed(entry, .received(request: id, count: bytes.count, .now))
                return true
            case .success(false):
                return false
            case .failure(let error):
                // Closed before the failure is told: an evicted file's space (a full disk) is
                // free only once no descriptor holds it.
                let fd = body.fd
                body.fd = -1
                io.sync { _ = close(fd) }
                feed(entry, .requestFailed(request: id, error, .now))
                return false
            }
        })
        if body.fd >= 0 {
            let fd = body.fd
            io.async { close(fd) }
        }
        switch outcome {
        case .finished:
            feed(entry, .bodyEnded(request: id, .now))
        case .abandoned:
            return
        case .failed(let error):
            guard locked({ entry.machine.request?.id == id }) else { return }
            feed(entry, .requestFailed(request: id, error, .now))
        }
    }

    /// Where a request's body goes: its file and the next byte's offset. Touched only by the
    /// request's transfer thread (its callbacks, one at a time), then read after it ended.
    private final class BodyTarget: @unchecked Sendable {
        var fd: Int32 = -1
        var offset: Int64 = 0
    }

    /// Under the lock: starts and cancels request tasks and answers readers as `actions` ask,
    /// keeps the total; returns the actions to carry out after unlocking (``perform(_:for:)``).
    private func applyLocked(_ actions: [TransferMachine.Action], to entry: CacheEntry) -> [TransferMachine.Action] {
        var rest: [TransferMachine.Action] = []
        for action in actions {
            switch action {
            case .startRequest(let id, let start, let end):
                entry.requests[id] = Task { [self] in await fetch(entry, request: id, start: start, end: end) }
            case .cancelRequest(let id):
                entry.requests.removeValue(forKey: id)?.cancel()
            case .answer(let reader, let answer):
                if let waiter = entry.waiters[reader] {
                    waiter.answer = answer
                    waiter.semaphore.signal()
                }
            case .settlePrecache(let id, let result):
                if let continuation = entry.precacheContinuations.removeValue(forKey: id) {
                    rest.append(.settlePrecache(id, result))
                    pendingResumptions[id] = continuation
                }
            case .receiveBody:
                break
            default:
                rest.append(action)
            }
        }
        let count = entry.machine.ranges.count
        total += count - entry.countedBytes
        entry.countedBytes = count
        return rest
    }

    /// Writes all of `bytes` at `offset` (on `io`); on a full disk evicts what nobody uses, once.
    private func write(_ bytes: UnsafeRawBufferPointer, to fd: Int32, at offset: Int64, path: String) -> Result<Void, MediaCacheError> {
        var written = 0
        var evictedForSpace = false
        while written < bytes.count {
            let result = pwrite(fd, bytes.baseAddress!.advanced(by: written), bytes.count - written, off_t(offset) + off_t(written))
            if result < 0 {
                let code = errno
                if code == EINTR { continue }
                if code == ENOSPC, !evictedForSpace {
                    evictedForSpace = true
                    if evict(bytes: Int64(bytes.count) * 4, now: true) > 0 { continue }
                }
                return .failure(code == ENOSPC ? .diskFull(path: path) : .fileFailed(path: path, reason: String(cString: strerror(code))))
            }
            written += result
        }
        return .success(())
    }

    // MARK: Precache

    func precache(key: String, target: Int64) async throws(MediaCacheError) -> Int64 {
        let made = await onIO { [self] () -> Result<CacheEntry, MediaCacheError> in
            do throws(MediaCacheError) { return .success(try makeEntryOnIO(key)) } catch { return .failure(error) }
        }
        let entry = try made.get()
        let id = locked { nextIDLocked() }
        do {
            return try await withTaskCancellationHandler {
                try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Int64, any Error>) in
                    lock.lock()
                    if isShutDown || cancelledPrecaches.remove(id) != nil {
                        let error: MediaCacheError = isShutDown ? .shutDown : .cancelled(key: key)
                        lock.unlock()
                        continuation.resume(throwing: error)
                        return
                    }
                    entry.precacheContinuations[id] = continuation
                    let actions = feedLocked(entry, .precacheAdded(id, target: target, .now))
                    lock.unlock()
                    perform(actions, for: entry)
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

    private func cancelPrecache(id: UInt64, entry: CacheEntry) {
        lock.lock()
        guard entry.precacheContinuations[id] != nil else {
            cancelledPrecaches.insert(id)
            lock.unlock()
            return
        }
        let actions = feedLocked(entry, .precacheCancelled(id))
        lock.unlock()
        perform(actions, for: entry)
    }

    func cancelPrecaches(key: String) {
        guard let entry = locked({ entries[key] }) else { return }
        lock.lock()
        var actions: [TransferMachine.Action] = []
        for id in entry.machine.precaches.keys.sorted() { actions += feedLocked(entry, .precacheCancelled(id)) }
        lock.unlock()
        perform(actions, for: entry)
    }

    /// Reads bytes `range` of a cached entry (for the MP4 header parse), or nil when they are
    /// not all cached.
    func cachedBytes(key: String, range: Range<Int64>) -> [UInt8]? {
        guard let path = locked({ entries[key].flatMap { $0.machine.ranges.contains(range) ? dataPath($0.id) : nil } }) else { return nil }
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var bytes = [UInt8](repeating: 0, count: Int(range.count))
        let read = bytes.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, off_t(range.lowerBound)) }
        return read == bytes.count ? bytes : nil
    }

    func size(ofKey key: String) -> Int64? {
        locked { entries[key]?.machine.size }
    }

    // MARK: Eviction

    /// Evicts least recently used entries nobody uses until the total fits the capacity.
    private func evictIfNeeded() {
        let excess = locked { total - configuration.capacity }
        if excess > 0 { _ = evict(bytes: excess) }
    }

    /// Evicts unused entries, oldest access first, until `bytes` are freed; returns the bytes
    /// freed. Their files and index rows go on `io` (`now`: here, when already on `io`).
    private func evict(bytes: Int64, now: Bool = false) -> Int64 {
        let victims: [CacheEntry] = locked {
            var freed: Int64 = 0
            var victims: [CacheEntry] = []
            let candidates = entries.values.filter { !$0.inUse && !$0.machine.ranges.isEmpty }.sorted { $0.lastAccess < $1.lastAccess }
            for entry in candidates where freed < bytes {
                freed += entry.countedBytes
                total -= entry.countedBytes
                entries[entry.key] = nil
                victims.append(entry)
            }
            return victims
        }
        let work: @Sendable () -> Void = { [self] in
            for entry in victims {
                unlink(dataPath(entry.id))
                try? index.delete(id: entry.id)
            }
        }
        if now { work() } else { io.async(execute: work) }
        for entry in victims {
            let key = entry.key, size = entry.countedBytes
            eventQueue.async { [self] in deliver(.evicted(key: key, bytes: size)) }
        }
        return victims.reduce(0) { $0 + $1.countedBytes }
    }

    // MARK: Read-outs

    func entry(forKey key: String) -> MediaCacheEntry? {
        locked { entries[key].map(Self.snapshot) }
    }

    var allEntries: [MediaCacheEntry] {
        locked { entries.values.map(Self.snapshot).sorted { $0.key < $1.key } }
    }

    var totalBytes: Int64 { locked { total } }

    func usage(for player: PlayerID) -> MediaCacheUsage {
        locked { usage[player] ?? MediaCacheUsage() }
    }

    private static func snapshot(_ entry: CacheEntry) -> MediaCacheEntry {
        MediaCacheEntry(
            key: entry.key, url: entry.url, size: entry.machine.size, cachedRanges: entry.machine.ranges, isComplete: entry.machine.isComplete,
            readers: entry.readerPlayers.sorted(), isDownloading: entry.machine.isDownloading,
            lastAccess: Date(timeIntervalSince1970: entry.lastAccess), bytesFromNetwork: entry.machine.bytesFromNetwork,
            bytesServedFromCache: entry.servedFromCache, bytesServedFromNetwork: entry.servedFromNetwork)
    }

    // MARK: Events

    func subscribe(bufferLimit: Int) -> EventStream<MediaCacheEvent> {
        let (stream, continuation) = EventStream<MediaCacheEvent>.makeStream(bufferLimit: bufferLimit)
        broadcast.add(yield: { continuation.yield($0) }, finish: { continuation.finish() }, isEnded: { continuation.isFinished })
        return stream
    }

    /// On the event queue: in order, never under the lock.
    private func deliver(_ event: MediaCacheEvent) {
        broadcast.yield(event)
    }

    // MARK: Shutdown

    func shutdown() async {
        let begun: ([Task<Void, Never>], [(CacheEntry, [TransferMachine.Action])], [CacheEntry])? = locked {
            guard !isShutDown else { return nil }
            isShutDown = true
            var tasks: [Task<Void, Never>] = []
            var work: [(CacheEntry, [TransferMachine.Action])] = []
            for entry in entries.values {
                tasks += entry.requests.values
                work.append((entry, feedLocked(entry, .shutdown)))
            }
            return (tasks, work, Array(entries.values))
        }
        guard let (tasks, work, all) = begun else { return }
        for (entry, actions) in work { perform(actions, for: entry) }
        for task in tasks { await task.value }
        // What arrived is recorded, then the events drain.
        await onIO { [self] in
            for entry in all where locked({ entry.machine.committed != entry.machine.ranges }) { record(entry) }
        }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            eventQueue.async { continuation.resume() }
        }
        broadcast.finish()
        locked {
            if lockFD >= 0 {
                close(lockFD)
                lockFD = -1
            }
        }
    }
}
