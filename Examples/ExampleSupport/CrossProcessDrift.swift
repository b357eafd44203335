import Foundation

/// Drift between players in different processes on one machine, from each process's frame
/// log: one `{"event":"frame","player":…,"position":…,"wall":…}` JSON line per frame, `wall`
/// being the frame's time in seconds since 1970 (the system clock every process shares).
///
/// For each frame of one player, the other player's position at that instant is interpolated
/// between its two frames around it; the difference is the drift at that frame.
public enum CrossProcessDrift {
    /// One frame of one player.
    public struct Frame: Codable, Sendable {
        /// Always "frame".
        public var event = "frame"
        /// The player's ID.
        public var player: String
        /// The frame's position in the media, seconds.
        public var position: Double
        /// When it was shown: seconds since 1970.
        public var wall: Double

        /// A frame of `player` at `position`, shown at `wall`.
        public init(player: String, position: Double, wall: Double) {
            self.player = player
            self.position = position
            self.wall = wall
        }
    }

    /// Drift figures for one pair of players, or for all pairs together.
    public struct Figures: Sendable, CustomStringConvertible {
        /// The players compared ("a~b"), or "all pairs".
        public var pair: String
        /// How many frames were compared.
        public var frames: Int
        /// Absolute drift percentiles and maximum, milliseconds.
        public var p50Ms: Double, p99Ms: Double, maxMs: Double
        /// The mean drift with its sign, milliseconds: positive when the first player of the
        /// pair is ahead.
        public var meanMs: Double

        /// E.g. "left~right: 1712 frames, |drift| p50 2.1 ms, p99 9.8 ms, max 14.0 ms, mean +0.4 ms".
        public var description: String {
            String(format: "%@: %d frames, |drift| p50 %.1f ms, p99 %.1f ms, max %.1f ms, mean %+.1f ms", pair, frames, p50Ms, p99Ms, maxMs, meanMs)
        }
    }

    /// Reads the frame lines from a process's output (other lines are skipped).
    public static func frames(in text: String) -> [Frame] {
        let decoder = JSONDecoder()
        return text.split(separator: "\n").compactMap { line in
            guard line.contains("\"frame\"") else { return nil }
            return try? decoder.decode(Frame.self, from: Data(line.utf8))
        }
    }

    /// The drift between every pair of players, and over all pairs, counting only frames shown
    /// at or after `from` (seconds since 1970; nil: all) and before `to`.
    public static func compare(_ logs: [[Frame]], from: Double? = nil, to: Double? = nil) -> [Figures] {
        var all: [Double] = []
        var figures: [Figures] = []
        for first in logs.indices {
            for second in logs.indices where second > first {
                let drifts = pairDrifts(logs[first], logs[second], from: from, to: to)
                all += drifts
                let name = "\(logs[first].first?.player ?? "?")~\(logs[second].first?.player ?? "?")"
                figures.append(summary(name, drifts))
            }
        }
        if logs.count > 2 { figures.append(summary("all pairs", all)) }
        return figures
    }

    private static func pairDrifts(_ one: [Frame], _ other: [Frame], from: Double?, to: Double?) -> [Double] {
        let reference = other.sorted { $0.wall < $1.wall }
        var drifts: [Double] = []
        var index = 0
        for frame in one.sorted(by: { $0.wall < $1.wall }) {
            if let from, frame.wall < from { continue }
            if let to, frame.wall >= to { break }
            while index + 1 < reference.count, reference[index + 1].wall <= frame.wall { index += 1 }
            guard index + 1 < reference.count, reference[index].wall <= frame.wall else { continue }
            let before = reference[index], after = reference[index + 1]
            // Two frames of continuous playback around the instant: no pause or seek between.
            let span = after.wall - before.wall
            guard span > 0, span < 0.25, after.position >= before.position, after.position - before.position < 0.25 else { continue }
            let interpolated = before.position + (after.position - before.position) * (frame.wall - before.wall) / span
            drifts.append(frame.position - interpolated)
        }
        return drifts
    }

    private static func summary(_ pair: String, _ drifts: [Double]) -> Figures {
        let sorted = drifts.map { abs($0) * 1000 }.sorted()
        func percentile(_ p: Double) -> Double {
            sorted.isEmpty ? .nan : sorted[min(sorted.count - 1, Int((Double(sorted.count - 1) * p).rounded()))]
        }
        let mean = drifts.isEmpty ? .nan : drifts.reduce(0, +) / Double(drifts.count) * 1000
        return Figures(pair: pair, frames: sorted.count, p50Ms: percentile(0.5), p99Ms: percentile(0.99), maxMs: sorted.last ?? .nan, meanMs: mean)
    }
}
