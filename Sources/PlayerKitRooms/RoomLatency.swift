/// Round trips and the one-way delay to the server, from the ping fields of Syncplay's `State`
/// messages: each side stamps a message with its wall clock and the other echoes the stamp, so
/// each side measures round trips with its own clock only (the two clocks need not agree).
///
/// Syncplay's client takes an average of all round trips. A round trip that waited in a queue
/// (the server's, the network's) is longer than the path, never shorter, so this estimator
/// keeps the shortest of the recent ones as the path's round trip, and half of it as the
/// one-way delay: jitter then lengthens single samples without moving the estimate.
struct RoomLatency: Sendable, Hashable {
    /// How many recent round trips the shortest is taken from.
    static let window = 16
    private(set) var samples: [Double] = []
    /// The last round trip measured (seconds), sent back to the server as `clientRtt`.
    private(set) var lastRoundTrip: Double = 0

    /// Notes the echo of our stamp `sentAt` (wall clock seconds), received at `now`. Returns
    /// false (and notes nothing) for an echo from the future or an absurd one (over 60 s).
    @discardableResult
    mutating func noteEcho(sentAt: Double, now: Double) -> Bool {
        let roundTrip = now - sentAt
        guard roundTrip.isFinite, roundTrip >= 0, roundTrip < 60 else { return false }
        lastRoundTrip = roundTrip
        samples.append(roundTrip)
        if samples.count > Self.window { samples.removeFirst(samples.count - Self.window) }
        return true
    }

    /// The path's round trip: the shortest recent one (nil before the first echo).
    var roundTrip: Double? { samples.min() }

    /// The one-way delay from the server to us: half the path's round trip (0 before any echo).
    var forwardDelay: Double { (roundTrip ?? 0) / 2 }

    /// The spread of the recent round trips (longest minus shortest): the jitter seen.
    var jitter: Double { (samples.max() ?? 0) - (samples.min() ?? 0) }
}
