import DequeModule
import PlayerKitCore
import PlayerKitSupport

/// The decisions of a ``MultiView``: which member to hold, seek or trim, and what to report. A
/// pure state machine: fed the members' frame changes, state changes and ends, each with its
/// monotonic time, it returns the actions to carry out. It holds no lock and runs no action.
///
/// **The group clock.** The members' media times share one timeline (the sources' presentation
/// timestamps). The group clock maps a monotonic instant to a media time: `anchor` at
/// `anchorTime`, advancing at the group's speed. It starts on the first frame any member shows,
/// and follows the leader's frames while the leader plays in step: each of its frames moves the
/// anchor a tenth of the way to it, so one late frame does not jolt the group. While the leader
/// is held, stalled or gone, the clock runs on by itself.
///
/// **The leader.** With ``SyncClock/furthestAhead`` (live angles: the lowest latency), a
/// member that joins more than ``SyncSettings/realignThreshold`` ahead of the clock takes
/// the lead: the clock jumps to it and the others are brought there. With
/// ``SyncClock/member(_:)``, that member leads, and the clock jumps to it whenever it is
/// that far from it without having fallen out of step.
///
/// **A member's skew** is measured at each of its frame changes: the media time of the new frame
/// minus the clock's media time at the moment the frame changed (positive: the member shows the
/// frame early, it is ahead). That is the moment the member showed a frame against the moment
/// the clock shows it, so the spread of the members' skews is the spread of the moments they
/// show the same frame.
///
/// **Correction.** The median of a member's latest five skews decides:
/// - ahead beyond ``SyncSettings/holdThreshold``, or behind beyond
///   ``SyncSettings/realignThreshold`` (while it joins, beyond the hold threshold): the
///   member pauses, takes the group's speed (before the seek: a speed change makes mpv decode
///   its audio again, and a change at the release started members a frame late) and seeks exactly to its own frame when ahead, or, when behind, to where the
///   clock will be ``SyncTuning/seekLead`` later (once its cache has it), and is held
///   there until the clock reaches the frame it shows, then plays (a wake-up is asked for at that instant); a seek that lands after
///   the clock passed its target doubles the lead for the next one (up to 4 s);
/// - otherwise the speed is trimmed, `group speed × (1 − skew × trimGain)`, and beyond
///   ``catchUpBeyond`` by what closes the rest of the skew within ``catchUpTime``; at most
///   ``SyncSettings/maximumSpeedTrim`` off, none within ``SyncTuning/deadBand``, at
///   most once per ``trimInterval``. mpv
///   keeps the pitch (scaletempo), so a trim is not heard.
///
/// **An outside clock.** Made with ``SyncClock/set``, the machine follows a clock its owner
/// sets (``setClock(_:speed:speedsGiven:at:)``): a ``SyncGroup``'s transport (play, pause, seek, speed), a
/// Syncplay room's clock. No member leads and no frame moves the clock; while the owner has
/// stopped it (nil), nothing is measured or corrected, and the owner pauses, seeks and starts
/// the members itself. A member further ahead than the realign threshold is seeked to where the
/// clock will be, like one behind (on demand there is no hole in the media to fall into).
/// The same machine drives all three ways players are kept together.
///
/// Its files: this one (state, members, joins and drops, states and frames),
/// `SyncMachine+Buffering.swift` (buffer reports, the live edge, landings, wake-ups),
/// `SyncMachine+Transport.swift` (pause, start again, resume, speed),
/// `SyncMachine+Correction.swift` (the decisions), and ``SkewMeter``.
struct SyncMachine: Sendable {
    typealias Settings = SyncSettings

    /// What the machine asks for.
    enum Action: Sendable, Equatable {
        /// Hand `command` to the member (never waiting).
        case send(PlayerID, PlayerCommand)
        /// Publish `event` on the member's ID.
        case publish(PlayerID, SyncEvent)
        /// Call ``wake(at:)`` at this instant (a held member is due).
        case wake(at: ContinuousClock.Instant)
        /// Take the member out of the group for `reason`: call ``drop(_:reason:at:)``, which
        /// publishes it.
        case drop(PlayerID, SyncEvent.DropReason)
    }

