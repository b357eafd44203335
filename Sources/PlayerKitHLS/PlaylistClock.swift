import Foundation
import PlayerKitCore

/// Where a live HLS angle's timestamps sit: the presentation timestamp of its newest segment's
/// first video frame, and that frame's wall-clock date from the playlist's
/// EXT-X-PROGRAM-DATE-TIME. mpv does not report PROGRAM-DATE-TIME (FFmpeg's HLS demuxer skips
/// it), so this reads the playlist and the segment itself, over HTTP with the system's libcurl.
///
/// Angles of one encoder share their timestamps; angles of separate encoders, or packaged
/// differently (an MPEG-TS angle beside an fMP4 one), do not. ``mediaOffsets(_:)`` puts several angles
/// on one timeline: by their PROGRAM-DATE-TIME when every playlist carries it, else on their
/// timestamps once it checked that they agree. ``PlayerKitSync/MultiView/alignTimestamps(ofPlaylists:timeout:)``
/// does both for a multi-view's members.
public struct PlaylistClock: Sendable, Hashable {
    /// The media playlist read (a multivariant playlist's first variant).
    public var url: URL
    /// The media sequence number of the segment read: the newest listed.
    var mediaSequence: Int
    /// The presentation timestamp of that segment's first video frame, in seconds: what a
    /// player's position reads when it shows the frame, its timestamps not rebased.
    var presentationTime: Double
    /// The wall-clock date of the newest segment's first video frame (EXT-X-PROGRAM-DATE-TIME,
    /// carried on from the last tag by the segments' durations); nil when the playlist carries
    /// none.
    public var programDateTime: Date?
    /// Each listed segment's start, by media sequence number, in seconds after the first
    /// listed one (their EXTINF durations added up).
    var segmentStarts: [Int: Double]

    /// The largest playlist read: 8 MB (a day of 2 s segments is about 3 MB). A larger one is
    /// refused as soon as its Content-Length says so, or when its bytes pass the limit.
    static let playlistSizeLimit = 8 << 20
    /// The largest segment or init section read: 64 MB (a bound against a wrong URL).
    static let segmentSizeLimit = 64 << 20

    /// Reads the playlist at `url` (a multivariant playlist's first variant) and its newest
    /// segment, each within `timeout`.
    /// - Throws: ``PlaylistClockError``: the URL unreachable, an HTTP error status, no answer in
    ///   time, not a playlist, or no video timestamp in the segment. A playlist over 8 MB or a
    ///   segment over 64 MB is ``PlaylistClockError/unreachable(url:reason:)`` ("larger than N
    ///   bytes"), refused as soon as its Content-Length says so.
    public static func read(_ url: URL, timeout: Duration = .seconds(5)) async throws(PlaylistClockError) -> PlaylistClock {
        var playlistURL = url
        var playlist = try MediaPlaylist(parsing: await PlaylistFetch.get(url, timeout: timeout, limit: playlistSizeLimit), url: url)
        if let variant = playlist.firstVariant {
            playlistURL = variant
            playlist = try MediaPlaylist(parsing: await PlaylistFetch.get(variant, timeout: timeout, limit: playlistSizeLimit), url: variant)
        }
        guard let newest = playlist.segments.last else {
            throw .notAPlaylist(url: playlistURL.absoluteString, reason: "it lists no segment")
        }
        let segment = try await PlaylistFetch.get(newest.url, range: newest.byteRange, timeout: timeout, limit: segmentSizeLimit)
        var initSection: Data?
        if let map = newest.initSection {
            initSection = try await PlaylistFetch.get(map, range: newest.initByteRange, timeout: timeout, limit: segmentSizeLimit)
        }
        guard let time = SegmentTimestamps.firstVideoTime(segment: segment, initSection: initSection) else {
            throw .noTimestamps(url: newest.url.absoluteString)
        }
        guard let clock = PlaylistClock(playlist: playlist, url: playlistURL, presentationTime: time) else {
            throw .notAPlaylist(url: playlistURL.absoluteString, reason: "it lists no segment")
        }
        return clock
    }

    /// How far two segments of one encoder's angles may start apart and still count as sharing
    /// timestamps: a frame at 60 fps.
    static let sameTimestampTolerance = 0.017

