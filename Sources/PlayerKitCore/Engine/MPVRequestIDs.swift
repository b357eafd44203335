/// Every number a player's core hands mpv to tag what comes back, in one place.
///
/// mpv returns a request's number with its answer (`reply_userdata`) and an observation's with
/// each change it reports; the pump routes each answer and change by its number alone. So each
/// user draws from a range of its own, and no two ranges meet:
///
/// | range | drawn by | for |
/// |---|---|---|
/// | 1 ..< 2^40 | ``PlayerCore``'s ``ReplyIDs/operations`` counter | sent operations (``PlayerCore/send(_:reply:)``), loads, reopened live items |
/// | 1 ... n | ``PlaybackModel/observedProperties(positionInterval:)``, by index | the fixed observations |
/// | 2^40, 2^41, 2^43, 2^44, 2^45 + 0...2 | the constants below | per-frame positions, the frame clock, buffered media, the statistics' frame count, the alarm detectors |
/// | 2^42 bit | ``PlayerCore/observeProperty(_:)`` | the app's property observations |
/// | from 2^48 | ``PlaybackModel``'s own counter | the model's reads (polls, confirmations, recovery) |
/// | 2^63 bit | ``PlayerCore/read(_:timeout:)`` | awaited property reads |
///
/// Observation numbers and reply numbers come back in different events (a property change, a
/// reply), so only each kind's ranges must be apart; they are apart from the other kind's too.
enum MPVRequestIDs {
    /// The per-frame `time-pos` observation (``PlayerCore/observeEveryPosition(_:)``).
    static let everyPositionObservation: UInt64 = 1 << 40
    /// The frame clock's own `time-pos` observation (``PlayerCore/observeFrameClock(_:)``).
    static let frameClockObservation: UInt64 = 1 << 41
    /// The bit of the app's property observations (``PlayerCore/observeProperty(_:)``).
    static let appObservationBit: UInt64 = 1 << 42
    /// The `demuxer-cache-state` observation (``PlayerCore/observeBufferedMedia(_:)``).
    static let bufferedMediaObservation: UInt64 = 1 << 43
    /// The statistics' own per-frame `time-pos` observation, which counts frames shown
    /// (``PlayerCore/observeStatistics(every:)``).
    static let statisticsFrameObservation: UInt64 = 1 << 44
    /// The alarm detectors' metadata observations: this number plus the detector's index in
    /// ``AlarmKind/allCases`` (``PlayerCore/watchAlarms(_:)``).
    static let alarmObservation: UInt64 = 1 << 45
    /// The model's first reply number (``PlaybackModel``'s reads).
    static let firstModelReply: UInt64 = 1 << 48
    /// The bit of awaited property reads (``PlayerCore/read(_:timeout:)``).
    static let readBit: UInt64 = 1 << 63

    /// One counter of reply numbers: each ``next()`` is new. Kept under the state lock of the
    /// core or model that draws from it.
    struct Counter: Sendable {
        private var last: UInt64
        private let mask: UInt64

        /// A counter whose first number is `first`, with `mask` set in each (a bit range).
        init(first: UInt64, mask: UInt64 = 0) {
            last = first - 1
            self.mask = mask
        }

        mutating func next() -> UInt64 {
            last += 1
            return mask | last
        }
    }
}
