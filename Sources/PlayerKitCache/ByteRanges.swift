/// A set of byte offsets as sorted, disjoint, non-adjacent half-open ranges: what an entry of
/// the cache holds. Pure logic, tested on its own.
struct ByteRanges: Sendable, Hashable, CustomStringConvertible {
    /// The ranges, sorted, never empty, never touching.
    private(set) var ranges: [Range<Int64>] = []

    /// An empty set.
    init() {}

    /// A set of the given ranges (merged).
    init(_ ranges: [Range<Int64>]) {
        for range in ranges { insert(range) }
    }

    /// The number of bytes held.
    var count: Int64 { ranges.reduce(0) { $0 + ($1.upperBound - $1.lowerBound) } }

    /// Whether no byte is held.
    var isEmpty: Bool { ranges.isEmpty }

    /// Adds `range`, merging it with the ranges it overlaps or touches.
    mutating func insert(_ range: Range<Int64>) {
        guard !range.isEmpty else { return }
        var lower = range.lowerBound, upper = range.upperBound
        var result: [Range<Int64>] = []
        result.reserveCapacity(ranges.count + 1)
        var inserted = false
        for existing in ranges {
            if existing.upperBound < lower {
                result.append(existing)
            } else if existing.lowerBound > upper {
                if !inserted { result.append(lower..<upper); inserted = true }
                result.append(existing)
            } else {
                lower = min(lower, existing.lowerBound)
                upper = max(upper, existing.upperBound)
            }
        }
        if !inserted { result.append(lower..<upper) }
        ranges = result
    }

    /// Keeps only the bytes below `limit`.
    mutating func clip(to limit: Int64) {
        ranges = ranges.compactMap { range in
            let upper = min(range.upperBound, limit)
            return range.lowerBound < upper ? range.lowerBound..<upper : nil
        }
    }

    /// How many bytes are held contiguously from `offset` on (0 when `offset` is not held).
    func contiguousCount(from offset: Int64) -> Int64 {
        for range in ranges where range.contains(offset) { return range.upperBound - offset }
        return 0
    }

    /// Whether every byte of `range` is held.
    func contains(_ range: Range<Int64>) -> Bool {
        range.isEmpty || contiguousCount(from: range.lowerBound) >= range.upperBound - range.lowerBound
    }

    /// The first offset at or after `offset` and below `limit` that is not held, or nil.
    func firstGap(from offset: Int64, below limit: Int64) -> Int64? {
        var candidate = offset
        for range in ranges where range.upperBound > candidate {
            if range.lowerBound > candidate { break }
            candidate = range.upperBound
        }
        return candidate < limit ? candidate : nil
    }

    /// The start of the first held range after `offset`, or nil.
    func nextStart(after offset: Int64) -> Int64? {
        ranges.first { $0.lowerBound > offset }?.lowerBound
    }

    /// The ranges as `start-end` (end exclusive), comma separated.
    var description: String {
        ranges.isEmpty ? "none" : ranges.map { "\($0.lowerBound)-\($0.upperBound)" }.joined(separator: ",")
    }
}
