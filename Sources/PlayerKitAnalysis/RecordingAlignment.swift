import Foundation
import PlayerKitSupport

/// Where one recording is in another: the offset found by cross-correlating their sound
/// or their pictures' changes (``RecordingAlignment``), and how their clocks
/// drift apart. A moment the reference plays at `t` seconds, the other
/// plays at `t + offset + drift * 1e-6 * t`.
public struct RecordingOffset: Sendable, Hashable, Codable {
    /// How much later the other recording plays a moment than the reference does, at the
    /// reference's start (negative: earlier). Give it to a comparison or a group as the other's
    /// offset.
    public var offset: Duration
    /// How fast the other's offset grows, in parts per million of the reference's time
    /// (positive: the other plays each moment a little later than the one before: its
    /// recorder's clock ran slow), measured over their overlap; nil when it is under 20 s. A
    /// group keeps them together to the end by playing the other at `1 + drift * 1e-6` times
    /// the reference's speed.
    public var drift: Double?
    /// How far the correlation's peak stands above the best value away from it (the ratio of
    /// the two): 1 means no peak at all. Offsets below 3 are refused with
    /// ``AnalysisError/noCommonContent(reference:other:confidence:)``.
    public var confidence: Double
}

/// Finds where one recording is in another: two cameras of one concert, a lecture's camera and
/// its screen capture, an encode and its source. By their sound (``Method/sound``, the default)
/// or, for a recording without sound, by their pictures (``Method/picture``).
///
/// ```swift
/// let alignment = RecordingAlignment(reference: URL(fileURLWithPath: "camera-a.mp4"),
///                                    other: URL(fileURLWithPath: "camera-b.mp4"))
/// let found = try await alignment.run()      // found.offset: camera B runs that much later
/// ```
///
/// **By the sound** the two are cross-correlated with the phase transform (GCC-PHAT), which
/// weighs every frequency alike, so recordings through different microphones, gains and codecs
/// still meet: first over the whole of both at 1 kHz within the search range (and, when that peak
/// is not clear, pieces of 10 s of the other against the whole reference: two clocks drifting
/// apart spread a long recording's peak over the lags its offset crosses), then to a fraction of a
/// millisecond at 8 kHz on windows of 4 s across their overlap, whose line gives the offset at the
/// reference's start and the drift between the two recorders' clocks (up to 200 ppm).
///
/// **By the picture** each frame's signature is the mean brightness of each cell of a 4x4 grid
/// over it; the sixteen series, laid on a common clock at 100 Hz (each frame's value held until
/// the next, so 25 and 30 fps recordings meet), are cross-correlated together, by their changes,
/// with the phase transform: within a frame of the truth, with no drift.
///
/// **When there is nothing in common** (a silent track or a still picture, recordings of
/// different events) it throws ``AnalysisError/noCommonContent(reference:other:confidence:)``
/// rather than return a wrong offset; a file without sound, aligned by its sound, is
/// ``AnalysisError/noAudio(path:)``.
///
/// **Threading.** ``run()`` works on a thread of its own, as ``QualityComparison/run()`` does,
/// and cancelling returns ``AnalysisError/cancelled`` at once.
public struct RecordingAlignment: Sendable {
    /// What the two recordings are aligned by.
    public enum Method: String, Sendable, Hashable, Codable {
        /// Their sound.
        case sound
        /// Their pictures (for a recording without sound).
        case picture
    }

    /// The recording the offset is measured from.
    var reference: URL
    /// The recording whose offset is found.
    var other: URL
    /// What they are aligned by. Default ``Method/sound``.
    var method: Method
    /// How far apart the two may be, either way. Default 10 minutes.
    var searchRange: Duration

    /// The least ``RecordingOffset/confidence`` an offset is returned with: 3.
    static var minimumConfidence: Double { 3 }

    /// An alignment of `other` to `reference` by `method`, searching `searchRange` either way.
    public init(reference: URL, other: URL, method: Method = .sound, searchRange: Duration = .seconds(600)) {
        self.reference = reference
        self.other = other
        self.method = method
        self.searchRange = searchRange
    }

