import Foundation
import PlayerKitCore

/// Where a live HLS angle's timestamps sit: the presentation timestamp of its newest segment's
/// first video frame, and that frame's wall-clock date from the playlist's
/// EXT-X-PROGRAM-DATE-TIME. mpv does not report PROGRAM-DATE-TIME (FFmpeg's HLS demuxer skips
/// it), so this reads the playlist and the segment itself, over HTTP with the system's libcurl.
///
/// Angles of one encoder share their timestamps; angles of separate encoders, or packaged
/// differently (an MPEG-TS angle beside an fMP4 one), do not. ``offsets(_:)`` puts several angles
/// on one timeline: by their PROGRAM-DATE-TIME when every playlist carries it, else on their
/// timestamps once it checked that they agree. ``PlayerKitSync/MultiView/alignTimestamps(ofPlaylists:timeout:)``
/// does both for a multi-view's members.
public struct PlaylistClock: Sendable, Hashable {
    /// The media playlist read (a multivariant playlist's first variant).
    public var url: URL
    /// The media sequence number of the segment read: the newest listed.
    public var mediaSequence: Int
    /// The presentation timestamp of that segment's first video frame, in seconds: what a
    /// player's position reads when it shows the frame, its timestamps not rebased.
    public var presentationTime: Double
    /// The wall-clock date of that frame (EXT-X-PROGRAM-DATE-TIME, carried on from the last tag
    /// by the segments' durations); nil when the playlist carries none.
    public var programDateTime: Date?
    /// Each listed segment's start, by media sequence number, in seconds after the first
    /// listed one (their EXTINF durations added up).
    var segmentStarts: [Int: Double]

    /// The largest playlist or segment read (a bound against a wrong URL).
    static let sizeLimit = 64 << 20

    /// Reads the playlist at `url` (a multivariant playlist's first variant) and its newest
    /// segment, each within `timeout`.
    /// - Throws: ``PlaylistClockError``: the URL unreachable, an HTTP error status, no answer in
    ///   time, not a playlist, or no video timestamp in the segment.
    public static func read(_ url: URL, timeout: Duration = .seconds(5)) async throws(PlaylistClockError) -> PlaylistClock {
        var playlistURL = url
        var playlist = try MediaPlaylist(parsing: await PlaylistFetch.get(url, timeout: timeout, limit: sizeLimit), url: url)
        if let variant = playlist.firstVariant {
            playlistURL = variant
            playlist = try MediaPlaylist(parsing: await PlaylistFetch.get(variant, timeout: timeout, limit: sizeLimit), url: variant)
        }
        guard let newest = playlist.segments.last else {
            throw .notAPlaylist(url: playlistURL.absoluteString, reason: "it lists no segment")
        }
        let segment = try await PlaylistFetch.get(newest.url, timeout: timeout, limit: sizeLimit)
        var initSection: Data?
        if let map = newest.initSection {
            initSection = try await PlaylistFetch.get(map, timeout: timeout, limit: sizeLimit)
        }
        guard let time = SegmentTimestamps.firstVideoTime(segment: segment, initSection: initSection) else {
            throw .noTimestamps(url: newest.url.absoluteString)
        }
        let first = playlist.segments[0].start
        return PlaylistClock(
            url: playlistURL, mediaSequence: newest.sequence, presentationTime: time,
            programDateTime: newest.programDateTime.map { Date(timeIntervalSince1970: $0) },
            segmentStarts: Dictionary(playlist.segments.map { ($0.sequence, $0.start - first) }, uniquingKeysWith: { a, _ in a }))
    }

    /// How far two segments of one encoder's angles may start apart and still count as sharing
    /// timestamps: a frame at 60 fps.
    static let sameTimestampTolerance = 0.017

    /// The offset of each clock's timestamps on the first one's timeline (the first: zero): added
    /// to an angle's timestamps, they give the same time for the same moment.
    ///
    /// When every playlist carries PROGRAM-DATE-TIME, the offsets map each angle's timestamps to
    /// its wall-clock dates (so angles of separate encoders align to within their dates'
    /// millisecond). Otherwise the angles must share their timestamps: the same segment number
    /// starts at the same timestamp in each (within a frame), and the offsets are zero.
    /// - Throws: ``PlaylistClockError/unrelatedTimestamps(url:offset:)`` when they start apart,
    ///   ``PlaylistClockError/noCommonTimeline(url:)`` when two playlists share no segment.
    public static func offsets(_ clocks: [PlaylistClock]) throws(PlaylistClockError) -> [Duration] {
        guard let reference = clocks.first else { return [] }
        if let referenceDate = reference.programDateTime, clocks.allSatisfy({ $0.programDateTime != nil }) {
            let referenceLead = referenceDate.timeIntervalSince1970 - reference.presentationTime
            return clocks.map { clock in
                .seconds((clock.programDateTime!.timeIntervalSince1970 - clock.presentationTime) - referenceLead)
            }
        }
        var result: [Duration] = [.zero]
        for clock in clocks.dropFirst() {
            // The newest segment both list, and where each says it starts.
            guard let common = Set(clock.segmentStarts.keys).intersection(reference.segmentStarts.keys).max(),
                  let startHere = clock.start(of: common), let startThere = reference.start(of: common) else {
                throw .noCommonTimeline(url: clock.url.absoluteString)
            }
            let apart = startHere - startThere
            guard abs(apart) <= sameTimestampTolerance else {
                throw .unrelatedTimestamps(url: clock.url.absoluteString, offset: .seconds(apart))
            }
            result.append(.zero)
        }
        return result
    }

