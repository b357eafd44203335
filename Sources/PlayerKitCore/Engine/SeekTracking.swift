/// Where the player's seeks are on their way to the screen: one of `PlaybackModel`'s
/// sub-machines, pure, with one job. It answers two questions: is a seek under way (so a polled
/// position is not announced as playback moving, and an end of file is not judged truncated),
/// and when has an awaited seek landed (so `await seek(to:)` returns once the player shows the
/// new position).
///
/// mpv answers a `seek` command when it queued the seek; the playloop carries it out later
/// (`MPV_EVENT_SEEK`), and the first frame after it is shown at `MPV_EVENT_PLAYBACK_RESTART`.
/// The pump reads the answer and the events in mpv's order, so a SEEK read after the answer
/// carries this seek (mpv merges seeks queued together), and a restart read before that SEEK
/// belongs to an earlier one. After the restart, one read of `time-pos` says where it landed.
///
/// It returns tickets, not outputs: the composer (`PlaybackModel`) resolves them at the
/// position it holds.
struct SeekTracking: Sendable {
    /// Where an awaited seek is.
    enum Stage: Sendable, Equatable {
        /// Answered, not yet carried out.
        case queued
        /// Carried out (SEEK seen), its frame not yet shown.
        case executing
        /// Shown (restart seen); completes with the answer to the landing read.
        case landing
    }

    /// mpv carried out a seek whose frame is not shown yet.
    private(set) var isExecuting = false
    /// The read of `time-pos` that completes the current seek, while in flight.
    private(set) var landingRead: UInt64?
    /// The awaited seeks, by ticket, in the order they were answered.
    private(set) var tickets: [(ticket: UInt64, stage: Stage)] = []

    /// A seek is under way: carried out and not shown, or shown and its position not read yet.
    var isSettling: Bool { isExecuting || landingRead != nil }

    /// mpv accepted a seek whose caller waits until it lands.
    mutating func await(ticket: UInt64) {
        tickets.append((ticket, .queued))
    }

    /// mpv carried out the queued seeks (`MPV_EVENT_SEEK`).
    mutating func seekExecuted() {
        isExecuting = true
        for index in tickets.indices where tickets[index].stage == .queued {
            tickets[index].stage = .executing
        }
    }

    /// The first frame after a seek was shown (`MPV_EVENT_PLAYBACK_RESTART`). When a seek was
    /// executing, returns true: the composer reads `time-pos` with `request` (recorded here as
    /// the landing read), and the seeks carried out so far wait for that answer.
    mutating func restarted(readWith request: UInt64) -> Bool {
        guard isExecuting else { return false }
        isExecuting = false
        landingRead = request
        // Seeks landing on an earlier read's answer now wait for this one, newer.
        for index in tickets.indices where tickets[index].stage == .executing {
            tickets[index].stage = .landing
        }
        return true
    }

    /// The answer to read `replyID`: when it is the landing read, returns the tickets that
    /// landed with it (the caller reports `seekCompleted` and resolves them); nil otherwise.
    mutating func answered(_ replyID: UInt64) -> [UInt64]? {
        guard replyID == landingRead else { return nil }
        landingRead = nil
        return resolve(at: [.landing])
    }

    /// The current item ended or a new one started: no seek is under way any more. Returns the
    /// tickets still waiting (they return at once: a seek past the end ends the item).
    mutating func itemEnded() -> [UInt64] {
        isExecuting = false
        return resolve()
    }

    /// A new item started: also the landing read in flight is about the old one.
    mutating func itemStarted() -> [UInt64] {
        landingRead = nil
        return itemEnded()
    }

    /// The landing read `request` was lost with mpv's overflowed queue: forget it.
    mutating func forgetLost(_ request: UInt64?) {
        if let request, request == landingRead { landingRead = nil }
    }

    /// Removes and returns the tickets at `stages` (all when nil), in order.
    mutating func resolve(at stages: Set<Stage>? = nil) -> [UInt64] {
        var resolved: [UInt64] = []
        tickets.removeAll { entry in
            guard stages?.contains(entry.stage) ?? true else { return false }
            resolved.append(entry.ticket)
            return true
        }
        return resolved
    }
}
