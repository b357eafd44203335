import PlayerKitCore
import PlayerKitSupport

/// The download logic of one cache entry as a pure state machine: inputs in (a reader wants
/// bytes, a response head, a body chunk written, the body's end, a failure, a tick of the
/// clock, a cancel, shutdown), actions out (start or cancel a request, answer a reader, record
/// the index, settle a precache, report an event). It does no I/O, takes no lock and reads no
/// clock: ``CacheStore`` owns one per entry under its lock, feeds it, and carries the actions
/// out after unlocking; the model-based tests feed it seeded random origins on a simulated clock.
///
/// The promises it keeps, checked by those tests:
/// - A read is answered (bytes, the end, or an error) by its deadline: `readTimeout` plus
///   ``Settings/slack`` after it began. ``nextDeadline`` says when to ``Input/tick(_:)`` it.
/// - Bytes are served only from the current validator's generation; a reader that already read
///   bytes of an older one fails ("the media changed on the server while it played").
/// - At most one request runs. A new one starts only where a reader or precache needs bytes,
///   after a failure only after a backoff that doubles, and never more than ``Settings/retries``
///   times in a row without progress.
/// - An origin without a length is complete when a body that ran to the end ends; an origin
///   that ignores Range (200 for a ranged request) is read from its start, once, through bytes
///   already cached rather than asked again.
struct TransferMachine: Sendable {
    typealias Instant = ContinuousClock.Instant

    struct Settings: Sendable {
        var readTimeout: Duration
        /// What a read's bound adds to `readTimeout` (the answer's own delivery, a timer's lateness).
        var slack: Duration = Self.readSlack
        var retries: Int
        var retryDelay: Duration
        var revalidateAlways: Bool
        var capacity: Int64
        var commitEvery: Int64 = 1 << 20
        var progressEvery: Int64 = 256 << 10
        /// The documented slack of a read's bound.
        static let readSlack: Duration = .milliseconds(500)
    }

    /// What a request's response said.
    struct ResponseHead: Sendable {
        var status: Int
        /// `Content-Range`: the first byte and the total (nil for `*`); `start` is -1 for `bytes */N`.
        var contentRange: (start: Int64, total: Int64?)?
        var contentLength: Int64?
        var etag: String?
        var lastModified: String?

        /// What a response's head says, its numbers read strictly: a `Content-Range` or
        /// `Content-Length` that is malformed or impossible counts as absent.
        init(_ head: HTTPTransfer.Head) {
            self.init(
                status: head.status,
                contentRange: head.headers["content-range"].flatMap(HTTPHeadReader.contentRange),
                contentLength: head.headers["content-length"].flatMap(HTTPHeadReader.count),
                etag: head.headers["etag"], lastModified: head.headers["last-modified"])
        }

        init(status: Int, contentRange: (start: Int64, total: Int64?)? = nil, contentLength: Int64? = nil, etag: String? = nil,
             lastModified: String? = nil) {
            self.status = status
            self.contentRange = contentRange
            self.contentLength = contentLength
            self.etag = etag
            self.lastModified = lastModified
        }
    }

    enum Input: Sendable {
        case readerOpened(UInt64, Instant)
        /// The reader wants up to `maximum` bytes at its position (`maximum` 0: only the size).
        case read(UInt64, maximum: Int, Instant)
        case seek(UInt64, to: Int64)
        /// mpv cancelled the reader's stream (teardown): its wait ends, its next reads fail.
        case cancelReader(UInt64)
        case readerClosed(UInt64, Instant)
        case precacheAdded(UInt64, target: Int64, Instant)
        case precacheCancelled(UInt64)
        case responseHead(request: UInt64, ResponseHead, Instant)
        /// Body bytes of the request reached its transfer and wait to be written (which may
        /// wait for the cache's file queue or its lock, for long on a loaded machine): the
        /// connection is alive, so it is not taken as stalled, whatever the delay until
        /// ``received(request:count:_:)``.
        case bodyArriving(request: UInt64, Instant)
        /// `count` body bytes were written at the request's cursor.
        case received(request: UInt64, count: Int, Instant)
        /// The body ended cleanly.
        case bodyEnded(request: UInt64, Instant)
        case requestFailed(request: UInt64, MediaCacheError, Instant)
        /// The index now holds `ranges` (a ``Action/record(ranges:)`` was carried out).
        case recorded(ByteRanges)
        case tick(Instant)
        case shutdown
    }

