import Foundation

/// MD5 (RFC 1321), for the one place Syncplay's protocol needs it: the server password is sent
/// as the MD5 hex digest of its UTF-8 bytes. Not a security measure (the digest replaces the
/// password on the wire, so it is as good as the password to anyone who reads it; use TLS).
///
/// Written here instead of depending on swift-crypto, which would compile a copy of BoringSSL
/// for these sixty lines: about 90 s of every clean build on two cores. Checked against RFC 1321's
/// test suite (SyncplayWireTests).
enum MD5 {
    /// Per-round shift amounts.
    private static let shifts: [UInt32] = [
        7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22,
        5, 9, 14, 20, 5, 9, 14, 20, 5, 9, 14, 20, 5, 9, 14, 20,
        4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23,
        6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21,
    ]

    /// floor(|sin(i + 1)| * 2^32), as the RFC tabulates it.
    private static let constants: [UInt32] = (0..<64).map { index in
        UInt32(truncatingIfNeeded: Int64((abs(sin(Double(index + 1))) * 4_294_967_296).rounded(.down)))
    }

    /// The 16-byte digest of `message`.
    static func digest(_ message: [UInt8]) -> [UInt8] {
        var state: (UInt32, UInt32, UInt32, UInt32) = (0x6745_2301, 0xefcd_ab89, 0x98ba_dcfe, 0x1032_5476)
        // Padding: a 1 bit, zeros to 56 bytes mod 64, then the length in bits, little-endian.
        var bytes = message
        bytes.append(0x80)
        while bytes.count % 64 != 56 { bytes.append(0) }
        let bitLength = UInt64(message.count) &* 8
        for shift in stride(from: 0, to: 64, by: 8) { bytes.append(UInt8(truncatingIfNeeded: bitLength >> UInt64(shift))) }

        var words = [UInt32](repeating: 0, count: 16)
        for blockStart in stride(from: 0, to: bytes.count, by: 64) {
            for index in 0..<16 {
                let at = blockStart + index * 4
                words[index] = UInt32(bytes[at]) | UInt32(bytes[at + 1]) << 8 | UInt32(bytes[at + 2]) << 16 | UInt32(bytes[at + 3]) << 24
            }
            var (a, b, c, d) = state
            for round in 0..<64 {
                let mixed: UInt32
                let wordIndex: Int
                switch round {
                case 0..<16: mixed = (b & c) | (~b & d); wordIndex = round
                case 16..<32: mixed = (d & b) | (~d & c); wordIndex = (5 * round + 1) % 16
                case 32..<48: mixed = b ^ c ^ d; wordIndex = (3 * round + 5) % 16
                default: mixed = c ^ (b | ~d); wordIndex = (7 * round) % 16
                }
                let sum = a &+ mixed &+ constants[round] &+ words[wordIndex]
                (a, d, c) = (d, c, b)
                b = b &+ (sum << shifts[round] | sum >> (32 - shifts[round]))
            }
            state = (state.0 &+ a, state.1 &+ b, state.2 &+ c, state.3 &+ d)
        }
        var digest: [UInt8] = []
        for word in [state.0, state.1, state.2, state.3] {
            for shift in stride(from: 0, to: 32, by: 8) { digest.append(UInt8(truncatingIfNeeded: word >> UInt32(shift))) }
        }
        return digest
    }

    /// The digest of `message` in lower-case hex (32 characters).
    static func hexDigest(_ message: [UInt8]) -> String {
        let digits = Array("0123456789abcdef")
        return String(digest(message).flatMap { [digits[Int($0 >> 4)], digits[Int($0 & 0x0f)]] })
    }
}
