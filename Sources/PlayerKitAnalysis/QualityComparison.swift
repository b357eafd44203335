import Foundation
import PlayerKitSupport

/// The scores of one frame of the reference and the frame of the rendition paired with it.
public struct FramePairScore: Sendable, Hashable, Codable {
    /// The reference frame's number (0 for the first decoded frame).
    public var referenceFrame: Int
    /// The reference frame's time, in seconds from the reference's first frame.
    public var referenceTime: Double
    /// The rendition frame's number.
    public var renditionFrame: Int
    /// The rendition frame's time, in seconds from the rendition's first frame.
    var renditionTime: Double
    /// PSNR of the pair, in dB (FFmpeg's `psnr` filter's figures).
    public var psnr: PlaneScores
    /// SSIM of the pair (FFmpeg's `ssim` filter's figures).
    public var ssim: PlaneScores
}

/// A figure of a frame pair that a series can be summed up and sorted by.
public enum QualityMetric: String, Sendable, Hashable, Codable, CaseIterable {
    /// Luma PSNR, dB.
    case psnrY
    /// PSNR over the three planes, dB (FFmpeg's `psnr_avg`).
    case psnrAll
    /// Luma SSIM.
    case ssimY
    /// SSIM over the three planes.
    case ssimAll

    /// The figure of `pair`.
    func value(of pair: FramePairScore) -> Double {
        switch self {
        case .psnrY: return pair.psnr.y
        case .psnrAll: return pair.psnr.all
        case .ssimY: return pair.ssim.y
        case .ssimAll: return pair.ssim.all
        }
    }
}

/// A metric over a whole series. PSNR of identical frames is infinite; the mean and percentiles
/// are over the finite values, and ``identicalPairs`` counts the others.
public struct QualitySummary: Sendable, Hashable, Codable {
    /// How many pairs.
    var pairs: Int
    /// How many pairs had an infinite value (identical frames; PSNR only).
    public var identicalPairs: Int
    /// The mean of the finite values.
    public var mean: Double
    /// The lowest value: the worst pair.
    public var minimum: Double
    /// The highest finite value.
    public var maximum: Double
    /// The 1st, 5th and 50th percentiles (the worst 1%, 5% and half are at or below them).
    public var p1: Double, p5: Double, p50: Double
}

/// The result of a ``QualityComparison``: every frame pair's scores, in the reference's order,
/// and the frames that found no partner (dropped or duplicated frames show here, rather than
/// shifting every pair after them).
public struct QualitySeries: Sendable, Hashable, Codable {
    /// The pairs, in the order of the reference's frames.
    public var pairs: [FramePairScore]
    /// Reference frames with no rendition frame within half a frame of their time (the rendition
    /// dropped them, or it ends first).
    public var unpairedReferenceFrames: [Int]
    /// Rendition frames no reference frame took (duplicated or inserted frames, or frames before
    /// or after the reference).
    public var unpairedRenditionFrames: [Int]
    /// The picture size the pairs were compared at: the reference's (a rendition of another
    /// size is scaled to it, with FFmpeg's bicubic scaler).
    public var width: Int, height: Int

    /// `metric` over the pairs, or nil when there is no pair.
    public func summary(of metric: QualityMetric) -> QualitySummary? {
        guard !pairs.isEmpty else { return nil }
        let values = pairs.map(metric.value(of:))
        let finite = values.filter(\.isFinite).sorted()
        guard !finite.isEmpty else {
            return QualitySummary(
                pairs: values.count, identicalPairs: values.count, mean: .infinity, minimum: .infinity, maximum: .infinity,
                p1: .infinity, p5: .infinity, p50: .infinity)
        }
        func percentile(_ p: Double) -> Double {
            // Nearest rank over all values (the infinite ones sort last).
            let rank = max(0, Int((p / 100 * Double(values.count)).rounded(.up)) - 1)
            return rank < finite.count ? finite[rank] : .infinity
        }
        return QualitySummary(
            pairs: values.count, identicalPairs: values.count - finite.count, mean: finite.reduce(0, +) / Double(finite.count),
            minimum: finite[0], maximum: finite[finite.count - 1], p1: percentile(1), p5: percentile(5), p50: percentile(50))
    }

    /// The `count` worst pairs by `metric` (lowest first).
    public func worst(_ count: Int, by metric: QualityMetric) -> [FramePairScore] {
        Array(pairs.sorted { metric.value(of: $0) < metric.value(of: $1) }.prefix(max(0, count)))
    }

    /// The series as JSON (an infinite PSNR is the string "inf").
    public func json() -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        encoder.nonConformingFloatEncodingStrategy = .convertToString(positiveInfinity: "inf", negativeInfinity: "-inf", nan: "nan")
        // Every field is a number, a string or an array of them: encoding cannot fail.
        return (try? encoder.encode(self)) ?? Data()
    }

    /// One line per pair, with a header: `reference_frame,reference_time,rendition_frame,
    /// rendition_time,psnr_y,psnr_u,psnr_v,psnr_avg,ssim_y,ssim_u,ssim_v,ssim_all`.
    public func csv() -> String {
        var lines = ["reference_frame,reference_time,rendition_frame,rendition_time,psnr_y,psnr_u,psnr_v,psnr_avg,ssim_y,ssim_u,ssim_v,ssim_all"]
        for pair in pairs {
            let fields: [String] = [
                String(pair.referenceFrame), String(format: "%.6f", pair.referenceTime), String(pair.renditionFrame),
                String(format: "%.6f", pair.renditionTime),
            ] + [pair.psnr.y, pair.psnr.u, pair.psnr.v, pair.psnr.all].map { $0.isFinite ? String(format: "%.4f", $0) : "inf" }
                + [pair.ssim.y, pair.ssim.u, pair.ssim.v, pair.ssim.all].map { String(format: "%.6f", $0) }
            lines.append(fields.joined(separator: ","))
        }
        return lines.joined(separator: "\n") + "\n"
    }
}