    enum ReadAnswer: Sendable, Hashable {
        case bytes(offset: Int64, count: Int, fromCache: Bool)
        case end
        case size(Int64?)
        case failed(MediaStreamError)
    }

    enum Action: Sendable {
        /// Ask for bytes `start..<end` (end nil: to the end). Body bytes go to the file from the
        /// offset ``receiveBody(request:at:)`` names.
        case startRequest(id: UInt64, start: Int64, end: Int64?)
        case cancelRequest(id: UInt64)
        /// Write the request's body from file offset `at` on (after its head was accepted).
        case receiveBody(request: UInt64, at: Int64)
        case answer(reader: UInt64, ReadAnswer)
        /// The cached bytes were dropped (the origin changed): empty the file.
        case truncateFile
        /// Flush the file, then record these ranges in the index (and feed back ``Input/recorded(_:)``).
        case record(ranges: ByteRanges)
        case recordOrigin(size: Int64?, etag: String?, lastModified: String?)
        case settlePrecache(UInt64, Result<Int64, MediaCacheError>)
        case emit(MediaCacheEvent)
    }

    struct Reader: Sendable {
        var position: Int64 = 0
        var generation: Int
        var bytesRead: Int64 = 0
        var cachedAtOpen: ByteRanges
        var cancelled = false
        var wait: Wait?
    }

    struct Wait: Sendable {
        var maximum: Int
        var since: Instant
        var deadline: Instant
    }

    struct Request: Sendable {
        let id: UInt64
        let start: Int64
        let end: Int64?
        let startedAt: Instant
        /// Where the next body byte goes (nil before the head).
        var cursor: Int64?
        var lastActivity: Instant
        var bytes: Int64 = 0
        var firstByteAt: Instant?
        /// A 200 answer to a ranged request: it runs through cached bytes rather than stop there.
        var fromStartIgnoringRange = false
        /// Body bytes reached the transfer and are being written (``Input/bodyArriving(request:_:)``
        /// until ``Input/received(request:count:_:)``): the connection is alive however long the
        /// write takes, so the request is not taken as stalled meanwhile.
        var delivering = false
    }

    let key: String
    var url: String
    let settings: Settings

    private(set) var size: Int64?
    /// The size is at most this (a 416 without a total, for a range past what is cached).
    private(set) var sizeAtMost: Int64?
    private(set) var etag: String?
    private(set) var lastModified: String?
    private(set) var validated = false
    private(set) var ranges: ByteRanges
    private(set) var committed: ByteRanges
    private(set) var generation = 0
    private(set) var readers: [UInt64: Reader] = [:]
    private(set) var precaches: [UInt64: Int64] = [:]
    private(set) var request: Request?
    private(set) var failure: MediaCacheError?
    private(set) var retryAt: Instant?
    private var attempts = 0
    private var invalidations = 0
    private var nextRequestID: UInt64 = 1
    /// The origin answered a ranged request with the whole body.
    private(set) var ignoresRanges = false
    private(set) var isShutDown = false
    private(set) var bytesFromNetwork: Int64 = 0
    private var lastProgress: Int64 = 0
    private var completionReported: Bool
    private var reportedStart = false
    /// Measured: body bytes a second of the requests so far, and a request's time to its first byte.
    private(set) var rate: Double?
    private(set) var latency: Duration?

    init(key: String, url: String, settings: Settings, size: Int64?, etag: String?, lastModified: String?, ranges: ByteRanges) {
        self.key = key
        self.url = url
        self.settings = settings
        self.size = size
        self.etag = etag
        self.lastModified = lastModified
        self.ranges = ranges
        self.committed = ranges
        self.completionReported = size.map { ranges.contains(0..<$0) } ?? false
    }

