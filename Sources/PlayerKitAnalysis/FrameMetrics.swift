import Foundation

/// One metric of a frame pair: per plane, and over the three planes weighted by their sizes.
///
/// For PSNR (in dB; infinite when the planes are identical) these are FFmpeg's `psnr` filter's
/// `psnr_y`, `psnr_u`, `psnr_v` and `psnr_avg` (``all``: from the planes' mean squared errors
/// weighted by their sizes); for SSIM (0 to 1; 1 when identical) its `ssim` filter's `Y`, `U`,
/// `V` and `All`.
public struct PlaneScores: Sendable, Hashable, Codable {
    /// Luma.
    public var y: Double
    /// The first chroma plane (Cb).
    public var u: Double
    /// The second chroma plane (Cr).
    public var v: Double
    /// Over the three planes, weighted by their sizes.
    public var all: Double
}

/// The metrics of one frame pair, computed as FFmpeg's `psnr` and `ssim` filters compute them on
/// `yuv420p` frames of one size, so the values are equal to theirs.
enum FrameMetrics {
    /// Each plane's share of the picture's samples.
    static func weights(_ picture: YUVPicture) -> [Double] {
        let counts = (0..<3).map { plane -> Double in
            let size = picture.size(ofPlane: plane)
            return Double(size.width * size.height)
        }
        let total = counts.reduce(0, +)
        return counts.map { $0 / total }
    }

    static func psnr(_ a: YUVPicture, _ b: YUVPicture) -> PlaneScores {
        precondition(a.width == b.width && a.height == b.height, "pictures of one size")
        var meanSquaredErrors: [Double] = []
        for plane in 0..<3 {
            let size = a.size(ofPlane: plane)
            let sum = a.planes[plane].withUnsafeBufferPointer { left in
                b.planes[plane].withUnsafeBufferPointer { right in
                    squaredErrorSum(left, right)
                }
            }
            meanSquaredErrors.append(Double(sum) / Double(size.width * size.height))
        }
        let weights = weights(a)
        let average = zip(meanSquaredErrors, weights).map { $0 * $1 }.reduce(0, +)
        return PlaneScores(
            y: decibels(meanSquaredErrors[0]), u: decibels(meanSquaredErrors[1]), v: decibels(meanSquaredErrors[2]),
            all: decibels(average))
    }

    /// 10 log10(255² / mse), as FFmpeg's `get_psnr`.
    static func decibels(_ meanSquaredError: Double) -> Double {
        10 * log10(255 * 255 / meanSquaredError)
    }

    private static func squaredErrorSum(_ a: UnsafeBufferPointer<UInt8>, _ b: UnsafeBufferPointer<UInt8>) -> UInt64 {
        var total: UInt64 = 0
        var index = 0
        let count = min(a.count, b.count)
        // In rows of at most 4096 samples, summed in 32 bits (255² * 4096 < 2³²), then added up.
        while index < count {
            let end = min(index + 4096, count)
            var partial: UInt32 = 0
            for sample in index..<end {
                let difference = Int32(a[sample]) - Int32(b[sample])
                partial &+= UInt32(difference * difference)
            }
            total += UInt64(partial)
            index = end
        }
        return total
    }

    static func ssim(_ a: YUVPicture, _ b: YUVPicture) -> PlaneScores {
        precondition(a.width == b.width && a.height == b.height, "pictures of one size")
        var scores: [Double] = []
        for plane in 0..<3 {
            let size = a.size(ofPlane: plane)
            scores.append(a.planes[plane].withUnsafeBufferPointer { left in
                b.planes[plane].withUnsafeBufferPointer { right in
                    ssimPlane(left, right, width: size.width, height: size.height)
                }
            })
        }
        let weights = weights(a)
        return PlaneScores(y: scores[0], u: scores[1], v: scores[2], all: zip(scores, weights).map { $0 * $1 }.reduce(0, +))
    }

    /// FFmpeg's `ssim_plane` (x264's SSIM): sums over 4x4 blocks, SSIM over the 8x8 windows they
    /// make two by two (a window every 4 samples), each row of windows summed in `Float`, the
    /// mean over all windows.
    static func ssimPlane(_ a: UnsafeBufferPointer<UInt8>, _ b: UnsafeBufferPointer<UInt8>, width: Int, height: Int) -> Double {
        let blocksWide = width >> 2, blocksHigh = height >> 2
        guard blocksWide >= 2, blocksHigh >= 2 else { return 1 }
        // The sums of two rows of blocks: (s1, s2, ss, s12) each.
        var previous = [Int32](repeating: 0, count: blocksWide * 4)
        var current = [Int32](repeating: 0, count: blocksWide * 4)
        blockSums(a, b, width: width, blockRow: 0, blocks: blocksWide, into: &previous)
        var total = 0.0
        for blockRow in 1..<blocksHigh {
            blockSums(a, b, width: width, blockRow: blockRow, blocks: blocksWide, into: &current)
            var line: Float = 0
            previous.withUnsafeBufferPointer { top in
                current.withUnsafeBufferPointer { bottom in
                    for block in 0..<(blocksWide - 1) {
                        let i = block * 4, j = i + 4
                        line += ssimEnd(
                            top[i] &+ top[j] &+ bottom[i] &+ bottom[j],
                            top[i + 1] &+ top[j + 1] &+ bottom[i + 1] &+ bottom[j + 1],
                            top[i + 2] &+ top[j + 2] &+ bottom[i + 2] &+ bottom[j + 2],
                            top[i + 3] &+ top[j + 3] &+ bottom[i + 3] &+ bottom[j + 3])
                    }
                }
            }
            total += Double(line)
            swap(&previous, &current)
        }
        return total / Double((blocksHigh - 1) * (blocksWide - 1))
    }

    private static func blockSums(
        _ a: UnsafeBufferPointer<UInt8>, _ b: UnsafeBufferPointer<UInt8>, width: Int, blockRow: Int, blocks: Int, into sums: inout [Int32]
    ) {
        sums.withUnsafeMutableBufferPointer { sums in
            let top = blockRow * 4 * width
            for block in 0..<blocks {
                var s1: Int32 = 0, s2: Int32 = 0, ss: Int32 = 0, s12: Int32 = 0
                for row in 0..<4 {
                    let start = top + row * width + block * 4
                    for x in start..<(start + 4) {
                        let left = Int32(a[x]), right = Int32(b[x])
                        s1 &+= left
                        s2 &+= right
                        ss &+= left &* left &+ right &* right
                        s12 &+= left &* right
                    }
                }
                sums[block * 4] = s1
                sums[block * 4 + 1] = s2
                sums[block * 4 + 2] = ss
                sums[block * 4 + 3] = s12
            }
        }
    }

    /// FFmpeg's `ssim_end1` for 8-bit samples, in the same integer and `Float` steps.
    @inline(__always)
    private static func ssimEnd(_ s1: Int32, _ s2: Int32, _ ss: Int32, _ s12: Int32) -> Float {
        let c1: Int32 = 416  // (int)(.01*.01*255*255*64 + .5)
        let c2: Int32 = 235_963  // (int)(.03*.03*255*255*64*63 + .5)
        let variances = ss &* 64 &- s1 &* s1 &- s2 &* s2
        let covariance = s12 &* 64 &- s1 &* s2
        return Float(2 &* s1 &* s2 &+ c1) * Float(2 &* covariance &+ c2)
            / (Float(s1 &* s1 &+ s2 &* s2 &+ c1) * Float(variances &+ c2))
    }
}
