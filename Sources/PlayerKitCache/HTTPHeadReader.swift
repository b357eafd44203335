/// The response heads in the header lines of one transfer, as libcurl hands them over (a
/// redirect's and a `100 Continue`'s included): a status line, header lines, a blank line. Pure
/// logic over the bytes a server sent: linear in them, and whatever they hold gives a head or
/// nothing, never a trap.
struct HTTPHeadReader: Sendable {
    /// The status of the head being read: 100-999, or 0 when its status line says none.
    private(set) var status = 0
    /// Its headers: names lowercased, values trimmed; the last of a repeated name.
    private(set) var headers: [String: String] = [:]

    /// Reads one header line (its CR LF or LF included or not); returns the head a blank line
    /// ends.
    mutating func read(_ line: UnsafeRawBufferPointer) -> HTTPTransfer.Head? {
        let text = String(decoding: line, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        if text.hasPrefix("HTTP/") {
            // A new response (the first, or one after a redirect or a 100): its own headers.
            headers = [:]
            let parts = text.split(separator: " ", maxSplits: 2)
            status = parts.count > 1 ? Self.status(parts[1]) : 0
        } else if text.isEmpty {
            return HTTPTransfer.Head(status: status, headers: headers)
        } else if let colon = text.firstIndex(of: ":") {
            let name = text[..<colon].trimmingCharacters(in: .whitespaces).lowercased()
            headers[name] = text[text.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        return nil
    }

    /// A status code: three digits, 100-999; 0 for anything else.
    static func status(_ text: Substring) -> Int {
        guard text.utf8.count == 3, text.utf8.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }),
              let code = Int(text), code >= 100 else { return 0 }
        return code
    }

    /// A non-negative decimal integer that fits an Int64 (a length or an offset); nil for anything
    /// else (a sign, a space, a larger number).
    static func count(_ text: some StringProtocol) -> Int64? {
        guard !text.isEmpty, text.utf8.count <= 19,
              text.utf8.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }) else { return nil }
        return Int64(text)
    }

    /// `Content-Range`'s first byte and total: "bytes 100-199/1000" is (100, 1000), "bytes
    /// 100-199/*" (100, nil), "bytes */1000" (-1, 1000). Nil when malformed or impossible: a
    /// last byte before the first, or at or past the total.
    static func contentRange(_ value: String) -> (start: Int64, total: Int64?)? {
        let parts = value.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "bytes" else { return nil }
        let spec = parts[1].split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        guard spec.count == 2 else { return nil }
        var total: Int64?
        if spec[1] != "*" {
            guard let value = count(spec[1]) else { return nil }
            total = value
        }
        if spec[0] == "*" { return total.map { (-1, $0) } }
        let bounds = spec[0].split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
        guard bounds.count == 2, let first = count(bounds[0]), let last = count(bounds[1]), first <= last else { return nil }
        if let total, last >= total { return nil }
        return (first, total)
    }
}