    var isComplete: Bool { size.map { ranges.contains(0..<$0) } ?? false }
    var inUse: Bool { !readers.isEmpty || !precaches.isEmpty || request != nil }
    var isDownloading: Bool { request != nil || retryAt != nil }

    /// When ``Input/tick(_:)`` is next due: the earliest read deadline, retry or request stall.
    var nextDeadline: Instant? {
        var deadlines = readers.values.compactMap { $0.wait?.deadline }
        if let retryAt { deadlines.append(retryAt) }
        if let request {
            deadlines.append(request.lastActivity + settings.readTimeout)
            // A reader waits on a request that may stall: look again when it has been silent
            // for ``stallAfter`` (only while that reader may still replace it).
            if request.cursor != nil, !request.fromStartIgnoringRange, !ignoresRanges, !request.delivering,
                readers.values.contains(where: { $0.wait.map { $0.maximum > 0 && $0.since > request.startedAt } ?? false })
            {
                deadlines.append(max(request.lastActivity + Self.stallAfter, request.startedAt + Self.stallAfter))
            }
        }
        return deadlines.min()
    }

    /// Whether reads must wait for the server's answer before serving cached bytes.
    private var mustValidate: Bool { !validated && (!isComplete || settings.revalidateAlways) }

    private var wantsNetwork: Bool {
        (!readers.isEmpty || !precaches.isEmpty) && (!isComplete || mustValidate)
    }

    // MARK: Inputs

    mutating func handle(_ input: Input) -> [Action] {
        var actions: [Action] = []
        switch input {
        case .readerOpened(let id, _):
            readers[id] = Reader(generation: generation, cachedAtOpen: ranges)
            failure = nil
        case .read(let id, let maximum, let now):
            guard var reader = readers[id] else { return [.answer(reader: id, .failed(.cancelled))] }
            if reader.cancelled || isShutDown { return [.answer(reader: id, .failed(.cancelled))] }
            reader.wait = Wait(maximum: maximum, since: now, deadline: now + settings.readTimeout + settings.slack)
            readers[id] = reader
        case .seek(let id, let offset):
            readers[id]?.position = max(0, offset)
        case .cancelReader(let id):
            readers[id]?.cancelled = true
            if readers[id]?.wait != nil {
                readers[id]?.wait = nil
                actions.append(.answer(reader: id, .failed(.cancelled)))
            }
        case .readerClosed(let id, _):
            if readers.removeValue(forKey: id)?.wait != nil { actions.append(.answer(reader: id, .failed(.cancelled))) }
        case .precacheAdded(let id, let target, _):
            precaches[id] = target
            failure = nil
        case .precacheCancelled(let id):
            if precaches.removeValue(forKey: id) != nil {
                actions.append(.settlePrecache(id, .failure(.cancelled(key: key))))
            }
        case .responseHead(let id, let head, let now):
            guard request?.id == id else { return [] }
            accept(head, now: now, into: &actions)
        case .bodyArriving(let id, let now):
            // Not a measure of progress (nothing is stored yet), only a sign of life.
            guard var running = request, running.id == id else { return [] }
            running.delivering = true
            running.lastActivity = max(running.lastActivity, now)
            request = running
            return []
        case .received(let id, let count, let now):
            guard request?.id == id, count > 0 else { return [] }
            received(count, now: now, into: &actions)
        case .bodyEnded(let id, let now):
            guard request?.id == id else { return [] }
            bodyEnded(now: now, into: &actions)
        case .requestFailed(let id, let error, let now):
            guard let running = request, running.id == id else { return [] }
            request = nil
            if running.bytes >= Self.progressResetsRetries { attempts = 0 }
            failed(error, now: now, into: &actions)
        case .recorded(let recorded):
            committed = recorded
        case .tick(let now):
            tick(now, into: &actions)
        case .shutdown:
            isShutDown = true
            if let request { actions.append(.cancelRequest(id: request.id)) }
            request = nil
            retryAt = nil
            for id in precaches.keys.sorted() { actions.append(.settlePrecache(id, .failure(.shutDown))) }
            precaches = [:]
            for (id, reader) in readers where reader.wait != nil {
                readers[id]?.wait = nil
                actions.append(.answer(reader: id, .failed(.cancelled)))
            }
            return actions
        }
        settle(into: &actions)
        if !isShutDown { plan(now: input.instant, into: &actions) }
        return actions
    }

