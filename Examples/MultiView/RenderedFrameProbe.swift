import ExampleSupport
import Foundation
import PlayerKit

/// `--rendered-log` (headless): every frame each angle renders, read from its pixels. Each angle
/// renders small software frames (``FrameOutput``); the probe reads the frame number the origin
/// burned into the picture's bottom strip (a barcode of 16 blocks, Scripts/live-origin.py) and
/// notes the moment mpv rendered it (and the moment the handler got it, later by as long as the
/// output waits for the frame's position), as benchmarks measure what a viewer sees:
/// the spread of the moments angles show the same numbered frame, from nothing PlayerKit
/// reports about positions. Any thread; the frame handler runs on each output's render thread.
final class RenderedFrameProbe: Sendable {
    private struct Frame: Sendable {
        let player: String
        /// The number burned into the frame.
        let number: Int
        /// When mpv rendered it (``FrameInfo/renderedAt``), in seconds since the app started.
        let time: Double
        /// When the frame handler got it, in seconds since the app started (monotonic).
        let handled: Double
    }

    /// The frames' size: enough for the barcode's blocks, cheap to render.
    static let size = (width: 160, height: 90)
    /// Blocks in the strip (Scripts/live-origin.py's BITS) and the strip's share of the height.
    static let bits = 16
    static let stripShare = 1.0 / 8

    private let frames = Guarded<[Frame]>([])
    private let unreadable = Guarded<[String: Int]>([:])
    private let outputs = Guarded<[FrameOutput]>([])

    /// Gives each of `players` (created with `.frames`) a frame output whose every frame is read
    /// for its number. Before the players load: an output takes effect from the next load.
    func attach(to players: [Player], since start: ContinuousClock.Instant) throws {
        let format = try FrameFormat(width: Self.size.width, height: Self.size.height, pixelFormat: .bgr0)
        for player in players {
            let id = player.id.rawValue
            let output = try player.makeFrameOutput(format)
            output.setFrameHandler { [frames, unreadable] frame in
                let handled = ExampleSupport.seconds(since: start)
                guard let number = Self.number(in: frame) else {
                    unreadable.withLock { $0[id, default: 0] += 1 }
                    return
                }
                let time = frame.info.renderedAt.seconds(since: start)
                frames.withLock { $0.append(Frame(player: id, number: number, time: time, handled: handled)) }
            }
            outputs.withLock { $0.append(output) }
        }
    }

    /// The frame number in `frame`'s bottom strip; nil when a block is neither dark nor light (no
    /// picture yet, or not a barcode).
    static func number(in frame: VideoFrame) -> Int? {
        let width = frame.info.format.width, height = frame.info.format.height
        let row = Int(Double(height) * (1 - stripShare / 2))
        var number = 0
        for bit in 0..<bits {
            let column = Int(Double(width) * (Double(bit) + 0.5) / Double(bits))
            guard let pixel = frame.color(x: column, y: row) else { return nil }
            let level = (Int(pixel.red) + Int(pixel.green) + Int(pixel.blue)) / 3
            if level > 170 { number |= 1 << bit } else if level > 85 { return nil }
        }
        return number
    }

    /// Closes the outputs (their renderers go before the players shut down).
    func stop() {
        outputs.withLock { $0 }.forEach { $0.close() }
    }

    /// Writes one JSON line per rendered frame (`{"player":..., "frame":..., "t":..., "handled":...}`), then
    /// one line `{"unreadable": {player: count}}` (frames whose strip held no barcode).
    func write(to path: String) throws {
        var text = ""
        for frame in frames.withLock({ $0 }) {
            text += "{\"player\":\"\(frame.player)\",\"frame\":\(frame.number),\"t\":\(frame.time),\"handled\":\(frame.handled)}\n"
        }
        let counts = try JSONSerialization.data(withJSONObject: ["unreadable": unreadable.withLock { $0 }], options: [.sortedKeys])
        text += String(decoding: counts, as: UTF8.self) + "\n"
        try text.write(toFile: path, atomically: true, encoding: .utf8)
    }
}
