import PlayerKitCore
import PlayerKitSupport

/// The settings of the correction every group runs, PlayerKit's one sync settings type: a
/// ``SyncGroup``'s (``SyncGroup/init(players:onMemberFailure:settings:clock:)``), a
/// ``MultiView``'s, a ``ClockFollower``'s, and a room follower's (PlayerKitRooms). The defaults keep 30 fps players within a few
/// milliseconds. (The correction's own constants, such as its seek lead, trim gain and dead
/// band, are documented in Documentation/Sync.md and are not settings: they are not saved.) The offsets and clock
/// drifts concern a ``SyncGroup`` and a ``MultiView``; the unrelated-timestamp threshold a
/// ``MultiView`` only.
///
/// The settings are `Codable`: an app saves them with its layout, per-member offsets
/// (``mediaOffsets``, adjusted live with ``MultiView/setMediaOffset(_:for:)``) included, and gives them
/// back to a new group.
public struct SyncSettings: Sendable, Hashable, Codable {
    /// Skew behind the clock beyond which a member is seeked ahead and held instead of
    /// trimmed, and beyond which it counts as fallen out of step. Default 0.3 s.
    public var realignThreshold: Duration = .milliseconds(300)
    /// Skew ahead of the clock beyond which a member is realigned (seeked and held until the
    /// clock gets there) instead of trimmed; also the skew behind beyond which a member that
    /// is still joining is realigned. Default 40 ms.
    public var holdThreshold: Duration = .milliseconds(40)
    /// The largest relative speed change of a trim. Default 0.05 (±5%).
    public var maximumSpeedTrim: Double = 0.05
    /// Skew within which a member counts as in step (for ``SyncEvent/aligned(after:)``
    /// and ``SyncEvent/realigned(after:reason:)``). Default 5 ms.
    public var alignedTolerance: Duration = .milliseconds(5)
    /// How far back ``MemberSkew``'s percentiles reach. Default 10 s.
    public var skewWindow: Duration = .seconds(10)
    /// Each member's media offset, by ID: the member's media time minus the group's time, the
    /// one sign of every offset in PlayerKit (Documentation/Sync.md, "Offsets", has the
    /// picture). A member whose content begins 2 s into its file, or whose timestamps run 2 s
    /// ahead of the group's, has +2 s: it plays 2 s further into its media than the group's
    /// position. For recordings that started apart (PlayerKitAnalysis's `RecordingOffset`
    /// gives it in this sign) and angles that share no clock (separate encoders, RTSP
    /// sessions: measured once, or computed from the playlists' PROGRAM-DATE-TIME by
    /// PlayerKitHLS's `PlaylistClock`). A live member with an offset is trusted: its timestamps
    /// are not judged. Default: none.
    ///
    /// 1.x's `offsets` had the opposite sign (added to the media time); 2.0 reads a 1.x saved
    /// form's `offsets` negated.
    public var mediaOffsets: [PlayerID: Duration] = [:]
    /// Each member's clock drift against the group's timeline, by ID, in parts per million:
    /// a member with +100 plays 100 µs more of its media for every second of the group's, so
    /// it plays at the group's speed times 1.0001 and its offset grows by 0.36 s an hour. For
    /// recordings made on devices with clocks of their own (two cameras of one concert), as
    /// PlayerKitAnalysis's `RecordingAlignment` measures it: applied with `SyncGroup`'s
    /// `apply(_:)` there, or ``SyncGroup/setClockDrift(_:for:)``. At most ±10,000 ppm (1%).
    /// Default: none.
    public var clockDrifts: [PlayerID: Double] = [:]
    /// How far apart two live members' edges (the newest media each has, against the
    /// monotonic time) may be before their timestamps count as unrelated: the later member
    /// is dropped with ``SyncEvent/DropReason/unrelatedTimestamps(offset:)`` instead of
    /// being aligned a few seconds off. The bound is at least a segment and a quarter (the
    /// largest step seen in a member's cache): players reload a live playlist at moments of
    /// their own, so members on one clock can be a segment apart. Offsets within that
    /// cannot be seen without the playlists (PlayerKitHLS's `PlaylistClock` reads them).
    /// Default 1.5 s.
    public var unrelatedTimestampThreshold: Duration = .milliseconds(1500)
    /// Whether members are corrected (default) or only measured: with false, skews are
    /// measured and reported and no member is trimmed, held or seeked.
    public var correctsSkew = true
    /// How often each member's drift is reported while the clock runs
    /// (``SyncEvent/drift(_:)``: the median of its latest skews). Default 1 s.
    public var driftReportInterval: Duration = .seconds(1)

    /// The correction's own constants (``SyncTuning``): not settings, never saved, and the
    /// same for every group unless a test changes them.
    var tuning = SyncTuning()

    /// The defaults.
    public init() {}

