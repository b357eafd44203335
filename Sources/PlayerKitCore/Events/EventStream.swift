import DequeModule
import PlayerKitSupport

/// PlayerKit's one stream type: a player's (or several players') events, a frame output's
/// frames, and a feature's own events (the media cache, a room, the MPRIS service, a batch of
/// posters) all come as an `EventStream`, with one buffer policy and one way to end.
///
/// ```swift
/// for await record in player.events(kinds: [.stateChanged]) {
///     print(record.playerID, record.event)
/// }
/// ```
///
/// **Buffer policy.** Elements wait in a buffer of a limited size (by default defaultBufferLimit,
/// 1024, unless the call that made the stream says otherwise; a frame output keeps 1, the newest
/// frame). When a new element arrives and the buffer is full, the oldest waiting one is dropped:
/// a slow consumer falls behind by at most that many elements and then sees recent ones.
/// ``droppedCount`` says how many were dropped so far; the element after a gap says so where its
/// type has room for it (``PlayerEventRecord/droppedBefore``, ``FrameInfo/framesMissed``). The
/// producer (the event pump, a render thread, a feature) never waits.
///
/// **End.** The stream ends (iteration returns nil after the elements already waiting) when its
/// producer ends it (a player's own stream after its ``PlayerEvent/shutDown``, a frame output when
/// it closes or its player shuts down, a feature's stream when the feature shuts down), on
/// ``cancel()``, when the task iterating it is cancelled, and when the stream and its iterators
/// are released (a frame output's stream excepted: the output owns it).
///
/// **Threading.** A stream may be passed between tasks; iterate it from one task at a time.
public struct EventStream<Element: Sendable>: AsyncSequence, Sendable {
    private let handle: Handle

    /// The buffer limit of a stream whose maker was not given one: 1024.
    public static var defaultBufferLimit: Int { 1024 }

    init(channel: EventChannel<Element>, endsOnRelease: Bool = true) {
        handle = Handle(channel: channel, endsOnRelease: endsOnRelease)
    }

    /// A new stream and the continuation that feeds it, for a feature of an app's own that
    /// publishes its events the way PlayerKit's features do.
    ///
    /// ```swift
    /// let (stream, continuation) = EventStream<String>.makeStream()
    /// continuation.yield("started")
    /// continuation.finish()
    /// ```
    ///
    /// - Parameter bufferLimit: how many elements wait for the consumer at most (at least 1).
    public static func makeStream(bufferLimit: Int = defaultBufferLimit) -> (stream: EventStream, continuation: Continuation) {
        let channel = EventChannel<Element>(limit: bufferLimit)
        return (EventStream(channel: channel), Continuation(channel: channel))
    }

    /// The producer's side of a stream made by ``makeStream(bufferLimit:)``. Safe from any
    /// thread; never waits.
    public struct Continuation: Sendable {
        let channel: EventChannel<Element>

        /// Adds `element` after the ones waiting (dropping the oldest when the buffer is
        /// full). Returns false, and does nothing, once the stream has ended: a producer can
        /// stop sending to a consumer that went away.
        @discardableResult
        public func yield(_ element: Element) -> Bool { channel.send(element) }

        /// Ends the stream: its consumer gets the elements already waiting, then nil.
        /// Idempotent.
        public func finish() { channel.finish() }

        /// Whether the stream has ended: finished here, cancelled, or released by its consumer.
        public var isFinished: Bool { channel.isFinished }

        /// Runs `handler` once when the stream ends, whoever ends it (at once, on this thread,
        /// if it has ended already), so a producer can stop work no one will read. Replaces an
        /// earlier handler. It runs on the thread that ends the stream, with no lock held.
        public func onTermination(_ handler: @escaping @Sendable () -> Void) { channel.setOnEnd(handler) }
    }

    /// The iterator. Returns nil once the stream ended and its buffer is empty.
    public struct AsyncIterator: AsyncIteratorProtocol {
        fileprivate let handle: Handle

        /// The next element, waiting for one if none is buffered.
        public mutating func next() async -> Element? {
            if case .element(let element) = await handle.channel.next(until: nil) { return element }
            return nil
        }
    }

