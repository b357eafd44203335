internal import CFFmpeg
import Foundation
import PlayerKitSupport

/// A picture in 8-bit YUV 4:2:0 (FFmpeg's `yuv420p`): what the metrics compare. The chroma planes
/// are half the size, rounded up.
struct YUVPicture: Sendable {
    let width: Int
    let height: Int
    /// Luma, then the two chroma planes, each packed (no padding between rows).
    var planes: [[UInt8]]

    var chromaWidth: Int { (width + 1) / 2 }
    var chromaHeight: Int { (height + 1) / 2 }

    /// The width and height of plane `index`.
    func size(ofPlane index: Int) -> (width: Int, height: Int) {
        index == 0 ? (width, height) : (chromaWidth, chromaHeight)
    }
}

/// One decoded frame: its place in the file and its time from the stream's start.
struct DecodedFrame: Sendable {
    let index: Int
    /// Seconds from the first frame's presentation time.
    let time: Double
    let picture: YUVPicture
}

/// The frames of a file's first video stream, decoded by FFmpeg as fast as it can (its own
/// threads), converted to `yuv420p` at a size of the caller's choice (FFmpeg's bicubic scaler,
/// as its `scale` filter does by default). Blocking: made and read on one thread that is not
/// Swift's cooperative pool.
final class FrameDecoder {
    let path: String
    /// The stream's size.
    let sourceWidth: Int
    let sourceHeight: Int
    /// Frames per second from the stream's average rate, or nil when unknown.
    let frameRate: Double?
    /// The output size.
    private(set) var width: Int
    private(set) var height: Int

    private var format: UnsafeMutablePointer<AVFormatContext>?
    private var codec: UnsafeMutablePointer<AVCodecContext>?
    private var packet: UnsafeMutablePointer<AVPacket>?
    private var frame: UnsafeMutablePointer<AVFrame>?
    private var scaler: OpaquePointer?
    private var scalerInput: (width: Int32, height: Int32, format: Int32)?
    private let streamIndex: Int32
    private let timeBase: AVRational
    private var startTime: Int64?
    private var nextIndex = 0
    private var draining = false
    private var finished = false

    /// Stops FFmpeg's reads once set: FFmpeg asks it in its blocking reads (its interrupt
    /// callback), so a file that blocks (a FIFO, a stalled network mount) lets go when the
    /// comparison is cancelled.
    final class Interruption: Sendable {
        let requested = Locked(false)
    }

    private let interruption: Unmanaged<Interruption>

    /// Opens `url` and its first video stream; its reads stop once `interruption` is requested.
    /// - Throws: ``AnalysisError/cannotOpen(path:reason:)``, ``AnalysisError/noVideo(path:)``,
    ///   ``AnalysisError/cancelled``.
    init(url: URL, interruption: Interruption) throws(AnalysisError) {
        path = url.path
        self.interruption = Unmanaged.passRetained(interruption)
        var format: UnsafeMutablePointer<AVFormatContext>? = avformat_alloc_context()
        format?.pointee.interrupt_callback = AVIOInterruptCB(callback: playerKitAnalysisInterrupt, opaque: self.interruption.toOpaque())
        AnalysisLog.claimThisThread()
        var status = avformat_open_input(&format, url.path, nil, nil)
        guard status >= 0, let format else {
            self.interruption.release()
            if interruption.requested.withLock({ $0 }) { throw .cancelled }
            throw .cannotOpen(path: url.path, reason: Self.message(status))
        }
        self.format = format
        status = avformat_find_stream_info(format, nil)
        guard status >= 0 else {
            avformat_close_input(&self.format)
            self.interruption.release()
            throw .cannotOpen(path: url.path, reason: Self.message(status))
        }
        var decoder: UnsafePointer<AVCodec>?
        let index = av_find_best_stream(format, AVMEDIA_TYPE_VIDEO, -1, -1, &decoder, 0)
        guard index >= 0, let decoder, let stream = format.pointee.streams[Int(index)] else {
            avformat_close_input(&self.format)
            self.interruption.release()
            throw .noVideo(path: url.path)
        }
        streamIndex = index
        timeBase = stream.pointee.time_base
        let rate = stream.pointee.avg_frame_rate
        frameRate = rate.num > 0 && rate.den > 0 ? Double(rate.num) / Double(rate.den) : nil
        guard let codec = avcodec_alloc_context3(decoder) else {
            avformat_close_input(&self.format)
            self.interruption.release()
            throw .cannotOpen(path: url.path, reason: "no memory for a decoder")
        }
        self.codec = codec
        status = avcodec_parameters_to_context(codec, stream.pointee.codecpar)
        if status >= 0 {
            codec.pointee.thread_count = 0  // as many as FFmpeg finds useful
            status = avcodec_open2(codec, decoder, nil)
        }
        guard status >= 0 else {
            avcodec_free_context(&self.codec)
            avformat_close_input(&self.format)
            self.interruption.release()
            throw .cannotOpen(path: url.path, reason: Self.message(status))
        }
        sourceWidth = Int(codec.pointee.width)
        sourceHeight = Int(codec.pointee.height)
        width = sourceWidth
        height = sourceHeight
        packet = av_packet_alloc()
        frame = av_frame_alloc()
        guard packet != nil, frame != nil, sourceWidth > 0, sourceHeight > 0 else {
            close()
            throw .cannotOpen(path: url.path, reason: "no picture size, or no memory")
        }
    }