    // MARK: Answers

    /// Answers every waiting reader that can be answered, fails them on a failure, settles
    /// precaches, reports progress.
    private mutating func settle(into actions: inout [Action]) {
        for id in readers.keys.sorted() {
            guard var reader = readers[id], let wait = reader.wait else { continue }
            if reader.generation != generation {
                guard reader.bytesRead == 0 else {
                    reader.wait = nil
                    readers[id] = reader
                    actions.append(.answer(reader: id, .failed(.unreadable(url: url, reason: "the media changed on the server while it played"))))
                    continue
                }
                reader.generation = generation
                reader.cachedAtOpen = ranges
                readers[id] = reader
            }
            var answer: ReadAnswer?
            if !mustValidate {
                if wait.maximum == 0 {
                    answer = .size(size)
                } else if let end = size ?? sizeAtMost.flatMap({ reader.position >= $0 ? $0 : nil }), reader.position >= end {
                    answer = .end
                } else {
                    let available = ranges.contiguousCount(from: reader.position)
                    if available > 0 {
                        let count = Int(min(Int64(wait.maximum), available))
                        let fromCache = reader.cachedAtOpen.contains(reader.position..<(reader.position + Int64(count)))
                        answer = .bytes(offset: reader.position, count: count, fromCache: fromCache)
                        reader.position += Int64(count)
                        reader.bytesRead += Int64(count)
                    }
                }
            }
            if answer == nil, let failure, request == nil, retryAt == nil {
                answer = wait.maximum == 0 ? .size(size) : .failed(Self.streamError(failure, url: url))
            }
            if let answer {
                reader.wait = nil
                readers[id] = reader
                actions.append(.answer(reader: id, answer))
            }
        }
        for (id, target) in precaches.sorted(by: { $0.key < $1.key }) {
            if !mustValidate, let size, ranges.contains(0..<min(target, size)) {
                precaches[id] = nil
                actions.append(.settlePrecache(id, .success(ranges.count)))
            } else if let failure, request == nil, retryAt == nil {
                precaches[id] = nil
                actions.append(.settlePrecache(id, .failure(failure)))
            }
        }
    }

    /// What a reader is told of a failed download.
    static func streamError(_ failure: MediaCacheError, url: String) -> MediaStreamError {
        if case .timedOut(_, let after) = failure { return .timedOut(url: url, after: after) }
        return .unreadable(url: url, reason: "\(failure)")
    }

    // MARK: Requests

    /// Starts, keeps or replaces the request, for what readers and precaches need.
    private mutating func plan(now: Instant?, into actions: inout [Action]) {
        guard wantsNetwork else {
            if let request {
                actions.append(.cancelRequest(id: request.id))
                self.request = nil
                if !isComplete { actions.append(.emit(.cancelled(key: key, cachedBytes: ranges.count))) }
            }
            retryAt = nil
            reportedStart = false
            return
        }
        guard let now, failure == nil, retryAt == nil else { return }
        if let running = request {
            // Replace it when a reader waits where it will not be in time.
            guard !running.fromStartIgnoringRange, !ignoresRanges, let cursor = running.cursor else { return }
            for reader in readers.values {
                guard let wait = reader.wait, wait.maximum > 0, !mustValidate else { continue }
                let position = reader.position
                if ranges.contiguousCount(from: position) > 0 { continue }
                if let size, position >= size { continue }
                // One replacement per wait: a request started since the wait began is its own.
                if running.startedAt >= wait.since { continue }
                if !shouldWait(for: running, cursor: cursor, position: position, deadline: wait.deadline, now: now) {
                    actions.append(.cancelRequest(id: running.id))
                    request = nil
                    start(at: position, now: now, into: &actions)
                    return
                }
            }
            return
        }
        guard let start = nextStart() else { return }
        self.start(at: start, now: now, into: &actions)
    }