    /// Decodes both recordings' sound (or pictures) and finds the offset.
    /// - Throws: ``AnalysisError`` naming the file that could not be read,
    ///   ``AnalysisError/noCommonContent(reference:other:confidence:)``, or
    ///   ``AnalysisError/cancelled``.
    public func run() async throws(AnalysisError) -> RecordingOffset {
        try await AnalysisThread.run(named: "PlayerKit.analysis") { [self] interruption throws(AnalysisError) in
            switch method {
            case .sound: try SoundAlignment(reference: reference, other: other, searchRange: searchRange).align(interruption: interruption)
            case .picture: try PictureAlignment(reference: reference, other: other, searchRange: searchRange).align(interruption: interruption)
            }
        }
    }
}

/// The alignment by sound (``RecordingAlignment/Method/sound``).
struct SoundAlignment {
    let reference: URL
    let other: URL
    let searchRange: Duration

    static let fineRate = 8000
    static let coarseFactor = 8  // 1 kHz

    func align(interruption: FrameDecoder.Interruption) throws(AnalysisError) -> RecordingOffset {
        let a = try AudioDecoder.samples(of: reference, rate: Self.fineRate, interruption: interruption)
        let b = try AudioDecoder.samples(of: other, rate: Self.fineRate, interruption: interruption)
        let refused = AnalysisError.noCommonContent(reference: reference.path, other: other.path, confidence: 0)
        guard Self.isAudible(a), Self.isAudible(b) else { throw refused }
        // Coarse: at 1 kHz, the whole of both; when its peak is not clear, also pieces of 10 s of
        // the other against the whole reference. Two recorders' clocks 100 ppm apart move the
        // offset 72 ms over 12 minutes, which spreads the whole's peak over 72 lags until it
        // cannot be told from the rest (confidence 1.5 in make bench-compare); within 10 s it
        // moves 1 ms (a minute's 6 ms still read 1.3 to 3.4). A piece's peak counts only where
        // another piece agrees with it (within what 200 ppm moves the offset between them), so
        // one chance peak among many pieces is never taken for the offset.
        let coarseA = Self.decimate(a, by: Self.coarseFactor), coarseB = Self.decimate(b, by: Self.coarseFactor)
        let coarseRate = Double(Self.fineRate / Self.coarseFactor)
        let range = Int(searchRange.inSeconds * coarseRate)
        let exclusion = Int(0.01 * coarseRate) + 1
        guard var coarse = Correlation.peak(coarseA, coarseB, maximumLag: range, exclusion: exclusion) else { throw refused }
        if interruption.requested.withLock({ $0 }) { throw .cancelled }
        let piece = Int(10 * coarseRate)
        if coarseB.count >= 4 * piece, coarse.confidence < 2 * RecordingAlignment.minimumConfidence {
            let pieces = Correlation.Pieces(coarseA)
            let count = min(9, coarseB.count / piece - 1)
            var found: [(peak: Correlation.Peak, start: Int)] = []
            for index in 1...count {
                if interruption.requested.withLock({ $0 }) { throw .cancelled }
                let start = (coarseB.count - piece) * index / (count + 1)
                let section = Array(coarseB[start..<(start + piece)])
                guard Self.isAudible(section), let peak = pieces.peak(section, maximumLag: range + start, exclusion: exclusion),
                      abs(peak.lag - start) <= range else { continue }
                // The piece's lag is from its own start: `a[n + lag]` matches `section[n]`, which
                // is `b[n + start]`.
                found.append((Correlation.Peak(lag: peak.lag - start, interpolatedLag: peak.interpolatedLag - Double(start),
                                               confidence: peak.confidence), start))
            }
            for candidate in found.sorted(by: { $0.peak.confidence > $1.peak.confidence }) where candidate.peak.confidence > coarse.confidence {
                let agreed = found.contains { other in
                    other.start != candidate.start
                        && abs(other.peak.lag - candidate.peak.lag) <= Int(Double(abs(other.start - candidate.start)) * 200e-6) + 5
                }
                if agreed {
                    coarse = candidate.peak
                    break
                }
            }
        }
        guard coarse.confidence >= RecordingAlignment.minimumConfidence else {
            throw .noCommonContent(reference: reference.path, other: other.path, confidence: coarse.confidence)
        }
        // `b` lags `a` by about `delay` samples (`b[m]` is `a[m - delay]`): refine at 8 kHz on
        // windows of 4 s across their overlap (one per 8 s of it, from 3 to 15; one when it is
        // under 20 s), each searched wide enough for two recorders' clocks 200 ppm apart, and fit
        // a line through what they find: the offset where the reference starts, and the drift.
        // (Windows of 10 s blurred each peak: at 100 ppm the offset moves 1 ms across one, and a
        // 40 s overlap's drift came out 18.6 ppm off.)
        let delay = -coarse.lag * Self.coarseFactor
        let overlapStart = max(0, -delay), overlapEnd = min(a.count, b.count - delay)
        let overlap = overlapEnd - overlapStart
        let windowLength = min(overlap, 4 * Self.fineRate)
        let windows = overlap >= 20 * Self.fineRate ? min(15, max(3, overlap / (8 * Self.fineRate))) : 1
        let slack = 2 * Self.coarseFactor + 16 + Int(Double(overlap) * 200e-6)
        var points: [(time: Double, delay: Double)] = []
        if windowLength > 4 * slack {
            for window in 0..<windows {
                if interruption.requested.withLock({ $0 }) { throw .cancelled }
                let start = overlapStart + (windows == 1 ? (overlap - windowLength) / 2 : window * (overlap - windowLength) / (windows - 1))
                let windowA = Array(a[start..<(start + windowLength)])
                // Where `a[start]` is heard in `b`, give or take the slack.
                let otherStart = max(0, start + delay - slack)
                let otherEnd = min(b.count, start + delay + windowLength + slack)
                guard otherEnd - otherStart > windowLength / 2 else { continue }
                let windowB = Array(b[otherStart..<otherEnd])
                // `windowB[n]` is `windowA[n + otherStart - start - exact]`.
                guard let fine = Correlation.peak(windowA, windowB, maximumLag: 2 * slack + abs(otherStart - (start + delay - slack)), exclusion: 4)
                else { continue }
                points.append((time: Double(start + windowLength / 2), delay: Double(otherStart - start) - fine.interpolatedLag))
            }
        }
        let rate = Double(Self.fineRate)
        guard !points.isEmpty else {
            return RecordingOffset(offset: Self.duration(Double(delay) / rate), drift: nil, confidence: coarse.confidence)
        }
        if points.count < 3 {
            let mean = points.map(\.delay).reduce(0, +) / Double(points.count)
            return RecordingOffset(offset: Self.duration(mean / rate), drift: nil, confidence: coarse.confidence)
        }
        // Least squares: delay = intercept + slope * time (both in samples of the reference).
        let meanTime = points.map(\.time).reduce(0, +) / Double(points.count)
        let meanDelay = points.map(\.delay).reduce(0, +) / Double(points.count)
        let covariance = points.map { ($0.time - meanTime) * ($0.delay - meanDelay) }.reduce(0, +)
        let variance = points.map { ($0.time - meanTime) * ($0.time - meanTime) }.reduce(0, +)
        let slope = variance > 0 ? covariance / variance : 0
        let intercept = meanDelay - slope * meanTime
        return RecordingOffset(offset: Self.duration(intercept / rate), drift: slope * 1e6, confidence: coarse.confidence)
    }