    /// Makes the iterator.
    public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(handle: handle) }

    /// How many elements were dropped so far because the buffer was full.
    public var droppedCount: Int { handle.channel.droppedCount }

    /// The buffer's capacity (the `bufferLimit` the stream was made with).
    var bufferLimit: Int { handle.channel.limit }

    /// Ends the stream: nothing more is buffered; iteration ends after the elements already
    /// waiting.
    public func cancel() { handle.channel.finish() }

    /// Waits for the first element that matches `predicate`, for at most `timeout` (measured on
    /// the monotonic clock), and returns it; the elements before it are consumed. Returns nil
    /// when the timeout passes first, when the stream ends, or when the calling task is
    /// cancelled (which ends the stream, as for any iteration). After a timeout the stream
    /// stays usable.
    ///
    /// Subscribe *before* starting what you wait for, so the event cannot slip by:
    ///
    /// ```swift
    /// let landings = player.events(kinds: [.seekCompleted])
    /// try player.send(.seek(to: 12, precision: .exact))
    /// let landed = await landings.first(timeout: .seconds(5)) { _ in true }
    /// ```
    public func first(timeout: Duration, where predicate: (Element) -> Bool) async -> Element? {
        let deadline = ContinuousClock.now + timeout
        while true {
            switch await handle.channel.next(until: deadline) {
            case .element(let element):
                if predicate(element) { return element }
            case .ended, .timedOut:
                return nil
            }
        }
    }

    /// Ends the stream when the last copy of it or of an iterator goes away.
    fileprivate final class Handle: Sendable {
        let channel: EventChannel<Element>
        let endsOnRelease: Bool

        init(channel: EventChannel<Element>, endsOnRelease: Bool) {
            self.channel = channel
            self.endsOnRelease = endsOnRelease
        }

        deinit { if endsOnRelease { channel.finish() } }
    }
}

/// The bounded buffer behind an ``EventStream``: one producer side (``send(_:)``, ``finish()``),
/// one consumer (``next(until:)``). No lock is held while a waiting consumer is resumed or
/// `onEnd` runs.
final class EventChannel<Element: Sendable>: Sendable {
    /// What a wait for the next element ends with.
    enum Outcome: Sendable {
        case element(Element)
        case ended
        case timedOut
    }

    private struct Waiter {
        let id: UInt64
        let continuation: CheckedContinuation<Outcome, Never>
    }

    private struct State {
        var buffer = Deque<Element>()
        var droppedSinceLastTaken = 0
        var droppedTotal = 0
        var waiter: Waiter?
        var nextWaiterID: UInt64 = 0
        var finished = false
        var onEnd: (@Sendable () -> Void)?
    }

    let limit: Int
    private let state: Locked<State>
    /// Writes the number of elements dropped just before an element into it (when not 0).
    private let markGap: (@Sendable (inout Element, Int) -> Void)?

    /// - Parameters:
    ///   - onEnd: runs once, on the thread that ends the channel, when it ends.
    init(limit: Int, markGap: (@Sendable (inout Element, Int) -> Void)? = nil, onEnd: (@Sendable () -> Void)? = nil) {
        self.limit = max(limit, 1)
        self.markGap = markGap
        state = Locked(State(onEnd: onEnd))
    }

    var droppedCount: Int { state.withLock { $0.droppedTotal } }

    var isFinished: Bool { state.withLock { $0.finished } }

    /// Sets what runs when the channel ends; runs it now if it has ended.
    func setOnEnd(_ handler: @escaping @Sendable () -> Void) {
        let ended = state.withLock { state -> Bool in
            if state.finished { return true }
            state.onEnd = handler
            return false
        }
        if ended { handler() }
    }

    /// Adds `element`; false once the channel has ended.
    @discardableResult
    func send(_ element: Element) -> Bool {
        send(CollectionOfOne(element), thenFinish: false)
    }