    /// A request silent this long is taken as stalled when a reader waits on it.
    static let stallAfter: Duration = .seconds(1)
    /// A failed request that had brought this much resets the retry count (a flaky network
    /// makes progress; a server that resets every few bytes is not asked without end).
    static let progressResetsRetries: Int64 = 256 << 10

    /// Whether a reader at `position` is better served by the running request than by a new one.
    private func shouldWait(for running: Request, cursor: Int64, position: Int64, deadline: Instant, now: Instant) -> Bool {
        guard position >= cursor, position < (running.end ?? Int64.max) else { return false }
        // Nothing for a while: the connection may be dead; ask where the reader is. Not while
        // bytes that came are being written: then the cache is slow, not the connection.
        if !running.delivering, now - running.lastActivity >= Self.stallAfter { return false }
        let distance = Double(position - cursor)
        guard let rate = currentRate(of: running, now: now), rate > 0 else {
            // No measure yet: wait only for what is close.
            return distance <= 64 * 1024
        }
        let reach = Duration.seconds(distance / rate)
        if now + reach > deadline { return false }
        // A new request costs about its time to the first byte (measured; 50 ms before any measure).
        let cost = latency ?? .milliseconds(50)
        return reach <= cost * 2
    }

    private func currentRate(of running: Request, now: Instant) -> Double? {
        let elapsed = now - (running.firstByteAt ?? running.startedAt)
        if running.bytes > 0, elapsed > .milliseconds(50) { return Double(running.bytes) / elapsed.inSeconds }
        return rate
    }

    /// Where the next request starts, or nil when nobody needs bytes.
    private func nextStart() -> Int64? {
        let limit = size ?? sizeAtMost ?? Int64.max
        if isComplete {
            return mustValidate ? 0 : nil
        }
        let waiting = readers.values.filter { $0.wait.map { $0.maximum > 0 } ?? false }.map(\.position)
            .filter { $0 < limit && ranges.contiguousCount(from: $0) == 0 }
        if let position = waiting.min() { return position }
        if !readers.isEmpty {
            let from = readers.values.map(\.position).min() ?? 0
            if let gap = ranges.firstGap(from: from, below: limit) ?? ranges.firstGap(from: 0, below: limit) { return gap }
        }
        if let target = precaches.values.max(), let gap = ranges.firstGap(from: 0, below: min(limit, target)) { return gap }
        if mustValidate { return ranges.firstGap(from: 0, below: limit) ?? 0 }
        return nil
    }

    private mutating func start(at start: Int64, now: Instant, into actions: inout [Action]) {
        var end: Int64?
        if isComplete {
            end = 1  // a revalidation: one byte, to compare the validators
        } else {
            end = ranges.nextStart(after: start)
            if readers.isEmpty, let target = precaches.values.max(), target < Int64.max { end = min(end ?? target, max(target, start + 1)) }
        }
        let id = nextRequestID
        nextRequestID += 1
        request = Request(id: id, start: start, end: end, startedAt: now, lastActivity: now)
        actions.append(.startRequest(id: id, start: start, end: end))
        if !reportedStart {
            reportedStart = true
            actions.append(.emit(.downloadStarted(key: key, offset: start)))
        }
    }