    /// Where one member is.
    enum Status: Sendable, Equatable {
        /// In the group, no frame seen yet.
        case waiting
        /// Playing; trimmed by speed.
        case playing
        /// Paused on the frame `media` (a media time), until the clock reaches it.
        case holding(media: Double)
        /// Paused and seeking to `target` since `since`, to be held where it lands (its seek
        /// reported landed, or a frame at the target).
        case seeking(target: Double, since: ContinuousClock.Instant)
        /// Waiting for the network (mpv's cache ran dry).
        case stalled
    }

    struct Member: Sendable {
        let id: PlayerID
        var status: Status = .waiting
        /// When the member joined the group, or the group started again (``startAgain(at:)``).
        var joinedAt: ContinuousClock.Instant
        /// When it was first aligned (nil: not yet).
        var alignedAt: ContinuousClock.Instant?
        /// When it fell out of step, and why (nil: in step).
        var fell: (at: ContinuousClock.Instant, reason: SyncEvent.Reason)?
        /// The latest raw skews since the last correction, newest last (at most 5), each with the
        /// moment of its frame.
        var recent: [(skew: Double, time: ContinuousClock.Instant)] = []
        /// Frames to let pass before skews count again (after a release or a seek).
        var settling = 0
        /// Whether the member was released from a hold and its first measured skew tells how
        /// early or late it started (``startLatency`` learns from it).
        var measuresStart = false
        /// Whether ``SyncEvent/joined`` was published.
        var joinReported = false
        /// The last frame: its media time and when it changed.
        var lastFrame: (media: Double, time: ContinuousClock.Instant)?
        /// When its drift was last reported (``SyncEvent/drift(_:)``).
        var lastReport: ContinuousClock.Instant?
        /// The speed the member plays at, as last sent: its ``baseSpeed`` times its ``correction``.
        var speed: Double = 1
        /// The speed its player was last given (``/PlayerKitCore/PlayerCommand/setSpeed(_:)``):
        /// what its app sees, the group's (``SyncMachine/ownSpeed(_:)``).
        var baseSpeed: Double = 1
        /// The correction its player was last given
        /// (``/PlayerKitCore/PlayerCommand/setSpeedCorrection(_:)``): a trim, which its app does
        /// not see as a speed change. A speed given takes it away.
        var correction: Double = 1
        /// The correction last published (``SyncEvent/corrected(speed:)``).
        var reportedCorrection: Double = 1
        /// When the last trim was sent.
        var lastTrim: ContinuousClock.Instant?
        /// The lead of the next forward seek.
        var seekLead: Double
        /// The skew meter of this member.
        var meter: SkewMeter
        /// The member's skew as the machine judges it: the median of its latest skews, else its
        /// latest (nil before its first measured frame).
        var drift: Double? { Statistics.median(recent.map(\.skew)) ?? meter.latest }
        /// Consecutive frames within the aligned tolerance.
        var inStep = 0
        /// The time on the group's timeline up to which the member's player has its source in
        /// memory (mpv's `demuxer-cache-time`), when known.
        var cacheEnd: Double?
        /// The time on the group's timeline up to which the member's player can seek (the end of
        /// its seekable ranges), when known: a live stream seeks within that only, and it ends
        /// about a segment before ``cacheEnd``.
        var seekableEnd: Double?
        /// Whether the group had paused the member (held or seeking) when it stalled: it comes
        /// back paused, and the group must bring it back itself.
        var pausedByGroupWhenStalled = false
        /// Whether the running corrective seek goes only as far as the member can seek, short
        /// of where the clock will be (its lead is then not the cause of landing behind).
        var shortSeek = false
        /// The member's media time minus the group's time: the media offset the app gave
        /// (``SyncSettings/mediaOffsets``), in seconds. Taken from a media time (then divided
        /// by ``rate``) to put it on the group's timeline.
        var offset: Double
        /// Whether the app gave the offset (then its timestamps are not judged).
        var offsetGiven: Bool
        /// How much media the member plays per second of the group's timeline: 1 plus its
        /// clock drift (``SyncSettings/clockDrifts``, in parts per million) times 1e-6. Its
        /// speed is the group's times this.
        var rate: Double = 1
        /// How many times the member's 33-bit MPEG-TS clock wrapped against the group's (added
        /// to its media times, times ``SyncMachine/timestampWrap``).
        var wraps = 0
        /// Where the member's live edge is on the group's timeline (nil: not live, or not seen).
        var edge: LiveEdge?
    }

