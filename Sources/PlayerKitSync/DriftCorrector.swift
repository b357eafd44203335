import PlayerKitCore
import PlayerKitSupport

/// 1.0's correction of one player on a clock, kept for 1.0 callers: fed the player's frame
/// positions and the clock's position at each frame's time, it says when to nudge the player's
/// speed and when to seek it.
///
/// **Deprecated in 1.1:** no PlayerKit group uses it: every group corrects its members with one
/// machine, which holds a member a little ahead on its frame and seeks only within what a player
/// has. For an app's own clock use ``ClockFollower``, which runs that machine; to configure a
/// group or a room's follower, ``SyncSettings`` (``SyncSettings/onDemand`` has 1.0's defaults).
///
/// ```swift
/// var corrector = DriftCorrector()
/// corrector.restart(speed: 1)                       // the clock starts
/// // for each frame of `player` (an observeEveryFrame() observation's positionChanged):
/// let step = corrector.measure(position: position, clock: clockPosition, at: record.time, speed: 1)
/// if let command = step.command { try? player.send(command) }
/// ```
///
/// **Correction.** A drift (position minus clock; positive: ahead) smoothed over about ten
/// frames. Within ``Settings/seekThreshold`` the player gets a speed a little above or below the
/// clock's (at most ``Settings/maximumSpeedCorrection`` off, proportional to the drift, within
/// ``/PlayerKitCore/PlayerCommand/speedRange``), closing the gap in about a second without a
/// visible jump. Beyond it, a seek to where the clock will be once the seek lands (0.1 s of clock
/// time ahead); frames in the next 0.5 s are not measured.
///
/// A value type with no locks: the owner serializes its calls.
@available(*, deprecated, message: "use ClockFollower for an app's own clock, and SyncSettings to configure a group or a room's follower")
public struct DriftCorrector: Sendable {
    /// Tuning of the correction.
    public struct Settings: Sendable, Hashable {
        /// Drift (seconds) beyond which a player is seeked instead of nudged. Default 0.25.
        public var seekThreshold: Double = 0.25
        /// The largest relative speed change used to nudge a player. Default 0.05 (±5%).
        public var maximumSpeedCorrection: Double = 0.05
        /// How often a drift report is due. Default 1 s.
        public var driftReportInterval: Duration = .seconds(1)
        /// Whether drift is corrected (default) or only measured and reported.
        public var correctsDrift = true

        /// The defaults.
        public init() {}
    }

    /// What one measurement asks for.
    public struct Step: Sendable, Hashable {
        /// The command to send to the player (a speed nudge or a seek), if any.
        public var command: PlayerCommand?
        /// The smoothed drift to report, once per ``Settings/driftReportInterval``.
        public var report: Double?
        /// A step that asks for nothing.
        public init(command: PlayerCommand? = nil, report: Double? = nil) {
            self.command = command
            self.report = report
        }

        /// Whether ``command`` is a corrective seek.
        var isSeek: Bool { if case .seek = command { true } else { false } }
    }

    /// The settings given at creation.
    let settings: Settings
    /// The latest drift, smoothed (nil until measured since the last ``restart(speed:)``).
    public private(set) var smoothedDrift: Double?
    /// The latest drift as measured, unsmoothed.
    private(set) var lastDrift: Double?
    /// How many corrective seeks this corrector asked for.
    public private(set) var correctiveSeeks = 0
    /// The speed the player was last given.
    private(set) var appliedSpeed: Double = 1
    private var lastReport: ContinuousClock.Instant?
    private var correctingUntil: ContinuousClock.Instant?
    /// The skews measured since the last ``restart(speed:)``, over the last 10 s.
    private var meter = SkewMeter(window: .seconds(10))

    /// How far the player is from the clock, measured on its frame changes since the last
    /// ``restart(speed:)``: the latest drift (unsmoothed, signed) and the percentiles of the
    /// absolute drifts over the last 10 s, as a ``MultiView`` measures its members. Nil before
    /// the first measured frame. Frames while a corrective seek lands are not measured.
    public var skew: MemberSkew? { meter.figures }

    /// A corrector with `settings`.
    public init(settings: Settings = Settings()) {
        self.settings = settings
    }

    /// Forgets the drift measured so far: the clock started, jumped or changed speed, and the
    /// player was given `speed`.
    public mutating func restart(speed: Double) {
        smoothedDrift = nil
        lastDrift = nil
        appliedSpeed = speed
        correctingUntil = nil
        meter = SkewMeter(window: meter.window)
    }

    /// One frame: the player showed `position` at `time`, when the clock was at `clock` and runs
    /// at `speed`.
    /// - Returns: the command that corrects the drift (nil: none needed), and a report when one
    ///   is due.
    public mutating func measure(position: Double, clock: Double, at time: ContinuousClock.Instant, speed: Double) -> Step {
        let drift = position - clock
        lastDrift = drift
        // A seek in progress is not measured.
        if let until = correctingUntil, time < until { return Step() }
        meter.add(drift, at: time)
        let smoothed = smoothedDrift.map { $0 * 0.9 + drift * 0.1 } ?? drift
        smoothedDrift = smoothed
        var step = Step()
        if lastReport.map({ time.seconds(since: $0) >= settings.driftReportInterval.inSeconds }) ?? true {
            lastReport = time
            step.report = smoothed
        }
        guard settings.correctsDrift else { return step }
        if abs(smoothed) > settings.seekThreshold {
            correctingUntil = time + .milliseconds(500)
            smoothedDrift = nil
            correctiveSeeks += 1
            step.command = .seek(to: max(0, clock + 0.1 * speed), precision: .exact)
            return step
        }
        // Close the gap in about a second: ahead -> slower, behind -> faster.
        let correction = max(-settings.maximumSpeedCorrection, min(settings.maximumSpeedCorrection, -smoothed))
        let range = PlayerCommand.speedRange
        let wanted = min(range.upperBound, max(range.lowerBound, speed * (1 + correction)))
        guard abs(wanted - appliedSpeed) > 0.002 else { return step }
        appliedSpeed = wanted
        step.command = .setSpeed(wanted)
        return step
    }
}