    private mutating func accept(_ head: ResponseHead, now: Instant, into actions: inout [Action]) {
        guard var running = request else { return }
        running.lastActivity = now
        request = running
        var total: Int64?
        var bodyStart = running.start
        switch head.status {
        case 206:
            guard let range = head.contentRange, range.start == running.start else {
                request = nil
                actions.append(.cancelRequest(id: running.id))
                failed(.originChanged(key: key, reason: "the server sent a range other than the one asked for"), now: now, into: &actions)
                return
            }
            total = range.total
        case 200:
            total = head.contentLength
            bodyStart = 0
            if running.start > 0 {
                ignoresRanges = true
                running.fromStartIgnoringRange = true
            }
        case 416:
            request = nil
            actions.append(.cancelRequest(id: running.id))
            answered416(total: head.contentRange?.total, at: running.start, now: now, into: &actions)
            return
        default:
            request = nil
            actions.append(.cancelRequest(id: running.id))
            failed(.httpStatus(head.status, url: url), now: now, into: &actions)
            return
        }
        var reason: String?
        if !ranges.isEmpty || size != nil {
            if let old = etag, let new = head.etag, old != new {
                reason = "ETag \(old) became \(new)"
            } else if let old = lastModified, let new = head.lastModified, old != new {
                reason = "Last-Modified \(old) became \(new)"
            } else if let old = size, let total, old != total {
                reason = "length \(old) became \(total)"
            }
        }
        if let reason { invalidate(reason: reason, into: &actions) }
        size = total ?? size
        etag = head.etag
        lastModified = head.lastModified
        validated = true
        actions.append(.recordOrigin(size: size, etag: etag, lastModified: lastModified))
        if let size, size > settings.capacity {
            request = nil
            actions.append(.cancelRequest(id: running.id))
            failure = .capacityTooSmall(key: key, size: size, capacity: settings.capacity)
            attempts = 0
            actions.append(.emit(.failed(key: key, failure!)))
            return
        }
        running.cursor = bodyStart
        request = running
        actions.append(.receiveBody(request: running.id, at: bodyStart))
    }

    private mutating func answered416(total: Int64?, at start: Int64, now: Instant, into actions: inout [Action]) {
        if let total {
            if let last = ranges.ranges.last, last.upperBound > total {
                invalidate(reason: "the server has \(total) bytes, fewer than cached", into: &actions)
            } else if let size, size != total {
                invalidate(reason: "length \(size) became \(total)", into: &actions)
            }
            size = total
            validated = true
            actions.append(.recordOrigin(size: size, etag: etag, lastModified: lastModified))
        } else if ranges.contains(0..<start) {
            // Everything before `start` is here and nothing at it: the media ends there.
            size = start
            validated = true
            actions.append(.recordOrigin(size: size, etag: etag, lastModified: lastModified))
        } else {
            sizeAtMost = min(sizeAtMost ?? start, start)
        }
        if ranges.count > 0, let size { ranges.clip(to: size) }
        reportCompletion(into: &actions)
    }

    private mutating func received(_ count: Int, now: Instant, into actions: inout [Action]) {
        guard var running = request, let cursor = running.cursor else { return }
        let range = cursor..<(cursor + Int64(count))
        let before = ranges.count
        ranges.insert(range)
        bytesFromNetwork += Int64(count)
        running.cursor = range.upperBound
        running.bytes += Int64(count)
        running.lastActivity = now
        running.delivering = false
        if running.firstByteAt == nil {
            running.firstByteAt = now
            let firstByte = now - running.startedAt
            latency = latency.map { ($0 * 3 + firstByte) / 4 } ?? firstByte
        }
        if let first = running.firstByteAt, now - first > .milliseconds(100) {
            rate = Double(running.bytes) / (now - first).inSeconds
        }
        request = running
        if ranges.count - before > 0, let size, range.upperBound > size { ranges.clip(to: size) }
        if ranges.count - lastProgress >= settings.progressEvery || isComplete {
            lastProgress = ranges.count
            actions.append(.emit(.progress(key: key, cachedBytes: ranges.count, size: size)))
        }
        if ranges.count - committed.count >= settings.commitEvery { actions.append(.record(ranges: ranges)) }
        reportCompletion(into: &actions)
        // Done: its end, the media's end, or (asked by range) bytes already cached.
        let upper = range.upperBound
        let reachedEnd = running.end.map { upper >= $0 } ?? false
        let reachedSize = size.map { upper >= $0 } ?? false
        let reachedCached = !running.fromStartIgnoringRange && ranges.contiguousCount(from: upper) > 0
        if reachedEnd || reachedSize || reachedCached {
            // Its body may still be open (a server that sends past the range, keep-alive): close it.
            actions.append(.cancelRequest(id: running.id))
            finishRequest(into: &actions)
        }
    }

