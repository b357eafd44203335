import PlayerKitSupport

/// How one player's playback is going, in figures: frames, drops, bitrates, buffer, stalls,
/// start-up, latency and the decoder. Read with ``MediaPlayer/statistics(timeout:)``, or heard
/// every interval the app chooses as ``PlayerEvent/statisticsUpdated(_:)`` while a
/// ``MediaPlayer/observeStatistics(every:)`` observation lives. Off by default: a player nobody
/// asks pays nothing for them.
///
/// **What each figure counts.** The counts and the stall figures are for the current item: they
/// start again when an item begins to load. A figure the player cannot tell is nil (nothing
/// loaded, an audio-only item has no frames, a source that declares no bitrate has no declared one). Times of
/// stalls and start-up are on the monotonic clock.
///
/// | figure | unit | AVFoundation | Media3 |
/// |---|---|---|---|
/// | ``framesRendered`` | frames | (`AVPlayerItemAccessLogEvent` has none) | `DecoderCounters.renderedOutputBufferCount` |
/// | ``framesDroppedByDecoder`` | frames | `numberOfDroppedVideoFrames` (part) | `DecoderCounters.droppedInputBufferCount` |
/// | ``framesDroppedByOutput`` | frames | `numberOfDroppedVideoFrames` (part) | `DecoderCounters.droppedBufferCount` + `skippedOutputBufferCount` |
/// | ``renderedFrameRate`` | frames per second | (none) | (none) |
/// | ``audioVideoOffset`` | seconds | (none) | (none) |
/// | ``declaredBitrate`` | bits per second | `indicatedBitrate` | `Format.bitrate` of the variant |
/// | ``mediaBitrate`` | bits per second | `averageVideoBitrate` + `averageAudioBitrate` | (none) |
/// | ``arrivingBitrate`` | bits per second | `observedBitrate` | `BandwidthMeter.getBitrateEstimate()` |
/// | ``bufferAhead`` | seconds | `loadedTimeRanges` end − current time | `getTotalBufferedDuration()` |
/// | ``bufferAheadBytes`` | bytes | (none) | (none) |
/// | ``stallCount`` | stalls | `numberOfStalls` | `PlaybackStats.totalRebufferCount` |
/// | ``stallTime`` | duration | (none) | `PlaybackStats.totalRebufferTimeMs` |
/// | ``longestStall`` | duration | (none) | `PlaybackStats.maxRebufferTimeMs` |
/// | ``timeToFirstFrame`` | duration | `startupTime` | `PlaybackStats.meanJoinTimeMs` (per playback) |
/// | ``liveLatency`` | seconds | `currentDate` − `currentTime` of the edge | `Player.getCurrentLiveOffset()` |
/// | ``videoDecoder`` | | (none) | `AnalyticsListener.onVideoDecoderInitialized` |
public struct PlaybackStatistics: Sendable, Hashable, Codable {
    /// Frames shown since the item began to load, counted while a
    /// ``MediaPlayer/observeStatistics(every:)`` observation lives: each new picture handed to
    /// the output (a seek's landing frame counts, a paused picture once) less those the output
    /// dropped meanwhile (``framesDroppedByOutput``'s increase); nil when nobody counts them,
    /// or when the item has no video.
    public var framesRendered: Int?
    /// Frames the decoder skipped to catch up (libavcodec was told not to output them: they
    /// were never decoded in full), since the item loaded; nil when the item has no video.
    public var framesDroppedByDecoder: Int?
    /// Frames decoded but not shown because the output was late for them, since the item
    /// loaded; nil when the item has no video.
    public var framesDroppedByOutput: Int?
    /// Frames per second shown over the last second: the frames handed to the output in that
    /// second less the output's drops per second between the last two samples; nil when frames
    /// are not counted.
    public var renderedFrameRate: Double?
    /// How far the sound is ahead of the picture, in seconds (negative: behind), as the player
    /// last measured it; nil without both audio and video.
    public var audioVideoOffset: Double?
    /// The bitrate, in bits per second, that the source declares for what plays: an HLS
    /// variant's `BANDWIDTH`; nil when the source declares none.
    public var declaredBitrate: Double?
    /// The bitrate of the media itself, in bits per second: the size of the video and audio
    /// packets between keyframes over their duration; nil before it is known.
    public var mediaBitrate: Double?
    /// How fast the player reads its source, in bits per second, over the last second: what
    /// arrives on the wire for a network source, what is read of a local file (0 while its
    /// buffer is full and it waits); nil when unknown.
    public var arrivingBitrate: Double?
    /// How much media the player holds ahead of the position, in seconds; nil when unknown.
    public var bufferAhead: Double?
    /// How much media the player holds ahead of the position, in bytes (packets in memory);
    /// nil when unknown.
    public var bufferAheadBytes: Int?
    /// How many times playback stalled (``PlayerState/buffering`` after the first frame,
    /// whether the source starved or a recovery reopened it) since the item began to load.
    public var stallCount = 0
    /// How long playback stalled in all, an ongoing stall included up to the moment of the read.
    public var stallTime = Duration.zero
    /// The longest stall, an ongoing one included.
    public var longestStall = Duration.zero
    /// From the start of the item's load to its first frame (``PlayerEvent/firstFrame``); nil
    /// until it is shown.
    public var timeToFirstFrame: Duration?
    /// For a live stream: how far, in seconds, the picture is behind the newest media the player
    /// has received (the live edge as far as it has read; the source's own delay, such as a
    /// segment's length, comes on top); nil for an item on demand.
    public var liveLatency: Double?
    /// The video decoder in use, hardware or software; nil when no video is decoded.
    public var videoDecoder: VideoDecoder?

