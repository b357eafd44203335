import CCurl
import Foundation
import PlayerKitSupport

/// One HTTP GET of a byte range, on libcurl (the system's), on a thread of its own: the cache's
/// downloads block nothing of Swift's cooperative pool, and their callbacks may wait for the
/// cache's file queue.
///
/// Bounds, on the monotonic clock: connecting within `connectTimeout` (libcurl's own); the final
/// response's head within `connectTimeout + readTimeout` of the start; then no more than
/// `readTimeout` without a byte. Redirects are followed up to `maximumRedirects` (none when 0: a
/// 3xx is then the final response). No compression is asked for: the bytes are the file's.
final class HTTPTransfer: Sendable {
    /// The final response's status and headers (names lowercased; the last of a repeated name).
    struct Head: Sendable {
        var status: Int
        var headers: [String: String]
    }

    /// How a transfer ended.
    enum Outcome: Sendable, Equatable {
        /// The body ended as the server said it would.
        case finished
        /// A callback declined the body or stopped it, or ``cancel()`` was called.
        case abandoned
        /// The transfer failed: no connection, a reset, a truncated body, too many redirects, or
        /// a bound reached.
        case failed(MediaCacheError)
    }

    let url: String
    private let range: String
    private let userAgent: String
    private let connectTimeout: Duration
    private let readTimeout: Duration
    private let maximumRedirects: Int
    /// Set by ``cancel()``; read by the transfer's thread between its steps.
    private let cancelled = Locked(false)
    /// The transfer's multi handle while it runs, to wake its poll on ``cancel()``.
    private let running = Locked<MultiHandle?>(nil)

    /// libcurl's multi handle; curl_multi_wakeup may be called on it from any thread.
    private struct MultiHandle: @unchecked Sendable {
        let pointer: UnsafeMutableRawPointer
    }

    /// libcurl's global state, set up once for the process before the first transfer.
    private static let globalSetup: Void = {
        _ = playerkit_curl_global_init()
    }()

    /// A transfer of bytes `range` ("start-end", or "start-" to the end) of `url`.
    init(url: String, range: String, userAgent: String, connectTimeout: Duration, readTimeout: Duration, maximumRedirects: Int) {
        self.url = url
        self.range = range
        self.userAgent = userAgent
        self.connectTimeout = connectTimeout
        self.readTimeout = readTimeout
        self.maximumRedirects = maximumRedirects
    }

    /// Stops the transfer as soon as its thread sees it (at once if it waits for the network):
    /// ``run(onHead:onBody:)`` returns ``Outcome/abandoned``.
    func cancel() {
        let multi = running.withLock { handle -> MultiHandle? in
            cancelled.withLock { $0 = true }
            return handle
        }
        if let multi { curl_multi_wakeup(multi.pointer) }
    }