    static func duration(_ seconds: Double) -> Duration { .nanoseconds(Int64((seconds * 1e9).rounded())) }

    /// Whether `samples` hold more than silence (an RMS above -80 dBFS).
    static func isAudible(_ samples: [Float]) -> Bool {
        guard !samples.isEmpty else { return false }
        let energy = samples.reduce(0.0) { $0 + Double($1) * Double($1) }
        return energy / Double(samples.count) > 1e-8
    }

    /// Means of `factor` samples: a low-pass and a lower rate.
    static func decimate(_ samples: [Float], by factor: Int) -> [Float] {
        var output = [Float](repeating: 0, count: samples.count / factor)
        samples.withUnsafeBufferPointer { input in
            for index in output.indices {
                var sum: Float = 0
                for offset in 0..<factor { sum += input[index * factor + offset] }
                output[index] = sum / Float(factor)
            }
        }
        return output
    }
}

/// Generalized cross-correlation with the phase transform.
enum Correlation {
    /// Pieces of one recording against the whole of another, the whole's transform made once.
    struct Pieces {
        let transform: FFT
        let size: Int
        let count: Int
        let re: [Float], im: [Float]

        /// For pieces of up to a quarter of `a`'s length (at least a minute at 1 kHz).
        init(_ a: [Float]) {
            var size = 2
            while size < a.count + max(a.count / 4, 60_000) { size <<= 1 }
            self.size = size
            count = a.count
            transform = FFT(size: size)
            (re, im) = transform.forward(a)
        }

