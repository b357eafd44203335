/// The one registry of a feature's events that belong to no one player (a cache key's download,
/// a room, the MPRIS service): every consumer adds a sink (in the features, an `EventStream`'s
/// continuation) and gets the events from then on, in the order they were broadcast; every sink
/// is finished when the feature finishes the broadcast.
///
/// ```swift
/// let broadcast = EventBroadcast<RoomEvent>()
/// let (events, continuation) = EventStream<RoomEvent>.makeStream()
/// broadcast.add(yield: continuation.yield, finish: continuation.finish)
/// broadcast.yield(.connected)                        // to every live sink
/// broadcast.finish()                                 // every sink ends; later ones end at once
/// ```
///
/// A sink's `yield` returns false once its consumer has gone: the sink is then dropped, at that
/// yield or at the next `add`, so consumers that come and go leave nothing behind.
///
/// **Threading.** Safe from any thread. No lock is held while a sink is yielded to or finished.
package final class EventBroadcast<Event: Sendable>: Sendable {
    private struct Sink: Sendable {
        let yield: @Sendable (Event) -> Bool
        let finish: @Sendable () -> Void
        let isEnded: @Sendable () -> Bool
    }

    private struct State {
        var nextID = 0
        var sinks: [Int: Sink] = [:]
        var isFinished = false
    }

    private let state = Locked(State())

    package init() {}

    /// Adds a consumer's sink for the events broadcast from now on; it is finished at once when
    /// the broadcast has finished. `isEnded` says whether the consumer went away (checked at
    /// each `add`, so an idle feature does not keep gone consumers).
    package func add(
        yield: @escaping @Sendable (Event) -> Bool, finish: @escaping @Sendable () -> Void,
        isEnded: @escaping @Sendable () -> Bool
    ) {
        let added = state.withLock { state -> Bool in
            guard !state.isFinished else { return false }
            state.sinks = state.sinks.filter { !$0.value.isEnded() }
            state.nextID += 1
            state.sinks[state.nextID] = Sink(yield: yield, finish: finish, isEnded: isEnded)
            return true
        }
        if !added { finish() }
    }

    /// How many sinks are held (for tests).
    package var sinkCount: Int { state.withLock { $0.sinks.count } }

    /// Hands `event` to every live sink, and drops the ones whose consumer went away.
    package func yield(_ event: Event) {
        let sinks = state.withLock { $0.sinks }
        var gone: [Int] = []
        for (id, sink) in sinks where !sink.yield(event) { gone.append(id) }
        if !gone.isEmpty { state.withLock { state in for id in gone { state.sinks[id] = nil } } }
    }

    /// Finishes every sink, and every sink added later. Idempotent.
    package func finish() {
        let sinks = state.withLock { state -> [Sink] in
            state.isFinished = true
            defer { state.sinks = [:] }
            return Array(state.sinks.values)
        }
        for sink in sinks { sink.finish() }
    }
}
