import DequeModule
import PlayerKitCore
import PlayerKitSupport

// The decisions: who leads, how a member is corrected (trimmed, seeked, held on its frame),
// when it fell out of step and when it is released.
extension SyncMachine {
    // MARK: Decisions

    /// Whether the member at `index`, `skew` from the clock, takes the clock: the chosen leader
    /// far from it (it joined after another started the clock), or, with the furthest-ahead
    /// rule, a joining member far ahead.
    func takesTheLead(_ index: Int, skew: Double) -> Bool {
        guard abs(skew) > settings.realignThreshold.inSeconds, members[index].status == .playing else { return false }
        switch clockSource {
        case .member(let id):
            return id == members[index].id && members[index].fell == nil
        case .liveEdge, .set:
            return false
        case .furthestAhead:
            return skew > 0 && members[index].alignedAt == nil && members[index].fell?.reason != .missingSegment
        }
    }

    mutating func correct(_ index: Int, skew: Double, media: Double, leads: Bool, at time: ContinuousClock.Instant) -> [Action] {
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
            let joining = members[index].alignedAt == nil && !clockSource.isSet
            if !settings.correctsSkew {
                // Measured only.
            } else if skew > settings.holdThreshold.inSeconds || skew < -settings.realignThreshold.inSeconds
                || (joining && skew < -settings.holdThreshold.inSeconds) {
                // Once in step, only missing media makes a member ahead (mpv never plays faster
                // than due, and trims are small); behind, it stalled (already noted) or drifted.
                actions += fellOut(index, reason: skew > 0 ? clockSource.gapReason : .drift, at: time)
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
    mutating func trim(_ index: Int, skew: Double, at time: ContinuousClock.Instant) -> [Action] {
        let own = ownSpeed(index)
        var wanted = own
        if abs(skew) > settings.tuning.deadBand.inSeconds {
            let excess = max(0, abs(skew) - Self.catchUpBeyond) * (skew < 0 ? -1 : 1)
            let trim = max(-settings.maximumSpeedTrim, min(settings.maximumSpeedTrim, -skew * settings.tuning.trimGain - excess / Self.catchUpTime))
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
    /// held where it lands. No actions when it cannot seek there yet: a seek past the end of
    /// its seekable ranges is never sent (mpv refuses it without an error, and the member waited
    /// for the give-up); it plays on, and is judged again at each frame and each buffer report
    /// (``seekOnReach(_:at:)``).
    mutating func seekToClock(_ index: Int, skew: Double, media: Double, at time: ContinuousClock.Instant) -> [Action] {
        let id = members[index].id
        // Ahead, to its own frame (the clock's place may be in a hole); with an outside clock,
        // one far ahead goes to the clock (on demand there is no hole, and holding it until the
        // clock got there would freeze it that long).
        let toOwnFrame = skew > 0 && !(clockSource.isSet && skew > settings.realignThreshold.inSeconds)
        var target = toOwnFrame ? media : (clock(at: time) ?? media) + members[index].seekLead * speed
        var short = false
        if toOwnFrame, let reach = seekReach(index), target > reach {
            // Its own frame is past what it can seek (a live angle playing its last segment):
            // back to as far as it can, when that is still ahead of the clock; else held on
            // its frame without a seek.
            if reach > (clock(at: time) ?? media) + Self.shortestLead * speed {
                target = reach
            } else {
                members[index].status = .holding(media: media)
                members[index].lastFrame = nil
                return [.send(id, .pause)] + wakeFor(media)
            }
        }
        if !toOwnFrame, let reach = seekReach(index), target > reach {
            // Not in what it can seek yet: a live stream cannot seek there. As far as it can,
            // when that is still ahead of where the clock will be once the seek landed (a
            // shorter lead); else it plays on (and downloads) until the data is there.
            guard reach > (clock(at: time) ?? media) + Self.shortestLead * speed else { return [] }
            target = reach
            short = true
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

    mutating func fellOut(_ index: Int, reason: SyncEvent.Reason, at time: ContinuousClock.Instant) -> [Action] {
        members[index].inStep = 0
        guard members[index].fell == nil else { return [] }
        members[index].fell = (time, reason)
        // Before it was first aligned, a member is still joining: no fall to report.
        guard members[index].alignedAt != nil else { return [] }
        return [.publish(members[index].id, .fellBehind(reason))]
    }

    /// Pauses member `index` and seeks it exactly to where the clock will be
    /// ``SyncTuning/seekLead`` later (within what it can seek), to be held there: as ``correct``
    /// does for a member behind. Before the clock runs, or while what it can seek ends short of
    /// the clock, it plays (a paused member, which no frame of its own would move; it is seeked
    /// at the frame or buffer report that brings the clock within its reach).
    mutating func seekAhead(_ index: Int, at time: ContinuousClock.Instant) -> [Action] {
        let id = members[index].id
        members[index].recent = []
        members[index].inStep = 0
        guard let clock = clock(at: time) else {
            members[index].status = .waiting
            return [.send(id, .play)]
        }
        let seek = seekToClock(index, skew: -.infinity, media: clock, at: time)
        guard seek.isEmpty else { return seek }
        members[index].status = .playing
        members[index].settling = 2
        var actions: [Action] = []
        if members[index].speed != ownSpeed(index) { actions += play(index, at: ownSpeed(index)) }
        return actions + [.send(id, .play)]
    }

    /// A member playing on behind the clock beyond ``SyncSettings/realignThreshold`` (it could not
    /// seek there yet: a live stream whose data came back after a stall) is seeked as soon as a
    /// buffer report brings the clock within its reach, not at its next frame only: where it is
    /// now is its last frame carried forward at its speed.
    mutating func seekOnReach(_ index: Int, at time: ContinuousClock.Instant) -> [Action] {
        guard paused == nil, settings.correctsSkew, members[index].status == .playing,
              let last = members[index].lastFrame, let clock = clock(at: time) else { return [] }
        let media = last.media + time.seconds(since: last.time) * members[index].speed
        let skew = media - clock
        guard skew < -settings.realignThreshold.inSeconds else { return [] }
        let actions = seekToClock(index, skew: skew, media: media, at: time)
        if !actions.isEmpty {
            members[index].recent = []
            members[index].inStep = 0
        }
        return actions
    }

    /// Plays the held members whose frame the clock has reached.
    mutating func releaseDue(at time: ContinuousClock.Instant) -> [Action] {
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
    func wakesForHeld() -> [Action] {
        var actions: [Action] = []
        for index in members.indices {
            guard case .holding(let media) = members[index].status else { continue }
            actions += wakeFor(media)
        }
        return actions
    }

    func wakeFor(_ media: Double) -> [Action] {
        guard let instant = instant(whenClockReaches: media) else { return [] }
        return [.wake(at: instant - .seconds(startLatency))]
    }
}
