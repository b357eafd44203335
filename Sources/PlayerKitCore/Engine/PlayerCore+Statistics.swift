import Dispatch
import PlayerKitSupport

/// Who observes a player's statistics: each observation's interval, and the one timer that
/// samples at the shortest of them. Kept by ``PlayerCore``; a sample in flight is not started
/// again until it is in.
struct StatisticsObservers: Sendable {
    var intervals: [UInt64: Duration] = [:]
    var next: UInt64 = 1
    var timer: RepeatingTimer?
    var timerInterval: Duration?
    var sampling = false
}

// Playback statistics: the figures mpv holds, read at once without waiting a thread, put
// together with the tally of stalls, start-up and frames (``PlaybackTally``), and sampled
// every interval while someone observes them.
extension PlayerCore {
    /// The mpv properties the statistics read, in the order ``statistics(from:figures:decoder:isLive:)`` takes.
    static let statisticsProperties = [
        "decoder-frame-drop-count", "frame-drop-count", "avsync", "hls-bitrate", "video-bitrate",
        "audio-bitrate", "cache-speed", "demuxer-cache-duration", "demuxer-cache-state",
        "demuxer-cache-time", "time-pos",
    ]

    /// The statistics now: every property read at once (``readAll(_:timeout:completion:)``),
    /// then put together with the tally, under the lock, at the moment the last answer came.
    /// - Throws: ``PlayerError/playerShutDown(_:)``; ``PlayerError/timedOut(operation:after:)``
    ///   when mpv did not answer within `timeout`.
    func statistics(timeout: Duration) async throws(PlayerError) -> PlaybackStatistics {
        guard !isShutDown else { throw .playerShutDown(id) }
        let result = await withCheckedContinuation { (continuation: CheckedContinuation<Result<PlaybackStatistics, PlayerError>, Never>) in
            sampleStatistics(timeout: timeout) { continuation.resume(returning: $0) }
        }
        return try result.get()
    }

    /// Reads the statistics and hands them to `completion` (on the thread that read the last
    /// answer, a pump, or the timer's), with no lock held. A property mpv says is unavailable is
    /// a figure not known; a read that timed out or a player shut down fails the whole read.
    func sampleStatistics(timeout: Duration, completion: @escaping @Sendable (Result<PlaybackStatistics, PlayerError>) -> Void) {
        let id = self.id
        readAll(Self.statisticsProperties, timeout: timeout) { [weak self] results in
            guard let self else { return completion(.failure(.playerShutDown(id))) }
            for case .failure(let error) in results {
                switch error {
                case .timedOut, .playerShutDown, .replyLost: return completion(.failure(error))
                default: continue
                }
            }
            let values = results.map { try? $0.get() }
            let now = ContinuousClock.now
            let statistics = state.withLock { state in
                state.tally.noteOutputDrops(values[1]?.doubleValue.map { Int($0) }, at: now)
                return Self.statistics(from: values, figures: state.tally.figures(at: now),
                                decoder: state.model.videoDecoder, isLive: state.model.isLive)
            }
            completion(.success(statistics))
        }
    }

    /// Statistics from the values of ``statisticsProperties`` (nil: unavailable), in order.
    static func statistics(from values: [MPVValue?], figures: PlaybackTally.Figures, decoder: VideoDecoder?, isLive: Bool) -> PlaybackStatistics {
        func number(_ index: Int) -> Double? { values.indices.contains(index) ? values[index]?.doubleValue : nil }
        var statistics = PlaybackStatistics()
        let hasVideo = decoder != nil
        statistics.framesDroppedByDecoder = hasVideo ? number(0).map { Int($0) } : nil
        statistics.framesDroppedByOutput = hasVideo ? number(1).map { Int($0) } : nil
        statistics.audioVideoOffset = number(2)
        statistics.declaredBitrate = number(3).flatMap { $0 > 0 ? $0 : nil }
        let video = number(4), audio = number(5)
        statistics.mediaBitrate = (video == nil && audio == nil) ? nil : (video ?? 0) + (audio ?? 0)
        statistics.arrivingBitrate = number(6).map { $0 * 8 }
        statistics.bufferAhead = number(7)
        if values.indices.contains(8), let state = values[8] {
            statistics.bufferAheadBytes = state["fw-bytes"]?.doubleValue.map { Int($0) }
        }
        if isLive, let cachedUntil = number(9), let position = number(10) {
            statistics.liveLatency = max(0, cachedUntil - position)
        }
        statistics.stallCount = figures.stallCount
        statistics.stallTime = figures.stallTime
        statistics.longestStall = figures.longestStall
        statistics.timeToFirstFrame = figures.timeToFirstFrame
        statistics.framesRendered = figures.framesRendered
        statistics.renderedFrameRate = figures.renderedFrameRate
        statistics.videoDecoder = decoder
        return statistics
    }