    /// Where a member's source ends, against the monotonic time: its cache's end minus the
    /// seconds since the machine's epoch, at best (right after a new segment arrived); judged
    /// only for a live member (``isLive``). Members
    /// on one clock agree on it within about a segment (the moments their players reload their
    /// playlists differ); members whose timestamps are unrelated differ by their offset.
    struct LiveEdge: Sendable {
        /// The largest lead seen.
        var lead: Double
        /// When it was first seen.
        let since: ContinuousClock.Instant
        /// The cache's end last seen.
        var last: Double
        /// The largest step the cache's end made at once after the first second (a segment, or
        /// the part of one that had arrived).
        var largestStep: Double = 0
        /// The cache's ends after each step (after the first second) and when they were seen.
        var growth: [(value: Double, time: ContinuousClock.Instant)] = []

        /// Whether the source grows at the pace of time, as a live source does (between 0.5 and
        /// 1.5 s of media a second, over at least two steps); an on-demand source is in memory
        /// at once, or at the speed of the network.
        var isLive: Bool {
            guard growth.count >= 3, let first = growth.first, let last = growth.last else { return false }
            let elapsed = last.time.seconds(since: first.time)
            guard elapsed > 0 else { return false }
            return (0.5...1.5).contains((last.value - first.value) / elapsed)
        }
    }

    var settings: Settings
    /// Where the clock comes from: the owner's, a leading member's, the live edge.
    let clockSource: SyncClock
    var members: [Member] = []
    /// How many corrective seeks the machine asked for.
    var correctiveSeeks = 0
    /// How many frames' skews were measured (a frame that measured one changes it).
    private(set) var measurements = 0
    /// The member that started or last took the clock (``SyncClock/furthestAhead``).
    var leader: PlayerID?
    /// The group's speed.
    var speed: Double = 1
    /// The clock: `anchor` (media time) at `anchorTime`; nil until the first frame.
    var anchor: (media: Double, time: ContinuousClock.Instant)?
    /// The instant live edges are measured from (the first cache report).
    var epoch: ContinuousClock.Instant?
    /// After the clock was dropped with a member whose timestamps were unrelated: the member
    /// whose next frame starts it again (the first member, whose timestamps are the group's).
    var restartOn: PlayerID?
    /// While the group is paused: where its clock stopped (nil: it had not started) and when.
    var paused: (media: Double?, time: ContinuousClock.Instant)?
    /// The members told to pause with the group (one that joins while it is paused is told at
    /// its first frame).
    var pausedMembers: Set<PlayerID> = []
    /// How long before the clock reaches a held member's frame it is told to play, in seconds:
    /// ``SyncTuning/startLatency`` at first, then learned from each release (the first skew
    /// measured after it), as the time mpv takes to start differs from machine to machine.
    var startLatency: Double

    /// The most ``startLatency`` becomes: a start measured later than this is an outlier (a
    /// busy machine), not mpv's latency.
    static let startLatencyLimit = 0.02

    /// The largest skew after a release taken as the start's error (5 ms): mpv starts within
    /// a few milliseconds of being told.
    static let startErrorLimit = 0.005

    /// The span of MPEG-TS's 33-bit clock of 90 kHz: its timestamps start again at 0 after it
    /// (26.5 hours). A member whose clock wrapped and one whose did not yet are this far apart.
    static let timestampWrap = Double(1 << 33) / 90_000

    /// How long a live member's edge is watched before its timestamps are judged.
    static let edgeWatch: Duration = .seconds(3)

    /// A machine whose clock comes from `clock`: ``SyncClock/set`` follows a clock its owner sets
    /// (``setClock(_:speed:speedsGiven:at:)``); the others follow members or their live edge.
    init(settings: Settings, clock: SyncClock = .furthestAhead) {
        self.settings = settings
        self.clockSource = clock
        startLatency = settings.tuning.startLatency.inSeconds
    }

