import Foundation
import PlayerKitSupport

/// A pixel layout mpv's software renderer writes: 4 bytes per pixel, 8 bits per component,
/// components in increasing address order as the name says ("rgb0": red at byte 0). The "0"
/// byte is padding with unspecified content.
///
/// One of the two layouts PlayerKit asks mpv's software renderer for: ``rgb0`` and ``bgr0``.
public struct PixelFormat: Sendable, Hashable, CustomStringConvertible {
    /// mpv's name for the format ("rgb0" or "bgr0").
    let name: String
    /// Byte offsets of red, green and blue within a pixel.
    public let redOffset: Int, greenOffset: Int, blueOffset: Int

    private init(name: String, red: Int, green: Int, blue: Int) {
        self.name = name
        redOffset = red
        greenOffset = green
        blueOffset = blue
    }

    /// Red, green, blue, padding.
    public static let rgb0 = PixelFormat(name: "rgb0", red: 0, green: 1, blue: 2)
    /// Blue, green, red, padding: the layout of X11, Cairo and SDL's ARGB8888 on little-endian machines.
    public static let bgr0 = PixelFormat(name: "bgr0", red: 2, green: 1, blue: 0)
    /// Every supported format.
    static let all: [PixelFormat] = [.rgb0, .bgr0]

    /// The format called `name` (mpv's spelling, as ``PixelFormat/description`` gives it): for a
    /// format named in a configuration file or on a command line.
    /// - Throws: ``FrameOutputError/unsupportedPixelFormat(_:)`` naming it, for any other name
    ///   (PlayerKit asks mpv for these two layouts only).
    public init(_ name: String) throws(FrameOutputError) {
        guard let format = Self.all.first(where: { $0.name == name }) else { throw .unsupportedPixelFormat(name) }
        self = format
    }

    /// Bytes per pixel (4 for every supported format).
    var bytesPerPixel: Int { 4 }

    /// mpv's name for the format ("rgb0" or "bgr0").
    public var description: String { name }
}

/// The size and layout of the frames an output renders.
public struct FrameFormat: Sendable, Hashable, CustomStringConvertible {
    /// Sizes accepted in each dimension. mpv scales the video to fit, keeping its aspect ratio
    /// (black bars fill the rest).
    static let sizeRange: ClosedRange<Int> = 1...8192
    /// Rows start at multiples of this many bytes, and buffers too (mpv's fast path needs 64).
    static let alignment = 64

    /// Width in pixels.
    public let width: Int
    /// Height in pixels.
    public let height: Int
    /// The pixel layout.
    public let pixelFormat: PixelFormat

    /// A format; checks the size.
    /// - Throws: ``FrameOutputError/invalidSize(width:height:)`` naming the size.
    public init(width: Int, height: Int, pixelFormat: PixelFormat = .rgb0) throws(FrameOutputError) {
        guard Self.sizeRange.contains(width), Self.sizeRange.contains(height) else {
            throw .invalidSize(width: width, height: height)
        }
        self.width = width
        self.height = height
        self.pixelFormat = pixelFormat
    }

    /// Bytes from one row to the next: a row of pixels rounded up to a multiple of 64.
    var stride: Int {
        let row = width * pixelFormat.bytesPerPixel
        return (row + Self.alignment - 1) / Self.alignment * Self.alignment
    }

    /// Bytes of one frame (`stride * height`).
    var byteCount: Int { stride * height }

    /// "640x360 rgb0".
    public var description: String { "\(width)x\(height) \(pixelFormat)" }
}

/// How a ``FrameOutput`` hands out frames.
public enum FrameDelivery: Sendable, Hashable, CustomStringConvertible {
    /// A thread PlayerKit owns renders every new frame as mpv makes it due, into buffers of a
    /// reused pool; read them from ``FrameOutput/frames`` or take the newest with
    /// ``FrameOutput/latestFrame``.
    case stream
    /// The app's display loop renders when it wants a frame, with
    /// ``FrameOutput/renderIfDue(into:stride:)`` or ``FrameOutput/nextFrameIfDue()``; no
    /// thread of PlayerKit's renders. mpv paces video to these calls.
    case pull

