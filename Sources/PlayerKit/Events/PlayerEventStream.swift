import DequeModule

/// A player's (or several players') events as an `AsyncSequence`, from
/// ``PlayerEventBus/events(for:kinds:bufferLimit:)`` or ``Player/events(kinds:bufferLimit:)``.
///
/// **Buffer policy.** Events wait in a buffer of ``bufferLimit`` records. When a new event
/// arrives and the buffer is full, the oldest waiting event is dropped: a slow consumer falls
/// behind by at most `bufferLimit` events and then sees recent ones. The record after a gap
/// carries the number of events dropped just before it in ``PlayerEventRecord/droppedBefore``;
/// ``droppedCount`` is the running total. The producer (the event pump) never waits.
///
/// **Lifetime.** The subscription ends when this sequence and its iterators are released,
/// when the task iterating it is cancelled (the iteration then ends), or on ``cancel()``.
/// Iterate from one task at a time.
public struct PlayerEventStream: AsyncSequence, Sendable {
    /// Each element is one event with its player's ID.
    public typealias Element = PlayerEventRecord

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
    public var droppedCount: Int { handle.subscriber.droppedCount }

    /// The buffer's capacity.
    public var bufferLimit: Int { handle.subscriber.limit }

    /// Ends the subscription: nothing more is buffered; iteration ends after the events
    /// already waiting.
    public func cancel() { handle.end() }

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
    private struct Buffer {
        var records = Deque<PlayerEventRecord>()
        var droppedSinceLastTaken = 0
        var droppedTotal = 0
        var waiter: CheckedContinuation<PlayerEventRecord?, Never>?
        var finished = false
    }

    let selection: PlayerSelection
    let limit: Int
    private let kinds: Set<PlayerEvent.Kind>?
    private let buffer = Locked(Buffer())
    /// The bus holds this subscriber until ``finish()`` removes it.
    private let bus: PlayerEventBus

    init(selection: PlayerSelection, kinds: Set<PlayerEvent.Kind>?, limit: Int, bus: PlayerEventBus) {
        self.selection = selection
        self.kinds = kinds
        self.limit = limit
        self.bus = bus
    }

    var droppedCount: Int { buffer.withLock { $0.droppedTotal } }

    func receive(_ records: [PlayerEventRecord]) {
        var handOver: (CheckedContinuation<PlayerEventRecord?, Never>, PlayerEventRecord)?
        buffer.withLock { buffer in
            guard !buffer.finished else { return }
            for record in records where kinds?.contains(record.event.kind) ?? true {
                if let waiter = buffer.waiter {
                    buffer.waiter = nil
                    var record = record
                    record.droppedBefore = buffer.droppedSinceLastTaken
                    buffer.droppedSinceLastTaken = 0
                    handOver = (waiter, record)
                    continue
                }
                if buffer.records.count == limit {
                    buffer.records.removeFirst()
                    buffer.droppedSinceLastTaken += 1
                    buffer.droppedTotal += 1
                }
                buffer.records.append(record)
            }
        }
        if let (waiter, record) = handOver { waiter.resume(returning: record) }
    }

    func next() async -> PlayerEventRecord? {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<PlayerEventRecord?, Never>) in
                let ready: PlayerEventRecord?? = buffer.withLock { buffer in
                    if var record = buffer.records.popFirst() {
                        record.droppedBefore = buffer.droppedSinceLastTaken
                        buffer.droppedSinceLastTaken = 0
                        return .some(record)
                    }
                    if buffer.finished { return .some(nil) }
                    buffer.waiter = continuation
                    return nil
                }
                if let ready { continuation.resume(returning: ready) }
            }
        } onCancel: {
            _ = finish()
        }
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
        waiter?.resume(returning: nil)
        return first
    }
}
