/// ISO BMFF (MP4) boxes written byte by byte: the hostile inputs of the tests and the round trips
/// of the fuzz targets (a segment written from chosen values must read back as those values).
public enum MP4Bytes {
    public static func be16(_ value: UInt16) -> [UInt8] { [UInt8(value >> 8), UInt8(value & 0xFF)] }
    public static func be32(_ value: UInt32) -> [UInt8] { (0..<4).map { UInt8((value >> (24 - 8 * UInt32($0))) & 0xFF) } }
    public static func be64(_ value: UInt64) -> [UInt8] { be32(UInt32(value >> 32)) + be32(UInt32(value & 0xFFFF_FFFF)) }

    /// A box with a 32-bit size.
    public static func box(_ type: String, _ payload: [UInt8]) -> [UInt8] {
        be32(UInt32(8 + payload.count)) + Array(type.utf8.prefix(4)) + payload
    }

    /// A box whose header says `size` in its 64-bit field (whatever the payload holds).
    public static func largeBox(_ type: String, size: UInt64, _ payload: [UInt8]) -> [UInt8] {
        be32(1) + Array(type.utf8.prefix(4)) + be64(size) + payload
    }

    /// A full box: version and 24-bit flags, then the payload.
    public static func fullBox(_ type: String, version: UInt8, flags: UInt32 = 0, _ payload: [UInt8]) -> [UInt8] {
        box(type, [version] + Array(be32(flags).dropFirst()) + payload)
    }

    /// One edit of an edit list: its duration (movie time scale) and media time (-1: empty).
    public struct Edit: Sendable {
        public var duration: UInt64
        public var mediaTime: Int64
        public init(duration: UInt64, mediaTime: Int64) {
            self.duration = duration
            self.mediaTime = mediaTime
        }
    }

    /// An `elst` box (version 1: 64-bit fields) claiming `claimedCount` entries and holding `edits`.
    public static func editList(_ edits: [Edit], version: UInt8, claimedCount: UInt32? = nil) -> [UInt8] {
        var payload = be32(claimedCount ?? UInt32(edits.count))
        for edit in edits {
            if version == 1 {
                payload += be64(edit.duration) + be64(UInt64(bitPattern: edit.mediaTime))
            } else {
                payload += be32(UInt32(truncatingIfNeeded: edit.duration)) + be32(UInt32(bitPattern: Int32(truncatingIfNeeded: edit.mediaTime)))
            }
            payload += be16(1) + be16(0)  // media rate 1.0
        }
        return fullBox("elst", version: version, payload)
    }

    /// An initialization section (`ftyp`, `moov`) with one video track.
    /// - Parameters:
    ///   - editList: the track's `elst` box, if any (``editList(_:version:claimedCount:)``).
    ///   - tkhd: the track header; nil writes a proper one (version 0) naming `trackID`.
    ///   - tkhdLast: put the track header after everything else of the section (the last bytes).
    public static func initSection(trackID: UInt32, timescale: UInt32, movieTimescale: UInt32,
                                   editList: [UInt8]? = nil, tkhd: [UInt8]? = nil, tkhdLast: Bool = false) -> [UInt8] {
        let mvhd = fullBox("mvhd", version: 0, be32(0) + be32(0) + be32(movieTimescale) + be32(0) + [UInt8](repeating: 0, count: 80))
        let trackHeader = tkhd ?? fullBox("tkhd", version: 0, flags: 3, be32(0) + be32(0) + be32(trackID) + [UInt8](repeating: 0, count: 68))
        let hdlr = fullBox("hdlr", version: 0, be32(0) + Array("vide".utf8) + [UInt8](repeating: 0, count: 13))
        let mdhd = fullBox("mdhd", version: 0, be32(0) + be32(0) + be32(timescale) + be32(0) + be16(0x55C4) + be16(0))
        let mdia = box("mdia", mdhd + hdlr)
        let edts = editList.map { box("edts", $0) } ?? []
        let trak = tkhdLast ? box("trak", mdia + edts + trackHeader) : box("trak", trackHeader + edts + mdia)
        let moov = box("moov", mvhd + trak)
        let ftyp = box("ftyp", Array("iso5".utf8) + be32(512) + Array("iso5iso6mp41".utf8))
        return ftyp + moov
    }

    /// A media segment (`moof` with one `traf`, then `mdat`) of track `trackID` whose first sample
    /// is decoded at `decodeTime` and presented `compositionOffset` later (nil: no offset field).
    public static func fragment(trackID: UInt32, decodeTime: UInt64, tfdtVersion: UInt8 = 1,
                                compositionOffset: Int32? = nil, trunVersion: UInt8 = 1) -> [UInt8] {
        let tfhd = fullBox("tfhd", version: 0, flags: 0x020000, be32(trackID))
        let tfdt = tfdtVersion == 1
            ? fullBox("tfdt", version: 1, be64(decodeTime))
            : fullBox("tfdt", version: 0, be32(UInt32(truncatingIfNeeded: decodeTime)))
        var trunFlags: UInt32 = 0x000100  // sample duration present
        var sample = be32(1000)
        if let compositionOffset {
            trunFlags |= 0x000800
            sample += be32(UInt32(bitPattern: compositionOffset))
        }
        let trun = fullBox("trun", version: trunVersion, flags: trunFlags, be32(1) + sample)
        let moof = box("moof", fullBox("mfhd", version: 0, be32(1)) + box("traf", tfhd + tfdt + trun))
        return moof + box("mdat", [0, 0, 0, 1, 0x65])
    }

    /// One 188-byte MPEG-TS packet starting a video PES (stream 0xE0) with presentation time `pts`
    /// (33 bits, 90 kHz) on `pid`, with an adaptation field of `adaptation` stuffing bytes.
    public static func transportPacket(pts: UInt64, pid: UInt16 = 0x100, adaptation: Int = 0) -> [UInt8] {
        let pts = pts & 0x1_FFFF_FFFF
        let control: UInt8 = adaptation > 0 ? 0x30 : 0x10
        var packet: [UInt8] = [0x47, 0x40 | UInt8((pid >> 8) & 0x1F), UInt8(pid & 0xFF), control]
        if adaptation > 0 { packet += [UInt8(adaptation - 1)] + (adaptation > 1 ? [0x00] + [UInt8](repeating: 0xFF, count: adaptation - 2) : []) }
        let ptsBytes: [UInt8] = [
            0x21 | UInt8((pts >> 29) & 0x0E), UInt8((pts >> 22) & 0xFF), UInt8(((pts >> 14) & 0xFE) | 1),
            UInt8((pts >> 7) & 0xFF), UInt8(((pts << 1) & 0xFE) | 1),
        ]
        packet += [0, 0, 1, 0xE0, 0, 0, 0x80, 0x80, 5] + ptsBytes
        packet += [UInt8](repeating: 0xFF, count: max(0, 188 - packet.count))
        return Array(packet.prefix(188))
    }
}