/// Compares a rendition (an encode) with its reference, frame by frame: PSNR and SSIM of every
/// frame pair, equal to FFmpeg's `psnr` and `ssim` filters on the same pairs.
///
/// ```swift
/// let comparison = QualityComparison(reference: URL(fileURLWithPath: "master.mp4"),
///                                    rendition: URL(fileURLWithPath: "encode-720p.mp4"))
/// let series = try await comparison.run()
/// if let ssim = series.summary(of: .ssimAll) { print("SSIM mean \(ssim.mean), worst \(ssim.minimum)") }
/// ```
///
/// **Pairing.** Frames are paired by time, not by number: each reference frame takes the
/// rendition frame shown within half a reference frame of its time (the rendition's times moved
/// by `offset`). A frame the rendition dropped leaves its reference frame unpaired, and a
/// duplicated frame is left over, instead of every later pair being a frame off.
///
/// **Sizes and formats.** Both are compared as 8-bit YUV 4:2:0 (`yuv420p`) at the reference's
/// size; a rendition of another size is scaled to it with FFmpeg's bicubic scaler, as an FFmpeg
/// user's `scale` filter does by default.
///
/// **Threading.** ``run()`` decodes and scores on a thread of its own (FFmpeg's decoders use
/// threads of their own too), never on Swift's cooperative pool. Cancelling the calling task
/// returns ``AnalysisError/cancelled`` at once; the work stops at its next frame, or its next
/// blocking read (a file that never answers, such as a FIFO, is let go too).
public struct QualityComparison: Sendable {
    /// The original.
    var reference: URL
    /// The encode measured against it.
    var rendition: URL
    /// How much later the rendition shows a moment than the reference does (a rendition whose
    /// first second was trimmed: -1 s). Default zero.
    var offset: Duration

    /// A comparison of `rendition` with `reference`, the rendition's times moved by `offset`.
    public init(reference: URL, rendition: URL, offset: Duration = .zero) {
        self.reference = reference
        self.rendition = rendition
        self.offset = offset
    }

    /// Decodes both files as fast as FFmpeg can, pairs their frames by time and scores every pair.
    /// - Throws: ``AnalysisError`` naming the file that could not be read, or
    ///   ``AnalysisError/cancelled``.
    public func run() async throws(AnalysisError) -> QualitySeries {
        try await AnalysisThread.run(named: "PlayerKit.analysis") { [self] interruption throws(AnalysisError) in
            try compare(interruption: interruption)
        }
    }

    /// The comparison itself, on the calling thread.
    func compare(interruption: FrameDecoder.Interruption) throws(AnalysisError) -> QualitySeries {
        let references = try FrameDecoder(url: reference, interruption: interruption)
        let renditions = try FrameDecoder(url: rendition, interruption: interruption)
        renditions.scale(toWidth: references.width, height: references.height)
        let interval = 1 / (references.frameRate ?? 25)
        let tolerance = interval / 2
        let shift = offset.inSeconds
        var series = QualitySeries(pairs: [], unpairedReferenceFrames: [], unpairedRenditionFrames: [],
                                   width: references.width, height: references.height)
        var pending: [DecodedFrame] = []
        var renditionsEnded = false
        func shifted(_ frame: DecodedFrame) -> Double { frame.time - shift }
        while let reference = try references.next() {
            if interruption.requested.withLock({ $0 }) { throw .cancelled }
            let time = reference.time
            // Read the rendition up to a frame past this one's window.
            while !renditionsEnded && (pending.last.map { shifted($0) <= time + tolerance } ?? true) {
                if let frame = try renditions.next() { pending.append(frame) } else { renditionsEnded = true }
            }
            // Frames before the window found no reference frame.
            while let first = pending.first, shifted(first) < time - tolerance {
                series.unpairedRenditionFrames.append(first.index)
                pending.removeFirst()
            }
            let candidates = pending.indices.filter { abs(shifted(pending[$0]) - time) <= tolerance }
            guard let best = candidates.min(by: { abs(shifted(pending[$0]) - time) < abs(shifted(pending[$1]) - time) }) else {
                series.unpairedReferenceFrames.append(reference.index)
                continue
            }
            // Frames before the partner in the window are left over (duplicates).
            for index in 0..<best { series.unpairedRenditionFrames.append(pending[index].index) }
            let partner = pending[best]
            pending.removeFirst(best + 1)
            let scores = FrameMetrics.scores(reference.picture, partner.picture)
            series.pairs.append(FramePairScore(
                referenceFrame: reference.index, referenceTime: reference.time, renditionFrame: partner.index, renditionTime: partner.time,
                psnr: scores.psnr, ssim: scores.ssim))
        }
        // The rendition's frames after the reference's end.
        series.unpairedRenditionFrames += pending.map(\.index)
        while !renditionsEnded, let frame = try renditions.next() { series.unpairedRenditionFrames.append(frame.index) }
        return series
    }
}
