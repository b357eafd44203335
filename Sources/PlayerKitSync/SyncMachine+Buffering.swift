import DequeModule
import PlayerKitCore
import PlayerKitSupport

// What members report of their buffers and seeks: the cache and seekable ends, the live edge
// followed, timestamps judged, landings, and the wake-ups the machine asked for.
extension SyncMachine {
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
        var value = (raw - members[index].offset) / rate + base
        var turns = 0.0
        if let clock = clock(at: time), abs(value - clock) > Self.timestampWrap / 2 {
            turns = ((clock - value) / Self.timestampWrap).rounded()
            value += turns * Self.timestampWrap
        }
        members[index].cacheEnd = value
        members[index].seekableEnd = seekable.map { ($0 - members[index].offset) / rate + base + turns * Self.timestampWrap }
        // A member behind that waits for this data is put back now.
        let reached = seekOnReach(index, at: time)
        // An outside clock has no live edge: what a member has only limits its seeks.
        if clockSource.isSet { return reached }
        let epoch = self.epoch ?? time
        self.epoch = epoch
        let lead = value - time.seconds(since: epoch)
        if case .liveEdge(let latency) = clockSource {
            return reached + followLiveEdge(index, lead: lead, latency: latency.inSeconds, at: time)
        }
        guard !members[index].offsetGiven else { return reached }
        // Before the clock runs there is no timeline to put the value on: a member a 33-bit wrap
        // away from the one whose frame starts the clock (fMP4 beside MPEG-TS) would keep an
        // edge 26.5 hours off.
        guard clock(at: time) != nil else { return reached }
        guard var edge = members[index].edge else {
            members[index].edge = LiveEdge(lead: lead, since: time, last: value)
            return reached
        }
        let step = value - edge.last
        if step > 0.1, time - edge.since > .seconds(1) {
            edge.largestStep = max(edge.largestStep, step)
            edge.growth.append((value, time))
        }
        edge.lead = max(edge.lead, lead)
        edge.last = value
        members[index].edge = edge
        return reached + judgeTimestamps(at: time)
    }

    /// Whether the clock keeps a latency behind the live edge (``SyncClock/liveEdge(latency:)``)
    /// instead of following a member.
    var followsLiveEdge: Bool { clockSource.followsLiveEdge }

    /// ``SyncClock/liveEdge(latency:)``: the live edge now is the newest media any member's
    /// player has had, right after it arrived (the largest lead of any cache's end against the
    /// monotonic time: members reload their playlists at moments of their own, and the one that
    /// reloaded last is nearest the source). The clock is `latency` behind it: started there,
    /// moved a tenth of the way at each report, and put there at once when further than
    /// ``SyncSettings/realignThreshold`` (the members are then brought there).
    mutating func followLiveEdge(_ index: Int, lead: Double, latency: Double, at time: ContinuousClock.Instant) -> [Action] {
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
    func judgeTimestamps(at time: ContinuousClock.Instant) -> [Action] {
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
    mutating func landed(_ index: Int, media: Double, at time: ContinuousClock.Instant) -> [Action] {
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
    func seekReach(_ index: Int) -> Double? {
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
}