    /// Reads `names` without blocking, all handed to mpv at once, and calls `completion` once
    /// with one result per name, in order, when the last answer is in or `timeout` (one timer,
    /// on the monotonic clock) ends the wait for those still out.
    func readAll(_ names: [String], timeout: Duration, completion: @escaping @Sendable ([Result<MPVValue, PlayerError>]) -> Void) {
        let collected = Locked<(results: [Result<MPVValue, PlayerError>?], left: Int)>((Array(repeating: nil, count: names.count), names.count))
        let expiry = Expiry()
        let record = { @Sendable (index: Int, result: Result<MPVValue, PlayerError>) in
            let all = collected.withLock { collected -> [Result<MPVValue, PlayerError>]? in
                guard collected.results[index] == nil else { return nil }
                collected.results[index] = result
                collected.left -= 1
                return collected.left == 0 ? collected.results.map { $0 ?? .success(.none) } : nil
            }
            guard let all else { return }
            expiry.cancel()
            completion(all)
        }
        let replies = names.enumerated().map { index, _ in SentReply { record(index, $0) } }
        let replyIDs: [UInt64]? = state.withLock { state in
            guard !state.isShutDown else { return nil }
            return zip(names, replies).map { name, reply in
                let replyID = state.readIDs.next()
                state.propertyReads.add(PropertyRead(name: name, reply: reply), replyID: replyID)
                return replyID
            }
        }
        guard let replyIDs else {
            for reply in replies { reply.resume(.failure(.playerShutDown(id))) }
            return
        }
        let id = self.id
        expiry.arm(after: timeout) { [weak self] in
            for (name, replyID) in zip(names, replyIDs) {
                let read = self?.state.withLock { $0.propertyReads.take(replyID) }
                read?.reply.resume(.failure(.timedOut(operation: "read \(name) on player \(id)", after: timeout)))
            }
        }
        for (index, replyID) in replyIDs.enumerated() where !handle.requestProperty(names[index], replyID: replyID) {
            // Refused at once: the core is gone, or its event queue is full.
            let read = state.withLock { $0.propertyReads.take(replyID) }
            read?.reply.resume(.failure(isShutDown ? .playerShutDown(id) : .replyLost(id, operation: "read \(names[index])")))
        }
    }

    /// Starts an observation of the statistics every `interval`: the first one counts frames
    /// (its own per-frame `time-pos` observation, which publishes nothing) and starts the
    /// sampling timer; the timer runs at the shortest interval of those observing. Returns the
    /// observation's token for ``endStatisticsObservation(_:)``. Never waits for mpv.
    func observeStatistics(every interval: Duration) -> UInt64 {
        let (token, first) = statisticsObservers.withLock { observers -> (UInt64, Bool) in
            let token = observers.next
            observers.next += 1
            observers.intervals[token] = interval
            return (token, observers.intervals.count == 1)
        }
        if first {
            state.withLock { $0.tally.countFrames(true, at: .now) }
            observe("time-pos", id: MPVRequestIDs.statisticsFrameObservation, users: statisticsFrameUsers, enabled: true)
            // A sample now sets the output's drop count the frames are counted from.
            sampleStatistics(timeout: .seconds(2)) { _ in }
        }
        retimeStatistics()
        return token
    }

    /// Ends an observation from ``observeStatistics(every:)``. Idempotent; never waits.
    func endStatisticsObservation(_ token: UInt64) {
        let last = statisticsObservers.withLock { observers -> Bool? in
            guard observers.intervals.removeValue(forKey: token) != nil else { return nil }
            return observers.intervals.isEmpty
        }
        guard let last else { return }
        if last {
            observe("time-pos", id: MPVRequestIDs.statisticsFrameObservation, users: statisticsFrameUsers, enabled: false)
            state.withLock { $0.tally.countFrames(false, at: .now) }
        }
        retimeStatistics()
    }

    /// Runs the sampling timer at the shortest interval observed, or stops it when nobody
    /// observes (also at shutdown).
    func retimeStatistics() {
        statisticsObservers.withLock { observers in
            let interval = isShutDown ? nil : observers.intervals.values.min()
            guard interval != observers.timerInterval else { return }
            observers.timer?.cancel()
            observers.timer = nil
            observers.timerInterval = interval
            guard let interval else { return }
            let timer = RepeatingTimer(interval: interval, queue: pumpQueue)
            timer.start { [weak self] in self?.sampleForObservers(interval: interval) }
            observers.timer = timer
        }
    }

    /// One tick of the sampling timer: reads the statistics (unless the last read is still
    /// out) and publishes ``PlayerEvent/statisticsUpdated(_:)``.
    private func sampleForObservers(interval: Duration) {
        guard !isShutDown else { return retimeStatistics() }
        let start = statisticsObservers.withLock { observers -> Bool in
            guard !observers.sampling, !observers.intervals.isEmpty else { return false }
            observers.sampling = true
            return true
        }
        guard start else { return }
        sampleStatistics(timeout: max(interval, .seconds(1))) { [weak self] result in
            guard let self else { return }
            let observed = statisticsObservers.withLock { observers -> Bool in
                observers.sampling = false
                return !observers.intervals.isEmpty
            }
            guard observed, case .success(let statistics) = result else { return }
            update { _ in [.event(.statisticsUpdated(statistics))] }
        }
    }
}
