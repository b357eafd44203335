/// Order statistics over a list of figures: what the seam and drift measurements, the examples
/// and the benchmarks report.
package enum Statistics {
    /// The median (the mean of the two middle values for an even count); nil for no values.
    package static func median(_ values: [Double]) -> Double? {
        guard !values.isEmpty else { return nil }
        let sorted = values.sorted()
        let middle = sorted.count / 2
        return sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
    }

    /// The value below which `fraction` (0 to 1) of the values lie, by the nearest-rank method
    /// (`percentile(0.99, of:)` is the 99th percentile); nil for no values.
    package static func percentile(_ fraction: Double, of values: [Double]) -> Double? {
        guard !values.isEmpty else { return nil }
        let sorted = values.sorted()
        let rank = Int((Double(sorted.count) * min(max(fraction, 0), 1)).rounded(.down))
        return sorted[min(sorted.count - 1, rank)]
    }
}
