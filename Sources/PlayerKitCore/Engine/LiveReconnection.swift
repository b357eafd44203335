import Foundation

/// A live item's connection: one of `PlaybackModel`'s sub-machines, pure, with one job. It tells
/// a live source that was lost from one that ended, and runs the reconnection after a loss.
///
/// mpv ends a live item when its source stops delivering as if it had played to its end: FFmpeg's
/// HLS demuxer gives up once a playlist reload fails ("Failed to reload playlist"), mpv plays out
/// what it has cached and reports an end of file. What tells the two apart is FFmpeg's own lines
/// for the player (``FFmpegLog`` credits them by thread): a source FFmpeg gave up on was lost,
/// and they name why (``NetworkFailure``). A live source that ends with no such line ended
/// (an HLS playlist that was closed with `EXT-X-ENDLIST`).
///
/// After a loss the item stays (no end, state `buffering`) while mpv opens the source again,
/// attempt after attempt: at once, then after 0.5, 1, 2 and 4 s, then every 4 s, each bounded by
/// mpv's `network-timeout`. The first attempt that shows a frame ends the reconnection. The
/// reconnection gives up once it has lasted ``networkTimeout`` (``PlayerConfiguration/networkTimeout``)
/// or, through the buffering watchdog, ``PlayerConfiguration/bufferingTimeout``: the item then
/// fails with ``PlayerError/networkFailed(source:cause:after:)``.
struct LiveReconnection: Sendable {
    /// How long a reconnection may last before it gives up, and how long FFmpeg waits on a silent
    /// request (mpv's `network-timeout`): ``PlayerConfiguration/networkTimeout``.
    let networkTimeout: Duration

    /// The latest trouble FFmpeg reported for the current connection.
    private(set) var trouble: NetworkFailure?
    /// Whether FFmpeg gave the current connection up (its end of file is a loss).
    private(set) var sourceGaveUp = false
    /// When FFmpeg started its latest request for the item, and the failure it named since.
    private var request: (started: ContinuousClock.Instant, failure: NetworkFailure?)?
    /// The reconnection under way, if any.
    private(set) var reconnecting: Reconnecting?
    /// Numbers the scheduled attempts, so a timer that fires after its reconnection ended (or
    /// after a newer one was scheduled) does nothing.
    private var generation: UInt64 = 0

    /// A reconnection under way.
    struct Reconnecting: Sendable {
        /// When the player started waiting for the source (the loss, or the buffering before it).
        let since: ContinuousClock.Instant
        /// Attempts made so far.
        var attempts = 0
        /// Whether an attempt is opening now (its entry started or is about to).
        var inFlight = false
        /// Whether the attempt in flight opened the source (its properties are the item's again).
        var loaded = false
        /// Why the source was lost, or why the latest attempt failed.
        var cause: NetworkFailure
        /// The attempt in flight is being stopped to give up (the buffering timeout).
        var givingUp = false
    }

    /// What to do next.
    enum Decision: Sendable, Equatable {
        /// Open the source again after `delay`; the timer carries `generation` back.
        case retry(after: Duration, generation: UInt64)
        /// Give the item up: it waited `after` since it lost its source, for `cause`.
        case giveUp(cause: NetworkFailure, after: Duration)
        /// Nothing (a stale timer).
        case none
    }

    init(networkTimeout: Duration) {
        self.networkTimeout = networkTimeout
    }

    var isReconnecting: Bool { reconnecting != nil }

    /// Whether the item's own properties (tracks, decoder, size, title) mpv reports now are of
    /// no item: between the loss and the attempt that opens the source again, mpv has nothing
    /// loaded, and the item keeps what it had.
    var holdsItemProperties: Bool { reconnecting.map { !$0.loaded } ?? false }

    /// A new item started (not an attempt of a reconnection): nothing is known of its connection.
    mutating func itemStarted() {
        trouble = nil
        sourceGaveUp = false
        reconnecting = nil
        generation += 1
    }

    /// One of FFmpeg's lines for the player, written at `time`. `isPlaylist`: the item is an HLS
    /// playlist, whose demuxer ends the item only when a reload fails (a segment that fails is
    /// skipped). A request that fails with no reason named timed out when it began
    /// ``networkTimeout`` or more before, or when the player was `starving` (waiting for data
    /// that did not come): FFmpeg fails a silent request after `network-timeout` without saying
    /// why, and its retry of a reload logs no start.
    mutating func read(_ text: String, isPlaylist: Bool, at time: ContinuousClock.Instant, starving: Bool = false) {
        if text.contains("Opening '") {
            request = (time, nil)
            return
        }
        var failure = Self.failure(in: text)
        if failure != nil { request?.failure = failure }
        let requestFailed = text.contains("Failed to reload playlist") || text.contains("Failed to open segment")
        if requestFailed, failure == nil, request?.failure == nil,
           starving || request.map({ time - $0.started >= networkTimeout * 0.9 }) == true {
            failure = .timedOut
        }
        if let failure { trouble = failure }
        if text.contains("Failed to reload playlist") || (!isPlaylist && failure != nil) {
            sourceGaveUp = true
            if trouble == nil { trouble = .other(text) }
        }
        if var reconnecting, let failure {
            reconnecting.cause = failure
            self.reconnecting = reconnecting
        }
    }

    /// The live item reached its end of file at `now`; `waitingSince` is when it started waiting
    /// for the network, if it was buffering before. Returns the first attempt when the source was
    /// lost (the reconnection starts), nil when it ended.
    mutating func endOfFile(at now: ContinuousClock.Instant, waitingSince: ContinuousClock.Instant?) -> Decision? {
        guard sourceGaveUp else { return nil }
        generation += 1
        reconnecting = Reconnecting(since: waitingSince ?? now, cause: trouble ?? .other("the source stopped delivering"))
        return .retry(after: .zero, generation: generation)
    }

