import DequeModule
import PlayerKitSupport

/// A player's (or several players') events as an `AsyncSequence`, from
/// ``PlayerEventBus/events(for:kinds:bufferLimit:)-(PlayerSelection,_,_)`` or ``Player/events(kinds:bufferLimit:)``.
///
/// **Buffer policy.** Events wait in a buffer of `bufferLimit` records. When a new event
/// arrives and the buffer is full, the oldest waiting event is dropped: a slow consumer falls
/// behind by at most `bufferLimit` events and then sees recent ones. The record after a gap
/// carries the number of events dropped just before it in ``PlayerEventRecord/droppedBefore``.
/// The producer (the event pump) never waits.
///
/// **Lifetime.** The subscription ends when this sequence and its iterators are released,
/// when the task iterating it is cancelled (the iteration then ends), or on ``cancel()``.
/// Iterate from one task at a time.
public struct PlayerEventStream: AsyncSequence, Sendable {
    private let handle: Handle

    init(subscriber: StreamSubscriber) {
        handle = Handle(subscriber: subscriber)
    }

    /// The iterator. Returns nil once the subscription ended and the buffer is empty.
    public struct AsyncIterator: AsyncIteratorProtocol {
        fileprivate let handle: Handle

        /// The next event, waiting for one if none is buffered.
        public mutating func next() async -> PlayerEventRecord? {
            await handle.subscriber.next()
        }
    }

    /// Makes the iterator.
    public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(handle: handle) }

    /// How many events were dropped so far because the buffer was full.
    var droppedCount: Int { handle.subscriber.droppedCount }

    /// The buffer's capacity.
    var bufferLimit: Int { handle.subscriber.limit }

    /// Ends the subscription: nothing more is buffered; iteration ends after the events
    /// already waiting.
    public func cancel() { handle.end() }

    /// Waits for the first event that matches `predicate`, for at most `timeout` (measured on
    /// the monotonic clock), and returns it; the events before it are consumed. Returns nil
    /// when the timeout passes first, when the subscription ends, or when the calling task is
    /// cancelled (which ends the subscription, as for any iteration). After a timeout the
    /// stream stays usable.
    ///
    /// Subscribe *before* starting what you wait for, so the event cannot slip by:
    ///
    /// ```swift
    /// let landings = player.events(kinds: [.seekCompleted])
    /// try player.send(.seek(to: 12, precision: .exact))
    /// let landed = await landings.first(timeout: .seconds(5)) { _ in true }
    /// ```
    public func first(
        timeout: Duration, where predicate: (PlayerEventRecord) -> Bool
    ) async -> PlayerEventRecord? {
        let deadline = ContinuousClock.now + timeout
        while true {
            switch await handle.subscriber.next(until: deadline) {
            case .record(let record):
                if predicate(record) { return record }
            case .ended, .timedOut:
                return nil
            }
        }
    }

    /// Ends the subscription when the last copy of the stream or an iterator goes away.
    fileprivate final class Handle: Sendable {
        let subscriber: StreamSubscriber

        init(subscriber: StreamSubscriber) {
            self.subscriber = subscriber
        }

        func end() {
            subscriber.finish()
        }

        deinit { end() }
    }
}

/// The bounded buffer behind a ``PlayerEventStream``.
final class StreamSubscriber: BusSubscriber {
    /// What a wait for the next record ends with.
    enum Outcome: Sendable {
        case record(PlayerEventRecord)
        case ended
        case timedOut
    }

    private struct Waiter {
        let id: UInt64
        let continuation: CheckedContinuation<Outcome, Never>
    }

    private struct Buffer {
        var records = Deque<PlayerEventRecord>()
        var droppedSinceLastTaken = 0
        var droppedTotal = 0
        var waiter: Waiter?
        var nextWaiterID: UInt64 = 0
        var finished = false
    }

    let selection: PlayerSelection
    let limit: Int
    private let kinds: Set<PlayerEventKind>?
    /// Whether the subscription ends with ``PlayerEvent/shutDown`` (a player's own stream:
    /// ``MediaPlayer/events(kinds:bufferLimit:)``), after the events already buffered.
    private let endsAtShutDown: Bool
    private let buffer = Locked(Buffer())
    /// The bus holds this subscriber until ``finish()`` removes it.
    private let bus: PlayerEventBus

