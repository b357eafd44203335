/// The one registry of a feature's events that belong to no one player (a cache key's download,
/// a room, the MPRIS service): every consumer gets its own bounded `AsyncStream` of the events
/// from its subscription on, in the order they were broadcast, and every stream ends when the
/// feature finishes the broadcast.
///
/// ```swift
/// let broadcast = EventBroadcast<RoomEvent>()
/// let events = broadcast.stream(bufferLimit: 256)   // a consumer's stream, from now on
/// broadcast.yield(.connected)                        // to every live stream
/// broadcast.finish()                                 // every stream ends; later ones end at once
/// ```
///
/// **Bounded.** A stream keeps at most `bufferLimit` events its consumer has not read yet (the
/// oldest are dropped), so a consumer that falls behind never holds up the feature or grows
/// without end.
///
/// **Threading.** Safe from any thread. No lock is held while a stream is yielded to or
/// finished, or while its termination (a consumer that stops) is handled.
package final class EventBroadcast<Event: Sendable>: Sendable {
    private struct State {
        var nextID = 0
        var streams: [Int: AsyncStream<Event>.Continuation] = [:]
        var isFinished = false
    }

    private let state = Locked(State())

    package init() {}

    /// A new consumer's stream of the events broadcast from now on, keeping at most
    /// `bufferLimit` unread (at least 1); it ends at once when the broadcast has finished.
    package func stream(bufferLimit: Int) -> AsyncStream<Event> {
        let (stream, continuation) = AsyncStream.makeStream(of: Event.self, bufferingPolicy: .bufferingNewest(max(bufferLimit, 1)))
        let id = state.withLock { state -> Int? in
            guard !state.isFinished else { return nil }
            state.nextID += 1
            state.streams[state.nextID] = continuation
            return state.nextID
        }
        guard let id else {
            continuation.finish()
            return stream
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.state.withLock { $0.streams.removeValue(forKey: id) }
        }
        return stream
    }

    /// Hands `event` to every live stream.
    package func yield(_ event: Event) {
        let streams = state.withLock { Array($0.streams.values) }
        for stream in streams { stream.yield(event) }
    }

    /// Ends every stream, and every stream asked for later. Idempotent.
    package func finish() {
        let streams = state.withLock { state -> [AsyncStream<Event>.Continuation] in
            state.isFinished = true
            defer { state.streams = [:] }
            return Array(state.streams.values)
        }
        for stream in streams { stream.finish() }
    }
}
