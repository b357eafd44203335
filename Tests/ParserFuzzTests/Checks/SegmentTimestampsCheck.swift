import Foundation
@testable import PlayerKitHLS

/// ``ParserFuzzTarget/segmentTimestamps``: the bytes as a segment (and an fMP4 angle's
/// initialization section) an origin served, or as the values of a segment written for a round trip.
///
/// The first byte chooses: the bytes as one segment; an init section and a fragment (split where
/// the next two bytes say); an fMP4 init section and fragment written from values (track, time
/// scales, edit list, decode time, composition offset), which must read back as the time those
/// values make; MPEG-TS packets written from PTS values, which must read back as the smallest.
/// Every time read is finite and within ``SegmentTimestamps/largestTime``.
enum SegmentTimestampsCheck {
    static func check(_ bytes: [UInt8]) -> Violations {
        var violations = Violations()
        var input = FuzzInput(bytes)
        switch input.byte() % 4 {
        case 0:
            let segment = Data(input.rest())
            expectTime(SegmentTimestamps.firstVideoTime(segment: segment, initSection: nil), &violations)
            if let time = SegmentTimestamps.transportStream(segment) {
                violations.expect(time >= 0 && time < 95_443.72, "an MPEG-TS time of \(time) s (33 bits at 90 kHz end at 95443.7 s)")
            }
        case 1:
            let split = Int(input.uint16())
            let rest = input.rest()
            let initSection = Data(rest.prefix(split))
            let fragment = Data(rest.dropFirst(split))
            expectTime(SegmentTimestamps.firstVideoTime(segment: fragment, initSection: initSection), &violations)
        case 2:
            roundTripFragmentedMP4(&input, &violations)
        default:
            var earliest: UInt64?
            var packets: [UInt8] = []
            for _ in 0..<(1 + Int(input.byte() % 8)) {
                let pts = input.uint64() & 0x1_FFFF_FFFF
                packets += MP4Bytes.transportPacket(pts: pts, pid: input.uint16() & 0x1FFF, adaptation: Int(input.byte() % 160))
                earliest = min(earliest ?? pts, pts)
            }
            let time = SegmentTimestamps.transportStream(Data(packets))
            violations.expect(time == earliest.map { Double($0) / 90_000 },
                              "MPEG-TS packets with the smallest PTS \(String(describing: earliest)) read as \(String(describing: time))")
        }
        return violations
    }

    static func expectTime(_ time: Double?, _ violations: inout Violations) {
        guard let time else { return }
        violations.expect(time.isFinite && abs(time) <= SegmentTimestamps.largestTime, "a time of \(time) s")
    }

    static func roundTripFragmentedMP4(_ input: inout FuzzInput, _ violations: inout Violations) {
        let trackID = input.uint32()
        let timescale = max(1, input.uint32())
        let movieTimescale = max(1, input.uint32())
        let elstVersion = input.byte() % 2
        var edits: [MP4Bytes.Edit] = []
        for _ in 0..<Int(input.byte() % 4) {
            let empty = input.bool()
            var duration = input.uint64()
            var mediaTime = empty ? -1 : input.int64() & Int64.max
            if elstVersion == 0 {
                duration &= 0xFFFF_FFFF
                mediaTime = empty ? -1 : mediaTime & 0x7FFF_FFFF
            }
            edits.append(.init(duration: duration, mediaTime: mediaTime))
        }
        let tfdtVersion = input.byte() % 2
        var decodeTime = input.uint64()
        if tfdtVersion == 0 { decodeTime &= 0xFFFF_FFFF }
        let trunVersion = input.byte() % 2
        let composition: Int32? = input.bool() ? Int32(bitPattern: input.uint32()) : nil
        let initSection = MP4Bytes.initSection(trackID: trackID, timescale: timescale, movieTimescale: movieTimescale,
                                               editList: edits.isEmpty ? nil : MP4Bytes.editList(edits, version: elstVersion))
        let fragment = MP4Bytes.fragment(trackID: trackID, decodeTime: decodeTime, tfdtVersion: tfdtVersion,
                                         compositionOffset: composition, trunVersion: trunVersion)
        // What the values make: the empty edits before the first real one delay the track, the
        // real one's media time advances it; a version-0 trun's offset is unsigned.
        var shift = 0.0
        for edit in edits {
            if edit.mediaTime == -1 {
                shift += Double(edit.duration) / Double(movieTimescale)
            } else {
                shift -= Double(edit.mediaTime) / Double(timescale)
                break
            }
        }
        let offset = composition.map { trunVersion == 1 ? Double($0) : Double(UInt32(bitPattern: $0)) } ?? 0
        let expected = (Double(decodeTime) + offset) / Double(timescale) + shift
        let time = SegmentTimestamps.firstVideoTime(segment: Data(fragment), initSection: Data(initSection))
        if abs(expected) <= SegmentTimestamps.largestTime {
            violations.expect(time.map { abs($0 - expected) <= 1e-9 * max(1, abs(expected)) } ?? false,
                              "track \(trackID) at \(decodeTime)/\(timescale) + \(offset), edits \(edits) (movie scale \(movieTimescale)): read \(String(describing: time)), made \(expected)")
        } else {
            violations.expect(time == nil, "a time of \(expected) s, past the largest, read as \(String(describing: time))")
        }
    }
}
