import Dispatch

extension Duration {
    /// The duration in seconds, as a `Double` (for example 1.5 for `.milliseconds(1500)`).
    package var inSeconds: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }

    /// The duration as a `DispatchTimeInterval` (whole nanoseconds; negative durations as zero),
    /// for deadlines on the monotonic clock: `.now() + duration.dispatchInterval`.
    package var dispatchInterval: DispatchTimeInterval {
        .nanoseconds(Int(min(max(0, inSeconds * 1e9), Double(Int.max))))
    }
}

extension ContinuousClock.Instant {
    /// Seconds from `earlier` to this instant (negative when `earlier` is later).
    package func seconds(since earlier: ContinuousClock.Instant) -> Double {
        (self - earlier).inSeconds
    }
}