    /// The cause of a loss that is not reconnected (the playlist goes on to its next item).
    var lossCause: NetworkFailure { trouble ?? .other("the source stopped delivering") }

    /// The timer of attempt `generation` fired at `now`: open the source (the caller then
    /// notes ``attemptSent()``), or give up once the window passed.
    mutating func attemptDue(generation: UInt64, at now: ContinuousClock.Instant) -> Decision {
        guard let reconnecting, generation == self.generation, !reconnecting.inFlight else { return .none }
        let waited = now - reconnecting.since
        if waited >= networkTimeout { return giveUp(after: waited) }
        return .retry(after: .zero, generation: generation)
    }

    /// The attempt was handed to mpv.
    mutating func attemptSent() {
        reconnecting?.attempts += 1
        reconnecting?.inFlight = true
        reconnecting?.loaded = false
        trouble = nil
        sourceGaveUp = false
    }

    /// The attempt's item opened: what mpv reports of it from now on is the item's.
    mutating func attemptLoaded() {
        reconnecting?.loaded = true
    }

    /// The attempt showed a frame: the source is back.
    mutating func reconnected() {
        reconnecting = nil
        generation += 1
    }

    /// The attempt ended without a frame at `now` (it failed, or its source ended at once).
    /// `lines`: the error lines taken for it. Returns the next attempt, or the give-up.
    mutating func attemptFailed(at now: ContinuousClock.Instant, lines: [String]) -> Decision {
        guard var reconnecting else { return .none }
        reconnecting.inFlight = false
        reconnecting.loaded = false
        if let failure = lines.lazy.compactMap(Self.failure(in:)).last { reconnecting.cause = failure }
        if let trouble { reconnecting.cause = trouble }
        self.reconnecting = reconnecting
        let waited = now - reconnecting.since
        if waited >= networkTimeout || reconnecting.givingUp { return giveUp(after: waited) }
        generation += 1
        return .retry(after: Self.delay(afterAttempts: reconnecting.attempts), generation: generation)
    }

    /// The buffering timeout passed at `now`. Returns the give-up when no attempt is opening;
    /// nil when one is: the caller stops it, and its end (``attemptFailed(at:lines:)``) gives up.
    mutating func bufferingTimedOut(at now: ContinuousClock.Instant) -> Decision? {
        guard let reconnecting else { return Decision.none }
        guard reconnecting.inFlight else { return giveUp(after: now - reconnecting.since) }
        self.reconnecting?.givingUp = true
        return nil
    }

    /// The app stopped the player or loaded another item: the reconnection ends.
    mutating func cancel() {
        reconnecting = nil
        generation += 1
    }

    private mutating func giveUp(after waited: Duration) -> Decision {
        let cause = reconnecting?.cause ?? lossCause
        reconnecting = nil
        generation += 1
        return .giveUp(cause: cause, after: waited)
    }

    /// The wait before attempt number `attempts + 1`: 0.5, 1, 2, then 4 s.
    static func delay(afterAttempts attempts: Int) -> Duration {
        switch attempts {
        case ...1: .milliseconds(500)
        case 2: .seconds(1)
        case 3: .seconds(2)
        default: .seconds(4)
        }
    }

    // MARK: FFmpeg's words

    /// The network failure a line of FFmpeg's names, nil when it names none.
    static func failure(in text: String) -> NetworkFailure? {
        let lower = text.lowercased()
        if lower.contains("connection refused") {
            return .connectionRefused(server: FFmpegLineAttribution.serverMentioned(in: text) ?? "the server")
        }
        if let status = httpStatus(in: text) { return status }
        if lower.contains("timed out") { return .timedOut }
        if lower.contains("connection reset") { return .connectionReset }
        if lower.contains("name or service not known") || lower.contains("temporary failure in name resolution")
            || lower.contains("failed to resolve hostname") {
            return .hostNotFound(host: host(in: text) ?? "?")
        }
        if lower.contains("network is unreachable") || lower.contains("no route to host") { return .unreachable }
        if lower.contains("keepalive request failed"), lower.contains("end of file") { return .connectionClosed }
        return nil
    }

    /// "HTTP error 404 Not Found" (FFmpeg's http), "Server returned 404 Not Found".
    private static func httpStatus(in text: String) -> NetworkFailure? {
        for marker in ["HTTP error ", "Server returned "] {
            guard let range = text.range(of: marker) else { continue }
            let rest = text[range.upperBound...]
            let digits = rest.prefix { $0.isNumber }
            guard digits.count == 3, let status = Int(digits) else { continue }
            let reason = rest.dropFirst(3).prefix { $0 != "'" && $0 != "\"" && $0 != "(" }.trimmingCharacters(in: .whitespaces)
            return .httpStatus(status, reason: reason)
        }
        return nil
    }

    /// The host a line names: FFmpeg's "Failed to resolve hostname HOST: ...", else the first
    /// URL's.
    private static func host(in text: String) -> String? {
        if let range = text.range(of: "hostname ") {
            let host = text[range.upperBound...].prefix { !$0.isWhitespace && $0 != ":" }
            if !host.isEmpty { return String(host) }
        }
        guard let url = FFmpegLineAttribution.urls(in: text).first, let server = FFmpegLineAttribution.server(of: url) else { return nil }
        return String(server.split(separator: ":").first ?? Substring(server))
    }
}
