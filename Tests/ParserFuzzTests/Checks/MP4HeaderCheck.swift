@testable import PlayerKitCache

/// ``ParserFuzzTarget/mp4Header``: the first bytes of a file an origin served, as the cache reads
/// them to know where `moov` ends and how long the movie is.
///
/// The first byte chooses: the bytes as a file's start, whose `moov` end must lie past its start
/// and whose duration must be finite and not negative; or a header written from values (boxes
/// before `moov`, an `mvhd` of either version), which must read back as them.
enum MP4HeaderCheck {
    static func check(_ bytes: [UInt8]) -> Violations {
        var violations = Violations()
        var input = FuzzInput(bytes)
        if input.byte() % 2 == 0 {
            let header = MP4Header.parse(input.rest())
            if let end = header.moovEnd { violations.expect(end >= 8, "moov ends at \(end)") }
            if let duration = header.duration { violations.expect(duration.isFinite && duration >= 0, "a duration of \(duration)") }
            return violations
        }
        let skipped = MP4Bytes.box("ftyp", input.bytes(upTo: 64)) + MP4Bytes.box("free", input.bytes(upTo: 256))
        let version = input.byte() % 2
        let timescale = input.uint32(), duration = version == 1 ? input.uint64() : UInt64(input.uint32())
        let fields = version == 1
            ? MP4Bytes.be64(0) + MP4Bytes.be64(0) + MP4Bytes.be32(timescale) + MP4Bytes.be64(duration)
            : MP4Bytes.be32(0) + MP4Bytes.be32(0) + MP4Bytes.be32(timescale) + MP4Bytes.be32(UInt32(duration))
        let moov = MP4Bytes.box("moov", MP4Bytes.fullBox("mvhd", version: version, fields + [UInt8](repeating: 0, count: 80)))
        let header = MP4Header.parse(skipped + moov)
        violations.expect(header.moovEnd == Int64(skipped.count + moov.count), "moov ends at \(String(describing: header.moovEnd)), written to \(skipped.count + moov.count)")
        let expected = timescale > 0 ? Double(duration) / Double(timescale) : nil
        violations.expect(header.duration == expected, "duration \(duration)/\(timescale) read as \(String(describing: header.duration))")
        return violations
    }
}