    /// "stream" or "pull".
    public var description: String { self == .stream ? "stream" : "pull" }
}

/// What is known about one rendered frame.
public struct FrameInfo: Sendable, Hashable {
    /// The player the frame came from.
    public let playerID: PlayerID
    /// The frame's size and layout.
    public let format: FrameFormat
    /// Bytes from one row to the next in the memory the frame was rendered into.
    public let stride: Int
    /// The frame's position in the media, in seconds: the playback position the event pump saw
    /// for this frame (the render thread waits up to 40 ms for it). On a machine so busy that
    /// the position comes later than that, a frame carries the previous frame's time. Nil before
    /// the first position is known.
    public let videoTime: Double?
    /// 1 for the output's first rendered frame, then +1 per rendered frame (repeats of a frame,
    /// such as redraws while paused, are rendered frames too).
    public let sequenceNumber: UInt64
    /// Frames rendered since the previous frame this consumer received that it never saw (a
    /// slow reader of ``FrameOutput/frames`` gets the newest frame and this count, never an
    /// ever-growing queue).
    public let framesMissed: UInt64
    /// Whether mpv rendered a new video frame (false for a redraw of the last one).
    public let isNewFrame: Bool
    /// When the frame was rendered (monotonic).
    public let renderedAt: ContinuousClock.Instant

    /// Describes a frame: for frames made outside PlayerKit's renderer (a test's fake player,
    /// an app's own source). ``FrameInfo/stride`` is a row of `format`'s pixels rounded up to a
    /// multiple of 64 bytes.
    public init(playerID: PlayerID, format: FrameFormat, videoTime: Double?, sequenceNumber: UInt64,
                framesMissed: UInt64 = 0, isNewFrame: Bool = true, renderedAt: ContinuousClock.Instant) {
        self.init(playerID: playerID, format: format, stride: format.stride, videoTime: videoTime,
                  sequenceNumber: sequenceNumber, framesMissed: framesMissed, isNewFrame: isNewFrame,
                  renderedAt: renderedAt)
    }

    init(playerID: PlayerID, format: FrameFormat, stride: Int, videoTime: Double?, sequenceNumber: UInt64,
         framesMissed: UInt64, isNewFrame: Bool, renderedAt: ContinuousClock.Instant) {
        self.playerID = playerID
        self.format = format
        self.stride = stride
        self.videoTime = videoTime
        self.sequenceNumber = sequenceNumber
        self.framesMissed = framesMissed
        self.isNewFrame = isNewFrame
        self.renderedAt = renderedAt
    }
}

/// Red, green and blue of one pixel.
public struct RGBColor: Sendable, Hashable, CustomStringConvertible {
    /// Components, 0...255.
    public var red: UInt8, green: UInt8, blue: UInt8

    /// A colour.
    public init(red: UInt8, green: UInt8, blue: UInt8) {
        self.red = red
        self.green = green
        self.blue = blue
    }

    /// The largest difference of one component between the two colours.
    func distance(to other: RGBColor) -> Int {
        max(abs(Int(red) - Int(other.red)), abs(Int(green) - Int(other.green)), abs(Int(blue) - Int(other.blue)))
    }

    /// "rgb(255, 0, 0)".
    public var description: String { "rgb(\(red), \(green), \(blue))" }
}

/// One software-rendered frame: its ``info`` and its pixels, which the app owns for as long
/// as it keeps the value (the memory goes back to the output's pool when the last copy goes).
///
/// **Threading.** Immutable and `Sendable`: read it from any thread.
public struct VideoFrame: Sendable {
    /// Size, layout, times and counters.
    public let info: FrameInfo
    let buffer: FrameBuffer

    init(info: FrameInfo, buffer: FrameBuffer) {
        self.info = info
        self.buffer = buffer
    }

