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
/// **The leader.** With ``MultiView/Leader/furthestAhead`` (live angles: the lowest latency), a
/// member that joins more than ``SyncSettings/realignThreshold`` ahead of the clock takes
/// the lead: the clock jumps to it and the others are brought there. With
/// ``MultiView/Leader/member(_:)``, that member leads, and the clock jumps to it whenever it is
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
///   clock will be ``SyncSettings/seekLead`` later (once its cache has it), and is held
///   there until the clock reaches the frame it shows, then plays (a wake-up is asked for at that instant); a seek that lands after
///   the clock passed its target doubles the lead for the next one (up to 4 s);
/// - otherwise the speed is trimmed, `group speed × (1 − skew × trimGain)`, and beyond
///   ``catchUpBeyond`` by what closes the rest of the skew within ``catchUpTime``; at most
///   ``SyncSettings/maximumSpeedTrim`` off, none within ``SyncSettings/deadBand``, at
///   most once per ``trimInterval``. mpv
///   keeps the pitch (scaletempo), so a trim is not heard.
///
/// **An outside clock.** Made with `external: true`, the machine follows a clock its owner
/// sets (``setClock(_:speed:at:)``): a ``SyncGroup``'s transport (play, pause, seek, speed), a
/// Syncplay room's clock. No member leads and no frame moves the clock; while the owner has
/// stopped it (nil), nothing is measured or corrected, and the owner pauses, seeks and starts
/// the members itself. A member further ahead than the realign threshold is seeked to where the
/// clock will be, like one behind (on demand there is no hole in the media to fall into).
/// The same machine drives all three ways players are kept together.
struct LiveAlignment: Sendable {
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
        /// what its app sees, the group's (``LiveAlignment/ownSpeed(_:)``).
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
        /// Added to the member's media times to put them on the group's timeline: the offset
        /// the app gave (``SyncSettings/offsets``), in seconds.
        var offset: Double
        /// Whether the app gave the offset (then its timestamps are not judged).
        var offsetGiven: Bool
        /// How much media the member plays per second of the group's timeline: 1 plus its
        /// clock drift (``SyncSettings/clockDrifts``, in parts per million) times 1e-6. Its
        /// speed is the group's times this.
        var rate: Double = 1
        /// How many times the member's 33-bit MPEG-TS clock wrapped against the group's (added
        /// to its media times, times ``LiveAlignment/timestampWrap``).
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

    private(set) var settings: Settings
    let leaderChoice: MultiView.Leader
    /// Whether the owner sets the clock (``setClock(_:speed:at:)``) instead of members leading.
    let external: Bool
    private(set) var members: [Member] = []
    /// How many corrective seeks the machine asked for.
    private(set) var correctiveSeeks = 0
    /// The member that started or last took the clock (``MultiView/Leader/furthestAhead``).
    private var leader: PlayerID?
    /// The group's speed.
    private(set) var speed: Double = 1
    /// The clock: `anchor` (media time) at `anchorTime`; nil until the first frame.
    private(set) var anchor: (media: Double, time: ContinuousClock.Instant)?
    /// The instant live edges are measured from (the first cache report).
    private var epoch: ContinuousClock.Instant?
    /// After the clock was dropped with a member whose timestamps were unrelated: the member
    /// whose next frame starts it again (the first member, whose timestamps are the group's).
    private var restartOn: PlayerID?
    /// While the group is paused: where its clock stopped (nil: it had not started) and when.
    private(set) var paused: (media: Double?, time: ContinuousClock.Instant)?
    /// The members told to pause with the group (one that joins while it is paused is told at
    /// its first frame).
    private var pausedMembers: Set<PlayerID> = []
    /// How long before the clock reaches a held member's frame it is told to play, in seconds:
    /// ``SyncSettings/startLatency`` at first, then learned from each release (the first skew
    /// measured after it), as the time mpv takes to start differs from machine to machine.
    private(set) var startLatency: Double

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

    init(settings: Settings, leader: MultiView.Leader = .furthestAhead) {
        self.settings = settings
        self.leaderChoice = leader
        self.external = false
        startLatency = settings.startLatency.inSeconds
    }

