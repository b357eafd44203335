import PlayerKitSupport

/// What an ``Alarm`` is about: the picture stopped changing, went black, or the sound went
/// silent.
public enum AlarmKind: String, Sendable, Hashable, Codable, CaseIterable {
    /// The picture stopped changing (a frozen camera, a stuck encoder): libavfilter's
    /// `freezedetect` on the player's decoded frames.
    case freeze
    /// The picture is black: libavfilter's `blackdetect` on the player's decoded frames.
    case black
    /// The sound is silent: libavfilter's `silencedetect` on the player's decoded audio.
    case silence
}

/// A fault in what a player plays, seen on its own decoded picture or sound: raised as
/// ``PlayerEvent/alarmRaised(_:)`` once the fault has lasted the threshold the app set
/// (``AlarmThresholds``), cleared as ``PlayerEvent/alarmCleared(_:)`` when it ends.
///
/// Times are positions on the item's timeline, in seconds, as ``MediaPlayer/position`` reads
/// them: ``start`` is where the fault began (not where the alarm was raised, which is a
/// threshold later); ``end`` where it ended.
public struct Alarm: Sendable, Hashable, Codable {
    /// What the fault is.
    public let kind: AlarmKind
    /// The position, in seconds, where the fault began.
    public let start: Double
    /// The position, in seconds, where the fault ended; nil while it lasts (on
    /// ``PlayerEvent/alarmRaised(_:)``). An alarm still raised when its item ends, is stopped,
    /// or is left by a seek, or when the app stops watching, ends at the last position played.
    public let end: Double?

    /// Creates an alarm: what a test's `FakePlayer` publishes, or what an app compares with.
    public init(kind: AlarmKind, start: Double, end: Double? = nil) {
        self.kind = kind
        self.start = start
        self.end = end
    }

    /// How long the fault lasted, in seconds (``end`` − ``start``); nil while it lasts.
    public var duration: Double? { end.map { max(0, $0 - start) } }
}

/// What a player watches its picture and sound for, and how long a fault must last before it
/// is an alarm (``MediaPlayer/watchAlarms(_:)``). A kind whose threshold is nil is not watched.
///
/// The defaults are the broadcast multiviewers' usual ones: 2 seconds of a still picture, of
/// black, or of silence.
public struct AlarmThresholds: Sendable, Hashable {
    /// How long the picture must stay still before a ``AlarmKind/freeze`` alarm; nil: not
    /// watched. From 0.1 s to an hour.
    public var freeze: Duration?
    /// How long the picture must stay black before a ``AlarmKind/black`` alarm; nil: not
    /// watched. From 0.1 s to an hour.
    public var black: Duration?
    /// How long the sound must stay silent before a ``AlarmKind/silence`` alarm; nil: not
    /// watched. From 0.1 s to an hour.
    public var silence: Duration?
    /// How different two pictures may be and still be the same picture, in dB of noise (from
    /// -90, exactly equal, to 0): `freezedetect`'s `noise`. Default -60 dB: what a camera's or
    /// an encoder's noise on a moving picture is above.
    public var freezeNoise: Double
    /// How dark a pixel must be to be black, from 0 to 1 of the luminance range:
    /// `blackdetect`'s `pixel_black_th`. Default 0.1.
    public var blackPixelLevel: Double
    /// What share of the picture's pixels must be black for the picture to be black, from 0 to
    /// 1: `blackdetect`'s `picture_black_ratio_th`. Default 0.98.
    public var blackShare: Double
    /// The level under which sound is silence, in dB of full scale (from -90 to 0):
    /// `silencedetect`'s `noise`. Default -60 dBFS.
    public var silenceLevel: Double

    /// Thresholds for each kind (nil: not watched), with the default levels.
    public init(
        freeze: Duration? = .seconds(2), black: Duration? = .seconds(2), silence: Duration? = .seconds(2),
        freezeNoise: Double = -60, blackPixelLevel: Double = 0.1, blackShare: Double = 0.98, silenceLevel: Double = -60
    ) {
        self.freeze = freeze
        self.black = black
        self.silence = silence
        self.freezeNoise = freezeNoise
        self.blackPixelLevel = blackPixelLevel
        self.blackShare = blackShare
        self.silenceLevel = silenceLevel
    }

