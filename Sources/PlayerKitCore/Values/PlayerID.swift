import Foundation

/// A player's identity: stable for the player's whole life and unique among live players.
///
/// An ID is either random (UUID based, the default when a ``Player`` is created
/// without one) or a string chosen by the app, such as `"main"` or `"feed-3"`. Custom IDs let
/// code that outlives one player instance (a subscription, a layout slot) keep addressing
/// "the main player" across replacements.
///
/// A valid ID is not empty, not all whitespace, and contains no control characters.
/// ``init(validating:)`` checks this and throws ``PlayerError/invalidID(_:)``; the
/// string-literal initializer cannot throw, so a ``Player`` checks its ID again when it is
/// created.
public struct PlayerID: Hashable, Sendable, Codable, Comparable, CustomStringConvertible,
    ExpressibleByStringLiteral
{
    /// The ID as the app gave it, or the random UUID string.
    public let rawValue: String

    /// Creates an ID from a string, checking that it is a valid ID.
    /// - Throws: ``PlayerError/invalidID(_:)`` naming the string when it is empty, all
    ///   whitespace, or contains control characters.
    public init(validating rawValue: String) throws(PlayerError) {
        guard Self.isValid(rawValue) else { throw .invalidID(rawValue) }
        self.rawValue = rawValue
    }

    /// Creates an ID from a string literal, e.g. `let id: PlayerID = "main"`.
    ///
    /// The literal is not checked here (a literal initializer cannot throw); creating a
    /// ``Player`` with an invalid ID throws ``PlayerError/invalidID(_:)``.
    public init(stringLiteral value: String) {
        self.rawValue = value
    }

    /// A new random ID (a lowercase UUID string). Random IDs never collide in practice.
    static func random() -> PlayerID {
        PlayerID(unchecked: UUID().uuidString.lowercased())
    }

    /// Whether `rawValue` is acceptable as an ID: not empty, not all whitespace, and free of
    /// control characters (which would corrupt logs and terminal output).
    static func isValid(_ rawValue: String) -> Bool {
        guard !rawValue.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty else { return false }
        return !rawValue.unicodeScalars.contains { CharacterSet.controlCharacters.contains($0) }
    }

    init(unchecked rawValue: String) {
        self.rawValue = rawValue
    }

    /// The raw ID string.
    public var description: String { rawValue }

    /// Orders IDs by their raw strings, for stable listings.
    public static func < (lhs: PlayerID, rhs: PlayerID) -> Bool { lhs.rawValue < rhs.rawValue }

    /// Decodes an ID from a single string, rejecting invalid IDs with a `DecodingError`.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let raw = try container.decode(String.self)
        guard Self.isValid(raw) else {
            throw DecodingError.dataCorruptedError(
                in: container, debugDescription: "invalid player ID \(raw.debugDescription)")
        }
        self.rawValue = raw
    }

    /// Encodes the ID as a single string.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }
}
