/// A fuzzer's bytes read as the values a structured target needs: each read takes the next bytes
/// (zeros once they run out), so every input, however short, means something and a small change
/// of the bytes is a small change of the values.
public struct FuzzInput {
    private var bytes: ArraySlice<UInt8>

    public init(_ bytes: [UInt8]) { self.bytes = bytes[...] }

    /// Whether every byte was read.
    public var isEmpty: Bool { bytes.isEmpty }

    public mutating func byte() -> UInt8 { bytes.popFirst() ?? 0 }

    public mutating func bool() -> Bool { byte() & 1 == 1 }

    public mutating func uint16() -> UInt16 { UInt16(byte()) << 8 | UInt16(byte()) }

    public mutating func uint32() -> UInt32 { UInt32(uint16()) << 16 | UInt32(uint16()) }

    public mutating func uint64() -> UInt64 { UInt64(uint32()) << 32 | UInt64(uint32()) }

    public mutating func int64() -> Int64 { Int64(bitPattern: uint64()) }

    /// Any double, NaN and the infinities included (its bit pattern).
    public mutating func double() -> Double { Double(bitPattern: uint64()) }

    /// One of `choices`.
    public mutating func pick<T>(_ choices: [T]) -> T { choices[Int(byte()) % choices.count] }

    /// Up to `maximum` bytes, the count first.
    public mutating func bytes(upTo maximum: Int) -> [UInt8] {
        let count = min(Int(uint16()), maximum, bytes.count)
        defer { bytes = bytes.dropFirst(count) }
        return Array(bytes.prefix(count))
    }

    /// A string of up to `maximum` bytes, not necessarily UTF-8 (repaired as Swift repairs it).
    public mutating func string(upTo maximum: Int) -> String { String(decoding: bytes(upTo: maximum), as: UTF8.self) }

    /// Whatever bytes are left.
    public mutating func rest() -> [UInt8] {
        defer { bytes = [] }
        return Array(bytes)
    }
}

/// What a check found wrong: each broken promise, named with the values that broke it. Empty when
/// the parser kept every promise for the input.
public struct Violations: CustomStringConvertible {
    public private(set) var messages: [String] = []

    public init() {}

    public var isEmpty: Bool { messages.isEmpty }

    /// Records `message` unless `condition` holds.
    public mutating func expect(_ condition: Bool, _ message: @autoclosure () -> String) {
        if !condition { messages.append(message()) }
    }

    public var description: String { messages.joined(separator: "\n") }
}
