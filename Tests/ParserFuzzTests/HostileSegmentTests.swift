import Foundation
@testable import PlayerKitHLS
import Testing

/// What a hostile HLS origin can serve PlaylistClock (issue 49's bugs, each found by hand first):
/// never a crash, and a date that does not exist is no date.
@Suite("Hostile playlists and segments (PlayerKitHLS)", .timeLimit(.minutes(1)))
struct HostileSegmentTests {
    static let url = URL(string: "http://origin.invalid/angle/playlist.m3u8")!

    @Test("a box whose 64-bit size is 2^64-1 ends the box list: no timestamp, no overflow")
    func boxOfLargestSize() {
        let initSection = MP4Bytes.initSection(trackID: 1, timescale: 90_000, movieTimescale: 1000)
        // After another box: at offset 0 the sum still fits.
        let styp = MP4Bytes.box("styp", Array("msdh".utf8) + MP4Bytes.be32(0))
        let fragment = styp + MP4Bytes.largeBox("moof", size: UInt64.max, [UInt8](repeating: 0, count: 16))
        #expect(SegmentTimestamps.firstVideoTime(segment: Data(fragment), initSection: Data(initSection)) == nil)
        // The same box in the initialization section, and as the segment with no section.
        let hostileInit = styp + MP4Bytes.largeBox("moov", size: UInt64.max, [UInt8](repeating: 0, count: 16))
        #expect(SegmentTimestamps.firstVideoTime(segment: Data(MP4Bytes.fragment(trackID: 1, decodeTime: 9000)), initSection: Data(hostileInit)) == nil)
        #expect(SegmentTimestamps.firstVideoTime(segment: Data(hostileInit + fragment), initSection: nil) == nil)
    }

    @Test("an initialization section ending in a header-only tkhd box has no video track: no timestamp, no read past the end")
    func headerOnlyTrackHeader() {
        let initSection = MP4Bytes.initSection(trackID: 1, timescale: 90_000, movieTimescale: 1000,
                                               tkhd: MP4Bytes.box("tkhd", []), tkhdLast: true)
        let fragment = MP4Bytes.fragment(trackID: 1, decodeTime: 9000)
        #expect(SegmentTimestamps.firstVideoTime(segment: Data(fragment), initSection: Data(initSection)) == nil)
        // Header-only hdlr, mdhd, mvhd, tfhd, tfdt and trun boxes likewise.
        for type in ["hdlr", "mdhd", "mvhd", "elst"] {
            var bytes = MP4Bytes.initSection(trackID: 1, timescale: 90_000, movieTimescale: 1000,
                                             editList: MP4Bytes.editList([], version: 0))
            let marker = Array(type.utf8)
            if let at = (4..<(bytes.count - 3)).first(where: { Array(bytes[$0..<($0 + 4)]) == marker }) {
                // Cut the box to its header, and everything after it (it ends the section).
                bytes = Array(bytes[..<(at + 4)])
                bytes.replaceSubrange((at - 4)..<at, with: MP4Bytes.be32(8))
            }
            _ = SegmentTimestamps.firstVideoTime(segment: Data(fragment), initSection: Data(bytes))
        }
    }

    @Test("a well-formed segment still reads: an init section with an edit list, a fragment with a composition offset")
    func wellFormedStillReads() throws {
        let edits = MP4Bytes.editList([.init(duration: 500, mediaTime: -1), .init(duration: 10_000, mediaTime: 1800)], version: 0)
        let initSection = MP4Bytes.initSection(trackID: 7, timescale: 90_000, movieTimescale: 1000, editList: edits)
        let fragment = MP4Bytes.fragment(trackID: 7, decodeTime: 900_000, compositionOffset: 3000)
        let time = try #require(SegmentTimestamps.firstVideoTime(segment: Data(fragment), initSection: Data(initSection)))
        // (900000 + 3000) / 90000 + 0.5 (the empty edit) - 1800 / 90000.
        #expect(abs(time - (903_000.0 / 90_000 + 0.5 - 0.02)) < 1e-9)
        let transport = MP4Bytes.transportPacket(pts: 8_589_934_000) + MP4Bytes.transportPacket(pts: 8_589_900_000, adaptation: 8)
        #expect(SegmentTimestamps.transportStream(Data(transport)) == 8_589_900_000.0 / 90_000)
    }

    @Test("a PROGRAM-DATE-TIME of a day that does not exist is no date: the tag counts as absent")
    func dayThatDoesNotExist() throws {
        for text in ["2026-02-30T10:00:00Z", "2026-02-29T10:00:00.000Z", "2026-13-01T10:00:00Z", "2026-04-31T00:00:00+02:00",
                     "2026-01-01T24:00:00Z", "2026-01-01T10:60:00Z", "2026-01-01T10:00:61Z", "2026-01-01T10:00:00+25:00"] {
            #expect(MediaPlaylist.parseDate(text) == nil, "\(text)")
        }
        #expect(MediaPlaylist.parseDate("2024-02-29T10:00:00Z") == 1_709_200_800)
        #expect(MediaPlaylist.parseDate("2026-11-27T20:13:13.250+01:00") == 1_795_806_793.25)
        let playlist = try MediaPlaylist(parsing: Data("""
            #EXTM3U
            #EXT-X-MEDIA-SEQUENCE:10
            #EXT-X-PROGRAM-DATE-TIME:2026-02-30T10:00:00Z
            #EXTINF:1.0,
            seg10.ts
            """.utf8), url: Self.url)
        #expect(playlist.segments.map(\.programDateTime) == [nil])
    }

    @Test("angles one of whose dates does not exist are not aligned by their dates: their timestamps 100 s apart are refused by name")
    func offsetsRefuseAnImpossibleDate() throws {
        func clock(_ date: String, presentationTime: Double) throws -> PlaylistClock {
            let text = "#EXTM3U\n#EXT-X-MEDIA-SEQUENCE:10\n#EXT-X-PROGRAM-DATE-TIME:\(date)\n#EXTINF:1.0,\nseg10.ts\n"
            let playlist = try MediaPlaylist(parsing: Data(text.utf8), url: Self.url)
            return try #require(PlaylistClock(playlist: playlist, url: Self.url, presentationTime: presentationTime))
        }
        let clocks = [try clock("2026-03-02T10:00:00Z", presentationTime: 100), try clock("2026-02-30T10:00:00Z", presentationTime: 200)]
        #expect(clocks[1].programDateTime == nil)
        #expect(throws: PlaylistClockError.unrelatedTimestamps(url: Self.url.absoluteString, offset: .seconds(100))) {
            try PlaylistClock.mediaOffsets(clocks)
        }
    }
}
