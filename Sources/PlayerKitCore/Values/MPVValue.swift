/// A value of an mpv property or command result, mirroring libmpv's `mpv_node`.
///
/// Used by the typed escape hatches (``Player/setProperty(_:to:)``,
/// ``Player/property(_:)``, ``Player/command(_:)``) for anything PlayerKit does not wrap.
public enum MPVValue: Sendable, Hashable, CustomStringConvertible {
    /// No value (mpv's `MPV_FORMAT_NONE`, e.g. an unavailable property).
    case none
    /// A yes/no flag.
    case flag(Bool)
    /// A 64-bit integer.
    case int(Int64)
    /// A floating point number.
    case double(Double)
    /// A string.
    case string(String)
    /// An ordered list.
    case array([MPVValue])
    /// A map with string keys. Key order is kept as mpv sent it.
    case map([(key: String, value: MPVValue)])

    /// The value as a Double when it is a number.
    public var doubleValue: Double? {
        switch self {
        case .double(let value): return value
        case .int(let value): return Double(value)
        default: return nil
        }
    }

    /// The value as an Int64 when it is an integer (or an integral Double).
    public var intValue: Int64? {
        switch self {
        case .int(let value): return value
        case .double(let value) where value.rounded() == value && value.isFinite: return Int64(value)
        default: return nil
        }
    }

    /// The value as a Bool when it is a flag.
    var boolValue: Bool? {
        if case .flag(let value) = self { return value }
        return nil
    }

    /// The value as a String when it is a string.
    var stringValue: String? {
        if case .string(let value) = self { return value }
        return nil
    }

    /// The elements when the value is an array.
    var arrayValue: [MPVValue]? {
        if case .array(let value) = self { return value }
        return nil
    }

    /// The value for `key` when the value is a map.
    subscript(key: String) -> MPVValue? {
        if case .map(let pairs) = self { return pairs.first { $0.key == key }?.value }
        return nil
    }

    /// A compact rendering, e.g. `42`, `"abc"`, `[1, 2]`, `{w: 320}`.
    public var description: String {
        switch self {
        case .none: return "none"
        case .flag(let value): return value ? "yes" : "no"
        case .int(let value): return String(value)
        case .double(let value): return String(value)
        case .string(let value): return value.debugDescription
        case .array(let values): return "[" + values.map(\.description).joined(separator: ", ") + "]"
        case .map(let pairs): return "{" + pairs.map { "\($0.key): \($0.value)" }.joined(separator: ", ") + "}"
        }
    }

    /// Structural equality (maps compare key by key, in order).
    public static func == (lhs: MPVValue, rhs: MPVValue) -> Bool {
        switch (lhs, rhs) {
        case (.none, .none): return true
        case (.flag(let a), .flag(let b)): return a == b
        case (.int(let a), .int(let b)): return a == b
        case (.double(let a), .double(let b)): return a == b
        case (.string(let a), .string(let b)): return a == b
        case (.array(let a), .array(let b)): return a == b
        case (.map(let a), .map(let b)):
            return a.count == b.count && zip(a, b).allSatisfy { $0.key == $1.key && $0.value == $1.value }
        default: return false
        }
    }

    /// Hashes consistently with `==`.
    public func hash(into hasher: inout Hasher) {
        switch self {
        case .none: hasher.combine(0)
        case .flag(let value): hasher.combine(value)
        case .int(let value): hasher.combine(value)
        case .double(let value): hasher.combine(value)
        case .string(let value): hasher.combine(value)
        case .array(let values): hasher.combine(values)
        case .map(let pairs):
            for pair in pairs {
                hasher.combine(pair.key)
                hasher.combine(pair.value)
            }
        }
    }
}
