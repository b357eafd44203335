/// What an MP4 (ISO BMFF) file's first bytes say: where its `moov` box ends and the movie's
/// duration from `mvhd`. Pure logic over bytes; anything malformed yields nils (a box whose size
/// would end it past the largest offset among them), never a trap.
struct MP4Header: Hashable {
    var moovEnd: Int64?
    var duration: Double?

    static func parse(_ bytes: [UInt8]) -> MP4Header {
        var header = MP4Header()
        var offset = 0
        // Top-level boxes: ftyp, free, mdat, moov, ...
        while offset + 8 <= bytes.count {
            guard let (size, type, headerSize) = box(bytes, at: offset) else { break }
            if type == "moov" {
                // Nil when it would end past the largest offset (a hostile 64-bit size).
                let (end, overflow) = Int64(offset).addingReportingOverflow(size)
                guard !overflow else { break }
                header.moovEnd = end
                header.duration = mvhdDuration(bytes, from: offset + headerSize, to: min(bytes.count, offset + Int(min(size, Int64(Int.max / 2)))))
                break
            }
            guard size >= Int64(headerSize), size < Int64(Int.max / 2) else { break }
            offset += Int(size)
        }
        return header
    }

    private static func box(_ bytes: [UInt8], at offset: Int) -> (size: Int64, type: String, headerSize: Int)? {
        guard offset + 8 <= bytes.count else { return nil }
        var size = Int64(be32(bytes, offset))
        let type = String(decoding: bytes[(offset + 4)..<(offset + 8)], as: UTF8.self)
        var headerSize = 8
        if size == 1 {
            guard offset + 16 <= bytes.count else { return nil }
            size = Int64(bitPattern: UInt64(be32(bytes, offset + 8)) << 32 | UInt64(be32(bytes, offset + 12)))
            headerSize = 16
        }
        guard size >= Int64(headerSize) else { return nil }
        return (size, type, headerSize)
    }

    private static func mvhdDuration(_ bytes: [UInt8], from start: Int, to end: Int) -> Double? {
        var offset = start
        while offset + 8 <= end {
            guard let (size, type, headerSize) = box(bytes, at: offset) else { return nil }
            if type == "mvhd" {
                let body = offset + headerSize
                guard body + 4 <= end else { return nil }
                let version = bytes[body]
                if version == 1 {
                    guard body + 32 <= end else { return nil }
                    let timescale = be32(bytes, body + 20)
                    let duration = UInt64(be32(bytes, body + 24)) << 32 | UInt64(be32(bytes, body + 28))
                    return timescale > 0 ? Double(duration) / Double(timescale) : nil
                }
                guard body + 20 <= end else { return nil }
                let timescale = be32(bytes, body + 12)
                let duration = be32(bytes, body + 16)
                return timescale > 0 ? Double(duration) / Double(timescale) : nil
            }
            guard size < Int64(Int.max / 2) else { return nil }
            offset += Int(size)
        }
        return nil
    }

    private static func be32(_ bytes: [UInt8], _ offset: Int) -> UInt32 {
        UInt32(bytes[offset]) << 24 | UInt32(bytes[offset + 1]) << 16 | UInt32(bytes[offset + 2]) << 8 | UInt32(bytes[offset + 3])
    }
}
