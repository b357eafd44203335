import Foundation

/// The presentation timestamp of a segment's first video frame, as a player reads it (mpv
/// through FFmpeg, its timestamps not rebased): MPEG-TS from its PES headers, fragmented MP4
/// from the fragment's decode time, the first sample's composition offset and the track's edit
/// list (an empty edit delays the track; a media time advances it).
///
/// Bytes from any origin: every read is bounded by the box or packet that holds it, the work is
/// linear in the bytes (a count field the bytes do not back is cut to what they hold), and a time
/// that is not finite or lies further than ``largestTime`` from zero is no time.
enum SegmentTimestamps {
    /// The furthest from zero a timestamp may lie, in seconds (about 31,700 years): beyond any
    /// encoder's clock, and far within what an offset between two angles can be.
    static let largestTime = 1e12


    /// The earliest video presentation time in `segment`, in seconds; `initSection` is an fMP4
    /// angle's initialization section (EXT-X-MAP). Nil when none is found.
    static func firstVideoTime(segment: Data, initSection: Data?) -> Double? {
        let time: Double?
        if let initSection {
            time = fragmentedMP4(initSection: initSection, fragment: segment)
        } else {
            time = transportStream(segment) ?? fragmentedMP4(initSection: segment, fragment: segment)
        }
        guard let time, time.isFinite, abs(time) <= largestTime else { return nil }
        return time
    }

    // MARK: MPEG-TS

    /// The smallest PTS of the video PES packets (stream IDs 0xE0-0xEF) that start in `data`,
    /// in seconds (90 kHz). Nil when `data` is not a transport stream or carries no video PTS.
    static func transportStream(_ data: Data) -> Double? {
        let bytes = [UInt8](data)
        let size = 188
        // The first sync byte followed by another a packet later.
        guard let start = (0..<min(bytes.count, size)).first(where: { index in
            bytes[index] == 0x47 && (index + size >= bytes.count || bytes[index + size] == 0x47)
        }) else { return nil }
        var earliest: UInt64?
        var offset = start
        while offset + size <= bytes.count {
            defer { offset += size }
            guard bytes[offset] == 0x47, bytes[offset + 1] & 0x40 != 0 else { continue }
            let control = (bytes[offset + 3] >> 4) & 0x3
            guard control & 0x1 != 0 else { continue }
            var payload = offset + 4
            if control & 0x2 != 0 { payload += 1 + Int(bytes[offset + 4]) }
            guard payload + 14 <= offset + size,
                  bytes[payload] == 0, bytes[payload + 1] == 0, bytes[payload + 2] == 1,
                  (0xE0...0xEF).contains(bytes[payload + 3]),
                  bytes[payload + 7] & 0x80 != 0 else { continue }
            let p = payload + 9
            let pts = (UInt64(bytes[p] >> 1) & 0x7) << 30 | UInt64(bytes[p + 1]) << 22
                | UInt64(bytes[p + 2] >> 1) << 15 | UInt64(bytes[p + 3]) << 7 | UInt64(bytes[p + 4] >> 1)
            earliest = min(earliest ?? pts, pts)
        }
        return earliest.map { Double($0) / 90_000 }
    }

    // MARK: Fragmented MP4

    /// One ISO BMFF box: its type and the range of its payload in the bytes.
    private struct Box {
        let type: String
        let payload: Range<Int>
    }

    private static func boxes(_ bytes: [UInt8], in range: Range<Int>) -> [Box] {
        var result: [Box] = []
        var offset = range.lowerBound
        while offset + 8 <= range.upperBound {
            // Sizes compared as UInt64 against what is left: a 64-bit size can be anything.
            let left = UInt64(range.upperBound - offset)
            var size = UInt64(read32(bytes, offset))
            let type = String(decoding: bytes[(offset + 4)..<(offset + 8)], as: UTF8.self)
            var header: UInt64 = 8
            if size == 1 {
                guard left >= 16 else { break }
                size = read64(bytes, offset + 8)
                header = 16
            } else if size == 0 {
                size = left
            }
            guard size >= header, size <= left else { break }
            result.append(Box(type: type, payload: (offset + Int(header))..<(offset + Int(size))))
            offset += Int(size)
        }
        return result
    }

    private static func child(_ bytes: [UInt8], _ box: Box, _ type: String) -> Box? {
        boxes(bytes, in: box.payload).first { $0.type == type }
    }

    private static func read32(_ bytes: [UInt8], _ offset: Int) -> UInt32 {
        UInt32(bytes[offset]) << 24 | UInt32(bytes[offset + 1]) << 16 | UInt32(bytes[offset + 2]) << 8 | UInt32(bytes[offset + 3])
    }

    private static func read64(_ bytes: [UInt8], _ offset: Int) -> UInt64 {
        UInt64(read32(bytes, offset)) << 32 | UInt64(read32(bytes, offset + 4))
    }

    /// A video track of the initialization section: its ID, time scale and edit-list shift.
    private struct VideoTrack {
        let id: UInt32
        let timescale: Double
        /// Seconds added to its timestamps by its edit list.
        let shift: Double
    }

