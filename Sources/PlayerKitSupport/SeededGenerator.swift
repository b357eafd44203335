/// A seeded random number generator (SplitMix64): the same seed gives the same numbers on every
/// machine, so a randomized test that fails can be replayed from its seed. Use it with the
/// standard library's random APIs (`Int.random(in:using:)`, `shuffled(using:)`).
///
/// ```swift
/// var random = SeededGenerator(seed: 42)
/// let delay = Int.random(in: 0..<100, using: &random)
/// ```
package struct SeededGenerator: RandomNumberGenerator, Sendable {
    /// The generator's state; the next number is computed from it.
    var state: UInt64

    /// A generator that starts from `state` as it is.
    init(state: UInt64) {
        self.state = state
    }

    /// A generator for `seed` (spread over the state's bits first, so nearby seeds differ at once).
    package init(seed: UInt64) {
        state = seed &* 0x9E37_79B9_7F4A_7C15
    }

    /// The next 64 random bits.
    package mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
