/// Pixel dimensions of a video.
public struct VideoSize: Sendable, Hashable, Codable, CustomStringConvertible {
    /// Width in pixels.
    public var width: Int
    /// Height in pixels.
    public var height: Int

    /// Creates a size.
    public init(width: Int, height: Int) {
        self.width = width
        self.height = height
    }

    /// "320x240".
    public var description: String { "\(width)x\(height)" }
}

/// One audio, video or subtitle track of the loaded item (from mpv's `track-list`).
///
/// Choose one with ``PlayerCommand/selectTrack(_:id:)``; add subtitles
/// from a file with ``Player/addSubtitles(path:title:language:select:)``.
public struct Track: Sendable, Hashable, Codable, Identifiable, CustomStringConvertible {
    /// The kind of a track.
    public enum Kind: String, Sendable, Hashable, Codable {
        /// A video track.
        case video
        /// An audio track.
        case audio
        /// A subtitle track.
        case subtitle = "sub"
        /// A track type mpv reported that PlayerKit does not know.
        case unknown
    }

    /// mpv's track ID, unique within its kind.
    public var id: Int
    /// Video, audio or subtitle.
    public var kind: Kind
    /// The track's title, if the file has one.
    public var title: String?
    /// The language tag, if the file has one (e.g. "eng").
    public var language: String?
    /// The codec name, e.g. "h264" or "aac".
    public var codec: String?
    /// Whether mpv selected this track for playback.
    public var isSelected: Bool
    /// For video tracks, the size the demuxer reports.
    public var videoSize: VideoSize?
    /// For a track added from a file of its own (external subtitles), that file's path.
    public var externalFile: String?
    /// For video tracks, the frame rate the demuxer reports (mpv's `demux-fps`), in frames per
    /// second; nil when the container gives none. For a variable-frame-rate file it is an
    /// average, so frame numbers derived from it are estimates.
    public var frameRate: Double?

    /// Creates a track description, as the core makes them from mpv's track list: for a test's
    /// fake media, or an app's own track menus under test.
    public init(id: Int, kind: Kind, title: String? = nil, language: String? = nil, codec: String? = nil,
                isSelected: Bool = false, videoSize: VideoSize? = nil, externalFile: String? = nil, frameRate: Double? = nil) {
        self.frameRate = frameRate
        self.id = id
        self.kind = kind
        self.title = title
        self.language = language
        self.codec = codec
        self.isSelected = isSelected
        self.videoSize = videoSize
        self.externalFile = externalFile
    }

    /// "audio 2 (eng, \"Commentary\", aac, selected)".
    public var description: String {
        var details: [String] = []
        if let language { details.append(language) }
        if let title { details.append("\"\(title)\"") }
        if let codec { details.append(codec) }
        if externalFile != nil { details.append("external") }
        if isSelected { details.append("selected") }
        return "\(kind.rawValue) \(id)" + (details.isEmpty ? "" : " (\(details.joined(separator: ", ")))")
    }
}

/// The video decoder playing the current item (mpv's `video-codec` and `hwdec-current`):
/// ``Player/videoDecoder``, reported by ``PlayerEvent/videoDecoderChanged(_:)``.
public struct VideoDecoder: Sendable, Hashable, Codable, CustomStringConvertible {
    /// The decoder as libavcodec describes it, e.g. "H.264 / AVC / MPEG-4 AVC / MPEG-4 part 10".
    public var codec: String
    /// The hardware decoding API in use ("vaapi", "vdpau", "nvdec", ...; mpv's `--hwdec`
    /// names), or nil when the video is decoded in software (also when hardware decoding is on
    /// but was not possible: see ``PlayerCommand/setHardwareDecoding(_:)``).
    public var hardwareAPI: String?


    /// Creates a description.
    init(codec: String, hardwareAPI: String? = nil) {
        self.codec = codec
        self.hardwareAPI = hardwareAPI
    }

    /// "H.264 / AVC (software)" or "H.264 / AVC (vaapi)".
    public var description: String { "\(codec) (\(hardwareAPI ?? "software"))" }
}

/// What is known about an item once it has loaded.
public struct MediaInfo: Sendable, Hashable, Codable {
    /// The source as it was loaded.
    public var source: String
    /// The duration in seconds; nil for live streams and sources without one.
    public var duration: Double?
    /// Whether the item is a live stream: a source with no end of its own that cannot be seeked
    /// (an HLS playlist without `EXT-X-ENDLIST`, RTSP, SRT, UDP, a stream of unknown length).
    /// A live item has no ``duration`` and publishes no ``PlayerEvent/durationKnown(_:)``; when
    /// its source goes away it reconnects instead of ending (``PlayerState/buffering``, then
    /// ``PlayerState/playing`` again, or ``PlayerError/networkFailed(source:cause:after:)``).
    /// Decided when the item loads; a source of unknown length that mpv could not seek and whose
    /// length grows as it plays is found live then (``PlayerSnapshot/isLive``).
    public var isLive: Bool
    /// The selected video track's size; nil for audio-only media.
    public var videoSize: VideoSize?
    /// The title (metadata title, or the file name when there is none).
    public var title: String?
    /// Every track of the item.
    public var tracks: [Track]
    /// The selected video track's frame rate (``Track/frameRate``); nil for audio-only media
    /// and containers that give none.
    var frameRate: Double? { tracks.first { $0.kind == .video && $0.isSelected }?.frameRate }

    /// Creates a media description; `isLive`: whether the item is a live stream (``isLive``;
    /// not live by default, as 1.1 made them).
    public init(source: String, duration: Double?, videoSize: VideoSize?, title: String?, tracks: [Track], isLive: Bool = false) {
        self.source = source
        self.duration = duration
        self.videoSize = videoSize
        self.title = title
        self.tracks = tracks
        self.isLive = isLive
    }

    private enum CodingKeys: String, CodingKey {
        case source, duration, videoSize, title, tracks, isLive
    }

    /// Decodes a description; one encoded before `isLive` existed (PlayerKit 1.1) is not live.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        source = try container.decode(String.self, forKey: .source)
        duration = try container.decodeIfPresent(Double.self, forKey: .duration)
        videoSize = try container.decodeIfPresent(VideoSize.self, forKey: .videoSize)
        title = try container.decodeIfPresent(String.self, forKey: .title)
        tracks = try container.decode([Track].self, forKey: .tracks)
        isLive = try container.decodeIfPresent(Bool.self, forKey: .isLive) ?? false
    }
}
