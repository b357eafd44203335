import Synchronization

/// A value behind a lock, for the examples' own bookkeeping (counters, logs shared between an
/// event handler and the main task): the standard library's `Mutex` in a class, so closures
/// can share it. PlayerKit's own helpers are not public API; an app writes (or borrows) one like
/// this.
public final class Guarded<Value: Sendable>: Sendable {
    private let mutex: Mutex<Value>

    /// A lock around `value`.
    public init(_ value: Value) {
        mutex = Mutex(value)
    }

    /// Runs `body` with the value, under the lock.
    public func withLock<Result, Failure: Error>(
        _ body: (inout sending Value) throws(Failure) -> sending Result
    ) throws(Failure) -> sending Result {
        try mutex.withLock(body)
    }
}

extension Duration {
    /// The duration in seconds.
    public var inSeconds: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }
}

extension ContinuousClock.Instant {
    /// Seconds from `earlier` to this instant (negative when `earlier` is later).
    public func seconds(since earlier: ContinuousClock.Instant) -> Double {
        (self - earlier).inSeconds
    }
}

/// Percentiles for the examples' summaries.
public enum ExampleStatistics {
    /// The value below which `fraction` (0 to 1) of the values lie, by the nearest-rank method
    /// (`percentile(0.99, of:)` is the 99th percentile); nil for no values.
    public static func percentile(_ fraction: Double, of values: [Double]) -> Double? {
        guard !values.isEmpty else { return nil }
        let sorted = values.sorted()
        let rank = Int((Double(sorted.count) * min(max(fraction, 0), 1)).rounded(.down))
        return sorted[min(sorted.count - 1, rank)]
    }
}