    /// The threshold of `kind`.
    func threshold(for kind: AlarmKind) -> Duration? {
        switch kind {
        case .freeze: freeze
        case .black: black
        case .silence: silence
        }
    }

    /// The thresholds' range: 0.1 s to an hour.
    static let thresholds = Duration.milliseconds(100)...Duration.seconds(3600)

    /// Checks every value, throwing ``PlayerError/invalidArgument(name:value:reason:)`` naming
    /// the first one out of its range: what ``MediaPlayer/watchAlarms(_:)`` checks first.
    public func check() throws(PlayerError) {
        for kind in AlarmKind.allCases {
            guard let threshold = threshold(for: kind), !Self.thresholds.contains(threshold) else { continue }
            throw .invalidArgument(name: kind.rawValue, value: "\(threshold)", reason: "must be from 0.1 s to an hour, or nil")
        }
        func level(_ name: String, _ value: Double, _ range: ClosedRange<Double>, _ unit: String) throws(PlayerError) {
            guard !range.contains(value) else { return }
            throw .invalidArgument(name: name, value: "\(value)", reason: "must be from \(range.lowerBound) to \(range.upperBound) \(unit)")
        }
        try level("freezeNoise", freezeNoise, -90...0, "dB")
        try level("blackPixelLevel", blackPixelLevel, 0...1, "of the luminance range")
        try level("blackShare", blackShare, 0...1, "of the picture")
        try level("silenceLevel", silenceLevel, -90...0, "dBFS")
    }
}

/// How loud a player's sound is, by EBU R128 (ITU-R BS.1770), measured on its own decoded
/// audio before its volume and mute: libavfilter's `ebur128`, heard as
/// ``PlayerEvent/loudnessUpdated(_:)`` while a ``MediaPlayer/observeLoudness(every:)``
/// observation lives. A figure is nil when there is no sound to measure in its window
/// (silence, or less audio than the window yet).
///
/// The player measures the audio as it decodes it, a little ahead of what is heard (its audio
/// buffer, a few tenths of a second).
public struct Loudness: Sendable, Hashable, Codable {
    /// Momentary loudness, in LUFS: the last 400 ms.
    public var momentary: Double?
    /// Short-term loudness, in LUFS: the last 3 s.
    public var shortTerm: Double?
    /// Integrated loudness, in LUFS: since the measurement began for the item (gated as R128
    /// says).
    public var integrated: Double?
    /// The highest true peak since the measurement began for the item, in dBTP (4x
    /// oversampled, every channel).
    public var truePeak: Double?

    /// The intervals ``MediaPlayer/observeLoudness(every:)`` takes: from 100 ms (the meter's
    /// step) to a day.
    public static let observableIntervals = Duration.milliseconds(100)...Duration.seconds(86_400)

    /// Checks an interval for ``MediaPlayer/observeLoudness(every:)`` against
    /// ``observableIntervals``.
    static func checkInterval(_ interval: Duration) throws(PlayerError) {
        guard observableIntervals.contains(interval) else { throw intervalRefused(interval) }
    }

    /// The error for an interval outside ``observableIntervals``, naming it.
    public static func intervalRefused(_ interval: Duration) -> PlayerError {
        .invalidArgument(name: "interval", value: "\(interval)", reason: "must be from 0.1 s (the meter's step) to a day")
    }

    /// A measurement with the figures given: what a test's `FakePlayer` publishes.
    public init(momentary: Double? = nil, shortTerm: Double? = nil, integrated: Double? = nil, truePeak: Double? = nil) {
        self.momentary = momentary
        self.shortTerm = shortTerm
        self.integrated = integrated
        self.truePeak = truePeak
    }
}
