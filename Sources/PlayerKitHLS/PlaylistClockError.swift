import Foundation
import PlayerKitCore
import PlayerKitSupport

/// Why a live playlist's clock could not be read, or angles could not be put on one timeline.
///
/// `@nonexhaustive`: a `switch` over it outside PlayerKit needs `@unknown default`.
@nonexhaustive
public enum PlaylistClockError: Error, Sendable, Hashable, CustomStringConvertible {
    /// `url` could not be fetched: no connection, a reset, or more than the size bound.
    case unreachable(url: String, reason: String)
    /// `url` answered with this HTTP status (400 or more).
    case httpStatus(url: String, status: Int)
    /// `url` did not answer within `timeout`.
    case timedOut(url: String, timeout: Duration)
    /// `url` is not an HLS playlist, or lists no segment: `reason` says what is missing.
    case notAPlaylist(url: String, reason: String)
    /// The segment at `url` is neither MPEG-TS nor fragmented MP4 with a video track whose
    /// first timestamp could be read.
    case noTimestamps(url: String)
    /// The angles share no clock and their playlists carry no EXT-X-PROGRAM-DATE-TIME: the
    /// same segment of the playlist at `url` starts `offset` from the first playlist's (for
    /// example a TS angle beside an fMP4 angle with timestamps of their own). Aligned on their
    /// timestamps, they would show that far apart; give the member `offset`, a media offset, as
    /// it is (`MultiView.setMediaOffset(_:for:)`) instead.
    case unrelatedTimestamps(url: String, offset: Duration)
    /// The playlist at `url` carries no EXT-X-PROGRAM-DATE-TIME and shares no segment number
    /// with the first playlist, so nothing places it on the first one's timeline.
    case noCommonTimeline(url: String)

    /// E.g. "http://origin/angle-1/live.m3u8: timestamps unrelated to the first angle's (+1.40 s), and no PROGRAM-DATE-TIME".
    public var description: String {
        switch self {
        case .unreachable(let url, let reason): "\(url): unreachable: \(reason)"
        case .httpStatus(let url, let status): "\(url): HTTP status \(status)"
        case .timedOut(let url, let timeout): "\(url): no answer within \(timeout)"
        case .notAPlaylist(let url, let reason): "\(url): not an HLS media playlist: \(reason)"
        case .noTimestamps(let url): "\(url): no video timestamp found (neither MPEG-TS nor fragmented MP4 with a video track)"
        case .unrelatedTimestamps(let url, let offset):
            "\(url): timestamps unrelated to the first angle's (\(offset.signedSeconds)), and no PROGRAM-DATE-TIME"
        case .noCommonTimeline(let url): "\(url): no PROGRAM-DATE-TIME and no segment in common with the first angle"
        }
    }
}

extension Duration {
    /// "+1.40 s".
    var signedSeconds: String {
        String(format: "%+.2f s", inSeconds)
    }
}