    /// Runs the transfer on a new thread and returns how it ended; the calling task suspends
    /// meanwhile, and cancelling it cancels the transfer. `onHead` is called once, with the
    /// final response's head, and returns whether to take its body; `onBody` gets each piece of
    /// the body in order and returns false to stop. Both run on the transfer's thread, one at a
    /// time, and may block it.
    func run(onHead: @escaping @Sendable (Head) -> Bool, onBody: @escaping @Sendable (UnsafeRawBufferPointer) -> Bool) async -> Outcome {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Outcome, Never>) in
                let thread = Thread { [self] in
                    continuation.resume(returning: perform(onHead: onHead, onBody: onBody))
                }
                thread.name = "PlayerKit.cache.http"
                thread.start()
            }
        } onCancel: {
            cancel()
        }
    }

    // MARK: On the transfer's thread

    /// What the C callbacks reach through their context pointer.
    fileprivate final class Context {
        let onHead: (Head) -> Bool
        let onBody: (UnsafeRawBufferPointer) -> Bool
        let followsRedirects: Bool
        /// The heads in the header lines.
        var reader = HTTPHeadReader()
        /// nil until the final head; then whether its body is taken.
        var takesBody: Bool?
        /// A callback said to stop (not an error of the transfer).
        var stopped = false
        /// When a byte (of a head or a body) last arrived.
        var lastActivity = ContinuousClock.now

        init(onHead: @escaping (Head) -> Bool, onBody: @escaping (UnsafeRawBufferPointer) -> Bool, followsRedirects: Bool) {
            self.onHead = onHead
            self.onBody = onBody
            self.followsRedirects = followsRedirects
        }
    }

    private func perform(onHead: @escaping (Head) -> Bool, onBody: @escaping (UnsafeRawBufferPointer) -> Bool) -> Outcome {
        _ = Self.globalSetup
        // The easy handle keeps the error buffer's address until it is cleaned up (deferred later,
        // so it runs first).
        let errorText = UnsafeMutablePointer<CChar>.allocate(capacity: Int(CURL_ERROR_SIZE) + 1)
        errorText.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE) + 1)
        defer { errorText.deallocate() }
        guard let easy = curl_easy_init() else { return .failed(.connectionFailed(url: url, reason: "libcurl could not start a transfer")) }
        defer { curl_easy_cleanup(easy) }
        guard let multi = curl_multi_init() else { return .failed(.connectionFailed(url: url, reason: "libcurl could not start a transfer")) }
        defer { curl_multi_cleanup(multi) }

        let context = Context(onHead: onHead, onBody: onBody, followsRedirects: maximumRedirects > 0)
        let pointer = Unmanaged.passUnretained(context).toOpaque()
        let configured = { () -> Bool in
            var ok = true
            func set(_ code: CURLcode) { if code != CURLE_OK { ok = false } }
            set(playerkit_curl_set_string(easy, CURLOPT_URL, url))
            set(playerkit_curl_set_string(easy, CURLOPT_RANGE, range))
            set(playerkit_curl_set_string(easy, CURLOPT_USERAGENT, userAgent))
            set(playerkit_curl_set_long(easy, CURLOPT_HTTP_VERSION, Int(CURL_HTTP_VERSION_1_1)))
            set(playerkit_curl_set_long(easy, CURLOPT_NOSIGNAL, 1))
            set(playerkit_curl_set_long(easy, CURLOPT_CONNECTTIMEOUT_MS, Int(max(1, connectTimeout.milliseconds))))
            set(playerkit_curl_set_long(easy, CURLOPT_FOLLOWLOCATION, maximumRedirects > 0 ? 1 : 0))
            set(playerkit_curl_set_long(easy, CURLOPT_MAXREDIRS, maximumRedirects))
            set(playerkit_curl_set_pointer(easy, CURLOPT_ERRORBUFFER, errorText))
            set(playerkit_curl_set_header_callback(easy, { data, size, count, context in
                guard let data, let context else { return 0 }
                return Unmanaged<Context>.fromOpaque(context).takeUnretainedValue().header(data, size * count)
            }))
            set(playerkit_curl_set_pointer(easy, CURLOPT_HEADERDATA, pointer))
            set(playerkit_curl_set_write_callback(easy, { data, size, count, context in
                guard let data, let context else { return 0 }
                return Unmanaged<Context>.fromOpaque(context).takeUnretainedValue().body(data, size * count)
            }))
            set(playerkit_curl_set_pointer(easy, CURLOPT_WRITEDATA, pointer))
            return ok
        }()
        guard configured else { return .failed(.connectionFailed(url: url, reason: "libcurl refused the request's options")) }

        curl_multi_add_handle(multi, easy)
        defer { curl_multi_remove_handle(multi, easy) }
        let registered = running.withLock { running -> Bool in
            running = MultiHandle(pointer: multi)
            return !cancelled.withLock { $0 }
        }
        defer { running.withLock { $0 = nil } }
        guard registered else { return .abandoned }

        let start = ContinuousClock.now
        let headDeadline = start + connectTimeout + readTimeout
        var result: CURLcode?
        var timedOut = false
        while result == nil {
            var active: Int32 = 0
            curl_multi_perform(multi, &active)
            var queued: Int32 = 0
            while let message = curl_multi_info_read(multi, &queued) {
                if message.pointee.msg == CURLMSG_DONE { result = message.pointee.data.result }
            }
            if result != nil || active == 0 { break }
            if cancelled.withLock({ $0 }) || context.stopped { break }
            let now = ContinuousClock.now
            let deadline = context.takesBody == nil ? min(headDeadline, context.lastActivity + readTimeout) : context.lastActivity + readTimeout
            if now >= deadline {
                timedOut = true
                break
            }
            let wait = min(deadline - now, .milliseconds(250))
            curl_multi_poll(multi, nil, 0, Int32(max(1, wait.milliseconds)), nil)
        }
        if cancelled.withLock({ $0 }) || context.stopped || context.takesBody == false { return .abandoned }
        if timedOut { return .failed(.timedOut(url: url, after: readTimeout)) }
        switch result ?? CURLE_OK {
        case CURLE_OK:
            return context.takesBody == nil ? .failed(.connectionFailed(url: url, reason: "the server sent no response")) : .finished
        case CURLE_OPERATION_TIMEDOUT:
            return .failed(.timedOut(url: url, after: connectTimeout))
        case CURLE_TOO_MANY_REDIRECTS:
            return .failed(.tooManyRedirects(url: url))
        case CURLE_WRITE_ERROR where context.stopped:
            return .abandoned
        case let code:
            let detail = String(cString: errorText)
            let reason = detail.isEmpty ? String(cString: curl_easy_strerror(code)) : detail
            return .failed(.connectionFailed(url: url, reason: reason))
        }
    }
}

extension HTTPTransfer.Context {
    /// One header line of a response (libcurl hands over each line, redirects' included).
    func header(_ data: UnsafeMutablePointer<CChar>, _ count: Int) -> Int {
        lastActivity = .now
        guard let head = reader.read(UnsafeRawBufferPointer(start: data, count: count)) else { return count }
        // The end of a response's head. A redirect that will be followed is not the final one.
        let redirect = (300...399).contains(head.status) && head.headers["location"] != nil
        if head.status >= 200, !(redirect && followsRedirects), takesBody == nil {
            takesBody = onHead(head)
            if takesBody == false {
                stopped = true
                return 0
            }
        }
        return count
    }

    /// A piece of a body: the final response's (others are not handed over when followed).
    func body(_ data: UnsafeMutablePointer<CChar>, _ count: Int) -> Int {
        lastActivity = .now
        guard takesBody == true else {
            // A body before the final head (a redirect not followed has none here): not ours.
            return takesBody == nil ? count : 0
        }
        guard count > 0 else { return 0 }
        if onBody(UnsafeRawBufferPointer(start: data, count: count)) { return count }
        stopped = true
        return 0
    }
}

private extension Duration {
    /// Whole milliseconds, rounded up.
    var milliseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1000 + (attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000
    }
}
