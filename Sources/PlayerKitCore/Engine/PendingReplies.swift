/// Requests sent to mpv whose answer has not come, by reply ID: one of the engine's sub-machines,
/// pure, with one job. An answer takes its request (once); when mpv's event queue overflows, every
/// answer due then may be lost, and the requests still unanswered once the state has been re-read
/// are taken as lost, so nothing waits for them for ever. `Entry` is opaque to it (what the engine
/// resumes or reports), never called here.
struct PendingReplies<Entry: Sendable>: Sendable {
    private var pending: [UInt64: Entry] = [:]
    /// Requests whose answer was due when mpv's event queue overflowed.
    private var lostCandidates: Set<UInt64> = []

    /// Whether no request is pending.
    var isEmpty: Bool { pending.isEmpty }

    /// `entry` was sent with `replyID`.
    mutating func add(_ entry: Entry, replyID: UInt64) {
        pending[replyID] = entry
    }

    /// The answer to `replyID` came (or the request was withdrawn): its entry, taken; nil when no
    /// pending request has that ID.
    mutating func take(_ replyID: UInt64) -> Entry? {
        pending.removeValue(forKey: replyID)
    }

    /// mpv's event queue overflowed: every answer due now may be lost.
    mutating func overflowed() {
        lostCandidates.formUnion(pending.keys)
    }

    /// The state was re-read after an overflow: the requests due then and still unanswered lost
    /// their answers. Taken, in the order they were sent.
    mutating func takeLost() -> [Entry] {
        defer { lostCandidates = [] }
        return lostCandidates.sorted().compactMap { pending.removeValue(forKey: $0) }
    }

    /// Every pending request, taken (the player shuts down).
    mutating func takeAll() -> [Entry] {
        defer {
            pending = [:]
            lostCandidates = []
        }
        return pending.keys.sorted().compactMap { pending[$0] }
    }
}
