internal import CFFmpeg
import Foundation

/// The sound of a file's first audio stream as mono `Float` samples at one rate, placed on the
/// file's timeline: sample `i` is heard at `i / rate` seconds (silence before the stream's first
/// sample; the decoder drops a codec's priming samples, such as AAC's, as FFmpeg's players do),
/// so an offset found between two files is the offset of what is heard.
enum AudioDecoder {
    /// Decodes all of `url`'s first audio stream, downmixed and resampled to `rate`.
    /// - Throws: ``AnalysisError/cannotOpen(path:reason:)``, ``AnalysisError/noAudio(path:)``,
    ///   ``AnalysisError/decodeFailed(path:reason:)``, ``AnalysisError/cancelled``.
    static func samples(of url: URL, rate: Int, interruption: FrameDecoder.Interruption) throws(AnalysisError) -> [Float] {
        let path = url.path
        let opaque = Unmanaged.passRetained(interruption)
        defer { opaque.release() }
        var format: UnsafeMutablePointer<AVFormatContext>? = avformat_alloc_context()
        format?.pointee.interrupt_callback = AVIOInterruptCB(callback: playerKitAudioInterrupt, opaque: opaque.toOpaque())
        AnalysisLog.claimThisThread()
        var status = avformat_open_input(&format, path, nil, nil)
        guard status >= 0, let opened = format else {
            if interruption.requested.withLock({ $0 }) { throw .cancelled }
            throw .cannotOpen(path: path, reason: FrameDecoder.message(status))
        }
        defer { avformat_close_input(&format) }
        status = avformat_find_stream_info(opened, nil)
        guard status >= 0 else { throw .cannotOpen(path: path, reason: FrameDecoder.message(status)) }
        var decoder: UnsafePointer<AVCodec>?
        let index = av_find_best_stream(opened, AVMEDIA_TYPE_AUDIO, -1, -1, &decoder, 0)
        guard index >= 0, let decoder, let stream = opened.pointee.streams[Int(index)] else { throw .noAudio(path: path) }
        var codec: UnsafeMutablePointer<AVCodecContext>? = avcodec_alloc_context3(decoder)
        guard let context = codec else { throw .cannotOpen(path: path, reason: "no memory for a decoder") }
        defer { avcodec_free_context(&codec) }
        status = avcodec_parameters_to_context(context, stream.pointee.codecpar)
        if status >= 0 { status = avcodec_open2(context, decoder, nil) }
        guard status >= 0 else { throw .cannotOpen(path: path, reason: FrameDecoder.message(status)) }
        var packet: UnsafeMutablePointer<AVPacket>? = av_packet_alloc()
        var frame: UnsafeMutablePointer<AVFrame>? = av_frame_alloc()
        defer {
            av_packet_free(&packet)
            av_frame_free(&frame)
        }
        guard let packet, let frame else { throw .cannotOpen(path: path, reason: "no memory") }
        var resampler: OpaquePointer?
        defer { swr_free(&resampler) }
        let timeBase = stream.pointee.time_base
        var output: [Float] = []
        var draining = false
        var frames = 0
        while true {
            let received = avcodec_receive_frame(context, frame)
            if received >= 0 {
                frames += 1
                if frames % 64 == 0, interruption.requested.withLock({ $0 }) { throw .cancelled }
                defer { av_frame_unref(frame) }
                if resampler == nil {
                    var mono = pk_mono_layout()
                    var input = frame.pointee.ch_layout
                    guard swr_alloc_set_opts2(&resampler, &mono, AV_SAMPLE_FMT_FLT, Int32(rate), &input,
                                              AVSampleFormat(rawValue: frame.pointee.format), frame.pointee.sample_rate, 0, nil) >= 0,
                          swr_init(resampler) >= 0
                    else { throw .decodeFailed(path: path, reason: "no conversion of its sound to mono at \(rate) Hz") }
                    // Silence from the timeline's start to the first sample.
                    let pts = frame.pointee.best_effort_timestamp != pk_av_nopts_value() ? frame.pointee.best_effort_timestamp : frame.pointee.pts
                    if pts != pk_av_nopts_value() {
                        let seconds = Double(pts) * Double(timeBase.num) / Double(timeBase.den)
                        if seconds > 0 { output.append(contentsOf: repeatElement(0, count: Int((seconds * Double(rate)).rounded()))) }
                    }
                }
                let capacity = Int(swr_get_out_samples(resampler, frame.pointee.nb_samples)) + 16
                let start = output.count
                output.append(contentsOf: repeatElement(0, count: capacity))
                let converted = output.withUnsafeMutableBufferPointer { buffer -> Int32 in
                    var destination: UnsafeMutablePointer<UInt8>? = UnsafeMutableRawPointer(buffer.baseAddress! + start).assumingMemoryBound(to: UInt8.self)
                    let sources = UnsafeMutableRawPointer(frame.pointee.extended_data!).assumingMemoryBound(to: UnsafePointer<UInt8>?.self)
                    return swr_convert(resampler, &destination, Int32(capacity), sources, frame.pointee.nb_samples)
                }
                guard converted >= 0 else { throw .decodeFailed(path: path, reason: FrameDecoder.message(converted)) }
                output.removeLast(capacity - Int(converted))
                continue
            }
            if received == pk_averror_eof() { break }
            guard received == pk_averror_eagain() else { throw .decodeFailed(path: path, reason: FrameDecoder.message(received)) }
            if draining { break }
            if av_read_frame(opened, packet) < 0 {
                if interruption.requested.withLock({ $0 }) { throw .cancelled }
                draining = true
                _ = avcodec_send_packet(context, nil)
                continue
            }
            defer { av_packet_unref(packet) }
            guard packet.pointee.stream_index == index else { continue }
            _ = avcodec_send_packet(context, packet)  // a damaged packet is skipped, as ffmpeg does
        }
        return output
    }
}

/// FFmpeg's interrupt callback for the sound's reads.
private func playerKitAudioInterrupt(_ opaque: UnsafeMutableRawPointer?) -> Int32 {
    guard let opaque else { return 0 }
    return Unmanaged<FrameDecoder.Interruption>.fromOpaque(opaque).takeUnretainedValue().requested.withLock { $0 } ? 1 : 0
}
