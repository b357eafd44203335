import DequeModule
import PlayerKitCore
import PlayerKitSupport

/// Skew figures of one member over a sliding window of time: each frame change adds one.
struct SkewMeter: Sendable {
    let window: Duration
    private var samples = Deque<(skew: Double, time: ContinuousClock.Instant)>()
    private(set) var latest: Double?

    init(window: Duration) {
        self.window = window
    }

    mutating func add(_ skew: Double, at time: ContinuousClock.Instant) {
        latest = skew
        samples.append((skew, time))
        while let first = samples.first, time - first.time > window { samples.removeFirst() }
    }

    /// The figures now: the latest skew and the percentiles of the absolute skews in the window,
    /// with `drift`, the machine's judgement (the latest skew when not given).
    func figures(drift: Double? = nil) -> MemberSkew? {
        guard let latest else { return nil }
        let magnitudes = samples.map { abs($0.skew) }
        return MemberSkew(
            current: latest,
            p50: Statistics.percentile(0.5, of: magnitudes) ?? 0,
            p95: Statistics.percentile(0.95, of: magnitudes) ?? 0,
            p99: Statistics.percentile(0.99, of: magnitudes) ?? 0,
            samples: magnitudes.count,
            drift: drift ?? latest)
    }
}
