extension Duration {
    /// The duration in seconds, as a `Double` (for example 1.5 for `.milliseconds(1500)`).
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