    /// A frame of new memory (`info.format.byteCount` bytes) with every pixel `color`: for
    /// frames made outside PlayerKit's renderer, such as a test's fake player
    /// (PlayerKitTesting's `FakePlayer` renders its frames so).
    public init(info: FrameInfo, filledWith color: RGBColor) {
        let format = info.format
        let buffer = FrameBuffer(byteCount: format.byteCount, pool: nil)
        let layout = format.pixelFormat
        for y in 0..<format.height {
            let row = buffer.pointer.advanced(by: y * info.stride)
            for x in 0..<format.width {
                let pixel = row.advanced(by: x * layout.bytesPerPixel)
                pixel.storeBytes(of: color.red, toByteOffset: layout.redOffset, as: UInt8.self)
                pixel.storeBytes(of: color.green, toByteOffset: layout.greenOffset, as: UInt8.self)
                pixel.storeBytes(of: color.blue, toByteOffset: layout.blueOffset, as: UInt8.self)
            }
        }
        self.init(info: info, buffer: buffer)
    }

    /// The player the frame came from.
    var playerID: PlayerID { info.playerID }
    /// Width in pixels.
    var width: Int { info.format.width }
    /// Height in pixels.
    var height: Int { info.format.height }
    /// Bytes from one row to the next (a multiple of 64).
    var stride: Int { info.stride }
    /// The pixel layout.
    var pixelFormat: PixelFormat { info.format.pixelFormat }
    /// The frame's position in the media, in seconds.
    var videoTime: Double? { info.videoTime }
    /// See ``FrameInfo/sequenceNumber``.
    var sequenceNumber: UInt64 { info.sequenceNumber }

    /// Calls `body` with the frame's bytes (`stride * height`, 64-byte aligned). The pointer
    /// is valid only inside `body`.
    public func withUnsafeBytes<Result, Failure: Error>(
        _ body: (UnsafeRawBufferPointer) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        try body(UnsafeRawBufferPointer(start: buffer.pointer, count: info.format.byteCount))
    }

    /// The colour of the pixel at (`x`, `y`), from the top-left corner; nil outside the frame.
    /// (Reading many pixels, read the bytes with ``withUnsafeBytes(_:)``.)
    public func color(x: Int, y: Int) -> RGBColor? {
        guard (0..<width).contains(x), (0..<height).contains(y) else { return nil }
        let format = pixelFormat
        let base = buffer.pointer.advanced(by: y * stride + x * format.bytesPerPixel)
        return RGBColor(
            red: base.load(fromByteOffset: format.redOffset, as: UInt8.self),
            green: base.load(fromByteOffset: format.greenOffset, as: UInt8.self),
            blue: base.load(fromByteOffset: format.blueOffset, as: UInt8.self))
    }

    /// The mean colour of a rectangle (clipped to the frame); nil when nothing is left. For tests.
    func averageColor(x: Int, y: Int, width: Int, height: Int) -> RGBColor? {
        let columns = max(0, x)..<min(self.width, x + width)
        let rows = max(0, y)..<min(self.height, y + height)
        guard !columns.isEmpty, !rows.isEmpty else { return nil }
        var sums = (0, 0, 0)
        for row in rows {
            for column in columns {
                guard let pixel = color(x: column, y: row) else { continue }
                sums.0 += Int(pixel.red)
                sums.1 += Int(pixel.green)
                sums.2 += Int(pixel.blue)
            }
        }
        let count = columns.count * rows.count
        return RGBColor(red: UInt8(sums.0 / count), green: UInt8(sums.1 / count), blue: UInt8(sums.2 / count))
    }