        /// The peak of the GCC-PHAT of the whole and `piece` (no longer than ``size`` minus the
        /// whole's length).
        func peak(_ piece: [Float], maximumLag: Int, exclusion: Int) -> Peak? {
            guard piece.count <= size - count else { return nil }
            let (bRe, bIm) = transform.forward(piece)
            var crossRe = [Float](repeating: 0, count: size), crossIm = [Float](repeating: 0, count: size)
            for index in 0..<size {
                let real = re[index] * bRe[index] + im[index] * bIm[index]
                let imaginary = im[index] * bRe[index] - re[index] * bIm[index]
                let magnitude = (real * real + imaginary * imaginary).squareRoot()
                if magnitude > 1e-12 {
                    crossRe[index] = real / magnitude
                    crossIm[index] = imaginary / magnitude
                }
            }
            let correlation = transform.inverseReal(crossRe, crossIm)
            return Correlation.best(in: correlation, size: size, lags: Correlation.lags(maximumLag: maximumLag, a: count, b: piece.count),
                                    exclusion: exclusion)
        }
    }

    struct Peak {
        /// The lag of the peak, in samples: `a[n + lag]` matches `b[n]`.
        let lag: Int
        /// The lag refined between samples (a parabola through the peak and its neighbours).
        let interpolatedLag: Double
        /// The peak over the best value beyond `exclusion` samples from it.
        let confidence: Double
    }

    /// The peak of the GCC-PHAT of `a` and `b` within `maximumLag` either way, or nil when there
    /// is none (both silent). With `highestFrequency` (cycles per sample), only the frequencies
    /// up to it take part.
    static func peak(_ a: [Float], _ b: [Float], maximumLag: Int, exclusion: Int) -> Peak? {
        peak(channels: [a], [b], maximumLag: maximumLag, exclusion: exclusion)
    }

    /// The same over several channels of one recording against the same channels of the other
    /// (their cross-spectra summed before the phase transform).
    static func peak(channels a: [[Float]], _ b: [[Float]], maximumLag: Int, exclusion: Int) -> Peak? {
        guard let longestA = a.map(\.count).max(), let longestB = b.map(\.count).max() else { return nil }
        var size = 2
        while size < longestA + longestB { size <<= 1 }
        let transform = FFT(size: size)
        var sumRe = [Float](repeating: 0, count: size), sumIm = [Float](repeating: 0, count: size)
        for (channelA, channelB) in zip(a, b) {
            let (aRe, aIm) = transform.forward(channelA)
            let (bRe, bIm) = transform.forward(channelB)
            for index in 0..<size {
                sumRe[index] += aRe[index] * bRe[index] + aIm[index] * bIm[index]
                sumIm[index] += aIm[index] * bRe[index] - aRe[index] * bIm[index]
            }
        }
        var aRe = sumRe, aIm = sumIm
        for index in 0..<size {
            // Weighted to magnitude 1 (the phase transform).
            let re = aRe[index], im = aIm[index]
            let magnitude = (re * re + im * im).squareRoot()
            if magnitude > 1e-12 {
                aRe[index] = re / magnitude
                aIm[index] = im / magnitude
            } else {
                aRe[index] = 0
                aIm[index] = 0
            }
        }
        let correlation = transform.inverseReal(aRe, aIm)
        return best(in: correlation, size: size, lags: Self.lags(maximumLag: maximumLag, a: longestA, b: longestB), exclusion: exclusion)
    }

    /// The lags searched: within `maximumLag` either way, and only where the two overlap at all
    /// (`a[n + lag]` against `b[n]`: from `-(b - 1)` to `a - 1`). With a transform of at least
    /// `a + b` points these are distinct places of the circular correlation; beyond them a
    /// lag would be read at the place of another (a piece 540 s into a 720 s recording was once
    /// read as 508.576 s before it: a transform of 1048.576 s, searched to ±600 s).
    static func lags(maximumLag: Int, a: Int, b: Int) -> ClosedRange<Int> {
        let lower = -min(maximumLag, max(b - 1, 0)), upper = min(maximumLag, max(a - 1, 0))
        return lower...max(lower, upper)
    }

