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
        guard let left = a.baseAddress, let right = b.baseAddress else { return 0 }
        let count = min(a.count, b.count)
        var total: UInt64 = 0
        var index = 0
        // 16 samples at a time in vector lanes, summed in 32 bits for at most 4096 samples
        // (255² * 256 per lane < 2³¹), then added up.
        while index + 16 <= count {
            let end = min(index + 4096, count - (count - index) % 16)
            var partial = SIMD16<Int32>()
            while index < end {
                let x = SIMD16<Int32>(truncatingIfNeeded: UnsafeRawPointer(left + index).loadUnaligned(as: SIMD16<UInt8>.self))
                let y = SIMD16<Int32>(truncatingIfNeeded: UnsafeRawPointer(right + index).loadUnaligned(as: SIMD16<UInt8>.self))
                let difference = x &- y
                partial &+= difference &* difference
                index += 16
            }
            total += UInt64(partial.wrappedSum())
        }
        while index < count {
            let difference = Int64(left[index]) - Int64(right[index])
            total += UInt64(difference * difference)
            index += 1
        }
        return total
    }

    /// PSNR and SSIM in one pass over each plane: SSIM's 4x4 block sums give the squared error
    /// of the samples they cover (`ss - 2 * s12` per block), and only the samples beyond the last
    /// whole block are read again. Equal to ``psnr(_:_:)`` and ``ssim(_:_:)``.
    static func scores(_ a: YUVPicture, _ b: YUVPicture) -> (psnr: PlaneScores, ssim: PlaneScores) {
        precondition(a.width == b.width && a.height == b.height, "pictures of one size")
        var ssims: [Double] = [], meanSquaredErrors: [Double] = []
        for plane in 0..<3 {
            let size = a.size(ofPlane: plane)
            let (ssim, squaredError) = a.planes[plane].withUnsafeBufferPointer { left in
                b.planes[plane].withUnsafeBufferPointer { right in
                    ssimAndSquaredError(left, right, width: size.width, height: size.height)
                }
            }
            ssims.append(ssim)
            meanSquaredErrors.append(Double(squaredError) / Double(size.width * size.height))
        }
        let weights = weights(a)
        let average = zip(meanSquaredErrors, weights).map { $0 * $1 }.reduce(0, +)
        return (PlaneScores(y: decibels(meanSquaredErrors[0]), u: decibels(meanSquaredErrors[1]), v: decibels(meanSquaredErrors[2]),
                            all: decibels(average)),
                PlaneScores(y: ssims[0], u: ssims[1], v: ssims[2], all: zip(ssims, weights).map { $0 * $1 }.reduce(0, +)))
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

    /// The four sums of each 4x4 block of a row of blocks: the samples of each picture, their
    /// squares (both pictures'), and their products.
    private struct BlockRow {
        var s1: [Int32], s2: [Int32], ss: [Int32], s12: [Int32]

        init(blocks: Int) {
            // Padded to a multiple of 4 blocks (vector stores); the padding is never read.
            let count = (blocks + 3) & ~3
            s1 = [Int32](repeating: 0, count: count)
            s2 = s1
            ss = s1
            s12 = s1
        }
    }

    /// FFmpeg's `ssim_plane` (x264's SSIM): sums over 4x4 blocks, SSIM over the 8x8 windows they
    /// make two by two (a window every 4 samples), each row of windows summed in `Float`, the
    /// mean over all windows.
    static func ssimPlane(_ a: UnsafeBufferPointer<UInt8>, _ b: UnsafeBufferPointer<UInt8>, width: Int, height: Int) -> Double {
        ssimAndSquaredError(a, b, width: width, height: height).ssim
    }

    /// ``ssimPlane(_:_:width:height:)`` and the plane's sum of squared differences, together.
    static func ssimAndSquaredError(_ a: UnsafeBufferPointer<UInt8>, _ b: UnsafeBufferPointer<UInt8>,
                                    width: Int, height: Int) -> (ssim: Double, squaredError: UInt64) {
        let blocksWide = width >> 2, blocksHigh = height >> 2
        guard blocksWide >= 2, blocksHigh >= 2, let left = a.baseAddress, let right = b.baseAddress else {
            return (1, squaredErrorSum(a, b))
        }
        var previous = BlockRow(blocks: blocksWide)
        var current = BlockRow(blocks: blocksWide)
        blockSums(left, right, width: width, blockRow: 0, blocks: blocksWide, into: &previous)
        var squaredError = blockSquaredErrors(previous, blocks: blocksWide)
        var total = 0.0
        for blockRow in 1..<blocksHigh {
            blockSums(left, right, width: width, blockRow: blockRow, blocks: blocksWide, into: &current)
            squaredError += blockSquaredErrors(current, blocks: blocksWide)
            total += Double(windowRow(previous, current, windows: blocksWide - 1))
            swap(&previous, &current)
        }
        // The samples no whole block covers: the columns right of the last block, in every row,
        // and the rows below the last block row.
        let coveredWidth = blocksWide * 4, coveredHeight = blocksHigh * 4
        for row in 0..<height {
            let from = row < coveredHeight ? coveredWidth : 0
            for x in from..<width {
                let difference = Int64(left[row * width + x]) - Int64(right[row * width + x])
                squaredError += difference * difference
            }
        }
        return (total / Double((blocksHigh - 1) * (blocksWide - 1)), UInt64(squaredError))
    }

    /// The squared differences of the samples a row of blocks covers: `ss - 2 * s12` per block.
    private static func blockSquaredErrors(_ row: BlockRow, blocks: Int) -> Int64 {
        var sum: Int64 = 0
        row.ss.withUnsafeBufferPointer { ss in
            row.s12.withUnsafeBufferPointer { s12 in
                for block in 0..<blocks { sum += Int64(ss[block] &- 2 &* s12[block]) }
            }
        }
        return sum
    }

    /// The SSIM of a row of windows, summed in `Float` as FFmpeg's `ssim_endn_8bit` sums them.
    private static func windowRow(_ top: BlockRow, _ bottom: BlockRow, windows: Int) -> Float {
        var line: Float = 0
        top.s1.withUnsafeBufferPointer { t1 in
            top.s2.withUnsafeBufferPointer { t2 in
                top.ss.withUnsafeBufferPointer { tss in
                    top.s12.withUnsafeBufferPointer { t12 in
                        bottom.s1.withUnsafeBufferPointer { b1 in
                            bottom.s2.withUnsafeBufferPointer { b2 in
                                bottom.ss.withUnsafeBufferPointer { bss in
                                    bottom.s12.withUnsafeBufferPointer { b12 in
                                        // Eight windows at a time in vector lanes, each lane
                                        // summed on its own (as FFmpeg's SSE `ssim_end_line`
                                        // sums four), then the lanes and the rest.
                                        var lanes = SIMD8<Float>()
                                        var i = 0
                                        func eight(_ row: UnsafeBufferPointer<Int32>, _ at: Int) -> SIMD8<Int32> {
                                            UnsafeRawPointer(row.baseAddress! + at).loadUnaligned(as: SIMD8<Int32>.self)
                                        }
                                        while i + 9 <= windows + 1 && i + 9 <= t1.count {
                                            lanes += ssimEnd8(
                                                eight(t1, i) &+ eight(t1, i + 1) &+ eight(b1, i) &+ eight(b1, i + 1),
                                                eight(t2, i) &+ eight(t2, i + 1) &+ eight(b2, i) &+ eight(b2, i + 1),
                                                eight(tss, i) &+ eight(tss, i + 1) &+ eight(bss, i) &+ eight(bss, i + 1),
                                                eight(t12, i) &+ eight(t12, i + 1) &+ eight(b12, i) &+ eight(b12, i + 1))
                                            i += 8
                                        }
                                        line = lanes.sum()
                                        while i < windows {
                                            line += ssimEnd(
                                                t1[i] &+ t1[i + 1] &+ b1[i] &+ b1[i + 1],
                                                t2[i] &+ t2[i + 1] &+ b2[i] &+ b2[i + 1],
                                                tss[i] &+ tss[i + 1] &+ bss[i] &+ bss[i + 1],
                                                t12[i] &+ t12[i + 1] &+ b12[i] &+ b12[i + 1])
                                            i += 1
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
        return line
    }

    private static func blockSums(
        _ left: UnsafePointer<UInt8>, _ right: UnsafePointer<UInt8>, width: Int, blockRow: Int, blocks: Int, into sums: inout BlockRow
    ) {
        let top = blockRow * 4 * width
        sums.s1.withUnsafeMutableBufferPointer { out1 in
            sums.s2.withUnsafeMutableBufferPointer { out2 in
                sums.ss.withUnsafeMutableBufferPointer { outss in
                    sums.s12.withUnsafeMutableBufferPointer { out12 in
                        var block = 0
                        // Four blocks (16 samples of each of their four rows) at a time, in vector
                        // lanes; lanes summed in pairs twice give each block's sum.
                        while block + 4 <= blocks {
                            // Two passes over the four rows (they stay in the cache), two sums
                            // each: four 16-lane sums at once do not fit in the vector registers.
                            var s1 = SIMD16<Int16>(), s2 = SIMD16<Int16>()
                            for row in 0..<4 {
                                let start = top + row * width + block * 4
                                s1 &+= SIMD16<Int16>(truncatingIfNeeded: UnsafeRawPointer(left + start).loadUnaligned(as: SIMD16<UInt8>.self))
                                s2 &+= SIMD16<Int16>(truncatingIfNeeded: UnsafeRawPointer(right + start).loadUnaligned(as: SIMD16<UInt8>.self))
                            }
                            store(SIMD16<Int32>(truncatingIfNeeded: s1), into: out1, at: block)
                            store(SIMD16<Int32>(truncatingIfNeeded: s2), into: out2, at: block)
                            var ss = SIMD16<Int32>(), s12 = SIMD16<Int32>()
                            for row in 0..<4 {
                                let start = top + row * width + block * 4
                                let x = SIMD16<Int32>(truncatingIfNeeded: UnsafeRawPointer(left + start).loadUnaligned(as: SIMD16<UInt8>.self))
                                let y = SIMD16<Int32>(truncatingIfNeeded: UnsafeRawPointer(right + start).loadUnaligned(as: SIMD16<UInt8>.self))
                                ss &+= x &* x &+ y &* y
                                s12 &+= x &* y
                            }
                            store(ss, into: outss, at: block)
                            store(s12, into: out12, at: block)
                            block += 4
                        }
                        while block < blocks {
                            var s1: Int32 = 0, s2: Int32 = 0, ss: Int32 = 0, s12: Int32 = 0
                            for row in 0..<4 {
                                let start = top + row * width + block * 4
                                for x in start..<(start + 4) {
                                    let l = Int32(left[x]), r = Int32(right[x])
                                    s1 &+= l
                                    s2 &+= r
                                    ss &+= l &* l &+ r &* r
                                    s12 &+= l &* r
                                }
                            }
                            out1[block] = s1
                            out2[block] = s2
                            outss[block] = ss
                            out12[block] = s12
                            block += 1
                        }
                    }
                }
            }
        }
    }

    /// The sums of each group of four lanes of `lanes`, stored at `block`...`block + 3`.
    @inline(__always)
    private static func store(_ lanes: SIMD16<Int32>, into out: UnsafeMutableBufferPointer<Int32>, at block: Int) {
        let pairs = lanes.evenHalf &+ lanes.oddHalf  // (0+1), (2+3), ...
        let quads = pairs.evenHalf &+ pairs.oddHalf  // (0+1+2+3), (4+5+6+7), ...
        UnsafeMutableRawPointer(out.baseAddress! + block).storeBytes(of: quads, as: SIMD4<Int32>.self)
    }

    /// ``ssimEnd(_:_:_:_:)`` for eight windows at once.
    @inline(__always)
    private static func ssimEnd8(_ s1: SIMD8<Int32>, _ s2: SIMD8<Int32>, _ ss: SIMD8<Int32>, _ s12: SIMD8<Int32>) -> SIMD8<Float> {
        let c1 = SIMD8<Int32>(repeating: 416), c2 = SIMD8<Int32>(repeating: 235_963)
        let variances = ss &* 64 &- s1 &* s1 &- s2 &* s2
        let covariance = s12 &* 64 &- s1 &* s2
        let numerator = SIMD8<Float>(2 &* s1 &* s2 &+ c1) * SIMD8<Float>(2 &* covariance &+ c2)
        return numerator / (SIMD8<Float>(s1 &* s1 &+ s2 &* s2 &+ c1) * SIMD8<Float>(variances &+ c2))
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
