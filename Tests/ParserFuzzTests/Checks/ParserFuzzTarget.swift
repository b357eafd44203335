/// The fuzz targets: one for each parser of bytes that come from outside the process (listed, with
/// what each covers, in Documentation/Reliability.md). Each runs one input through its parser and
/// checks more than "no crash": a parse that succeeds gives values within their documented ranges,
/// and values written out and read back are the same values.
///
/// The fuzz package (Fuzz/, built with AddressSanitizer and libFuzzer's coverage) runs them on
/// generated inputs; `ParserFuzzTests` replays every input kept in Fuzz/Corpus/<name>/ (the seeds
/// and the inputs the fuzzers found) through them in the normal build.
public enum ParserFuzzTarget: String, CaseIterable, Sendable {
    /// HLS playlists (multivariant and media, PROGRAM-DATE-TIME, attributes) and the offsets of two
    /// angles: PlayerKitHLS's `MediaPlaylist` and `PlaylistClock.offsets`.
    case hlsPlaylist = "hls-playlist"
    /// The first video timestamp of MPEG-TS and fragmented MP4 segments: PlayerKitHLS's
    /// `SegmentTimestamps`.
    case segmentTimestamps = "segment-timestamps"
    /// The cache's HTTP answers: header lines, `Content-Range` and `Content-Length`, then the
    /// download machine's byte-range arithmetic on them: PlayerKitCache's `HTTPHeadReader`,
    /// `TransferMachine` and `ByteRanges`.
    case cacheHTTP = "cache-http"
    /// The first bytes of an MP4 file (where `moov` ends, the movie's duration): PlayerKitCache's
    /// `MP4Header`.
    case mp4Header = "mp4-header"
    /// Lines from a Syncplay room server: PlayerKitRooms's `SyncplayWire` and `JSONValue`.
    case syncplayWire = "syncplay-wire"
    /// Requests from D-Bus clients (methods and property sets with any values) against players in
    /// any state, and bus names: PlayerKitMPRIS's `MPRISPlayerModel` and `MPRISBusName`.
    case mprisRequest = "mpris-request"

    /// Runs one input through the target's parser; what it found wrong.
    public func check(_ bytes: [UInt8]) -> Violations {
        switch self {
        case .hlsPlaylist: HLSPlaylistCheck.check(bytes)
        case .segmentTimestamps: SegmentTimestampsCheck.check(bytes)
        case .cacheHTTP: CacheHTTPCheck.check(bytes)
        case .mp4Header: MP4HeaderCheck.check(bytes)
        case .syncplayWire: SyncplayWireCheck.check(bytes)
        case .mprisRequest: MPRISRequestCheck.check(bytes)
        }
    }
}