    deinit { close() }

    /// Frames come out at `width` x `height` from now on.
    func scale(toWidth width: Int, height: Int) {
        self.width = width
        self.height = height
    }

    private func close() {
        if format != nil { interruption.release() }
        if scaler != nil { sws_freeContext(scaler); scaler = nil }
        av_frame_free(&frame)
        av_packet_free(&packet)
        avcodec_free_context(&codec)
        avformat_close_input(&format)
    }

    /// The next frame in presentation order, or nil at the end.
    /// - Throws: ``AnalysisError/decodeFailed(path:reason:)``.
    func next() throws(AnalysisError) -> DecodedFrame? {
        guard !finished, let format, let codec, let packet, let frame else { return nil }
        while true {
            let received = avcodec_receive_frame(codec, frame)
            if received >= 0 {
                defer { av_frame_unref(frame) }
                return try convert(frame)
            }
            if received == pk_averror_eof() {
                finished = true
                return nil
            }
            guard received == pk_averror_eagain() else { throw .decodeFailed(path: path, reason: Self.message(received)) }
            if draining {
                finished = true
                return nil
            }
            // The decoder wants input.
            let read = av_read_frame(format, packet)
            if read < 0 {
                draining = true
                _ = avcodec_send_packet(codec, nil)
                continue
            }
            defer { av_packet_unref(packet) }
            guard packet.pointee.stream_index == streamIndex else { continue }
            let sent = avcodec_send_packet(codec, packet)
            // A damaged packet is skipped, as ffmpeg does; anything else stops the file.
            if sent < 0 && sent != pk_averror_eagain() && sent != -EINVAL {
                continue
            }
        }
    }

    /// The frame as `yuv420p` at the output size, with its index and time.
    private func convert(_ frame: UnsafeMutablePointer<AVFrame>) throws(AnalysisError) -> DecodedFrame {
        let timestamp = frame.pointee.best_effort_timestamp != pk_av_nopts_value() ? frame.pointee.best_effort_timestamp : frame.pointee.pts
        let time: Double
        if timestamp != pk_av_nopts_value() {
            if startTime == nil { startTime = timestamp }
            time = Double(timestamp - (startTime ?? timestamp)) * Double(timeBase.num) / Double(timeBase.den)
        } else {
            time = Double(nextIndex) / (frameRate ?? 25)
        }
        let picture = try picture(of: frame)
        defer { nextIndex += 1 }
        return DecodedFrame(index: nextIndex, time: time, picture: picture)
    }