    /// Sets the clock the members follow (outside-clock machines): `media` (on the group's
    /// timeline) at `time`, moving on at `speed`; nil stops it (the owner paused the group, or
    /// holds it for a member). What each member was doing for the machine is forgotten, and its
    /// skew is measured afresh from its next frames. With `speedsGiven` the owner gave every
    /// member its speed itself (a group's transport); else the machine does: the actions give a
    /// member whose speed is not the clock's (times its rate) that speed, and take a trim left
    /// on one away (``/PlayerKitCore/PlayerCommand/setSpeedCorrection(_:)`` of 1), so the
    /// machine is the one writer of its members' speeds.
    @discardableResult
    mutating func setClock(_ media: Double?, speed: Double, speedsGiven: Bool = true, at time: ContinuousClock.Instant) -> [Action] {
        precondition(clockSource.isSet, "setClock is for a machine whose owner sets the clock")
        anchor = media.map { ($0, time) }
        self.speed = speed
        var actions: [Action] = []
        if !speedsGiven {
            for index in members.indices {
                if members[index].baseSpeed != ownSpeed(index) {
                    actions.append(.send(members[index].id, .setSpeed(ownSpeed(index))))
                } else if members[index].correction != 1 {
                    actions.append(.send(members[index].id, .setSpeedCorrection(1)))
                }
            }
        }
        for index in members.indices {
            switch members[index].status {
            case .holding, .seeking: members[index].status = .waiting
            default: break
            }
            // The owner gave every member its speed, which took any correction away.
            members[index].speed = ownSpeed(index)
            members[index].baseSpeed = ownSpeed(index)
            members[index].correction = 1
            members[index].recent = []
            members[index].inStep = 0
            members[index].settling = 2
            members[index].lastFrame = nil
            members[index].lastTrim = nil
            members[index].shortSeek = false
            members[index].pausedByGroupWhenStalled = false
            members[index].meter = SkewMeter(window: settings.skewWindow)
        }
        return actions
    }

    /// Member `id`'s player reports the speed its app sees (`speedChanged`): one the machine gave
    /// it, or the app's own. A speed given takes a trim away (the core resets the correction),
    /// so the machine knows what its member plays at when it next sets a clock. The report of a
    /// speed the machine gave changes nothing (a trim it sent after that speed still holds).
    mutating func speedChanged(_ id: PlayerID, to speed: Double) {
        guard let index = members.firstIndex(where: { $0.id == id }), members[index].baseSpeed != speed else { return }
        members[index].baseSpeed = speed
        members[index].correction = 1
        members[index].speed = speed
    }

    /// Member `id`'s media time at the group's timeline time `value` (its offset and rate
    /// applied; nil for a stranger).
    func mediaTime(of id: PlayerID, atTimeline value: Double) -> Double? {
        members.firstIndex { $0.id == id }.map { media($0, value) }
    }

    /// The clock's media time at `time`, once it runs.
    /// While the group is paused, where it stopped.
    func clock(at time: ContinuousClock.Instant) -> Double? {
        if let paused { return paused.media }
        return anchor.map { $0.media + time.seconds(since: $0.time) * speed }
    }

    /// The instant at which the clock reaches `media` (nil while the group is paused).
    func instant(whenClockReaches media: Double) -> ContinuousClock.Instant? {
        guard paused == nil else { return nil }
        return anchor.map { $0.time + .seconds((media - $0.media) / speed) }
    }

    /// The member whose frames the clock follows now: the chosen one when it is a member, else
    /// the one that took the clock, else the first.
    var leaderID: PlayerID? {
        switch clockSource {
        case .set, .liveEdge: return nil
        case .member(let id) where has(id): return id
        case .member, .furthestAhead: break
        }
        if let leader, has(leader) { return leader }
        return members.first?.id
    }

    /// Member `id`'s clock rate against the group's timeline (1 plus its clock drift × 1e-6; nil
    /// for a stranger).
    func rate(of id: PlayerID) -> Double? { members.first { $0.id == id }?.rate }

    /// Member `id`'s media offset in seconds (its media time minus the group's; nil for a stranger).
    func offset(of id: PlayerID) -> Double? { members.first { $0.id == id }?.offset }

    func member(_ id: PlayerID) -> Member? { members.first { $0.id == id } }

    /// Every measured member's skew figures, with its drift as the machine judges it: what every
    /// group reports as `skews`.
    var skews: [PlayerID: MemberSkew] {
        Dictionary(uniqueKeysWithValues: members.compactMap { member in member.meter.figures(drift: member.drift).map { (member.id, $0) } })
    }

    /// The spread of the members' latest skews (each measured since the clock was last set):
    /// the furthest ahead minus the furthest behind, once every member has one.
    var latestSpread: Double? {
        var low = Double.infinity, high = -Double.infinity
        for member in members {
            guard let latest = member.meter.latest else { return nil }
            low = min(low, latest)
            high = max(high, latest)
        }
        return members.isEmpty ? nil : high - low
    }

    /// Whether `id` is a member (without copying its state, as ``member(_:)`` does: this runs
    /// at every frame).
    func has(_ id: PlayerID) -> Bool { members.contains { $0.id == id } }