    /// The saved form: the settings above, never the correction's own constants.
    enum CodingKeys: String, CodingKey {
        case realignThreshold, holdThreshold, maximumSpeedTrim, alignedTolerance, skewWindow, mediaOffsets, clockDrifts
        case unrelatedTimestampThreshold, correctsSkew, driftReportInterval
    }

    /// What 1.x saved under names 2.0 no longer writes.
    private enum Saved1xKeys: String, CodingKey {
        /// 1.x's offsets: the group's time minus the member's media time (2.0's media offsets negated).
        case offsets
    }

    /// Decodes settings saved by this version or an earlier one: a setting the saved form
    /// lacks (one added since, such as ``clockDrifts``) keeps its default, 1.x's `offsets` are
    /// read negated as ``mediaOffsets`` (when the saved form has no `mediaOffsets`), and what 1.x saved of
    /// the correction's own constants (`seekLead`, `trimGain`, `deadBand`, `startLatency`,
    /// `jumpThreshold`) is ignored. The settings decoded are checked as `validate()` checks
    /// them.
    /// - Throws: `DecodingError.dataCorrupted`, whose description names the setting out of
    ///   range and its value (the ``/PlayerKitCore/PlayerError/invalidArgument(name:value:reason:)``
    ///   `validate()` throws), or what the decoder throws.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        func read<Value: Decodable>(_ key: CodingKeys, _ value: inout Value) throws {
            if let decoded = try container.decodeIfPresent(Value.self, forKey: key) { value = decoded }
        }
        try read(.realignThreshold, &realignThreshold)
        try read(.holdThreshold, &holdThreshold)
        try read(.maximumSpeedTrim, &maximumSpeedTrim)
        try read(.alignedTolerance, &alignedTolerance)
        try read(.skewWindow, &skewWindow)
        if container.contains(.mediaOffsets) {
            try read(.mediaOffsets, &mediaOffsets)
        } else if let saved = try decoder.container(keyedBy: Saved1xKeys.self).decodeIfPresent([PlayerID: Duration].self, forKey: .offsets) {
            mediaOffsets = saved.mapValues { .zero - $0 }
        }
        try read(.clockDrifts, &clockDrifts)
        try read(.unrelatedTimestampThreshold, &unrelatedTimestampThreshold)
        try read(.correctsSkew, &correctsSkew)
        try read(.driftReportInterval, &driftReportInterval)
        do throws(PlayerError) {
            try validate()
        } catch {
            throw DecodingError.dataCorrupted(DecodingError.Context(
                codingPath: decoder.codingPath, debugDescription: error.description, underlyingError: error))
        }
    }

    /// The defaults of a group that follows its own transport (``SyncGroup``) or a room's
    /// clock: ``init()``'s, with a realign threshold of 0.25 s, as 1.0's groups had.
    public static var onDemand: SyncSettings {
        var settings = SyncSettings()
        settings.realignThreshold = .milliseconds(250)
        return settings
    }

    /// Checks every setting: thresholds, tolerance and window above zero (the tolerance 0
    /// or more), the speed trim a finite fraction from 0 to 0.5, each clock drift finite and
    /// within ±10,000 ppm.
    /// - Throws: ``/PlayerKitCore/PlayerError/invalidArgument(name:value:reason:)`` naming the
    ///   first setting that makes no sense ("sync setting maximumSpeedTrim", ...) and its value.
    func validate() throws(PlayerError) {
        let positive: [(String, Duration)] = [
            ("realignThreshold", realignThreshold), ("holdThreshold", holdThreshold), ("skewWindow", skewWindow),
            ("unrelatedTimestampThreshold", unrelatedTimestampThreshold), ("driftReportInterval", driftReportInterval),
        ]
        for (name, value) in positive where value <= .zero {
            throw .invalidArgument(name: "sync setting \(name)", value: "\(value)", reason: "must be above zero")
        }
        guard alignedTolerance >= .zero else {
            throw .invalidArgument(name: "sync setting alignedTolerance", value: "\(alignedTolerance)", reason: "must be zero or more")
        }
        guard maximumSpeedTrim.isFinite, (0...0.5).contains(maximumSpeedTrim) else {
            throw .invalidArgument(name: "sync setting maximumSpeedTrim", value: "\(maximumSpeedTrim)",
                                   reason: "must be a fraction from 0 to 0.5 (0.05 trims the speed by at most 5%)")
        }
        for (id, ppm) in clockDrifts.sorted(by: { $0.key.rawValue < $1.key.rawValue }) {
            try Self.validateClockDrift(ppm, for: id)
        }
    }

    /// The largest clock drift a member may have, either way: 10,000 ppm (1%).
    static let clockDriftLimit = 10_000.0

    static func validateClockDrift(_ ppm: Double, for id: PlayerID) throws(PlayerError) {
        guard ppm.isFinite, abs(ppm) <= clockDriftLimit else {
            throw .invalidArgument(name: "sync setting clockDrifts[\(id.rawValue)]", value: "\(ppm)",
                                   reason: "must be a finite number of parts per million within ±10000 (1%)")
        }
    }
}
