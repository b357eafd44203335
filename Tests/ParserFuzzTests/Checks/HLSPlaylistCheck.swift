import Foundation
@testable import PlayerKitHLS

/// ``ParserFuzzTarget/hlsPlaylist``: the bytes as a playlist an origin served.
///
/// Checks: a refusal is a typed error naming the playlist's URL; a parse gives sequence numbers
/// one apart, starts from 0 that never go back and stay within ``MediaPlaylist/longestTimeline``,
/// finite dates, byte ranges within the offsets; the playlist written back out parses to the same
/// segments; two angles' offsets are a typed refusal or finite durations.
enum HLSPlaylistCheck {
    static let url = URL(string: "http://origin.invalid/live/angle.m3u8")!

    static func check(_ bytes: [UInt8]) -> Violations {
        var violations = Violations()
        let playlist: MediaPlaylist
        do {
            playlist = try MediaPlaylist(parsing: Data(bytes), url: url)
        } catch {
            if case .notAPlaylist(let named, _) = error {
                violations.expect(named == url.absoluteString, "a refusal names \(named), not the playlist's URL")
            } else {
                violations.expect(false, "parsing refused with \(error), not notAPlaylist")
            }
            return violations
        }
        violations.expect(playlist.firstVariant != nil || !playlist.segments.isEmpty, "a playlist with no variant and no segment was accepted")
        var previous: MediaPlaylist.Segment?
        for segment in playlist.segments {
            violations.expect(segment.start.isFinite && segment.start >= 0 && segment.start <= MediaPlaylist.longestTimeline,
                              "segment \(segment.sequence) starts at \(segment.start)")
            violations.expect(segment.programDateTime?.isFinite ?? true, "segment \(segment.sequence) is dated \(String(describing: segment.programDateTime))")
            violations.expect(segment.sequence >= 0, "sequence number \(segment.sequence)")
            if let range = segment.byteRange { violations.expect(range.lowerBound >= 0, "byte range \(range)") }
            if let previous {
                violations.expect(segment.sequence == previous.sequence + 1, "sequence \(segment.sequence) after \(previous.sequence)")
                violations.expect(segment.start >= previous.start, "segment \(segment.sequence) starts at \(segment.start), before \(previous.start)")
            } else {
                violations.expect(segment.start == 0, "the first segment starts at \(segment.start)")
            }
            previous = segment
        }
        guard !playlist.segments.isEmpty else { return violations }

        // Written back out, read again: the same segments (dates within RFC 3339's years 0000-9999).
        let writable = playlist.segments.allSatisfy { segment in
            segment.programDateTime.map { $0 >= -62_167_219_200 && $0 < 253_402_300_800 } ?? true
        }
        guard writable else { return violations }
        let text = write(playlist)
        do {
            let again = try MediaPlaylist(parsing: Data(text.utf8), url: url)
            violations.expect(again.segments.count == playlist.segments.count,
                              "\(playlist.segments.count) segments written, \(again.segments.count) read back from:\n\(text)")
            for (written, read) in zip(playlist.segments, again.segments) {
                violations.expect(read.sequence == written.sequence, "sequence \(written.sequence) read back as \(read.sequence)")
                violations.expect(read.url == written.url, "\(written.url) read back as \(read.url)")
                violations.expect(abs(read.start - written.start) <= 1e-9 * max(1, written.start),
                                  "start \(written.start) read back as \(read.start)")
                violations.expect(read.byteRange == written.byteRange, "byte range \(String(describing: written.byteRange)) read back as \(String(describing: read.byteRange))")
                violations.expect(read.initSection == written.initSection, "init section \(String(describing: written.initSection)) read back as \(String(describing: read.initSection))")
                switch (written.programDateTime, read.programDateTime) {
                case (nil, nil): break
                case (let a?, let b?): violations.expect(abs(a - b) <= 1e-5 + abs(a) * 1e-15, "date \(a) read back as \(b)")
                case (let a, let b): violations.expect(false, "date \(String(describing: a)) read back as \(String(describing: b))")
                }
            }
        } catch {
            violations.expect(false, "the playlist written back was refused: \(error)\n\(text)")
        }

        // Two angles of this playlist, the second's timestamps half a second later.
        if let first = PlaylistClock(playlist: playlist, url: url, presentationTime: 10),
           let second = PlaylistClock(playlist: playlist, url: url, presentationTime: 10.5) {
            do {
                let offsets = try PlaylistClock.mediaOffsets([first, second])
                violations.expect(offsets.count == 2 && offsets[0] == .zero, "offsets \(offsets)")
            } catch {
                switch error {
                case .unrelatedTimestamps, .noCommonTimeline: break
                default: violations.expect(false, "offsets refused with \(error)")
                }
            }
        }
        return violations
    }

    /// `playlist` as a media playlist's text: each segment with its duration, date, byte range and
    /// init section.
    static func write(_ playlist: MediaPlaylist) -> String {
        var lines = ["#EXTM3U", "#EXT-X-VERSION:7", "#EXT-X-TARGETDURATION:10"]
        let segments = playlist.segments
        lines.append("#EXT-X-MEDIA-SEQUENCE:\(segments[0].sequence)")
        var initSection: (URL?, Range<Int64>?) = (nil, nil)
        for (index, segment) in segments.enumerated() {
            if segment.initSection != initSection.0 || segment.initByteRange != initSection.1, let uri = segment.initSection {
                var map = "#EXT-X-MAP:URI=\"\(uri.absoluteString)\""
                if let range = segment.initByteRange { map += ",BYTERANGE=\"\(range.count)@\(range.lowerBound)\"" }
                lines.append(map)
                initSection = (segment.initSection, segment.initByteRange)
            }
            if let date = segment.programDateTime {
                lines.append("#EXT-X-PROGRAM-DATE-TIME:\(formatDate(date))")
            } else if index > 0, segments[index - 1].programDateTime != nil {
                // An undated segment after a dated one: a discontinuity ends the date carried on.
                lines.append("#EXT-X-DISCONTINUITY")
            }
            let duration = index + 1 < segments.count ? segments[index + 1].start - segment.start : 1
            lines.append("#EXTINF:\(duration),")
            if let range = segment.byteRange { lines.append("#EXT-X-BYTERANGE:\(range.count)@\(range.lowerBound)") }
            lines.append(segment.url.absoluteString)
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// Seconds since 1970 as an RFC 3339 date in UTC, to the microsecond.
    static func formatDate(_ seconds: Double) -> String {
        let whole = seconds.rounded(.down)
        let micros = Int(((seconds - whole) * 1_000_000).rounded())
        var total = Int(whole) + micros / 1_000_000
        let fraction = micros % 1_000_000
        var days = total / 86_400
        total -= days * 86_400
        if total < 0 { total += 86_400; days -= 1 }
        // Howard Hinnant's civil_from_days.
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthPosition = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * monthPosition + 2) / 5 + 1
        let month = monthPosition < 10 ? monthPosition + 3 : monthPosition - 9
        let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
        func pad(_ value: Int, _ width: Int) -> String {
            let text = String(value)
            return String(repeating: "0", count: max(0, width - text.count)) + text
        }
        return "\(pad(year, 4))-\(pad(month, 2))-\(pad(day, 2))T\(pad(total / 3600, 2)):\(pad(total / 60 % 60, 2)):\(pad(total % 60, 2)).\(pad(fraction, 6))Z"
    }
}