    // MARK: Inputs

    /// A member joins (it is loading or already playing).
    mutating func join(_ id: PlayerID, at time: ContinuousClock.Instant) -> [Action] {
        guard !has(id) else { return [] }
        let offset = settings.mediaOffsets[id]
        members.append(Member(id: id, joinedAt: time, seekLead: settings.tuning.seekLead.inSeconds,
                              meter: SkewMeter(window: settings.skewWindow),
                              offset: offset?.inSeconds ?? 0, offsetGiven: offset != nil,
                              rate: 1 + (settings.clockDrifts[id] ?? 0) * 1e-6))
        return []
    }

    /// Sets member `id`'s clock drift against the group's timeline, in parts per million (nil:
    /// none), kept in the settings for members that join later: from now on it plays at the
    /// group's speed times `1 + ppm × 1e-6`, and its media times are read on that scale. A
    /// playing member gets its new speed at once.
    mutating func setClockDrift(_ ppm: Double?, for id: PlayerID, at time: ContinuousClock.Instant) -> [Action] {
        settings.clockDrifts[id] = ppm
        guard let index = members.firstIndex(where: { $0.id == id }) else { return [] }
        let rate = 1 + (ppm ?? 0) * 1e-6
        guard rate != members[index].rate else { return [] }
        members[index].rate = rate
        members[index].lastFrame = nil
        members[index].recent = []
        guard members[index].status == .playing else { return [] }
        return play(index, at: ownSpeed(index))
    }

    /// The speed member `index` plays at to keep the group's: the group's times its rate.
    func ownSpeed(_ index: Int) -> Double { speed * members[index].rate }

    /// Makes member `index` play at `effective`: its player's speed (what its app sees) is the
    /// group's (``ownSpeed(_:)``), sent only when that changed (which takes a correction away);
    /// the rest is a correction (``/PlayerKitCore/PlayerCommand/setSpeedCorrection(_:)``), which
    /// publishes no `speedChanged`: the trims a group makes several times a second stay off the
    /// app's speed events (issue 66). ``SyncEvent/corrected(speed:)`` says, with the drift
    /// reports, what the correction is.
    mutating func play(_ index: Int, at effective: Double) -> [Action] {
        let id = members[index].id
        let base = ownSpeed(index)
        var actions: [Action] = []
        if members[index].baseSpeed != base {
            members[index].baseSpeed = base
            members[index].correction = 1
            actions.append(.send(id, .setSpeed(base)))
        }
        let range = PlayerCommand.speedCorrectionRange
        let correction = min(range.upperBound, max(range.lowerBound, effective / base))
        if abs(correction - members[index].correction) > 1e-12 {
            members[index].correction = correction
            actions.append(.send(id, .setSpeedCorrection(correction)))
        }
        members[index].speed = members[index].baseSpeed * members[index].correction
        return actions
    }

    /// Sets member `id`'s media offset (its media time minus the group's; nil: none, and its
    /// timestamps are judged again), kept in the settings for members that join later. A
    /// member's skew changes by the difference at once, and it is brought in step as any member
    /// that fell out of step (``SyncEvent/Reason/drift``).
    mutating func setOffset(_ offset: Duration?, for id: PlayerID, at time: ContinuousClock.Instant) -> [Action] {
        settings.mediaOffsets[id] = offset
        guard let index = members.firstIndex(where: { $0.id == id }) else { return [] }
        let change = (offset?.inSeconds ?? 0) - members[index].offset
        members[index].offset += change
        members[index].offsetGiven = offset != nil
        members[index].edge = nil
        // Times on the group's timeline move against the change, on the member's scale: media
        // further ahead of the group is earlier on the group's timeline.
        let moved = -change / members[index].rate
        members[index].lastFrame = members[index].lastFrame.map { ($0.media + moved, $0.time) }
        members[index].cacheEnd = members[index].cacheEnd.map { $0 + moved }
        members[index].seekableEnd = members[index].seekableEnd.map { $0 + moved }
        members[index].recent = []
        if case .holding(let media) = members[index].status { members[index].status = .holding(media: media + moved) }
        guard abs(moved) > settings.alignedTolerance.inSeconds else { return [] }
        return fellOut(index, reason: .drift, at: time)
    }

