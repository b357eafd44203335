import CoreMetrics
import PlayerKitCore
import PlayerKitSupport

/// One attached player's metrics: the handles, made with the player's dimensions, and what each
/// event does to them. Counters of figures the player counts per item (frames, drops) go up by
/// each sample's increase; a figure that went down started again with a new item, and counts
/// from zero. Touched only from the attachment's serial queue.
final class PlayerMetricSet: Sendable {
    private struct Counts: Sendable {
        var framesRendered: Int?
        var droppedByDecoder: Int?
        var droppedByOutput: Int?
        /// The state the player is in, for the state gauges.
        var state: PlayerState?
        /// When the load began, for time to first frame (nil once it is recorded).
        var loadStarted: ContinuousClock.Instant?
        /// Whether the item's first frame is out: a buffering after it is a stall.
        var firstFrameShown = false
        var stallStarted: ContinuousClock.Instant?
    }

    private let factory: any MetricsFactory
    private let dimensions: [(String, String)]
    private let framesRendered: Counter
    private let framesDroppedByDecoder: Counter
    private let framesDroppedByOutput: Counter
    private let stalls: Counter
    private let stallDuration: Timer
    private let timeToFirstFrame: Timer
    private let stateGauges: [PlayerState: Meter]
    /// The gauges of figures, by name, each made when its figure is first known (a gauge a
    /// player cannot fill is not exported as a made-up 0).
    private let gauges = Locked<[String: Meter]>([:])
    /// Counters of events by kind, made as kinds appear.
    private let eventCounters = Locked<[PlayerEventKind: Counter]>([:])
    private let counts = Locked(Counts())

    /// The metrics of the player with `dimensions` (its ID first), made through `factory`.
    init(prefix: String, dimensions: [(String, String)], factory: any MetricsFactory) {
        self.factory = factory
        self.dimensions = dimensions
        func counter(_ name: String, _ extra: [(String, String)] = []) -> Counter {
            Counter(label: "\(prefix)_\(name)", dimensions: dimensions + extra, factory: factory)
        }
        func meter(_ name: String, _ extra: [(String, String)] = []) -> Meter {
            Meter(label: "\(prefix)_\(name)", dimensions: dimensions + extra, factory: factory)
        }
        func timer(_ name: String) -> Timer {
            Timer(label: "\(prefix)_\(name)", dimensions: dimensions, factory: factory)
        }
        framesRendered = counter("frames_rendered_total")
        framesDroppedByDecoder = counter("frames_dropped_total", [("by", "decoder")])
        framesDroppedByOutput = counter("frames_dropped_total", [("by", "output")])
        stalls = counter("stalls_total")
        stallDuration = timer("stall_duration_seconds")
        timeToFirstFrame = timer("time_to_first_frame_seconds")
        stateGauges = Dictionary(uniqueKeysWithValues: PlayerState.allCases.map { ($0, meter("state", [("state", $0.rawValue)])) })
        self.prefix = prefix
    }

    private let prefix: String

    /// Sets the state gauges to the player's state when it is attached (and whether its item's
    /// first frame is out, so a buffering next is a stall).
    func start(in state: PlayerState, firstFrameShown: Bool) {
        for (gauged, gauge) in stateGauges { gauge.set(gauged == state ? 1 : 0) }
        counts.withLock { counts in
            counts.state = state
            counts.firstFrameShown = firstFrameShown
        }
    }

    /// Applies one of the player's events.
    func apply(_ record: PlayerEventRecord) {
        count(record.event.kind)
        switch record.event {
        case .statisticsUpdated(let statistics): apply(statistics)
        case .alarmRaised(let alarm):
            alarmMetric(\.counters, "alarms_total", alarm.kind) { Counter(label: $0, dimensions: $1, factory: self.factory) }.increment()
            gauge("alarm_active", 1, kind: alarm.kind)
        case .alarmCleared(let alarm):
            gauge("alarm_active", 0, kind: alarm.kind)
            if let seconds = alarm.duration {
                alarmMetric(\.timers, "alarm_duration_seconds", alarm.kind) { Timer(label: $0, dimensions: $1, factory: self.factory) }
                    .recordNanoseconds(Int64((seconds * 1e9).rounded()))
            }
        case .loudnessUpdated(let loudness):
            gauge("loudness_momentary_lufs", loudness.momentary)
            gauge("loudness_short_term_lufs", loudness.shortTerm)
            gauge("loudness_integrated_lufs", loudness.integrated)
            gauge("true_peak_dbtp", loudness.truePeak)
        case .stateChanged(let from, let to): changeState(from: from, to: to, at: record.time)
        case .firstFrame:
            let started = counts.withLock { counts -> ContinuousClock.Instant? in
                counts.firstFrameShown = true
                defer { counts.loadStarted = nil }
                return counts.loadStarted
            }
            if let started { timeToFirstFrame.recordNanoseconds(Self.nanoseconds(record.time - started)) }
        default: break
        }
    }

    private func count(_ kind: PlayerEventKind) {
        let counter = eventCounters.withLock { counters in
            if let counter = counters[kind] { return counter }
            let counter = Counter(label: "\(prefix)_events_total", dimensions: dimensions + [("kind", kind.rawValue)], factory: factory)
            counters[kind] = counter
            return counter
        }
        counter.increment()
    }

