@testable import PlayerKitCache

/// ``ParserFuzzTarget/cacheHTTP``: header lines as a server could send them, then the download
/// they answer, and byte ranges.
///
/// The first byte chooses: the bytes as header lines (split at LF), each head they end read as the
/// cache reads it, then fed to a download machine that asked for a range, with body chunks whose
/// sizes the rest of the bytes say; a `Content-Range` written from values, which must read back
/// as them; ranges inserted into a ``ByteRanges``, which must stay sorted, disjoint, non-adjacent
/// and hold exactly what was inserted.
enum CacheHTTPCheck {
    static func check(_ bytes: [UInt8]) -> Violations {
        var violations = Violations()
        var input = FuzzInput(bytes)
        switch input.byte() % 3 {
        case 0: heads(&input, &violations)
        case 1:
            let first = input.int64() & 0x3FFF_FFFF_FFFF_FFFF, length = input.int64() & 0xFFFF_FFFF
            let total: Int64? = input.bool() ? first + length + (input.int64() & 0xFFFF) + 1 : nil
            let text = "bytes \(first)-\(first + length)/\(total.map(String.init) ?? "*")"
            let read = HTTPHeadReader.contentRange(text)
            violations.expect(read?.start == first && read?.total == total, "\(text) read as \(String(describing: read))")
        default: byteRanges(&input, &violations)
        }
        return violations
    }

    static func heads(_ input: inout FuzzInput, _ violations: inout Violations) {
        let text = input.bytes(upTo: 8192)
        var reader = HTTPHeadReader()
        var heads: [HTTPTransfer.Head] = []
        for line in text.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false) {
            let bytes = Array(line)
            if let head = bytes.withUnsafeBytes({ reader.read($0) }) { heads.append(head) }
        }
        for head in heads {
            violations.expect(head.status == 0 || (100...999).contains(head.status), "status \(head.status)")
            let parsed = TransferMachine.ResponseHead(head)
            if let range = parsed.contentRange {
                violations.expect(range.start >= -1 && (range.total ?? 0) >= 0, "Content-Range \(range)")
                if let total = range.total, range.start >= 0 { violations.expect(range.start < total, "Content-Range \(range)") }
                if range.start == -1 { violations.expect(range.total != nil, "Content-Range */* accepted") }
            }
            if let length = parsed.contentLength { violations.expect(length >= 0, "Content-Length \(length)") }
            download(parsed, &input, &violations)
        }
    }

    /// A reader at an offset, the request it starts, `head` as its answer and body chunks.
    static func download(_ head: TransferMachine.ResponseHead, _ input: inout FuzzInput, _ violations: inout Violations) {
        let settings = TransferMachine.Settings(readTimeout: .seconds(5), retries: 2, retryDelay: .milliseconds(100),
                                                revalidateAlways: false, capacity: 1 << 40)
        let known: Int64? = input.bool() ? Int64(input.uint32()) : nil
        var machine = TransferMachine(key: "k", url: "http://origin.invalid/k", settings: settings, size: known,
                                      etag: nil, lastModified: nil, ranges: ByteRanges())
        var now = ContinuousClock.now
        _ = machine.handle(.readerOpened(1, now))
        _ = machine.handle(.seek(1, to: Int64(input.uint32())))
        let actions = machine.handle(.read(1, maximum: 65_536, now))
        guard let request = actions.lazy.compactMap({ action -> UInt64? in
            if case .startRequest(let id, _, _) = action { return id } else { return nil }
        }).first else { return }
        _ = machine.handle(.responseHead(request: request, head, now))
        for _ in 0..<Int(input.byte() % 8) {
            now += .milliseconds(10)
            _ = machine.handle(.received(request: request, count: Int(input.uint16()), now))
        }
        _ = machine.handle(input.bool() ? .bodyEnded(request: request, now) : .tick(now + .seconds(60)))
        if let size = machine.size { violations.expect(size >= 0, "a size of \(size) from \(head)") }
        expectWellFormed(machine.ranges, &violations)
        for range in machine.ranges.ranges { violations.expect(range.lowerBound >= 0, "cached range \(range) from \(head)") }
    }

    static func byteRanges(_ input: inout FuzzInput, _ violations: inout Violations) {
        var ranges = ByteRanges()
        var held = Set<Int64>()
        for _ in 0..<Int(input.byte() % 32) {
            let lower = Int64(input.byte()), upper = lower + Int64(input.byte() % 64)
            ranges.insert(lower..<upper)
            held.formUnion(lower..<upper)
        }
        expectWellFormed(ranges, &violations)
        violations.expect(ranges.count == Int64(held.count), "\(ranges) counts \(ranges.count) bytes, \(held.count) inserted")
        for offset: Int64 in 0..<330 {
            violations.expect((ranges.contiguousCount(from: offset) > 0) == held.contains(offset), "\(ranges) at \(offset)")
        }
        let limit = Int64(input.byte())
        if let gap = ranges.firstGap(from: 0, below: limit) {
            violations.expect(!held.contains(gap) && (0..<gap).allSatisfy(held.contains), "first gap \(gap) of \(ranges)")
        }
        ranges.clip(to: limit)
        expectWellFormed(ranges, &violations)
        violations.expect(ranges.count == Int64(held.filter { $0 < limit }.count), "\(ranges) clipped to \(limit)")
    }

    static func expectWellFormed(_ ranges: ByteRanges, _ violations: inout Violations) {
        for (a, b) in zip(ranges.ranges, ranges.ranges.dropFirst()) {
            violations.expect(a.upperBound < b.lowerBound, "\(ranges): not sorted, disjoint and apart")
        }
        violations.expect(ranges.ranges.allSatisfy { !$0.isEmpty }, "\(ranges): an empty range")
    }
}