    /// The group's timeline time of member `index`'s media time `media`: its media offset taken away, on
    /// its clock's scale (its rate), and its clock's wraps (a wrap is counted when the result
    /// is more than half a wrap from the group's clock).
    mutating func timeline(_ index: Int, _ media: Double, at time: ContinuousClock.Instant) -> Double {
        var value = (media - members[index].offset) / members[index].rate + Double(members[index].wraps) * Self.timestampWrap
        if let clock = clock(at: time), abs(value - clock) > Self.timestampWrap / 2 {
            let turns = ((clock - value) / Self.timestampWrap).rounded()
            members[index].wraps += Int(turns)
            value += turns * Self.timestampWrap
        }
        return value
    }

    /// Member `index`'s media time of the group's timeline time `value`.
    func media(_ index: Int, _ value: Double) -> Double {
        (value - Double(members[index].wraps) * Self.timestampWrap) * members[index].rate + members[index].offset
    }

    /// A member leaves for `reason` (nil: the app removed it; no event).
    mutating func drop(_ id: PlayerID, reason: SyncEvent.DropReason?, at time: ContinuousClock.Instant) -> [Action] {
        guard let index = members.firstIndex(where: { $0.id == id }) else { return [] }
        let led = leaderID == id
        members.remove(at: index)
        if leader == id { leader = nil }
        var actions: [Action] = reason.map { [.publish(id, .dropped($0))] } ?? []
        if led, case .unrelatedTimestamps = reason {
            // The clock ran on timestamps the group does not share: it starts again on the next
            // frame of the first member (whose timestamps are the group's); held members play
            // (and are measured afresh).
            anchor = nil
            restartOn = members.first?.id
            for index in members.indices {
                switch members[index].status {
                case .holding, .seeking:
                    members[index].status = .waiting
                    if members[index].speed != ownSpeed(index) { actions += play(index, at: ownSpeed(index)) }
                    actions.append(.send(members[index].id, .play))
                default:
                    break
                }
                members[index].lastFrame = nil
                members[index].recent = []
                members[index].settling = 2
            }
        }
        return actions
    }

    /// The member's player changed state.
    mutating func stateChanged(_ id: PlayerID, to state: PlayerState, at time: ContinuousClock.Instant) -> [Action] {
        guard let index = members.firstIndex(where: { $0.id == id }) else { return [] }
        // While the group is paused only a stall is noted; a member that stalled is brought
        // back on ``resume(from:at:)`` (with an outside clock, by the owner when it sets the
        // clock again).
        if paused != nil || (clockSource.isSet && anchor == nil), state != .buffering { return [] }
        switch state {
        case .buffering:
            // Stalled: the others play on; the member is realigned when its frames come back.
            guard members[index].status != .stalled else { return [] }
            switch members[index].status {
            case .holding, .seeking: members[index].pausedByGroupWhenStalled = true
            default: members[index].pausedByGroupWhenStalled = false
            }
            members[index].status = .stalled
            members[index].recent = []
            return fellOut(index, reason: .stall, at: time)
        case .playing where members[index].status == .stalled:
            members[index].status = .playing
            members[index].settling = 2
            // Its data flows again. Stalled for longer than the realign threshold it is that far
            // behind for certain (its last frame against the clock): brought back at once, as a
            // member measured behind is, rather than after the frames that would measure it
            // (about 0.25 s at 30 fps).
            guard let last = members[index].lastFrame, let clock = clock(at: time),
                  last.media - clock < -settings.realignThreshold.inSeconds else { return [] }
            members[index].recent = []
            members[index].inStep = 0
            return seekToClock(index, skew: last.media - clock, media: last.media, at: time)
        case .paused where members[index].status == .stalled && members[index].pausedByGroupWhenStalled:
            // It stalled again while the group held it after a first stall: its data flows
            // again, but it is paused, and no frame of its will come to move it. Brought to
            // where the clock will be at once, as a member behind is (a second stall in a row
            // left it paused for good).
            members[index].pausedByGroupWhenStalled = false
            return seekAhead(index, at: time)
        default:
            return []
        }
    }

    /// Member `index`'s skew at `time`, as the correction judges it: the median of its recent
    /// frames' skews, each carried forward to `time` at the speed the member was last given
    /// against the clock's. The median of five frames is two frames old: a member trimmed 5%
    /// has moved 3.3 ms since, and a correction that took the median as the skew now went past
    /// the clock by that much (a live angle that joined 30 ms behind ended 4.4 ms ahead).
    func judgedSkew(_ index: Int, at time: ContinuousClock.Instant) -> Double? {
        // How much the skew grows per second at the member's speed.
        let growth = (members[index].speed / ownSpeed(index) - 1) * speed
        return Statistics.median(members[index].recent.map { $0.skew + growth * time.seconds(since: $0.time) })
    }

