import Dispatch
import Foundation
import Logging
import PlayerKitCore
import PlayerKitSupport
import Glibc

// The cache's readers: the streams mpv's demuxer thread reads an entry through.
extension CacheStore {
    // MARK: Readers (mpv's demuxer thread)

    struct OpenedReader: Sendable {
        let entry: CacheEntry
        let readerID: UInt64
        let waiter: Waiter
    }

    func openReader(key: String, player: PlayerID) throws(MediaCacheError) -> OpenedReader {
        let entry = try entry(for: key)
        let path = dataPath(entry.id)
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            let code = errno
            throw code == ENOSPC ? .diskFull(path: path) : .fileFailed(path: path, reason: String(cString: strerror(code)))
        }
        close(fd)
        let waiter = Waiter()
        lock.lock()
        guard !isShutDown else {
            lock.unlock()
            throw .shutDown
        }
        let id = nextIDLocked()
        entry.players[id] = player
        entry.waiters[id] = waiter
        entry.lastAccess = Date().timeIntervalSince1970
        let access = entry.lastAccess
        let actions = feedLocked(entry, .readerOpened(id, .now))
        lock.unlock()
        perform(actions, for: entry)
        touch(entry, at: access)
        return OpenedReader(entry: entry, readerID: id, waiter: waiter)
    }

    func touch(_ entry: CacheEntry, at time: Double) {
        io.async { [index] in try? index.touch(id: entry.id, now: time) }
    }

    /// Asks the machine for bytes at the reader's position (`maximum` 0: its size) and waits for
    /// the answer: at most the read's deadline (``TransferMachine/Settings/readTimeout`` plus
    /// its slack), on the monotonic clock.
    func read(_ opened: OpenedReader, maximum: Int) -> TransferMachine.ReadAnswer {
        let entry = opened.entry
        lock.lock()
        opened.waiter.answer = nil
        let actions = feedLocked(entry, .read(opened.readerID, maximum: maximum, .now))
        let deadline = entry.machine.readers[opened.readerID]?.wait?.deadline
        lock.unlock()
        perform(actions, for: entry)
        let limit = (deadline ?? .now) + .seconds(1)
        while true {
            if let answer = locked({ () -> TransferMachine.ReadAnswer? in
                defer { opened.waiter.answer = nil }
                return opened.waiter.answer
            }) {
                return answer
            }
            let now = ContinuousClock.now
            if now >= limit {
                // The machine did not answer by its own deadline (it always does): give up anyway.
                return .failed(.timedOut(url: entry.machine.url, after: configuration.readTimeout))
            }
            let until = min(deadline ?? limit, limit)
            let remaining = max(.milliseconds(1), until - now)
            let nanoseconds = Int(remaining.components.seconds) * 1_000_000_000 + Int(remaining.components.attoseconds / 1_000_000_000)
            if opened.waiter.semaphore.wait(timeout: .now() + .nanoseconds(nanoseconds)) == .timedOut {
                // The deadline: the machine answers every read past it.
                feed(entry, .tick(.now))
            }
        }
    }

    /// Counts `count` bytes served to the reader (for ``MediaCache/usage(for:)``).
    func didRead(_ opened: OpenedReader, count: Int, fromCache: Bool) {
        lock.lock()
        defer { lock.unlock() }
        guard let player = opened.entry.players[opened.readerID] else { return }
        if fromCache {
            opened.entry.servedFromCache += Int64(count)
            usage[player, default: MediaCacheUsage()].bytesFromCache += Int64(count)
        } else {
            opened.entry.servedFromNetwork += Int64(count)
            usage[player, default: MediaCacheUsage()].bytesFromNetwork += Int64(count)
        }
    }

    func seekReader(_ opened: OpenedReader, to offset: Int64) {
        feed(opened.entry, .seek(opened.readerID, to: offset))
    }

    func cancelReader(_ opened: OpenedReader) {
        feed(opened.entry, .cancelReader(opened.readerID))
    }

    func closeReader(_ opened: OpenedReader) {
        let entry = opened.entry
        lock.lock()
        entry.players[opened.readerID] = nil
        entry.waiters[opened.readerID] = nil
        entry.lastAccess = Date().timeIntervalSince1970
        let access = entry.lastAccess
        let actions = feedLocked(entry, .readerClosed(opened.readerID, .now))
        lock.unlock()
        perform(actions, for: entry)
        touch(entry, at: access)
    }

    /// The data file's path, for a reader's own descriptor.
    func path(of opened: OpenedReader) -> String { dataPath(opened.entry.id) }
}