    /// A new frame holding the rectangle at (`x`, `y`) of `width` × `height` pixels (clipped to
    /// this frame; at least one pixel), in new memory of its own: for the picture inside
    /// letterbox bars, or a region to compare. Its info is this frame's, at the new size.
    public func cropped(x: Int, y: Int, width: Int, height: Int) -> VideoFrame {
        let left = min(max(x, 0), self.width - 1), top = min(max(y, 0), self.height - 1)
        let columns = max(1, min(width, self.width - left)), rows = max(1, min(height, self.height - top))
        // The size is within this frame's, so within FrameFormat's range.
        guard let format = try? FrameFormat(width: columns, height: rows, pixelFormat: pixelFormat) else { return self }
        let buffer = FrameBuffer(byteCount: format.byteCount, pool: nil)
        let bytesPerPixel = pixelFormat.bytesPerPixel
        for row in 0..<rows {
            buffer.pointer.advanced(by: row * format.stride).copyMemory(
                from: self.buffer.pointer.advanced(by: (top + row) * stride + left * bytesPerPixel), byteCount: columns * bytesPerPixel)
        }
        let cropped = FrameInfo(playerID: info.playerID, format: format, stride: format.stride, videoTime: info.videoTime,
                                sequenceNumber: info.sequenceNumber, framesMissed: info.framesMissed, isNewFrame: info.isNewFrame,
                                renderedAt: info.renderedAt)
        return VideoFrame(info: cropped, buffer: buffer)
    }

    /// A copy of the pixels, row by row without padding (`width * 4` bytes a row).
    var packedBytes: [UInt8] {
        let row = width * pixelFormat.bytesPerPixel
        var bytes = [UInt8](repeating: 0, count: row * height)
        bytes.withUnsafeMutableBytes { destination in
            for line in 0..<height {
                destination.baseAddress!.advanced(by: line * row)
                    .copyMemory(from: buffer.pointer.advanced(by: line * stride), byteCount: row)
            }
        }
        return bytes
    }
}

/// 64-byte aligned memory for one frame; goes back to its pool when released.
final class FrameBuffer: @unchecked Sendable {
    // @unchecked: written only by the renderer before the frame is published, read-only after.
    let pointer: UnsafeMutableRawPointer
    let byteCount: Int
    private let pool: FrameBufferPool?

    init(pointer: UnsafeMutableRawPointer, byteCount: Int, pool: FrameBufferPool?) {
        self.pointer = pointer
        self.byteCount = byteCount
        self.pool = pool
    }

    /// New zeroed memory.
    convenience init(byteCount: Int, pool: FrameBufferPool?) {
        let pointer = UnsafeMutableRawPointer.allocate(byteCount: byteCount, alignment: FrameFormat.alignment)
        pointer.initializeMemory(as: UInt8.self, repeating: 0, count: byteCount)
        self.init(pointer: pointer, byteCount: byteCount, pool: pool)
    }

    deinit {
        if let pool, pool.takeBack(pointer, byteCount: byteCount) { return }
        pointer.deallocate()
    }
}

/// Reuses frame memory: a released buffer's memory is kept (up to `spareLimit` of them) and
/// handed out again, so steady rendering allocates nothing.
final class FrameBufferPool: Sendable {
    private let spares = Locked<[UnsafeMutableRawPointerBox]>([])
    private let spareLimit: Int
    let byteCount: Int
    /// How many buffers were ever allocated (for tests and statistics).
    let allocations = Locked<Int>(0)

    struct UnsafeMutableRawPointerBox: @unchecked Sendable { let pointer: UnsafeMutableRawPointer }

    init(byteCount: Int, spareLimit: Int = 3) {
        self.byteCount = byteCount
        self.spareLimit = spareLimit
    }

    deinit {
        for spare in spares.withLock({ $0 }) { spare.pointer.deallocate() }
    }

    /// A buffer: reused memory when there is some, else new.
    func take() -> FrameBuffer {
        if let spare = spares.withLock({ $0.popLast() }) {
            return FrameBuffer(pointer: spare.pointer, byteCount: byteCount, pool: self)
        }
        allocations.withLock { $0 += 1 }
        return FrameBuffer(byteCount: byteCount, pool: self)
    }

    /// Keeps released memory for reuse; false when the pool is full (the caller frees it).
    func takeBack(_ pointer: UnsafeMutableRawPointer, byteCount: Int) -> Bool {
        guard byteCount == self.byteCount else { return false }
        return spares.withLock { spares in
            guard spares.count < spareLimit else { return false }
            spares.append(UnsafeMutableRawPointerBox(pointer: pointer))
            return true
        }
    }
}