    /// Each clock's media offset on the first one's timeline (the first: zero), in the sign of
    /// every PlayerKit offset (`SyncSettings.mediaOffsets`): an angle's timestamps minus the
    /// first angle's for the same moment. Given to a `MultiView` as they are.
    ///
    /// When every playlist carries PROGRAM-DATE-TIME, the offsets map each angle's timestamps to
    /// its wall-clock dates (so angles of separate encoders align to within their dates'
    /// millisecond). Otherwise the angles must share their timestamps: the same segment number
    /// starts at the same timestamp in each (within a frame), and the offsets are zero.
    /// - Throws: ``PlaylistClockError/unrelatedTimestamps(url:offset:)`` when they start apart,
    ///   ``PlaylistClockError/noCommonTimeline(url:)`` when two playlists share no segment.
    public static func mediaOffsets(_ clocks: [PlaylistClock]) throws(PlaylistClockError) -> [Duration] {
        guard let reference = clocks.first else { return [] }
        if let referenceDate = reference.programDateTime, clocks.allSatisfy({ $0.programDateTime != nil }) {
            let referenceLead = referenceDate.timeIntervalSince1970 - reference.presentationTime
            return clocks.map { clock in
                .seconds(referenceLead - (clock.programDateTime!.timeIntervalSince1970 - clock.presentationTime))
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

extension PlaylistClock {
    /// The clock of media playlist `playlist` (read from `url`) whose newest segment's first video
    /// frame is presented at `presentationTime`; nil when it lists no segment.
    init?(playlist: MediaPlaylist, url: URL, presentationTime: Double) {
        guard let newest = playlist.segments.last else { return nil }
        let first = playlist.segments[0].start
        self.init(
            url: url, mediaSequence: newest.sequence, presentationTime: presentationTime,
            programDateTime: newest.programDateTime.map { Date(timeIntervalSince1970: $0) },
            segmentStarts: Dictionary(playlist.segments.map { ($0.sequence, $0.start - first) }, uniquingKeysWith: { a, _ in a }))
    }
}

/// An HLS playlist's lines that place its segments: a multivariant playlist's first variant, or
/// a media playlist's segments with their sequence numbers, starts, dates, byte ranges and init
/// sections.
///
/// Bytes from any origin: reading is linear in their size, and a value that cannot be what its tag
/// says (a duration that is not a finite number of seconds or is negative, a sequence number or a
/// byte range that is not a non-negative integer or overflows, durations that add up to more than
/// ``longestTimeline``, a media sequence number after the first segment, an EXT-X-MAP without a URI) is refused with ``PlaylistClockError/notAPlaylist(url:reason:)`` naming it. A
/// PROGRAM-DATE-TIME that is no real date (February 30th, hour 24) counts as absent, as the tag
/// would be.
struct MediaPlaylist {
    struct Segment {
        let sequence: Int
        let url: URL
        /// Seconds after the first listed segment started (the EXTINF durations added up).
        let start: Double
        /// The segment's date (seconds since 1970), from the last PROGRAM-DATE-TIME tag since the
        /// last discontinuity, carried on by the durations.
        let programDateTime: Double?
        /// The segment's bytes within its resource (EXT-X-BYTERANGE); nil: the whole resource.
        let byteRange: Range<Int64>?
        let initSection: URL?
        /// The init section's bytes within its resource (EXT-X-MAP's BYTERANGE); nil: all of it.
        let initByteRange: Range<Int64>?
    }

    var segments: [Segment] = []
    var firstVariant: URL?

    /// The most seconds a playlist's segments may add up to (about 31,700 years): beyond any
    /// recording, and far within what a timestamp's offset can be.
    static let longestTimeline = 1e12

    init(parsing data: Data, url: URL) throws(PlaylistClockError) {
        func refuse(_ reason: String) -> PlaylistClockError { .notAPlaylist(url: url.absoluteString, reason: reason) }
        let text = String(decoding: data, as: UTF8.self)
        let lines = text.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }
        guard lines.first == "#EXTM3U" else { throw refuse("it does not start with #EXTM3U") }
        var sequence = 0
        var start = 0.0
        var duration: Double?
        var date: Double?
        var byteRange: (length: Int64, offset: Int64?)?
        /// Where the last segment's byte range ended, and in which resource.
        var lastRangeEnd: (url: URL, end: Int64)?
        var initSection: URL?
        var initByteRange: Range<Int64>?
        var variantNext = false
        for line in lines {
            if line.hasPrefix("#EXT-X-STREAM-INF") {
                variantNext = true
            } else if let value = line.value(after: "#EXT-X-MEDIA-SEQUENCE:") {
                guard let number = Int(value), number >= 0 else {
                    throw refuse("its EXT-X-MEDIA-SEQUENCE \(value.quotedPrefix) is not a sequence number")
                }
                // RFC 8216: the tag comes before the first segment; later it would renumber them.
                guard segments.isEmpty else { throw refuse("its EXT-X-MEDIA-SEQUENCE \(value.quotedPrefix) follows a segment") }
                sequence = number
            } else if let value = line.value(after: "#EXTINF:") {
                let field = value.split(separator: ",", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
                guard let seconds = Double(field.trimmingCharacters(in: .whitespaces)), seconds.isFinite, seconds >= 0 else {
                    throw refuse("its EXTINF duration \(field.quotedPrefix) is not a number of seconds")
                }
                duration = seconds
            } else if let value = line.value(after: "#EXT-X-PROGRAM-DATE-TIME:") {
                // A date that cannot be read counts as absent (not as the last one carried on).
                date = Self.parseDate(value)
            } else if let value = line.value(after: "#EXT-X-BYTERANGE:") {
                guard let range = Self.byteRange(value) else {
                    throw refuse("its EXT-X-BYTERANGE \(value.quotedPrefix) is not a length[@offset] of bytes")
                }
                byteRange = range
            } else if line.hasPrefix("#EXT-X-DISCONTINUITY"), !line.hasPrefix("#EXT-X-DISCONTINUITY-SEQUENCE") {
                date = nil
            } else if let value = line.value(after: "#EXT-X-MAP:") {
                let attributes = Self.attributes(value)
                guard let uri = attributes["URI"], let resolved = URL(string: uri, relativeTo: url)?.absoluteURL else {
                    throw refuse("its EXT-X-MAP \(value.quotedPrefix) has no URI")
                }
                initSection = resolved
                initByteRange = nil
                if let text = attributes["BYTERANGE"] {
                    guard let range = Self.byteRange(text), range.offset ?? 0 <= Int64.max - range.length else {
                        throw refuse("its EXT-X-MAP BYTERANGE \(text.quotedPrefix) is not a length@offset of bytes")
                    }
                    let offset = range.offset ?? 0
                    initByteRange = offset..<(offset + range.length)
                }
            } else if !line.isEmpty, !line.hasPrefix("#") {
                guard let resolved = URL(string: line, relativeTo: url)?.absoluteURL else { continue }
                if variantNext {
                    if firstVariant == nil { firstVariant = resolved }
                    variantNext = false
                    continue
                }
                var range: Range<Int64>?
                if let byteRange {
                    // No offset: the range follows the last segment's, in the same resource.
                    guard let offset = byteRange.offset ?? (lastRangeEnd?.url == resolved ? lastRangeEnd?.end : nil) else {
                        throw refuse("its EXT-X-BYTERANGE of \(line.quotedPrefix) has no offset and follows no range of the same resource")
                    }
                    guard offset <= Int64.max - byteRange.length else {
                        throw refuse("its EXT-X-BYTERANGE \(byteRange.length)@\(offset) ends past the largest offset")
                    }
                    range = offset..<(offset + byteRange.length)
                    lastRangeEnd = (resolved, offset + byteRange.length)
                } else {
                    lastRangeEnd = nil
                }
                let length = duration ?? 0
                segments.append(Segment(sequence: sequence, url: resolved, start: start, programDateTime: date,
                                        byteRange: range, initSection: initSection, initByteRange: initByteRange))
                let (next, overflow) = sequence.addingReportingOverflow(1)
                guard !overflow else { throw refuse("its media sequence numbers run past \(sequence)") }
                sequence = next
                start += length
                guard start <= Self.longestTimeline else {
                    throw refuse("its segments' durations add up to more than \(Self.longestTimeline) s")
                }
                date = date.map { $0 + length }
                if let date, !date.isFinite { throw refuse("its PROGRAM-DATE-TIME runs past any finite date") }
                duration = nil
                byteRange = nil
            }
        }
        if firstVariant == nil, segments.isEmpty {
            throw refuse("it lists no segment and no variant")
        }
    }

    /// "length[@offset]" of EXT-X-BYTERANGE: non-negative decimal integers.
    static func byteRange(_ text: some StringProtocol) -> (length: Int64, offset: Int64?)? {
        let parts = text.split(separator: "@", maxSplits: 1, omittingEmptySubsequences: false)
        guard let length = Int64(parts[0]), length >= 0 else { return nil }
        guard parts.count == 2 else { return (length, nil) }
        guard let offset = Int64(parts[1]), offset >= 0 else { return nil }
        return (length, offset)
    }

    /// An RFC 3339 date-time (ISO 8601's extended form, as HLS writes it), in seconds since 1970:
    /// `YYYY-MM-DDThh:mm:ss`, optional fractional seconds, then `Z` or an offset (`+hh:mm`,
    /// `+hhmm` or `+hh`). Nil for anything else and for a date or time that does not exist (a day
    /// past its month's last, hour 24, minute 60); second 60 is a leap second.
    static func parseDate(_ text: some StringProtocol) -> Double? {
        let bytes = Array(text.utf8)
        var index = 0
        func digits(_ count: Int) -> Int? {
            guard index + count <= bytes.count else { return nil }
            var value = 0
            for byte in bytes[index..<(index + count)] {
                guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) else { return nil }
                value = value * 10 + Int(byte - UInt8(ascii: "0"))
            }
            index += count
            return value
        }
        func skip(_ allowed: String) -> Bool {
            guard index < bytes.count, allowed.utf8.contains(bytes[index]) else { return false }
            index += 1
            return true
        }
        guard let year = digits(4), skip("-"), let month = digits(2), skip("-"), let day = digits(2),
              skip("Tt "), let hour = digits(2), skip(":"), let minute = digits(2), skip(":"), let second = digits(2),
              (1...12).contains(month), day >= 1, day <= Self.daysIn(month: month, year: year),
              hour <= 23, minute <= 59, second <= 60 else { return nil }
        var fraction = 0.0
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            index += 1
            var scale = 0.1
            let first = index
            while index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) {
                fraction += Double(bytes[index] - UInt8(ascii: "0")) * scale
                scale /= 10
                index += 1
            }
            guard index > first else { return nil }
        }
        var offsetSeconds = 0
        guard index < bytes.count else { return nil }
        if skip("Zz") {
            // UTC.
        } else if bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") {
            let sign = bytes[index] == UInt8(ascii: "-") ? -1 : 1
            index += 1
            guard let hours = digits(2), hours <= 23 else { return nil }
            var minutes = 0
            if index < bytes.count {
                _ = skip(":")
                guard let value = digits(2), value <= 59 else { return nil }
                minutes = value
            }
            offsetSeconds = sign * (hours * 3600 + minutes * 60)
        } else {
            return nil
        }
        guard index == bytes.count else { return nil }
        let days = Self.daysSince1970(year: year, month: month, day: day)
        let seconds = days * 86_400 + hour * 3600 + minute * 60 + second - offsetSeconds
        return Double(seconds) + fraction
    }

