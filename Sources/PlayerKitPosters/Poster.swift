import Foundation
import PlayerKitCore

/// Which frame of an item a ``PosterMaker`` takes.
///
/// `@nonexhaustive`: a `switch` over it outside PlayerKit needs `@unknown default`.
@nonexhaustive
public enum PosterMoment: Sendable, Hashable, CustomStringConvertible {
    /// The frame on screen at this time, in seconds (exact, not the keyframe before it). A time
    /// after the item's end gives its last frame.
    case time(Double)
    /// The first frame that is not black (most of its pixels dark: a fade-in, a black leader),
    /// looking at most `within` seconds into the item (default 5).
    case firstNonBlackFrame(within: Double = 5)

    /// "at 1.5 s" or "first non-black frame within 5 s".
    public var description: String {
        switch self {
        case .time(let seconds): return "at \(seconds) s"
        case .firstNonBlackFrame(let within): return "first non-black frame within \(within) s"
        }
    }
}

/// One item a ``PosterMaker`` makes a poster for.
public struct PosterRequest: Sendable, Hashable {
    /// The item: a file, a URL, or a source a `MediaCache` made (its reads then fill the cache).
    var source: MediaSource
    /// Which frame.
    var moment: PosterMoment
    /// Where to save the poster as PNG, if anywhere (the folder must exist; an existing file is
    /// replaced).
    var pngFile: URL?

    /// A request for a poster of `source` at `moment` (default: its first non-black frame),
    /// saved as PNG to `pngFile` when one is given (the folder must exist; an existing file is
    /// replaced). `source` is a file, a URL, or a source a `MediaCache` made (its reads then
    /// fill the cache).
    public init(source: MediaSource, moment: PosterMoment = .firstNonBlackFrame(), pngFile: URL? = nil) {
        self.source = source
        self.moment = moment
        self.pngFile = pngFile
    }
}

/// A poster: one frame of an item, scaled to fit the maker's box with the item's aspect ratio.
public struct Poster: Sendable {
    /// The item.
    var source: MediaSource
    /// The picture (no letterbox bars), in memory of its own.
    public var frame: VideoFrame
    /// The frame's time in the item, in seconds.
    public var time: Double
    /// The PNG file written, when the request asked for one.
    var pngFile: URL?

    /// A poster; see each property.
    init(source: MediaSource, frame: VideoFrame, time: Double, pngFile: URL?) {
        self.source = source
        self.frame = frame
        self.time = time
        self.pngFile = pngFile
    }
}

/// One result of ``PosterMaker/posters(for:)->EventStream<PosterResult>``.
public struct PosterResult: Sendable {
    /// The request's index in the batch.
    public var index: Int
    /// The request (the batch's `requests[index]`).
    var request: PosterRequest
    /// The poster, or why there is none.
    public var outcome: Result<Poster, PosterError>

    /// A result; see each property.
    init(index: Int, request: PosterRequest, outcome: Result<Poster, PosterError>) {
        self.index = index
        self.request = request
        self.outcome = outcome
    }
}

/// Why a ``PosterMaker`` made no poster. Each case names the item (its source) or the value at
/// fault; the maker and its other items are unaffected.
///
/// `@nonexhaustive`: a `switch` over it outside PlayerKit needs `@unknown default`.
@nonexhaustive
public enum PosterError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The item could not be loaded; the player's error says why.
    case loadFailed(MediaSource, PlayerError)
    /// The item has no video track.
    case noVideo(MediaSource)
    /// Every frame within the span looked at was black.
    case noNonBlackFrame(MediaSource, within: Double)
    /// The item's load and frame took longer than the maker's per-item timeout.
    case timedOut(MediaSource, after: Duration)
    /// The batch was cancelled before the item's poster was made.
    case cancelled(MediaSource)
    /// The PNG file could not be written (`reason` is the system's).
    case pngNotWritten(URL, reason: String)
    /// The maker could not create a player for its pool.
    case playerUnavailable(PlayerError)
    /// A configuration value is out of range.
    case invalidConfiguration(String, reason: String)
    /// The maker was shut down.
    case shutDown

    /// A one-line description naming the item or value.
    public var description: String {
        switch self {
        case .loadFailed(let source, let error): return "no poster for \(source): \(error)"
        case .noVideo(let source): return "no poster for \(source): it has no video"
        case .noNonBlackFrame(let source, let within): return "no poster for \(source): every frame of its first \(within) s is black"
        case .timedOut(let source, let after): return "no poster for \(source): not done within \(after)"
        case .cancelled(let source): return "no poster for \(source): cancelled"
        case .pngNotWritten(let file, let reason): return "poster not saved to \(file.path): \(reason)"
        case .playerUnavailable(let error): return "the poster maker has no player: \(error)"
        case .invalidConfiguration(let value, let reason): return "poster maker \(value): \(reason)"
        case .shutDown: return "the poster maker was shut down"
        }
    }
}

extension VideoFrame {
    /// Whether most of the picture is dark: the mean luma of a grid of samples is below 24 of
    /// 255 and no sample above 48 ("black" for a poster: a fade-in, a leader, a black slate).
    var isMostlyBlack: Bool {
        let stepX = max(1, info.format.width / 32), stepY = max(1, info.format.height / 32)
        var sum = 0, count = 0, brightest = 0
        for y in Swift.stride(from: 0, to: info.format.height, by: stepY) {
            for x in Swift.stride(from: 0, to: info.format.width, by: stepX) {
                guard let pixel = color(x: x, y: y) else { continue }
                let luma = (299 * Int(pixel.red) + 587 * Int(pixel.green) + 114 * Int(pixel.blue)) / 1000
                sum += luma
                count += 1
                brightest = max(brightest, luma)
            }
        }
        return count == 0 || (sum / count < 24 && brightest <= 48)
    }

    /// The picture of an item of `aspect` inside this frame, without the letterbox bars the
    /// renderer drew around it (mpv centres the picture in the frame).
    func fitted(aspect: VideoSize) -> VideoFrame {
        guard aspect.width > 0, aspect.height > 0 else { return self }
        let scale = min(Double(info.format.width) / Double(aspect.width), Double(info.format.height) / Double(aspect.height))
        let pictureWidth = min(info.format.width, max(1, Int((Double(aspect.width) * scale).rounded())))
        let pictureHeight = min(info.format.height, max(1, Int((Double(aspect.height) * scale).rounded())))
        if pictureWidth == info.format.width, pictureHeight == info.format.height { return self }
        return cropped(x: (info.format.width - pictureWidth) / 2, y: (info.format.height - pictureHeight) / 2, width: pictureWidth, height: pictureHeight)
    }
}