    private mutating func bodyEnded(now: Instant, into actions: inout [Action]) {
        guard let running = request else { return }
        let cursor = running.cursor ?? running.start
        let expected = running.end.map { min($0, size ?? $0) } ?? size
        if let expected, cursor < expected {
            request = nil
            failed(.connectionFailed(url: url, reason: "the body ended at byte \(cursor) of \(expected)"), now: now, into: &actions)
            return
        }
        if size == nil, running.cursor != nil {
            // No length: a body that ran to its end marks the end of the media.
            size = cursor
            if let last = ranges.ranges.last, last.upperBound > cursor { ranges.clip(to: cursor) }
            actions.append(.recordOrigin(size: size, etag: etag, lastModified: lastModified))
            reportCompletion(into: &actions)
        }
        finishRequest(into: &actions)
    }

    private mutating func finishRequest(into actions: inout [Action]) {
        request = nil
        attempts = 0
        if committed != ranges { actions.append(.record(ranges: ranges)) }
    }

    private mutating func reportCompletion(into actions: inout [Action]) {
        guard isComplete, !completionReported, let size else { return }
        completionReported = true
        if lastProgress != ranges.count {
            lastProgress = ranges.count
            actions.append(.emit(.progress(key: key, cachedBytes: ranges.count, size: size)))
        }
        if committed != ranges { actions.append(.record(ranges: ranges)) }
        actions.append(.emit(.completed(key: key, size: size)))
    }

    private mutating func failed(_ error: MediaCacheError, now: Instant, into actions: inout [Action]) {
        if case .originChanged = error, invalidations < 2 {
            invalidations += 1
            retryAt = now
            return
        }
        if error.isRetryable, attempts < settings.retries {
            retryAt = now + settings.retryDelay * (1 << attempts)
            attempts += 1
            return
        }
        failure = error
        attempts = 0
        if committed != ranges { actions.append(.record(ranges: ranges)) }
        actions.append(.emit(.failed(key: key, error)))
    }

    private mutating func invalidate(reason: String, into actions: inout [Action]) {
        generation += 1
        ranges = ByteRanges()
        committed = ByteRanges()
        size = nil
        sizeAtMost = nil
        etag = nil
        lastModified = nil
        completionReported = false
        lastProgress = 0
        actions.append(.truncateFile)
        actions.append(.record(ranges: ByteRanges()))
        actions.append(.emit(.invalidated(key: key, reason: reason)))
    }

    private mutating func tick(_ now: Instant, into actions: inout [Action]) {
        if let retryAt, now >= retryAt { self.retryAt = nil }
        if let running = request, now - running.lastActivity >= settings.readTimeout {
            request = nil
            actions.append(.cancelRequest(id: running.id))
            failed(.timedOut(url: url, after: settings.readTimeout), now: now, into: &actions)
        }
        // Reads past their deadline (answers that are possible now come first, from settle).
        settle(into: &actions)
        for id in readers.keys.sorted() {
            guard let wait = readers[id]?.wait, now >= wait.deadline else { continue }
            readers[id]?.wait = nil
            actions.append(.answer(reader: id, wait.maximum == 0 ? .size(size) : .failed(.timedOut(url: url, after: settings.readTimeout))))
        }
    }
}

extension TransferMachine.Input {
    /// The time an input carries (nil for inputs that plan nothing new).
    var instant: ContinuousClock.Instant? {
        switch self {
        case .readerOpened(_, let now), .read(_, _, let now), .readerClosed(_, let now), .precacheAdded(_, _, let now),
            .responseHead(_, _, let now), .received(_, _, let now), .bodyEnded(_, let now), .requestFailed(_, _, let now),
            .tick(let now):
            return now
        case .seek, .cancelReader, .precacheCancelled, .recorded, .shutdown, .bodyArriving:
            return nil
        }
    }
}

extension MediaCacheError {
    /// Failures worth another try: the network, not the server's answer or the disk.
    var isRetryable: Bool {
        switch self {
        case .connectionFailed, .timedOut: return true
        case .httpStatus(let status, _): return status >= 500
        default: return false
        }
    }
}