    private func picture(of frame: UnsafeMutablePointer<AVFrame>) throws(AnalysisError) -> YUVPicture {
        let frameWidth = frame.pointee.width, frameHeight = frame.pointee.height, pixelFormat = frame.pointee.format
        var picture = YUVPicture(width: width, height: height, planes: [])
        let sizes = (0..<3).map { picture.size(ofPlane: $0) }
        if pixelFormat == AV_PIX_FMT_YUV420P.rawValue && Int(frameWidth) == width && Int(frameHeight) == height {
            // Already what the metrics read: copy the rows out.
            picture.planes = (0..<3).map { plane in
                let (planeWidth, planeHeight) = sizes[plane]
                let (first, stride) = PlayerKitAnalysis.plane(of: frame, plane)
                guard let source = first else { return [UInt8](repeating: 0, count: planeWidth * planeHeight) }
                return [UInt8](unsafeUninitializedCapacity: planeWidth * planeHeight) { out, initialized in
                    for row in 0..<planeHeight {
                        (out.baseAddress! + row * planeWidth).initialize(from: source + row * stride, count: planeWidth)
                    }
                    initialized = planeWidth * planeHeight
                }
            }
            return picture
        }
        if scalerInput == nil || scalerInput! != (frameWidth, frameHeight, pixelFormat) {
            if scaler != nil { sws_freeContext(scaler) }
            scaler = sws_getContext(
                frameWidth, frameHeight, AVPixelFormat(rawValue: pixelFormat), Int32(width), Int32(height), AV_PIX_FMT_YUV420P,
                SWS_BICUBIC, nil, nil, nil)
            scalerInput = (frameWidth, frameHeight, pixelFormat)
        }
        guard let scaler else {
            let name = av_get_pix_fmt_name(AVPixelFormat(rawValue: pixelFormat)).map { String(cString: $0) } ?? "format \(pixelFormat)"
            throw .decodeFailed(path: path, reason: "no conversion from \(name) at \(frameWidth)x\(frameHeight)")
        }
        var y = [UInt8](repeating: 0, count: sizes[0].width * sizes[0].height)
        var u = [UInt8](repeating: 0, count: sizes[1].width * sizes[1].height)
        var v = [UInt8](repeating: 0, count: sizes[2].width * sizes[2].height)
        let sources: [UnsafePointer<UInt8>?] = (0..<4).map { UnsafePointer(PlayerKitAnalysis.plane(of: frame, $0).bytes) }
        let sourceStrides: [Int32] = (0..<4).map { Int32(PlayerKitAnalysis.plane(of: frame, $0).stride) }
        y.withUnsafeMutableBufferPointer { y in
            u.withUnsafeMutableBufferPointer { u in
                v.withUnsafeMutableBufferPointer { v in
                    let destinations: [UnsafeMutablePointer<UInt8>?] = [y.baseAddress, u.baseAddress, v.baseAddress, nil]
                    let strides: [Int32] = [Int32(sizes[0].width), Int32(sizes[1].width), Int32(sizes[2].width), 0]
                    _ = sws_scale(scaler, sources, sourceStrides, 0, frameHeight, destinations, strides)
                }
            }
        }
        let planes = [y, u, v]
        picture.planes = planes
        return picture
    }

    static func message(_ status: Int32) -> String {
        var buffer = [CChar](repeating: 0, count: 256)
        av_strerror(status, &buffer, buffer.count)
        let bytes = buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }
        return String(decoding: bytes, as: UTF8.self)
    }
}

/// Plane `index` of `frame`: its first byte and its stride (`data` and `linesize` are C arrays,
/// tuples in Swift).
private func plane(of frame: UnsafeMutablePointer<AVFrame>, _ index: Int) -> (bytes: UnsafeMutablePointer<UInt8>?, stride: Int) {
    let bytes = withUnsafeBytes(of: frame.pointee.data) {
        $0.load(fromByteOffset: index * MemoryLayout<UnsafeMutablePointer<UInt8>?>.stride, as: UnsafeMutablePointer<UInt8>?.self)
    }
    let stride = withUnsafeBytes(of: frame.pointee.linesize) { $0.load(fromByteOffset: index * MemoryLayout<Int32>.stride, as: Int32.self) }
    return (bytes, Int(stride))
}

/// FFmpeg's interrupt callback: non-zero stops a blocking read.
private func playerKitAnalysisInterrupt(_ opaque: UnsafeMutableRawPointer?) -> Int32 {
    guard let opaque else { return 0 }
    return Unmanaged<FrameDecoder.Interruption>.fromOpaque(opaque).takeUnretainedValue().requested.withLock { $0 } ? 1 : 0
}