    private func changeState(from: PlayerState, to: PlayerState, at time: ContinuousClock.Instant) {
        stateGauges[from]?.set(0)
        stateGauges[to]?.set(1)
        let (stallEnded, stallBegan) = counts.withLock { counts -> (Duration?, Bool) in
            counts.state = to
            var ended: Duration?
            if from == .buffering, let started = counts.stallStarted {
                ended = time - started
                counts.stallStarted = nil
            }
            if to == .loading {
                counts.loadStarted = time
                counts.firstFrameShown = false
            }
            let began = to == .buffering && counts.firstFrameShown && counts.stallStarted == nil
            if began { counts.stallStarted = time }
            return (ended, began)
        }
        if let stallEnded { stallDuration.recordNanoseconds(Self.nanoseconds(stallEnded)) }
        if stallBegan { stalls.increment() }
    }

    private func apply(_ statistics: PlaybackStatistics) {
        let increases = counts.withLock { counts -> (Int, Int, Int) in
            (Self.increase(&counts.framesRendered, to: statistics.framesRendered),
             Self.increase(&counts.droppedByDecoder, to: statistics.framesDroppedByDecoder),
             Self.increase(&counts.droppedByOutput, to: statistics.framesDroppedByOutput))
        }
        if increases.0 > 0 { framesRendered.increment(by: increases.0) }
        if increases.1 > 0 { framesDroppedByDecoder.increment(by: increases.1) }
        if increases.2 > 0 { framesDroppedByOutput.increment(by: increases.2) }
        gauge("frames_per_second", statistics.renderedFrameRate)
        gauge("buffer_ahead_seconds", statistics.bufferAhead)
        gauge("buffer_ahead_bytes", statistics.bufferAheadBytes.map(Double.init))
        gauge("declared_bitrate_bits_per_second", statistics.declaredBitrate)
        gauge("media_bitrate_bits_per_second", statistics.mediaBitrate)
        gauge("arriving_bitrate_bits_per_second", statistics.arrivingBitrate)
        gauge("audio_video_offset_seconds", statistics.audioVideoOffset)
        gauge("live_latency_seconds", statistics.liveLatency)
        gauge("hardware_decoding", statistics.videoDecoder.map { $0.hardwareAPI == nil ? 0 : 1 })
    }

    /// Sets the gauge `name` (of alarms of `kind`, with that dimension) to `value`, made now if
    /// it is the first value; nil leaves it.
    private func gauge(_ name: String, _ value: Double?, kind: AlarmKind? = nil) {
        guard let value else { return }
        let key = kind.map { "\(name)/\($0.rawValue)" } ?? name
        let meter = gauges.withLock { gauges in
            if let meter = gauges[key] { return meter }
            let meter = Meter(label: "\(prefix)_\(name)", dimensions: dimensions + (kind.map { [("kind", $0.rawValue)] } ?? []), factory: factory)
            gauges[key] = meter
            return meter
        }
        meter.set(value)
    }

    /// The alarms' counters and timers, by kind, made as kinds appear.
    private struct AlarmMetrics: Sendable {
        var counters: [AlarmKind: Counter] = [:]
        var timers: [AlarmKind: Timer] = [:]
    }

    private let alarmMetrics = Locked(AlarmMetrics())

    /// The metric `name` of alarms of `kind` from the table at `path`, made with `make(label,
    /// dimensions)` the first time.
    private func alarmMetric<Metric: Sendable>(
        _ path: WritableKeyPath<AlarmMetrics, [AlarmKind: Metric]> & Sendable, _ name: String, _ kind: AlarmKind,
        make: (String, [(String, String)]) -> Metric
    ) -> Metric {
        alarmMetrics.withLock { metrics in
            if let metric = metrics[keyPath: path][kind] { return metric }
            let metric = make("\(prefix)_\(name)", dimensions + [("kind", kind.rawValue)])
            metrics[keyPath: path][kind] = metric
            return metric
        }
    }

    /// How much a per-item count went up since the last sample (from zero when it went down:
    /// a new item), keeping the new value; 0 when it is not known.
    private static func increase(_ last: inout Int?, to value: Int?) -> Int {
        guard let value else { return 0 }
        defer { last = value }
        guard let previous = last, value >= previous else { return value }
        return value - previous
    }

    private static func nanoseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = max(.zero, duration).components
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }

    /// Removes every metric of the player from the backend (a gone player's series end).
    func destroy() {
        for counter in [framesRendered, framesDroppedByDecoder, framesDroppedByOutput, stalls] { counter.destroy() }
        for meter in gauges.withLock({ Array($0.values) }) + Array(stateGauges.values) { meter.destroy() }
        stallDuration.destroy()
        timeToFirstFrame.destroy()
        for counter in eventCounters.withLock({ Array($0.values) }) { counter.destroy() }
        let alarms = alarmMetrics.withLock { $0 }
        for counter in alarms.counters.values { counter.destroy() }
        for timer in alarms.timers.values { timer.destroy() }
    }
}