    /// The presentation time at which segment `sequence` starts, from the newest segment's and
    /// the durations listed between them.
    func start(of sequence: Int) -> Double? {
        guard let there = segmentStarts[sequence], let newest = segmentStarts[mediaSequence] else { return nil }
        return presentationTime - (newest - there)
    }
}

/// An HLS playlist's lines that place its segments: a multivariant playlist's first variant, or
/// a media playlist's segments with their sequence numbers, starts, dates and init sections.
struct MediaPlaylist {
    struct Segment {
        let sequence: Int
        let url: URL
        /// Seconds after the first listed segment started (the EXTINF durations added up).
        let start: Double
        /// The segment's date (seconds since 1970), from the last PROGRAM-DATE-TIME tag since the
        /// last discontinuity, carried on by the durations.
        let programDateTime: Double?
        let initSection: URL?
    }

    var segments: [Segment] = []
    var firstVariant: URL?

    init(parsing data: Data, url: URL) throws(PlaylistClockError) {
        let text = String(decoding: data, as: UTF8.self)
        let lines = text.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }
        guard lines.first == "#EXTM3U" else {
            throw .notAPlaylist(url: url.absoluteString, reason: "it does not start with #EXTM3U")
        }
        var sequence = 0
        var start = 0.0
        var duration: Double?
        var date: Double?
        var initSection: URL?
        var variantNext = false
        for line in lines {
            if line.hasPrefix("#EXT-X-STREAM-INF") {
                variantNext = true
            } else if line.hasPrefix("#EXT-X-MEDIA-SEQUENCE:") {
                sequence = Int(line.dropFirst("#EXT-X-MEDIA-SEQUENCE:".count)) ?? 0
            } else if line.hasPrefix("#EXTINF:") {
                duration = Double(line.dropFirst("#EXTINF:".count).split(separator: ",", maxSplits: 1, omittingEmptySubsequences: false).first ?? "")
            } else if line.hasPrefix("#EXT-X-PROGRAM-DATE-TIME:") {
                date = Self.parseDate(String(line.dropFirst("#EXT-X-PROGRAM-DATE-TIME:".count)))
            } else if line.hasPrefix("#EXT-X-DISCONTINUITY"), !line.hasPrefix("#EXT-X-DISCONTINUITY-SEQUENCE") {
                date = nil
            } else if line.hasPrefix("#EXT-X-MAP:") {
                initSection = Self.attribute("URI", in: line).flatMap { URL(string: $0, relativeTo: url)?.absoluteURL }
            } else if !line.isEmpty, !line.hasPrefix("#") {
                guard let resolved = URL(string: line, relativeTo: url)?.absoluteURL else { continue }
                if variantNext {
                    if firstVariant == nil { firstVariant = resolved }
                    variantNext = false
                    continue
                }
                let length = duration ?? 0
                segments.append(Segment(sequence: sequence, url: resolved, start: start, programDateTime: date, initSection: initSection))
                sequence += 1
                start += length
                date = date.map { $0 + length }
                duration = nil
            }
        }
        if firstVariant == nil, segments.isEmpty {
            throw .notAPlaylist(url: url.absoluteString, reason: "it lists no segment and no variant")
        }
    }

    /// An ISO 8601 date with or without fractional seconds, in seconds since 1970.
    static func parseDate(_ text: String) -> Double? {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        if let date = formatter.date(from: text) { return date.timeIntervalSince1970 }
        formatter.formatOptions = [.withInternetDateTime]
        return formatter.date(from: text)?.timeIntervalSince1970
    }

    /// The value of attribute `name` of a tag's attribute list (quotes removed).
    static func attribute(_ name: String, in line: String) -> String? {
        guard let range = line.range(of: name + "=") else { return nil }
        let rest = line[range.upperBound...]
        if rest.hasPrefix("\"") {
            return rest.dropFirst().split(separator: "\"", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init)
        }
        return rest.split(separator: ",", maxSplits: 1).first.map(String.init)
    }
}
