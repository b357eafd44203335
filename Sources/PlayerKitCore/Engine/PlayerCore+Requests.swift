internal import CMPV
import Dispatch
import Foundation
import Logging
import PlayerKitSupport

// Awaited requests: an operation, several cores' operations at once or in turn, a property
// read. No thread waits: mpv's answers, read by the pump, resume the callers.
extension PlayerCore {
    /// Hands `operation` to mpv as ``send(_:reply:)`` does and suspends until mpv answered: the
    /// last request's result, or the first refusal. No thread waits: mpv's answer, read by the
    /// pump, resumes the caller. Bounded by `timeout` on the monotonic clock
    /// (``PlayerError/timedOut(operation:after:)``; mpv may still carry the operation out), by
    /// shutdown (``PlayerError/playerShutDown(_:)``), and by a lost answer
    /// (``PlayerError/replyLost(_:operation:)``). Cancelling the caller does not withdraw it.
    @discardableResult
    func request(_ operation: EngineOperation, timeout: Duration) async throws(PlayerError) -> MPVValue {
        try await Self.requestAll([(self, .success(operation))], timeout: timeout)[0].get()
    }

    /// ``request(_:timeout:)`` on several cores at once: every operation is handed to its core
    /// first, one right after another and none waiting for mpv, and then every answer is awaited
    /// (one timer bounds them all). An item that is already a failure (a check refused it) is not
    /// sent and keeps its error. Returns one result per item, in item order.
    static func requestAll(
        _ items: [(core: PlayerCore, operation: Result<EngineOperation, PlayerError>)], timeout: Duration
    ) async -> [Result<MPVValue, PlayerError>] {
        guard !items.isEmpty else { return [] }
        return await withCheckedContinuation { (continuation: CheckedContinuation<[Result<MPVValue, PlayerError>], Never>) in
            let collected = Locked<(results: [Result<MPVValue, PlayerError>], left: Int)>(
                (Array(repeating: .success(.none), count: items.count), items.count))
            let expiry = Expiry()
            // Each reply resumes once (SentReply), so each index is recorded once.
            let record = { @Sendable (index: Int, result: Result<MPVValue, PlayerError>) in
                let all = collected.withLock { collected -> [Result<MPVValue, PlayerError>]? in
                    collected.results[index] = result
                    collected.left -= 1
                    return collected.left == 0 ? collected.results : nil
                }
                guard let all else { return }
                expiry.cancel()
                continuation.resume(returning: all)
            }
            var pending: [(index: Int, reply: SentReply, operation: String)] = []
            for (index, item) in items.enumerated() {
                let reply = SentReply { record(index, $0) }
                do throws(PlayerError) {
                    let operation = try item.operation.get()
                    try item.core.send(operation, reply: reply)
                    let description = operation.requests.map(Self.describe).joined(separator: "; ")
                    pending.append((index, reply, "\(description) on player \(item.core.id)"))
                } catch {
                    reply.resume(.failure(error))
                }
            }
            guard !pending.isEmpty else { return }
            let sent = pending
            // On the monotonic clock; withdrawn (and `sent` released) once every reply is in, or
            // never armed when they all came first. A reply already resumed ignores the timeout.
            expiry.arm(after: timeout) {
                for item in sent { item.reply.resume(.failure(.timedOut(operation: item.operation, after: timeout))) }
            }
        }
    }

    /// ``requestAll(_:timeout:)`` one core after another: each operation is handed to its core
    /// once the core before answered, by the thread that read that answer (a pump), so no task
    /// or thread waits between two cores and none is blocked. A failure (a check, a refusal)
    /// does not stop the turn: the next core gets its operation at once. One timer bounds them
    /// all; when it fires, the operations not yet answered, and those not yet handed over, end
    /// with ``PlayerError/timedOut(operation:after:)``. Returns one result per item, in order.
    static func requestInTurn(
        _ items: [(core: PlayerCore, operation: Result<EngineOperation, PlayerError>)], timeout: Duration
    ) async -> [Result<MPVValue, PlayerError>] {
        guard !items.isEmpty else { return [] }
        return await withCheckedContinuation { (continuation: CheckedContinuation<[Result<MPVValue, PlayerError>], Never>) in
            let expiry = Expiry()
            let turn = InTurn(items: items, timeout: timeout, finish: {
                expiry.cancel()
                continuation.resume(returning: $0)
            })
            expiry.arm(after: timeout) { turn.expire() }
            turn.hand(0)
        }
    }

    /// The state of one ``requestInTurn(_:timeout:)``: which item is next, what each got.
    final class InTurn: Sendable {
        private struct Progress {
            var results: [Result<MPVValue, PlayerError>?]
            var finished = false
        }
        private let items: [(core: PlayerCore, operation: Result<EngineOperation, PlayerError>)]
        private let timeout: Duration
        private let progress: Locked<Progress>
        private let finish: @Sendable ([Result<MPVValue, PlayerError>]) -> Void