    /// A machine that follows a clock its owner sets (``setClock(_:speed:at:)``), not a member.
    init(settings: Settings, externalClock: Void) {
        self.settings = settings
        self.leaderChoice = .furthestAhead
        self.external = true
        startLatency = settings.startLatency.inSeconds
    }

    /// Sets the clock the members follow (outside-clock machines): `media` (on the group's
    /// timeline) at `time`, moving on at `speed`; nil stops it (the owner paused the group, or
    /// holds it for a member). The owner has paused, seeked or started the members itself and
    /// given them `speed`: what each was doing for the machine is forgotten, and its skew is
    /// measured afresh from its next frames.
    mutating func setClock(_ media: Double?, speed: Double, at time: ContinuousClock.Instant) {
        precondition(external, "setClock is for a machine with an outside clock")
        anchor = media.map { ($0, time) }
        self.speed = speed
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
        if external { return nil }
        if case .liveEdge = leaderChoice { return nil }
        if case .member(let id) = leaderChoice, has(id) { return id }
        if let leader, has(leader) { return leader }
        return members.first?.id
    }

    func member(_ id: PlayerID) -> Member? { members.first { $0.id == id } }

    /// Whether `id` is a member (without copying its state, as ``member(_:)`` does: this runs
    /// at every frame).
    func has(_ id: PlayerID) -> Bool { members.contains { $0.id == id } }

    // MARK: Inputs

