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
public struct Track: Sendable, Hashable, Codable, Identifiable {
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

    /// Creates a track description.
    public init(id: Int, kind: Kind, title: String? = nil, language: String? = nil, codec: String? = nil,
                isSelected: Bool = false, videoSize: VideoSize? = nil) {
        self.id = id
        self.kind = kind
        self.title = title
        self.language = language
        self.codec = codec
        self.isSelected = isSelected
        self.videoSize = videoSize
    }
}

/// What is known about an item once it has loaded.
public struct MediaInfo: Sendable, Hashable, Codable {
    /// The source as it was loaded.
    public var source: String
    /// The duration in seconds; nil for live streams and sources without one.
    public var duration: Double?
    /// The selected video track's size; nil for audio-only media.
    public var videoSize: VideoSize?
    /// The title (metadata title, or the file name when there is none).
    public var title: String?
    /// Every track of the item.
    public var tracks: [Track]

    /// Creates a media description.
    public init(source: String, duration: Double?, videoSize: VideoSize?, title: String?, tracks: [Track]) {
        self.source = source
        self.duration = duration
        self.videoSize = videoSize
        self.title = title
        self.tracks = tracks
    }
}