    /// A member showed a new frame: media time `media` at `time`.
    mutating func frame(_ id: PlayerID, media raw: Double, at time: ContinuousClock.Instant) -> [Action] {
        guard let index = members.firstIndex(where: { $0.id == id }) else { return [] }
        // A frame shown before an outside clock was last set says nothing about it.
        if clockSource.isSet, let anchor, time < anchor.time { return [] }
        let media = timeline(index, raw, at: time)
        var actions: [Action] = []
        let previous = members[index].lastFrame
        members[index].lastFrame = (media, time)
        if !members[index].joinReported {
            members[index].joinReported = true
            actions.append(.publish(id, .joined))
        }
        if paused != nil {
            // Paused: a frame still on its way, a seek landing, or a member that joined since
            // (told to pause now). Nothing is measured or corrected.
            if pausedMembers.insert(id).inserted { actions.append(.send(id, .pause)) }
            if case .seeking(let target, let since) = members[index].status,
               abs(media - target) < 0.25 || time - since > .seconds(2) {
                actions += landed(index, media: media, at: time)
            }
            return actions
        }
        if anchor == nil, clockSource.startsOnFrames, restartOn == nil || restartOn == id || !has(restartOn!) {
            // The clock starts on the first frame any member shows.
            anchor = (media, time)
            leader = id
            restartOn = nil
        }
        switch members[index].status {
        case .waiting, .stalled:
            members[index].status = .playing
        case .seeking(let target, let since):
            // Landed (a frame at the target), or given up on: held where it is.
            guard abs(media - target) < 0.25 || time - since > .seconds(2) else { return actions + releaseDue(at: time) }
            return actions + landed(index, media: media, at: time)
        case .holding:
            return actions + releaseDue(at: time)
        case .playing:
            break
        }
        // A gap in the media: a segment was missing. mpv either shows the last frame until the
        // next one is due (the member froze, and is in step again after it) or jumps ahead
        // (the member is ahead, and is brought back).
        // On an outside clock (on demand) a jump is the player's own: drift.
        if let previous, media - previous.media > settings.tuning.jumpThreshold.inSeconds {
            actions += fellOut(index, reason: clockSource.gapReason, at: previous.time)
            members[index].recent = []
            members[index].settling = 0
        }
        guard let clock = clock(at: time) else { return actions }
        let skew = media - clock
        if members[index].settling == 0, takesTheLead(index, skew: skew) {
            leader = id
            anchor = (media, time)
            return actions + releaseDue(at: time) + wakesForHeld()
        }
        let leads = id == leaderID && members[index].fell == nil
        if leads, members[index].settling == 0, let anchor {
            // The clock follows the leader: a tenth of the way to each of its frames.
            self.anchor = (anchor.media, anchor.time - .seconds(skew * 0.1 / speed))
        }
        if members[index].settling > 0 {
            members[index].settling -= 1
            return actions + releaseDue(at: time)
        }
        if members[index].measuresStart {
            // The first skew after a release: positive, it started early (mpv starts faster than
            // the latency allowed for); half of it is taken off the latency.
            // A skew beyond a few milliseconds is something else (a stall, a clock that moved,
            // a busy machine).
            members[index].measuresStart = false
            if abs(skew) < Self.startErrorLimit {
                startLatency = min(Self.startLatencyLimit, max(0, startLatency - skew * 0.5))
            }
        }
        members[index].meter.add(skew, at: time)
        measurements &+= 1
        members[index].recent.append((skew, time))
        if members[index].recent.count > 5 { members[index].recent.removeFirst() }
        if members[index].lastReport.map({ time - $0 >= settings.driftReportInterval }) ?? true {
            members[index].lastReport = time
            actions.append(.publish(id, .drift(members[index].drift ?? skew)))
            if members[index].correction != members[index].reportedCorrection {
                members[index].reportedCorrection = members[index].correction
                actions.append(.publish(id, .corrected(speed: members[index].correction)))
            }
        }
        actions += correct(index, skew: judgedSkew(index, at: time) ?? skew, media: media, leads: leads, at: time)
        return actions + releaseDue(at: time)
    }
}
