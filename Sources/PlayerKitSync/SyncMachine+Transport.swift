import DequeModule
import PlayerKitCore
import PlayerKitSupport

// The group's transport: pause, start again, resume from a point, speed.
extension SyncMachine {
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
    /// - ``ResumeTarget/wherePaused``: the clock runs on from where it stopped, and each
    ///   member is held on the frame it showed and released as the clock reaches it (all at
    ///   once: they paused in step);
    /// - ``ResumeTarget/liveEdge``: the clock goes where it would be had the group not
    ///   paused (as far behind the live edge as it was), and each member is seeked there and
    ///   held until the clock reaches it, as a member behind is.
    /// A member that stalled is brought to where the clock will be either way; one whose seek
    /// is under way is held where it lands. Resuming a group that is not paused does nothing.
    mutating func resume(from point: ResumeTarget, at time: ContinuousClock.Instant) -> [Action] {
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
}