        init(items: [(core: PlayerCore, operation: Result<EngineOperation, PlayerError>)], timeout: Duration,
             finish: @escaping @Sendable ([Result<MPVValue, PlayerError>]) -> Void) {
            self.items = items
            self.timeout = timeout
            self.progress = Locked(Progress(results: Array(repeating: nil, count: items.count)))
            self.finish = finish
        }

        /// Hands item `index` to its core; its answer hands the next. Nothing more is handed
        /// over once the timer ended the turn.
        func hand(_ index: Int) {
            guard index < items.count, !progress.withLock({ $0.finished }) else { return }
            let item = items[index]
            let reply = SentReply { [self] result in
                record(index, result)
                hand(index + 1)
            }
            do throws(PlayerError) {
                try item.core.send(try item.operation.get(), reply: reply)
            } catch {
                reply.resume(.failure(error))
            }
        }

        private func record(_ index: Int, _ result: Result<MPVValue, PlayerError>) {
            let all = progress.withLock { progress -> [Result<MPVValue, PlayerError>]? in
                guard !progress.finished else { return nil }
                progress.results[index] = result
                guard index == items.count - 1 else { return nil }
                progress.finished = true
                return progress.results.map { $0 ?? .success(.none) }
            }
            if let all { finish(all) }
        }

        /// The timer: whatever has no answer yet ends timed out.
        func expire() {
            let all = progress.withLock { progress -> [Result<MPVValue, PlayerError>]? in
                guard !progress.finished else { return nil }
                progress.finished = true
                return progress.results.enumerated().map { index, result in
                    result ?? .failure(.timedOut(operation: "\(Self.describe(items[index])) (in turn)", after: timeout))
                }
            }
            if let all { finish(all) }
        }

        private static func describe(_ item: (core: PlayerCore, operation: Result<EngineOperation, PlayerError>)) -> String {
            let operation = (try? item.operation.get()).map { $0.requests.map(PlayerCore.describe).joined(separator: "; ") } ?? "a refused operation"
            return "\(operation) on player \(item.core.id)"
        }
    }

    /// Reads a property without blocking (`mpv_get_property_async`) and suspends until mpv
    /// answered: its value, or its refusal as a typed error. No thread waits: the answer, read by
    /// the pump, resumes the caller. Bounded by `timeout` on the monotonic clock
    /// (``PlayerError/timedOut(operation:after:)``), by shutdown
    /// (``PlayerError/playerShutDown(_:)``) and by a lost answer
    /// (``PlayerError/replyLost(_:operation:)``).
    func read(_ name: String, timeout: Duration) async throws(PlayerError) -> MPVValue {
        let result = await withCheckedContinuation { (continuation: CheckedContinuation<Result<MPVValue, PlayerError>, Never>) in
            let expiry = Expiry()
            let reply = SentReply {
                expiry.cancel()
                continuation.resume(returning: $0)
            }
            let replyID: UInt64? = state.withLock { state in
                guard !state.isShutDown else { return nil }
                let replyID = state.readIDs.next()
                state.propertyReads.add(PropertyRead(name: name, reply: reply), replyID: replyID)
                return replyID
            }
            guard let replyID else { return reply.resume(.failure(.playerShutDown(id))) }
            guard handle.requestProperty(name, replyID: replyID) else {
                state.withLock { _ = $0.propertyReads.take(replyID) }
                // Refused at once: the core is gone, or its event queue is full.
                return reply.resume(.failure(isShutDown ? .playerShutDown(id) : .replyLost(id, operation: "read \(name)")))
            }
            let id = self.id
            // On the monotonic clock; withdrawn (and its captures released) once the read is
            // answered.
            expiry.arm(after: timeout) { [weak self] in
                self?.state.withLock { _ = $0.propertyReads.take(replyID) }
                reply.resume(.failure(.timedOut(operation: "read \(name) on player \(id)", after: timeout)))
            }
        }
        return try result.get()
    }

    /// Re-reads mpv's track list into the model (after a command that adds tracks, so the
    /// read-out shows them when that command returns).
    func refreshTrackList(timeout: Duration) async throws(PlayerError) {
        let list = try await read("track-list", timeout: timeout)
        applyIntent { $0.noteTrackList(list) }
    }

    /// The audio output devices mpv's audio drivers see now.
    func audioDeviceList(timeout: Duration) async throws(PlayerError) -> [AudioDevice] {
        let list = try await read("audio-device-list", timeout: timeout)
        return (list.arrayValue ?? []).compactMap { entry in
            guard let name = entry["name"]?.stringValue else { return nil }
            return AudioDevice(name: name, description: entry["description"]?.stringValue ?? name)
        }
    }


    /// Unloads the media (`stop`, sent without waiting) and asks for the freed heap to go back
    /// to the system soon after. Does nothing once shut down. Safe anywhere, the pump included.
    func releaseMedia() {
        guard (try? send(.command(.stop))) != nil else { return }
        HeapTrim.request()
    }
}
