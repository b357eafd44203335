import Dispatch

extension Duration {
    /// The duration in seconds, as a `Double` (for example 1.5 for `.milliseconds(1500)`).
    public var inSeconds: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }

    /// The duration as a `DispatchTimeInterval` (whole nanoseconds; negative durations as zero),
    /// for deadlines on the monotonic clock: `.now() + duration.dispatchInterval`.
    public var dispatchInterval: DispatchTimeInterval {
        .nanoseconds(Int(min(max(0, inSeconds * 1e9), Double(Int.max))))
    }
}

extension ContinuousClock.Instant {
    /// Seconds from `earlier` to this instant (negative when `earlier` is later).
    public func seconds(since earlier: ContinuousClock.Instant) -> Double {
        (self - earlier).inSeconds
    }
}