    /// Frames decoded since the item loaded: those shown and those the output dropped
    /// (``framesRendered`` + ``framesDroppedByOutput``); nil when either is unknown.
    public var framesDecoded: Int? {
        guard let framesRendered, let framesDroppedByOutput else { return nil }
        return framesRendered + framesDroppedByOutput
    }

    /// Statistics with no figure known and no stall: what a test sets figures on, e.g. for a
    /// `FakePlayer`'s ``MediaPlayer/statistics(timeout:)``.
    public init() {}

    private enum CodingKeys: String, CodingKey {
        case framesRendered, framesDroppedByDecoder, framesDroppedByOutput, renderedFrameRate, audioVideoOffset
        case declaredBitrate, mediaBitrate, arrivingBitrate, bufferAhead, bufferAheadBytes
        case stallCount, stallTime, longestStall, timeToFirstFrame, liveLatency, videoDecoder
    }

    /// Decodes statistics ``encode(to:)`` wrote: durations in seconds.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        func seconds(_ key: CodingKeys) throws -> Duration? {
            try container.decodeIfPresent(Double.self, forKey: key).map { .milliseconds(Int64(($0 * 1000).rounded())) }
        }
        framesRendered = try container.decodeIfPresent(Int.self, forKey: .framesRendered)
        framesDroppedByDecoder = try container.decodeIfPresent(Int.self, forKey: .framesDroppedByDecoder)
        framesDroppedByOutput = try container.decodeIfPresent(Int.self, forKey: .framesDroppedByOutput)
        renderedFrameRate = try container.decodeIfPresent(Double.self, forKey: .renderedFrameRate)
        audioVideoOffset = try container.decodeIfPresent(Double.self, forKey: .audioVideoOffset)
        declaredBitrate = try container.decodeIfPresent(Double.self, forKey: .declaredBitrate)
        mediaBitrate = try container.decodeIfPresent(Double.self, forKey: .mediaBitrate)
        arrivingBitrate = try container.decodeIfPresent(Double.self, forKey: .arrivingBitrate)
        bufferAhead = try container.decodeIfPresent(Double.self, forKey: .bufferAhead)
        bufferAheadBytes = try container.decodeIfPresent(Int.self, forKey: .bufferAheadBytes)
        stallCount = try container.decodeIfPresent(Int.self, forKey: .stallCount) ?? 0
        stallTime = try seconds(.stallTime) ?? .zero
        longestStall = try seconds(.longestStall) ?? .zero
        timeToFirstFrame = try seconds(.timeToFirstFrame)
        liveLatency = try container.decodeIfPresent(Double.self, forKey: .liveLatency)
        videoDecoder = try container.decodeIfPresent(VideoDecoder.self, forKey: .videoDecoder)
    }

    /// Encodes the figures under their names, the durations (``stallTime``, ``longestStall``,
    /// ``timeToFirstFrame``) in seconds, figures not known left out: what `--json` prints.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encodeIfPresent(framesRendered, forKey: .framesRendered)
        try container.encodeIfPresent(framesDroppedByDecoder, forKey: .framesDroppedByDecoder)
        try container.encodeIfPresent(framesDroppedByOutput, forKey: .framesDroppedByOutput)
        try container.encodeIfPresent(renderedFrameRate, forKey: .renderedFrameRate)
        try container.encodeIfPresent(audioVideoOffset, forKey: .audioVideoOffset)
        try container.encodeIfPresent(declaredBitrate, forKey: .declaredBitrate)
        try container.encodeIfPresent(mediaBitrate, forKey: .mediaBitrate)
        try container.encodeIfPresent(arrivingBitrate, forKey: .arrivingBitrate)
        try container.encodeIfPresent(bufferAhead, forKey: .bufferAhead)
        try container.encodeIfPresent(bufferAheadBytes, forKey: .bufferAheadBytes)
        try container.encode(stallCount, forKey: .stallCount)
        try container.encode(stallTime.inSeconds, forKey: .stallTime)
        try container.encode(longestStall.inSeconds, forKey: .longestStall)
        try container.encodeIfPresent(timeToFirstFrame?.inSeconds, forKey: .timeToFirstFrame)
        try container.encodeIfPresent(liveLatency, forKey: .liveLatency)
        try container.encodeIfPresent(videoDecoder, forKey: .videoDecoder)
    }

    /// The intervals ``MediaPlayer/observeStatistics(every:)`` takes: from 50 ms (20 samples a
    /// second) to a day.
    public static let observableIntervals = Duration.milliseconds(50)...Duration.seconds(86_400)

    /// Checks an interval for ``MediaPlayer/observeStatistics(every:)`` against
    /// ``observableIntervals``.
    static func checkInterval(_ interval: Duration) throws(PlayerError) {
        guard observableIntervals.contains(interval) else { throw intervalRefused(interval) }
    }

    /// The error for an interval outside ``observableIntervals``, naming it.
    public static func intervalRefused(_ interval: Duration) -> PlayerError {
        .invalidArgument(name: "interval", value: "\(interval)", reason: "must be from 0.05 s (20 a second) to a day")
    }
}
