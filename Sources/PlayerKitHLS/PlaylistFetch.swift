import CCurl
import Foundation
import PlayerKitSupport

/// One HTTP GET of a small resource (a playlist, a segment) with the system's libcurl, on a
/// thread of its own (nothing of Swift's cooperative pool waits for the network). Bounded: the
/// whole transfer within `timeout` (libcurl's timer, on the monotonic clock) and at most `limit`
/// bytes; cancelling the calling task stops it.
enum PlaylistFetch {
    /// The body of `url`, or its bytes `range` (EXT-X-BYTERANGE): asked for with a Range
    /// header, and cut from the whole body when the server sends all of it.
    /// - Throws: ``PlaylistClockError/unreachable(url:reason:)``,
    ///   ``PlaylistClockError/httpStatus(url:status:)`` or ``PlaylistClockError/timedOut(url:timeout:)``.
    static func get(_ url: URL, range: Range<Int64>? = nil, timeout: Duration, limit: Int) async throws(PlaylistClockError) -> Data {
        _ = globalSetup
        let transfer = Transfer(url: url.absoluteString, range: range, timeout: timeout, limit: limit)
        let result = await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Result<Data, PlaylistClockError>, Never>) in
                let thread = Thread { continuation.resume(returning: transfer.run()) }
                thread.name = "PlayerKitHLS fetch"
                thread.start()
            }
        } onCancel: {
            transfer.cancelled.withLock { $0 = true }
        }
        return try result.get()
    }

    /// libcurl's global state, set up once for the process before the first transfer.
    private static let globalSetup: Void = {
        _ = playerkit_curl_global_init()
    }()
}

/// One transfer's state: written by libcurl's callbacks on the transfer's thread only, read by
/// that thread when it ends; `cancelled` is set from any thread.
private final class Transfer: @unchecked Sendable {
    let url: String
    let range: Range<Int64>?
    let timeout: Duration
    let limit: Int
    let cancelled = Locked(false)
    private var body = Data()
    private var tooLarge = false

    init(url: String, range: Range<Int64>?, timeout: Duration, limit: Int) {
        self.url = url
        self.range = range
        self.timeout = timeout
        self.limit = limit
    }

    func append(_ data: UnsafeRawPointer, _ length: Int) -> Int {
        guard body.count + length <= limit else {
            tooLarge = true
            return 0
        }
        body.append(data.assumingMemoryBound(to: UInt8.self), count: length)
        return length
    }

    func run() -> Result<Data, PlaylistClockError> {
        guard let easy = curl_easy_init() else { return .failure(.unreachable(url: url, reason: "libcurl could not start a transfer")) }
        defer { curl_easy_cleanup(easy) }
        let pointer = Unmanaged.passUnretained(self).toOpaque()
        var ok = true
        func set(_ code: CURLcode) { if code != CURLE_OK { ok = false } }
        set(playerkit_curl_set_string(easy, CURLOPT_URL, url))
        set(playerkit_curl_set_long(easy, CURLOPT_NOSIGNAL, 1))
        set(playerkit_curl_set_long(easy, CURLOPT_TIMEOUT_MS, Int(max(1, timeout.components.seconds * 1000 + timeout.components.attoseconds / 1_000_000_000_000_000))))
        set(playerkit_curl_set_long(easy, CURLOPT_FOLLOWLOCATION, 1))
        set(playerkit_curl_set_long(easy, CURLOPT_MAXREDIRS, 5))
        // A body whose Content-Length is over the limit is refused before it is read.
        set(playerkit_curl_set_long(easy, CURLOPT_MAXFILESIZE, limit))
        if let range {
            guard !range.isEmpty, range.count <= limit else {
                return .failure(.unreachable(url: url, reason: "its byte range \(range.lowerBound)-\(range.upperBound - 1) is empty or larger than \(limit) bytes"))
            }
            set(playerkit_curl_set_string(easy, CURLOPT_RANGE, "\(range.lowerBound)-\(range.upperBound - 1)"))
        }
        set(playerkit_curl_set_write_callback(easy, { data, size, count, context in
            guard let data, let context else { return 0 }
            return Unmanaged<Transfer>.fromOpaque(context).takeUnretainedValue().append(data, size * count)
        }))
        set(playerkit_curl_set_pointer(easy, CURLOPT_WRITEDATA, pointer))
        set(playerkit_curl_set_long(easy, CURLOPT_NOPROGRESS, 0))
        set(playerkit_curl_set_progress_callback(easy, { context, _, _, _, _ in
            guard let context else { return 0 }
            return Unmanaged<Transfer>.fromOpaque(context).takeUnretainedValue().cancelled.withLock { $0 } ? 1 : 0
        }))
        set(playerkit_curl_set_pointer(easy, CURLOPT_XFERINFODATA, pointer))
        guard ok else { return .failure(.unreachable(url: url, reason: "libcurl refused the transfer's options")) }
        let code = curl_easy_perform(easy)
        switch code {
        case CURLE_OK:
            let status = playerkit_curl_response_code(easy)
            guard status < 400 else { return .failure(.httpStatus(url: url, status: status)) }
            guard let range else { return .success(body) }
            // 206: the range; 200: the whole resource, the range cut from it.
            let start = status == 206 ? 0 : Int(range.lowerBound)
            guard range.count <= body.count, start <= body.count - range.count else {
                return .failure(.unreachable(url: url, reason: "bytes \(range.lowerBound)-\(range.upperBound - 1) asked, \(body.count) bytes sent (status \(status))"))
            }
            return .success(body.subdata(in: start..<(start + range.count)))
        case CURLE_OPERATION_TIMEDOUT:
            return .failure(.timedOut(url: url, timeout: timeout))
        case CURLE_WRITE_ERROR where tooLarge, CURLE_FILESIZE_EXCEEDED:
            return .failure(.unreachable(url: url, reason: "larger than \(limit) bytes"))
        case CURLE_ABORTED_BY_CALLBACK:
            return .failure(.unreachable(url: url, reason: "cancelled"))
        default:
            return .failure(.unreachable(url: url, reason: String(cString: curl_easy_strerror(code))))
        }
    }
}