    /// Adds `elements` in order, then ends the channel if `thenFinish`; false if it had ended.
    @discardableResult
    func send<S: Sequence<Element>>(_ elements: S, thenFinish: Bool) -> Bool {
        var handOver: (CheckedContinuation<Outcome, Never>, Element)?
        var ended: CheckedContinuation<Outcome, Never>?
        var onEnd: (@Sendable () -> Void)?
        let accepted = state.withLock { state -> Bool in
            guard !state.finished else { return false }
            for element in elements {
                if let waiter = state.waiter {
                    // A waiter only waits on an empty buffer.
                    state.waiter = nil
                    handOver = (waiter.continuation, take(element, &state))
                    continue
                }
                if state.buffer.count == limit {
                    state.buffer.removeFirst()
                    state.droppedSinceLastTaken += 1
                    state.droppedTotal += 1
                }
                state.buffer.append(element)
            }
            if thenFinish {
                state.finished = true
                ended = state.waiter?.continuation
                state.waiter = nil
                onEnd = state.onEnd
                state.onEnd = nil
            }
            return true
        }
        if let (waiter, element) = handOver { waiter.resume(returning: .element(element)) }
        ended?.resume(returning: .ended)
        onEnd?()
        return accepted
    }

    /// Marks the gap before `element` and resets the count. Under the lock.
    private func take(_ element: Element, _ state: inout State) -> Element {
        var element = element
        if state.droppedSinceLastTaken > 0 {
            markGap?(&element, state.droppedSinceLastTaken)
            state.droppedSinceLastTaken = 0
        }
        return element
    }

    /// The next element, or how the wait ended: the channel ended (also when the task is
    /// cancelled, which ends it), or `deadline` passed (the channel stays).
    func next(until deadline: ContinuousClock.Instant?) async -> Outcome {
        let waiterID = state.withLock { state -> UInt64 in
            state.nextWaiterID += 1
            return state.nextWaiterID
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
                let ready: Outcome? = state.withLock { state in
                    if let element = state.buffer.popFirst() { return .element(take(element, &state)) }
                    if state.finished { return .ended }
                    if let deadline, ContinuousClock.now >= deadline { return .timedOut }
                    state.waiter = Waiter(id: waiterID, continuation: continuation)
                    return nil
                }
                if let ready { continuation.resume(returning: ready) }
            }
        } onCancel: {
            finish()
        }
    }

    /// Ends the wait `id` with `.timedOut` if it is still waiting.
    private func expire(_ id: UInt64) {
        let waiter = state.withLock { state -> Waiter? in
            guard let waiter = state.waiter, waiter.id == id else { return nil }
            state.waiter = nil
            return waiter
        }
        waiter?.continuation.resume(returning: .timedOut)
    }

    /// Stops taking elements and ends a waiting `next`; the elements already buffered are still
    /// handed out. Returns true the first time.
    @discardableResult
    func finish() -> Bool {
        let (first, waiter, onEnd) = state.withLock { state in
            defer {
                state.finished = true
                state.waiter = nil
                state.onEnd = nil
            }
            return (!state.finished, state.waiter, state.onEnd)
        }
        waiter?.continuation.resume(returning: .ended)
        onEnd?()
        return first
    }
}

/// A bus subscriber that feeds an ``EventChannel``: the selected players' records, filtered by
/// kind, ending after the player's ``PlayerEvent/shutDown`` for a player's own stream.
final class StreamSubscriber: BusSubscriber {
    let selection: PlayerSelection
    var runsAppCode: Bool { false }
    let channel: EventChannel<PlayerEventRecord>
    private let kinds: Set<PlayerEventKind>?
    /// Whether the subscription ends with ``PlayerEvent/shutDown`` (a player's own stream:
    /// ``MediaPlayer/events(kinds:bufferLimit:)``), after the events already buffered.
    private let endsAtShutDown: Bool

    init(selection: PlayerSelection, kinds: Set<PlayerEventKind>?, limit: Int, bus: PlayerEventBus, endsAtShutDown: Bool = false) {
        self.selection = selection
        self.kinds = kinds
        self.endsAtShutDown = endsAtShutDown
        // The bus holds this subscriber until the channel ends; the channel ends when its
        // stream is released, cancelled or (a player's own stream) after the shutdown.
        channel = EventChannel(limit: limit, markGap: { record, dropped in record.droppedBefore = dropped })
        channel.setOnEnd { [weak self, weak bus] in if let self { bus?.remove(self) } }
    }

    func receive(_ records: [PlayerEventRecord]) {
        var wanted: [PlayerEventRecord] = []
        var last = false
        for record in records {
            if endsAtShutDown && record.event == .shutDown { last = true }
            if kinds?.contains(record.event.kind) ?? true { wanted.append(record) }
            if last { break }
        }
        guard !wanted.isEmpty || last else { return }
        channel.send(wanted, thenFinish: last)
    }
}
