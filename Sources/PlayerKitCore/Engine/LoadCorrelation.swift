/// Which load waits for what: one of the engine's sub-machines, pure, with one job. A load waits
/// first for mpv's answer to its `loadfile` (by reply ID), then for the playlist entry that answer
/// names (by entry ID), which may move on (a playlist file puts its entries in its place). When
/// mpv's event queue overflows, the loads whose answer was due may have lost it: they are found
/// again in the re-read playlist by file name, or fail. The waiters are opaque to it: `Waiter` is
/// what the engine resumes (its continuation), never called here.
struct LoadCorrelation<Waiter: Sendable>: Sendable {
    /// Loads whose `loadfile` answer has not come, by reply ID.
    private var byReply: [UInt64: Waiter] = [:]
    /// Loads whose entry has not loaded or failed yet, by entry ID.
    private var byEntry: [Int64: Waiter] = [:]
    /// Counts loads, so a cancelled load can tell whether a later one replaced it.
    private(set) var loadCount: UInt64 = 0
    /// Loads whose answer was due when mpv's event queue overflowed.
    private var lostCandidates: Set<UInt64> = []

    /// A new load begins: its number (``isLatest(_:)`` tells whether a later one came).
    mutating func begin() -> UInt64 {
        loadCount += 1
        return loadCount
    }

    /// Whether load `number` is the latest.
    func isLatest(_ number: UInt64) -> Bool { loadCount == number }

    /// Load `waiter`'s `loadfile` was sent with `replyID`.
    mutating func sent(_ waiter: Waiter, replyID: UInt64) {
        byReply[replyID] = waiter
    }

    /// The `loadfile` with `replyID` was never handed over (or mpv refused it): its waiter, taken.
    mutating func unsent(replyID: UInt64) -> Waiter? {
        byReply.removeValue(forKey: replyID)
    }

    /// mpv answered `replyID`: with the entry it made, or nil when it refused. Returns the load's
    /// waiter (nil when `replyID` was no load's), which now waits for that entry if there is one.
    mutating func answered(replyID: UInt64, entry: Int64?) -> Waiter? {
        guard let waiter = byReply.removeValue(forKey: replyID) else { return nil }
        if let entry { byEntry[entry] = waiter }
        return waiter
    }

    /// Entry `entry` loaded or failed: the waiter of the load that waited for it, taken.
    mutating func resolved(entry: Int64) -> Waiter? {
        byEntry.removeValue(forKey: entry)
    }

    /// The load waiting for entry `from` waits for entry `to` instead.
    mutating func redirected(from: Int64, to: Int64) {
        if let waiter = byEntry.removeValue(forKey: from) { byEntry[to] = waiter }
    }

    /// mpv's event queue overflowed: every answer due now may be lost.
    mutating func overflowed() {
        lostCandidates.formUnion(byReply.keys)
    }

    /// The state was re-read after an overflow: `entries` is mpv's playlist now (each entry's file
    /// name and ID). A load whose answer is still missing waits for the newest entry of its file
    /// name (`name(of:)` says it), or has lost its item. Returns each such load with its entry, or
    /// nil for a lost one, in the order the loads were sent.
    mutating func recover(entries: [(name: String, id: Int64)], name: (Waiter) -> String) -> [(waiter: Waiter, entry: Int64?)] {
        defer { lostCandidates = [] }
        var found: [(waiter: Waiter, entry: Int64?)] = []
        for replyID in lostCandidates.sorted() {
            guard let waiter = byReply.removeValue(forKey: replyID) else { continue }
            let entry = entries.filter { $0.name == name(waiter) }.map(\.id).max()
            if let entry { byEntry[entry] = waiter }
            found.append((waiter, entry))
        }
        return found
    }

    /// Every waiting load, taken (the player shuts down).
    mutating func takeAll() -> [Waiter] {
        defer {
            byReply = [:]
            byEntry = [:]
            lostCandidates = []
        }
        return Array(byReply.values) + Array(byEntry.values)
    }
}