    init(selection: PlayerSelection, kinds: Set<PlayerEventKind>?, limit: Int, bus: PlayerEventBus, endsAtShutDown: Bool = false) {
        self.selection = selection
        self.kinds = kinds
        self.limit = limit
        self.bus = bus
        self.endsAtShutDown = endsAtShutDown
    }

    var droppedCount: Int { buffer.withLock { $0.droppedTotal } }

    func receive(_ records: [PlayerEventRecord]) {
        var handOver: (CheckedContinuation<Outcome, Never>, PlayerEventRecord)?
        var ended: CheckedContinuation<Outcome, Never>?
        let endedNow = buffer.withLock { buffer -> Bool in
            guard !buffer.finished else { return false }
            for record in records {
                let last = endsAtShutDown && record.event == .shutDown
                defer {
                    if last {
                        // Iteration ends after what is buffered; a waiter that got nothing ends now.
                        buffer.finished = true
                        ended = buffer.waiter?.continuation
                        buffer.waiter = nil
                    }
                }
                guard kinds?.contains(record.event.kind) ?? true else {
                    if last { break }
                    continue
                }
                if let waiter = buffer.waiter {
                    buffer.waiter = nil
                    var record = record
                    record.droppedBefore = buffer.droppedSinceLastTaken
                    buffer.droppedSinceLastTaken = 0
                    handOver = (waiter.continuation, record)
                    if last { break }
                    continue
                }
                if buffer.records.count == limit {
                    buffer.records.removeFirst()
                    buffer.droppedSinceLastTaken += 1
                    buffer.droppedTotal += 1
                }
                buffer.records.append(record)
                if last { break }
            }
            return buffer.finished
        }
        if let (waiter, record) = handOver { waiter.resume(returning: .record(record)) }
        ended?.resume(returning: .ended)
        if endedNow { bus.remove(self) }
    }

    func next() async -> PlayerEventRecord? {
        if case .record(let record) = await next(until: nil) { return record }
        return nil
    }

    /// The next record, or how the wait ended: the subscription ended (also when the task is
    /// cancelled, which ends it), or `deadline` passed (the subscription stays).
    func next(until deadline: ContinuousClock.Instant?) async -> Outcome {
        let waiterID = buffer.withLock { buffer -> UInt64 in
            buffer.nextWaiterID += 1
            return buffer.nextWaiterID
        }
        let timer = deadline.map { deadline in
            Task { [weak self] in
                try? await Task.sleep(until: deadline, clock: .continuous)
                guard !Task.isCancelled else { return }
                self?.expire(waiterID)
            }
        }
        defer { timer?.cancel() }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Outcome, Never>) in
                let ready: Outcome? = buffer.withLock { buffer in
                    if var record = buffer.records.popFirst() {
                        record.droppedBefore = buffer.droppedSinceLastTaken
                        buffer.droppedSinceLastTaken = 0
                        return .record(record)
                    }
                    if buffer.finished { return .ended }
                    if let deadline, ContinuousClock.now >= deadline { return .timedOut }
                    buffer.waiter = Waiter(id: waiterID, continuation: continuation)
                    return nil
                }
                if let ready { continuation.resume(returning: ready) }
            }
        } onCancel: {
            _ = finish()
        }
    }

    /// Ends the wait `id` with `.timedOut` if it is still waiting.
    private func expire(_ id: UInt64) {
        let waiter = buffer.withLock { buffer -> Waiter? in
            guard let waiter = buffer.waiter, waiter.id == id else { return nil }
            buffer.waiter = nil
            return waiter
        }
        waiter?.continuation.resume(returning: .timedOut)
    }

    /// Stops buffering, leaves the bus and ends a waiting `next()`. Returns true the first time.
    @discardableResult
    func finish() -> Bool {
        let (first, waiter) = buffer.withLock { buffer in
            defer {
                buffer.finished = true
                buffer.waiter = nil
            }
            return (!buffer.finished, buffer.waiter)
        }
        if first { bus.remove(self) }
        waiter?.continuation.resume(returning: .ended)
        return first
    }
}
