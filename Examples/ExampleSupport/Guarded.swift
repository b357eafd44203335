import Foundation

/// A value behind a lock, for the examples' own bookkeeping (counters, logs shared between an
/// event handler and the main task). PlayerKit's own helpers are not public API; an app writes
/// (or borrows) one like this. An `NSLock` (a pthread mutex on Linux) rather than the standard
/// library's `Mutex`, whose futex ThreadSanitizer cannot see: `make test-tsan` runs the examples.
public final class Guarded<Value: Sendable>: @unchecked Sendable {
    // @unchecked: `value` is only read and written under `lock`.
    private let lock = NSLock()
    private var value: Value

    /// A lock around `value`.
    public init(_ value: Value) {
        self.value = value
    }

    /// Runs `body` with the value, under the lock.
    public func withLock<Result, Failure: Error>(_ body: (inout Value) throws(Failure) -> Result) throws(Failure) -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
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