    private static func videoTrack(_ bytes: [UInt8]) -> VideoTrack? {
        guard let moov = boxes(bytes, in: 0..<bytes.count).first(where: { $0.type == "moov" }) else { return nil }
        // The movie's time scale (of the edit list's durations); a zero one counts as absent.
        var movieScale = 1000.0
        if let mvhd = child(bytes, moov, "mvhd"), mvhd.payload.count >= 32 {
            let version = bytes[mvhd.payload.lowerBound]
            let scale = read32(bytes, mvhd.payload.lowerBound + (version == 1 ? 20 : 12))
            if scale > 0 { movieScale = Double(scale) }
        }
        for trak in boxes(bytes, in: moov.payload) where trak.type == "trak" {
            guard let mdia = child(bytes, trak, "mdia"), let hdlr = child(bytes, mdia, "hdlr"), hdlr.payload.count >= 12,
                  String(decoding: bytes[(hdlr.payload.lowerBound + 8)..<(hdlr.payload.lowerBound + 12)], as: UTF8.self) == "vide",
                  let tkhd = child(bytes, trak, "tkhd"), tkhd.payload.count >= 4,
                  tkhd.payload.count >= (bytes[tkhd.payload.lowerBound] == 1 ? 24 : 16),
                  let mdhd = child(bytes, mdia, "mdhd"), mdhd.payload.count >= 24 else { continue }
            let tkhdVersion = bytes[tkhd.payload.lowerBound]
            let id = read32(bytes, tkhd.payload.lowerBound + (tkhdVersion == 1 ? 20 : 12))
            let mdhdVersion = bytes[mdhd.payload.lowerBound]
            let scale = Double(read32(bytes, mdhd.payload.lowerBound + (mdhdVersion == 1 ? 20 : 12)))
            guard scale > 0 else { continue }
            var shift = 0.0
            if let edts = child(bytes, trak, "edts"), let elst = child(bytes, edts, "elst"), elst.payload.count >= 8 {
                let version = bytes[elst.payload.lowerBound]
                let entry = version == 1 ? 20 : 12
                // The entries the box holds, whatever its count claims.
                let count = min(Int(read32(bytes, elst.payload.lowerBound + 4)), (elst.payload.count - 8) / entry)
                var offset = elst.payload.lowerBound + 8
                for _ in 0..<count {
                    let duration = version == 1 ? Double(read64(bytes, offset)) : Double(read32(bytes, offset))
                    let mediaTime = version == 1 ? Int64(bitPattern: read64(bytes, offset + 8))
                        : Int64(Int32(bitPattern: read32(bytes, offset + 4)))
                    offset += entry
                    if mediaTime == -1 {
                        shift += duration / movieScale  // an empty edit: the track starts later
                    } else {
                        shift -= Double(mediaTime) / scale  // the track starts at this media time
                        break
                    }
                }
            }
            return VideoTrack(id: id, timescale: scale, shift: shift)
        }
        return nil
    }

    /// The presentation time of the first video sample of `fragment`'s first fragment of the
    /// video track of `initSection`, in seconds.
    static func fragmentedMP4(initSection: Data, fragment: Data) -> Double? {
        let initBytes = [UInt8](initSection)
        guard let track = videoTrack(initBytes) else { return nil }
        let bytes = [UInt8](fragment)
        for moof in boxes(bytes, in: 0..<bytes.count) where moof.type == "moof" {
            for traf in boxes(bytes, in: moof.payload) where traf.type == "traf" {
                guard let tfhd = child(bytes, traf, "tfhd"), tfhd.payload.count >= 8,
                      read32(bytes, tfhd.payload.lowerBound + 4) == track.id,
                      let tfdt = child(bytes, traf, "tfdt"), tfdt.payload.count >= 8,
                      tfdt.payload.count >= (bytes[tfdt.payload.lowerBound] == 1 ? 12 : 8) else { continue }
                let version = bytes[tfdt.payload.lowerBound]
                let decode = version == 1 ? Double(read64(bytes, tfdt.payload.lowerBound + 4)) : Double(read32(bytes, tfdt.payload.lowerBound + 4))
                var composition = 0.0
                if let trun = child(bytes, traf, "trun"), trun.payload.count >= 8 {
                    let start = trun.payload.lowerBound
                    let trunVersion = bytes[start]
                    let flags = read32(bytes, start) & 0xFFFFFF
                    var offset = start + 8
                    if flags & 0x1 != 0 { offset += 4 }
                    if flags & 0x4 != 0 { offset += 4 }
                    if flags & 0x100 != 0 { offset += 4 }
                    if flags & 0x200 != 0 { offset += 4 }
                    if flags & 0x400 != 0 { offset += 4 }
                    if flags & 0x800 != 0, offset + 4 <= trun.payload.upperBound, read32(bytes, start + 4) > 0 {
                        let raw = read32(bytes, offset)
                        composition = trunVersion == 1 ? Double(Int32(bitPattern: raw)) : Double(raw)
                    }
                }
                return (decode + composition) / track.timescale + track.shift
            }
        }
        return nil
    }
}