    /// The days of `month` (1-12) of `year` in the proleptic Gregorian calendar.
    static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: return year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    /// Days from 1970-01-01 to the date (Howard Hinnant's days_from_civil).
    static func daysSince1970(year: Int, month: Int, day: Int) -> Int {
        let shiftedYear = month <= 2 ? year - 1 : year
        let era = (shiftedYear >= 0 ? shiftedYear : shiftedYear - 399) / 400
        let yearOfEra = shiftedYear - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    /// A tag's attribute list (`NAME=value,NAME="quoted, value"`), quotes removed; the first of a
    /// repeated name. Linear in the text.
    static func attributes(_ text: some StringProtocol) -> [String: String] {
        var result: [String: String] = [:]
        var rest = Substring(text)
        while !rest.isEmpty {
            guard let equals = rest.firstIndex(of: "=") else { break }
            let name = rest[..<equals].trimmingCharacters(in: .whitespaces)
            rest = rest[rest.index(after: equals)...]
            let value: Substring
            if rest.first == "\"" {
                let body = rest.dropFirst()
                let close = body.firstIndex(of: "\"") ?? body.endIndex
                value = body[..<close]
                rest = close < body.endIndex ? body[body.index(after: close)...] : body[close...]
                if let comma = rest.firstIndex(of: ",") { rest = rest[rest.index(after: comma)...] } else { rest = "" }
            } else {
                let comma = rest.firstIndex(of: ",") ?? rest.endIndex
                value = rest[..<comma]
                rest = comma < rest.endIndex ? rest[rest.index(after: comma)...] : ""
            }
            if result[name] == nil { result[name] = String(value) }
        }
        return result
    }
}

private extension StringProtocol {
    /// The rest of the line after `tag`, or nil when it does not start with it.
    func value(after tag: String) -> SubSequence? {
        hasPrefix(tag) ? self[index(startIndex, offsetBy: tag.count)...] : nil
    }

    /// The text quoted, cut to 64 characters (for an error that names what it refused).
    var quotedPrefix: String {
        "\"" + (count > 64 ? String(prefix(64)) + "…" : String(self)) + "\""
    }
}