    /// The highest value of the circular `correlation` within `lags`, its place refined, and its
    /// height over the best beyond `exclusion` from it.
    static func best(in correlation: [Float], size: Int, lags: ClosedRange<Int>, exclusion: Int) -> Peak? {
        func value(_ lag: Int) -> Float { correlation[(lag % size + size) % size] }
        var best = 0
        if !lags.contains(best) { best = lags.lowerBound }
        for lag in lags where value(lag) > value(best) { best = lag }
        var second: Float = 0
        for lag in lags where abs(lag - best) > exclusion { second = max(second, value(lag)) }
        let peakValue = value(best)
        guard peakValue > 0 else { return nil }
        let left = value(best - 1), right = value(best + 1)
        let curvature = left - 2 * peakValue + right
        let shift = curvature < 0 ? Double(0.5 * (left - right) / curvature) : 0
        return Peak(lag: best, interpolatedLag: Double(best) + max(-0.5, min(0.5, shift)),
                    confidence: second > 0 ? Double(peakValue / second) : .infinity)
    }
}

/// An iterative radix-2 complex FFT of one power-of-two size (FFmpeg 5.1's `av_tx` falls back
/// to a transform of quadratic cost above 2^17 points; a one-hour recording at 1 kHz needs 2^23).
struct FFT {
    let size: Int
    private let cosines: [Float]
    private let sines: [Float]
    private let bitReversed: [Int32]

    init(size: Int) {
        precondition(size >= 2 && size & (size - 1) == 0, "a power of two")
        self.size = size
        let half = size / 2
        cosines = (0..<half).map { Float(cos(-2 * Double.pi * Double($0) / Double(size))) }
        sines = (0..<half).map { Float(sin(-2 * Double.pi * Double($0) / Double(size))) }
        let bits = size.trailingZeroBitCount
        bitReversed = (0..<size).map { index in
            var reversed = 0, value = index
            for _ in 0..<bits {
                reversed = (reversed << 1) | (value & 1)
                value >>= 1
            }
            return Int32(reversed)
        }
    }

    /// The transform of `samples` (zero-padded to the size).
    func forward(_ samples: [Float]) -> (re: [Float], im: [Float]) {
        var re = [Float](repeating: 0, count: size), im = [Float](repeating: 0, count: size)
        for index in 0..<min(samples.count, size) { re[Int(bitReversed[index])] = samples[index] }
        butterflies(&re, &im, inverse: false)
        return (re, im)
    }

    /// The real part of the inverse transform (unscaled: a peak's height is relative).
    func inverseReal(_ re: [Float], _ im: [Float]) -> [Float] {
        var shuffledRe = [Float](repeating: 0, count: size), shuffledIm = [Float](repeating: 0, count: size)
        for index in 0..<size {
            shuffledRe[Int(bitReversed[index])] = re[index]
            shuffledIm[Int(bitReversed[index])] = im[index]
        }
        butterflies(&shuffledRe, &shuffledIm, inverse: true)
        return shuffledRe
    }

    private func butterflies(_ re: inout [Float], _ im: inout [Float], inverse: Bool) {
        let sign: Float = inverse ? -1 : 1
        re.withUnsafeMutableBufferPointer { re in
            im.withUnsafeMutableBufferPointer { im in
                cosines.withUnsafeBufferPointer { cosines in
                    sines.withUnsafeBufferPointer { sines in
                        var span = 1
                        while span < size {
                            let stride = size / (span * 2)
                            var start = 0
                            while start < size {
                                for k in 0..<span {
                                    let twiddleRe = cosines[k * stride], twiddleIm = sign * sines[k * stride]
                                    let i = start + k, j = i + span
                                    let tRe = re[j] * twiddleRe - im[j] * twiddleIm
                                    let tIm = re[j] * twiddleIm + im[j] * twiddleRe
                                    re[j] = re[i] - tRe
                                    im[j] = im[i] - tIm
                                    re[i] += tRe
                                    im[i] += tIm
                                }
                                start += span * 2
                            }
                            span *= 2
                        }
                    }
                }
            }
        }
    }
}
