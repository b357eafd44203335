import PlayerKitCore

/// Where a sync machine's clock comes from: a value the machine is made with, not a mode
/// (``SyncMachine``). Every way PlayerKit keeps players together is one of these.
enum SyncClock: Sendable, Hashable {
    /// The machine's owner sets it (``SyncMachine/setClock(_:speed:speedsGiven:at:)``): a ``SyncGroup``'s
    /// transport (play, pause, seek, speed, frame steps), a Syncplay room's clock, an app's
    /// (``ClockFollower``). No member leads and no frame moves it; while the owner has stopped it,
    /// nothing is measured or corrected.
    case set
    /// Live, on the members' own timestamps: the member furthest ahead when it joined leads.
    case furthestAhead
    /// Live: this member leads.
    case member(PlayerID)
    /// Live: no member leads; the clock keeps `latency` behind the newest media any member has.
    case liveEdge(latency: Duration)

    /// The machine's clock for a multi-view's leader rule.
    init(_ leader: MultiView.Leader) {
        switch leader {
        case .furthestAhead: self = .furthestAhead
        case .member(let id): self = .member(id)
        case .liveEdge(let latency): self = .liveEdge(latency: latency)
        }
    }

    /// Whether the owner sets the clock (``set``), rather than members' frames or their live edge.
    var isSet: Bool { self == .set }

    /// What a member found ahead of the clock, or jumping forward, has: on a live clock it skipped
    /// a missing segment (the hole is in the media); on a set clock it drifted (on demand there is
    /// no hole to fall into).
    var gapReason: SyncEvent.Reason { isSet ? .drift : .missingSegment }

    /// Whether the clock keeps a latency behind the live edge instead of following a member.
    var followsLiveEdge: Bool {
        if case .liveEdge = self { return true }
        return false
    }

    /// Whether a member's first frame starts the clock (a live clock with a leader).
    var startsOnFrames: Bool {
        switch self {
        case .furthestAhead, .member: true
        case .set, .liveEdge: false
        }
    }
}

/// Where a paused group's clock goes when it resumes (``SyncMachine/resume(from:at:)``).
enum ResumeTarget: Sendable, Hashable {
    /// On from where it stopped: each member is held on the frame it showed.
    case wherePaused
    /// Where it would be had the group not paused (as far behind the live edge as it was).
    case liveEdge

    /// The machine's target for a multi-view's resume point.
    init(_ point: MultiView.ResumePoint) {
        switch point {
        case .wherePaused: self = .wherePaused
        case .liveEdge: self = .liveEdge
        }
    }
}