    /// A member joins (it is loading or already playing).
    mutating func join(_ id: PlayerID, at time: ContinuousClock.Instant) -> [Action] {
        guard !has(id) else { return [] }
        let offset = settings.offsets[id]
        members.append(Member(id: id, joinedAt: time, seekLead: settings.seekLead.inSeconds,
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
    private func ownSpeed(_ index: Int) -> Double { speed * members[index].rate }

    /// Makes member `index` play at `effective`: its player's speed (what its app sees) is the
    /// group's (``ownSpeed(_:)``), sent only when that changed (which takes a correction away);
    /// the rest is a correction (``/PlayerKitCore/PlayerCommand/setSpeedCorrection(_:)``), which
    /// publishes no `speedChanged`: the trims a group makes several times a second stay off the
    /// app's speed events (issue 66). ``SyncEvent/corrected(speed:)`` says, with the drift
    /// reports, what the correction is.
    private mutating func play(_ index: Int, at effective: Double) -> [Action] {
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

    /// Sets the offset of member `id`'s timestamps on the group's timeline (nil: none, and its
    /// timestamps are judged again), kept in the settings for members that join later. A
    /// member's skew changes by the difference at once, and it is brought in step as any member
    /// that fell out of step (``SyncEvent/Reason/drift``).
    mutating func setOffset(_ offset: Duration?, for id: PlayerID, at time: ContinuousClock.Instant) -> [Action] {
        settings.offsets[id] = offset
        guard let index = members.firstIndex(where: { $0.id == id }) else { return [] }
        let change = (offset?.inSeconds ?? 0) - members[index].offset
        members[index].offset += change
        members[index].offsetGiven = offset != nil
        members[index].edge = nil
        // Times on the group's timeline move by the change on the member's scale.
        let moved = change / members[index].rate
        members[index].lastFrame = members[index].lastFrame.map { ($0.media + moved, $0.time) }
        members[index].cacheEnd = members[index].cacheEnd.map { $0 + moved }
        members[index].seekableEnd = members[index].seekableEnd.map { $0 + moved }
        members[index].recent = []
        if case .holding(let media) = members[index].status { members[index].status = .holding(media: media + moved) }
        guard abs(moved) > settings.alignedTolerance.inSeconds else { return [] }
        return fellOut(index, reason: .drift, at: time)
    }

    /// The group's timeline time of member `index`'s media time `media`: its offset added, on
    /// its clock's scale (its rate), and its clock's wraps (a wrap is counted when the result
    /// is more than half a wrap from the group's clock).
    private mutating func timeline(_ index: Int, _ media: Double, at time: ContinuousClock.Instant) -> Double {
        var value = (media + members[index].offset) / members[index].rate + Double(members[index].wraps) * Self.timestampWrap
        if let clock = clock(at: time), abs(value - clock) > Self.timestampWrap / 2 {
            let turns = ((clock - value) / Self.timestampWrap).rounded()
            members[index].wraps += Int(turns)
            value += turns * Self.timestampWrap
        }
        return value
    }

    /// Member `index`'s media time of the group's timeline time `value`.
    private func media(_ index: Int, _ value: Double) -> Double {
        (value - Double(members[index].wraps) * Self.timestampWrap) * members[index].rate - members[index].offset
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
        if paused != nil || (external && anchor == nil), state != .buffering { return [] }
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
    private func judgedSkew(_ index: Int, at time: ContinuousClock.Instant) -> Double? {
        // How much the skew grows per second at the member's speed.
        let growth = (members[index].speed / ownSpeed(index) - 1) * speed
        return Statistics.median(members[index].recent.map { $0.skew + growth * time.seconds(since: $0.time) })
    }

    /// A member showed a new frame: media time `media` at `time`.
    mutating func frame(_ id: PlayerID, media raw: Double, at time: ContinuousClock.Instant) -> [Action] {
        guard let index = members.firstIndex(where: { $0.id == id }) else { return [] }
        // A frame shown before an outside clock was last set says nothing about it.
        if external, let anchor, time < anchor.time { return [] }
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
        if anchor == nil, !followsLiveEdge, !external, restartOn == nil || restartOn == id || !has(restartOn!) {
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
        if let previous, media - previous.media > settings.jumpThreshold.inSeconds {
            actions += fellOut(index, reason: external ? .drift : .missingSegment, at: previous.time)
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

    /// The member's player has its source in memory up to its media time `media` (nil:
    /// unknown). Members whose source grows at the pace of time are live, and their edges are
    /// compared: a member whose timestamps are unrelated to the group's is dropped with
    /// ``SyncEvent/DropReason/unrelatedTimestamps(offset:)``.
    /// `seekable`: the media time up to which the player can seek in what it has (nil: unknown).
    mutating func cached(_ id: PlayerID, upTo raw: Double?, seekableTo seekable: Double? = nil,
                         at time: ContinuousClock.Instant) -> [Action] {
        guard let index = members.firstIndex(where: { $0.id == id }) else { return [] }
        guard let raw else {
            members[index].cacheEnd = nil
            members[index].seekableEnd = nil
            return []
        }
        let rate = members[index].rate
        let base = Double(members[index].wraps) * Self.timestampWrap
        var value = (raw + members[index].offset) / rate + base
        var turns = 0.0
        if let clock = clock(at: time), abs(value - clock) > Self.timestampWrap / 2 {
            turns = ((clock - value) / Self.timestampWrap).rounded()
            value += turns * Self.timestampWrap
        }
        members[index].cacheEnd = value
        members[index].seekableEnd = seekable.map { ($0 + members[index].offset) / rate + base + turns * Self.timestampWrap }
        // An outside clock has no live edge: what a member has only limits its seeks.
        if external { return [] }
        let epoch = self.epoch ?? time
        self.epoch = epoch
        let lead = value - time.seconds(since: epoch)
        if case .liveEdge(let latency) = leaderChoice {
            return followLiveEdge(index, lead: lead, latency: latency.inSeconds, at: time)
        }
        guard !members[index].offsetGiven else { return [] }
        // Before the clock runs there is no timeline to put the value on: a member a 33-bit wrap
        // away from the one whose frame starts the clock (fMP4 beside MPEG-TS) would keep an
        // edge 26.5 hours off.
        guard clock(at: time) != nil else { return [] }
        guard var edge = members[index].edge else {
            members[index].edge = LiveEdge(lead: lead, since: time, last: value)
            return []
        }
        let step = value - edge.last
        if step > 0.1, time - edge.since > .seconds(1) {
            edge.largestStep = max(edge.largestStep, step)
            edge.growth.append((value, time))
        }
        edge.lead = max(edge.lead, lead)
        edge.last = value
        members[index].edge = edge
        return judgeTimestamps(at: time)
    }

    /// Whether the clock keeps a latency behind the live edge (``MultiView/Leader/liveEdge(latency:)``)
    /// instead of following a member.
    private var followsLiveEdge: Bool {
        if case .liveEdge = leaderChoice { return true }
        return false
    }

    /// ``MultiView/Leader/liveEdge(latency:)``: the live edge now is the newest media any member's
    /// player has had, right after it arrived (the largest lead of any cache's end against the
    /// monotonic time: members reload their playlists at moments of their own, and the one that
    /// reloaded last is nearest the source). The clock is `latency` behind it: started there,
    /// moved a tenth of the way at each report, and put there at once when further than
    /// ``SyncSettings/realignThreshold`` (the members are then brought there).
    private mutating func followLiveEdge(_ index: Int, lead: Double, latency: Double, at time: ContinuousClock.Instant) -> [Action] {
        if var edge = members[index].edge {
            edge.lead = max(edge.lead, lead)
            members[index].edge = edge
        } else {
            members[index].edge = LiveEdge(lead: lead, since: time, last: lead)
        }
        guard let epoch, let newest = members.compactMap({ $0.edge?.lead }).max() else { return [] }
        let target = newest + time.seconds(since: epoch) - latency
        guard let clock = clock(at: time) else {
            anchor = (target, time)
            return releaseDue(at: time) + wakesForHeld()
        }
        let error = target - clock
        if abs(error) > settings.realignThreshold.inSeconds {
            anchor = (target, time)
        } else if let anchor {
            self.anchor = (anchor.media + error * 0.1, anchor.time)
        }
        return releaseDue(at: time) + wakesForHeld()
    }

    /// Compares the live edges watched long enough with the first such member's (whose
    /// timestamps are the group's): one further apart than
    /// ``SyncSettings/unrelatedTimestampThreshold``, or than a segment and a quarter, has
    /// timestamps unrelated to the group's. It is dropped; the app can give it an offset.
    private func judgeTimestamps(at time: ContinuousClock.Instant) -> [Action] {
        let watched = members.filter { member in
            guard let edge = member.edge, !member.offsetGiven else { return false }
            return time - edge.since >= Self.edgeWatch && edge.isLive
        }
        guard let reference = watched.first, let referenceEdge = reference.edge else { return [] }
        return watched.dropFirst().compactMap { member -> Action? in
            guard let edge = member.edge else { return nil }
            let apart = edge.lead - referenceEdge.lead
            let bound = max(settings.unrelatedTimestampThreshold.inSeconds, 1.25 * max(edge.largestStep, referenceEdge.largestStep))
            guard abs(apart) > bound else { return nil }
            return .drop(member.id, .unrelatedTimestamps(offset: .seconds(apart)))
        }
    }

    /// A seek of the member's landed, showing `media` (nil: unknown; its last frame is kept).
    mutating func seekLanded(_ id: PlayerID, media: Double?, at time: ContinuousClock.Instant) -> [Action] {
        guard let index = members.firstIndex(where: { $0.id == id }),
              case .seeking = members[index].status else { return [] }
        let shown = media.map { timeline(index, $0, at: time) } ?? members[index].lastFrame?.media ?? 0
        return landed(index, media: shown, at: time)
    }

    /// A member's corrective seek landed on `media`: it is held there.
    private mutating func landed(_ index: Int, media: Double, at time: ContinuousClock.Instant) -> [Action] {
        members[index].status = .holding(media: media)
        members[index].lastFrame = nil
        if let clock = clock(at: time), clock > media, !members[index].shortSeek {
            // The clock passed the target while the seek ran: lead more next time.
            members[index].seekLead = min(members[index].seekLead * 2, 4)
        }
        members[index].shortSeek = false
        return releaseDue(at: time) + wakeFor(media)
    }

    /// A wake-up asked for by ``Action/wake(at:)``: releases the held members that are due.
    mutating func wake(at time: ContinuousClock.Instant) -> [Action] {
        for index in members.indices {
            guard case .seeking(_, let since) = members[index].status, time - since >= Self.seekGiveUp else { continue }
            // Not landed: held where it stopped, and released (the clock is past it), to be
            // measured again; the next seek leads further.
            if !members[index].shortSeek { members[index].seekLead = min(members[index].seekLead * 2, 4) }
            members[index].shortSeek = false
            members[index].status = .holding(media: members[index].lastFrame?.media ?? -.infinity)
            members[index].lastFrame = nil
        }
        return releaseDue(at: time) + wakesForHeld()
    }

    /// How far a member behind can seek forward now (nil: as far as it likes): a little inside
    /// the end of its seekable ranges, or, when its player does not tell them, inside the end of
    /// its cache.
    private func seekReach(_ index: Int) -> Double? {
        if let seekable = members[index].seekableEnd { return seekable - Self.seekableMargin }
        return members[index].cacheEnd.map { $0 - Self.cacheMargin }
    }

    /// How far inside the end of a member's seekable ranges a corrective seek lands.
    static let seekableMargin = 0.2

    /// The smallest change of a member's speed a trim sends (0.02%: 0.2 ms a second closed).
    static let smallestSpeedChange = 0.0002

    /// The shortest time between two speed trims of a member (8 frames at 30 fps).
    static let trimInterval: Duration = .milliseconds(250)

    /// A skew beyond this (a member that joined 30 ms off, two files started a few
    /// milliseconds apart) is trimmed to close the part beyond it within ``catchUpTime``, on top
    /// of the trim gain's pace: at the gain alone (a 1 s time constant) a join 30 ms off was
    /// over 2 ms for 1.5 s, and two files started 6 ms apart were over a millisecond for a
    /// second (Performance.md).
    static let catchUpBeyond = 0.001
    /// How soon the part of a skew beyond ``catchUpBeyond`` is closed: two trim intervals. In
    /// one, the trims overshot: a skew is the median of five frames, 80 ms behind the member.
    static let catchUpTime = 0.5

    /// The shortest lead of a corrective seek ahead of the clock (a seek lands in about 0.1 to
    /// 0.2 s): when a member cannot seek that far yet, it plays on until it can.
    static let shortestLead = 0.25

    /// How far inside a member's cache a corrective seek must land (a second of media: mpv
    /// keeps whole packets, and the cache's end moves with each one).
    static let cacheMargin = 0.5

    /// How far short of a held member's frame the clock may be at the wake-up asked for it and
    /// still release it (1 us): the wake-up's instant is computed from the frame's media time, and
    /// rounding can leave the clock a hair short there, which asked for the same wake-up again,
    /// at once, for ever (on a manual clock, whose time does not move by itself).
    static let instantTolerance = 1e-6

    /// How long a corrective seek may take to land before it is given up on.
    static let seekGiveUp: Duration = .milliseconds(1500)

    /// Pauses the group: the clock stops where it is, and every member is paused where it is
    /// (a member that joins meanwhile, at its first frame). Nothing is measured or corrected
    /// until ``resume(from:at:)``. Pausing a paused group does nothing.
    mutating func pause(at time: ContinuousClock.Instant) -> [Action] {
        guard paused == nil else { return [] }
        paused = (clock(at: time), time)
        pausedMembers = Set(members.map(\.id))
        return members.map { .send($0.id, .pause) }
    }

    /// Every member loads a new item, and the group starts them together: the clock is
    /// forgotten, and the group is paused before it starts (each member is told to pause, and
    /// stays on its first frame), until ``resume(from:at:)`` plays every member at once and the
    /// clock starts on the first frame any of them shows. What the machine knew of each member's
    /// item (its frames, skews, cache and live edge) is forgotten with it, and each member joins
    /// afresh: ``SyncEvent/aligned(after:)`` counts from here.
    mutating func startAgain(at time: ContinuousClock.Instant) -> [Action] {
        anchor = nil
        leader = nil
        restartOn = nil
        paused = (nil, time)
        pausedMembers = Set(members.map(\.id))
        for index in members.indices {
            members[index].status = .waiting
            members[index].joinedAt = time
            members[index].alignedAt = nil
            members[index].fell = nil
            members[index].recent = []
            members[index].settling = 0
            members[index].measuresStart = false
            members[index].lastFrame = nil
            members[index].lastTrim = nil
            members[index].inStep = 0
            members[index].cacheEnd = nil
            members[index].seekableEnd = nil
            members[index].pausedByGroupWhenStalled = false
            members[index].shortSeek = false
            members[index].wraps = 0
            members[index].edge = nil
            members[index].meter = SkewMeter(window: settings.skewWindow)
        }
        return members.map { .send($0.id, .pause) }
    }

    /// Resumes a paused group from `point`:
    /// - ``MultiView/ResumePoint/wherePaused``: the clock runs on from where it stopped, and each
    ///   member is held on the frame it showed and released as the clock reaches it (all at
    ///   once: they paused in step);
    /// - ``MultiView/ResumePoint/liveEdge``: the clock goes where it would be had the group not
    ///   paused (as far behind the live edge as it was), and each member is seeked there and
    ///   held until the clock reaches it, as a member behind is.
    /// A member that stalled is brought to where the clock will be either way; one whose seek
    /// is under way is held where it lands. Resuming a group that is not paused does nothing.
    mutating func resume(from point: MultiView.ResumePoint, at time: ContinuousClock.Instant) -> [Action] {
        guard let paused else { return [] }
        self.paused = nil
        pausedMembers = []
        var actions: [Action] = []
        guard let media = paused.media else {
            // Paused before the clock started: the members play, and the clock starts on the
            // first frame.
            for index in members.indices where members[index].status != .stalled {
                members[index].status = .waiting
                actions.append(.send(members[index].id, .play))
            }
            return actions
        }
        switch point {
        case .wherePaused: anchor = (media, time)
        case .liveEdge: anchor = (media + time.seconds(since: paused.time) * speed, time)
        }
        for index in members.indices {
            members[index].recent = []
            members[index].inStep = 0
            switch (point, members[index].status) {
            case (_, .seeking), (.wherePaused, .holding):
                continue
            case (_, .stalled), (.liveEdge, _):
                members[index].pausedByGroupWhenStalled = false
                actions += seekAhead(index, at: time)
            case (.wherePaused, .playing), (.wherePaused, .waiting):
                if let last = members[index].lastFrame {
                    members[index].status = .holding(media: last.media)
                    members[index].lastFrame = nil
                } else {
                    members[index].status = .waiting
                    actions.append(.send(members[index].id, .play))
                }
            }
        }
        return actions + releaseDue(at: time) + wakesForHeld()
    }

    /// Whether the group is paused.
    var isPaused: Bool { paused != nil }

    /// Changes the group's speed (the clock keeps its place).
    mutating func setSpeed(_ newSpeed: Double, at time: ContinuousClock.Instant) -> [Action] {
        if let clock = clock(at: time) { anchor = (clock, time) }
        speed = newSpeed
        var actions: [Action] = []
        for index in members.indices where members[index].status == .playing {
            members[index].recent = []
            actions += play(index, at: ownSpeed(index))
        }
        return actions + wakesForHeld()
    }

    // MARK: Decisions

    /// Whether the member at `index`, `skew` from the clock, takes the clock: the chosen leader
    /// far from it (it joined after another started the clock), or, with the furthest-ahead
    /// rule, a joining member far ahead.
    private func takesTheLead(_ index: Int, skew: Double) -> Bool {
        guard !external, abs(skew) > settings.realignThreshold.inSeconds, members[index].status == .playing else { return false }
        switch leaderChoice {
        case .member(let id):
            return id == members[index].id && members[index].fell == nil
        case .liveEdge:
            return false
        case .furthestAhead:
            return skew > 0 && members[index].alignedAt == nil && members[index].fell?.reason != .missingSegment
        }
    }

    private mutating func correct(_ index: Int, skew: Double, media: Double, leads: Bool, at time: ContinuousClock.Instant) -> [Action] {
        let id = members[index].id
        var actions: [Action] = []
        if !leads {
            // Out of step: ahead beyond the hold threshold, behind beyond the realign threshold,
            // or, while it joins (nothing is seen to stop yet), behind beyond the hold threshold,
            // which a trim would take seconds to close. The member pauses and seeks exactly to
            // where the clock will be once the seek landed (its own frame when that is later),
            // and is held there. A seek, not a pause alone: after a stall or a join, mpv may be
            // catching its video up with its audio (frames shown faster than due), and a pause
            // keeps that; an exact seek starts both afresh at one timestamp.
            // (With an outside clock a member does not join late: it was started with the others,
            // and a start a little late is trimmed.)
            let joining = members[index].alignedAt == nil && !external
            if !settings.correctsSkew {
                // Measured only.
            } else if skew > settings.holdThreshold.inSeconds || skew < -settings.realignThreshold.inSeconds
                || (joining && skew < -settings.holdThreshold.inSeconds) {
                // Once in step, only missing media makes a member ahead (mpv never plays faster
                // than due, and trims are small); behind, it stalled (already noted) or drifted.
                actions += fellOut(index, reason: skew > 0 && !external ? .missingSegment : .drift, at: time)
                members[index].recent = []
                members[index].inStep = 0
                return actions + seekToClock(index, skew: skew, media: media, at: time)
            } else {
                actions += trim(index, skew: skew, at: time)
            }
        }
        // In step: aligned (first time) or realigned (after falling out).
        members[index].inStep = abs(skew) <= settings.alignedTolerance.inSeconds ? members[index].inStep + 1 : 0
        if members[index].inStep == 3 {
            if members[index].alignedAt == nil {
                members[index].alignedAt = time
                members[index].fell = nil
                actions.append(.publish(id, .aligned(after: time - members[index].joinedAt)))
            } else if let fell = members[index].fell {
                members[index].fell = nil
                actions.append(.publish(id, .realigned(after: time - fell.at, reason: fell.reason)))
            }
        }
        return actions
    }

    /// Trims member `index`'s speed toward the clock: `group speed × (1 − skew × trimGain)`,
    /// less what closes the skew beyond ``catchUpBeyond`` within ``catchUpTime``, at most ``SyncSettings/maximumSpeedTrim`` off, none within the dead band, at most
    /// once per ``trimInterval``.
    private mutating func trim(_ index: Int, skew: Double, at time: ContinuousClock.Instant) -> [Action] {
        let own = ownSpeed(index)
        var wanted = own
        if abs(skew) > settings.deadBand.inSeconds {
            let excess = max(0, abs(skew) - Self.catchUpBeyond) * (skew < 0 ? -1 : 1)
            let trim = max(-settings.maximumSpeedTrim, min(settings.maximumSpeedTrim, -skew * settings.trimGain - excess / Self.catchUpTime))
            wanted = own * (1 + trim)
        }
        let range = PlayerCommand.speedRange
        wanted = min(range.upperBound, max(range.lowerBound, wanted))
        // At most one change per trim interval: each is a command, its reply and a speed
        // event through the member's player, and the skew's median moves a little with
        // every frame.
        let due = members[index].lastTrim.map { time - $0 >= Self.trimInterval } ?? true
        if due, abs(wanted - members[index].speed) > Self.smallestSpeedChange || (wanted == own && members[index].speed != own) {
            members[index].lastTrim = time
            return play(index, at: wanted)
        }
        return []
    }

    /// Pauses member `index`, `skew` from the clock and showing `media`, and seeks it exactly:
    /// ahead, to its own frame, which it certainly has (the clock's place may be in the hole a
    /// missing segment left); behind, to where the clock will be once the seek landed. It is
    /// held where it lands. No actions when it cannot seek there yet (it plays on), unless
    /// `beyondReach`: then it seeks there all the same (a paused member, which no frame of its
    /// own will move).
    private mutating func seekToClock(_ index: Int, skew: Double, media: Double, at time: ContinuousClock.Instant,
                                      beyondReach: Bool = false) -> [Action] {
        let id = members[index].id
        // Ahead, to its own frame (the clock's place may be in a hole); with an outside clock,
        // one far ahead goes to the clock (on demand there is no hole, and holding it until the
        // clock got there would freeze it that long).
        let toOwnFrame = skew > 0 && !(external && skew > settings.realignThreshold.inSeconds)
        var target = toOwnFrame ? media : (clock(at: time) ?? media) + members[index].seekLead * speed
        var short = false
        if !toOwnFrame, let reach = seekReach(index), target > reach {
            // Not in what it can seek yet: a live stream cannot seek there. As far as it can,
            // when that is still ahead of where the clock will be once the seek landed (a
            // shorter lead); else it plays on (and downloads) until the data is there.
            if reach > (clock(at: time) ?? media) + Self.shortestLead * speed {
                target = reach
                short = true
            } else if !beyondReach {
                return []
            }
        }
        members[index].shortSeek = short
        members[index].status = .seeking(target: target, since: time)
        var actions: [Action] = [.send(id, .pause)]
        if members[index].speed != ownSpeed(index) {
            // The group's speed now, before the seek: mpv drops the audio it decoded when the
            // speed changes, and a change at the release made the member start a frame late
            // (its video waits for the audio it decodes again).
            actions += play(index, at: ownSpeed(index))
        }
        correctiveSeeks += 1
        actions.append(.send(id, .seek(to: max(0, self.media(index, target)), precision: .exact)))
        // mpv may refuse a seek outside what it has (a live stream seeks within its cache only;
        // a missing segment is a hole in it) without failing the command: given up on if it has
        // not landed by then.
        actions.append(.wake(at: time + Self.seekGiveUp))
        return actions
    }

    private mutating func fellOut(_ index: Int, reason: SyncEvent.Reason, at time: ContinuousClock.Instant) -> [Action] {
        members[index].inStep = 0
        guard members[index].fell == nil else { return [] }
        members[index].fell = (time, reason)
        // Before it was first aligned, a member is still joining: no fall to report.
        guard members[index].alignedAt != nil else { return [] }
        return [.publish(members[index].id, .fellBehind(reason))]
    }

    /// Pauses member `index` and seeks it exactly to where the clock will be
    /// ``Settings/seekLead`` later (within what it can seek), to be held there: as ``correct``
    /// does for a member behind. Before the clock runs, it just plays.
    private mutating func seekAhead(_ index: Int, at time: ContinuousClock.Instant) -> [Action] {
        let id = members[index].id
        members[index].recent = []
        members[index].inStep = 0
        guard let clock = clock(at: time) else {
            members[index].status = .waiting
            return [.send(id, .play)]
        }
        return seekToClock(index, skew: -.infinity, media: clock, at: time, beyondReach: true)
    }

    /// Plays the held members whose frame the clock has reached.
    private mutating func releaseDue(at time: ContinuousClock.Instant) -> [Action] {
        guard paused == nil, let clock = clock(at: time) else { return [] }
        var actions: [Action] = []
        for index in members.indices {
            guard case .holding(let media) = members[index].status,
                  clock + startLatency * speed + Self.instantTolerance >= media else { continue }
            members[index].status = .playing
            members[index].settling = 2
            members[index].measuresStart = true
            members[index].recent = []
            if members[index].speed != ownSpeed(index) {
                // The group's speed changed while it was held (it got the speed with its seek).
                actions += play(index, at: ownSpeed(index))
            }
            actions.append(.send(members[index].id, .play))
        }
        return actions
    }

    /// A wake-up for each held member (after the clock moved, or a wake-up came early).
    private func wakesForHeld() -> [Action] {
        var actions: [Action] = []
        for index in members.indices {
            guard case .holding(let media) = members[index].status else { continue }
            actions += wakeFor(media)
        }
        return actions
    }

    private func wakeFor(_ media: Double) -> [Action] {
        guard let instant = instant(whenClockReaches: media) else { return [] }
        return [.wake(at: instant - .seconds(startLatency))]
    }
}

/// Skew figures of one member over a sliding window of time: each frame change adds one.
struct SkewMeter: Sendable {
    let window: Duration
    private var samples = Deque<(skew: Double, time: ContinuousClock.Instant)>()
    private(set) var latest: Double?

    init(window: Duration) {
        self.window = window
    }

    mutating func add(_ skew: Double, at time: ContinuousClock.Instant) {
        latest = skew
        samples.append((skew, time))
        while let first = samples.first, time - first.time > window { samples.removeFirst() }
    }

    /// The figures now: the latest skew and the percentiles of the absolute skews in the window.
    var figures: MemberSkew? {
        guard let latest else { return nil }
        let magnitudes = samples.map { abs($0.skew) }
        return MemberSkew(
            current: latest,
            p50: Statistics.percentile(0.5, of: magnitudes) ?? 0,
            p95: Statistics.percentile(0.95, of: magnitudes) ?? 0,
            p99: Statistics.percentile(0.99, of: magnitudes) ?? 0,
            samples: magnitudes.count)
    }
}

