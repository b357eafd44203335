import Foundation
import PlayerKitSupport

/// The alignment by picture (``RecordingAlignment/Method/picture``). (The frame-to-frame change
/// of the whole picture, the signature first tried, followed the encoder's rhythm more than the
/// picture's: two encodes started together matched at no offset whatever they showed.)
struct PictureAlignment {
    let reference: URL
    let other: URL
    let searchRange: Duration

    /// The clock the signatures are laid on.
    static let rate = 100.0

    func align(interruption: FrameDecoder.Interruption) throws(AnalysisError) -> RecordingOffset {
        let a = try Self.signature(of: reference, interruption: interruption)
        let b = try Self.signature(of: other, interruption: interruption)
        let refused = AnalysisError.noCommonContent(reference: reference.path, other: other.path, confidence: 0)
        let moves = { (channels: [[Float]]) in channels.contains { channel in channel.contains { abs($0) > 0.25 } } }
        guard moves(a), moves(b) else { throw refused }
        guard let peak = Correlation.peak(channels: a, b, maximumLag: Int(searchRange.inSeconds * Self.rate), exclusion: Int(0.2 * Self.rate))
        else { throw refused }
        guard peak.confidence >= RecordingAlignment.minimumConfidence else {
            throw .noCommonContent(reference: reference.path, other: other.path, confidence: peak.confidence)
        }
        // `b[n]` is `a[n + lag]`: the other shows each moment `-lag` samples later.
        return RecordingOffset(offset: SoundAlignment.duration(-peak.interpolatedLag / Self.rate), drift: nil, confidence: peak.confidence)
    }

    /// The mean brightness of each cell of a 4x4 grid over each frame (at 64x36), held from the
    /// frame's time to the next frame's on the 100 Hz clock, as each series' changes.
    static func signature(of url: URL, interruption: FrameDecoder.Interruption) throws(AnalysisError) -> [[Float]] {
        let decoder = try FrameDecoder(url: url, interruption: interruption)
        decoder.scale(toWidth: 64, height: 36)
        var frames: [(time: Double, cells: [Float])] = []
        while let frame = try decoder.next() {
            if frame.index % 64 == 0, interruption.requested.withLock({ $0 }) { throw .cancelled }
            let luma = frame.picture.planes[0]
            var cells = [Float](repeating: 0, count: 16)
            for y in 0..<36 {
                for x in 0..<64 { cells[(y / 9) * 4 + x / 16] += Float(luma[y * 64 + x]) }
            }
            frames.append((frame.time, cells.map { $0 / (9 * 16) }))
        }
        guard let last = frames.last else { return [] }
        let count = Int(last.time * rate) + 1
        var channels = [[Float]](repeating: [Float](repeating: 0, count: count), count: 16)
        for (index, frame) in frames.enumerated() {
            let from = max(0, Int((frame.time * rate).rounded()))
            let to = min(count, index + 1 < frames.count ? Int((frames[index + 1].time * rate).rounded()) : count)
            guard from < to else { continue }
            for cell in 0..<16 {
                for sample in from..<to { channels[cell][sample] = frame.cells[cell] }
            }
        }
        // Each series' change from one sample to the next: non-zero where a frame changed the
        // cell. (The series themselves correlated barely above their noise: 1.1 times, 2 to 4
        // times with the phase transform; their changes, 13 times, on the test's recordings.)
        return channels.map { channel in
            guard channel.count > 1 else { return [] }
            return (1..<channel.count).map { channel[$0] - channel[$0 - 1] }
        }
    }
}
