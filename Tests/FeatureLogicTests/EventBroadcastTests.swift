@testable import PlayerKitCore
import PlayerKitSupport
import Testing

@Suite("EventBroadcast: the one registry of features' events that belong to no player", .timeLimit(.minutes(1)))
struct EventBroadcastTests {
    /// A consumer's stream on `broadcast`, as the features make one.
    private func stream(_ broadcast: EventBroadcast<Int>, bufferLimit: Int) -> EventStream<Int> {
        let (stream, continuation) = EventStream<Int>.makeStream(bufferLimit: bufferLimit)
        broadcast.add(yield: { continuation.yield($0) }, finish: { continuation.finish() }, isEnded: { continuation.isFinished })
        return stream
    }

    @Test("every stream hears what is broadcast after it was made, in order; a consumer behind keeps the newest; finish ends all, and later streams at once")
    func broadcast() async {
        let broadcast = EventBroadcast<Int>()
        broadcast.yield(0)                                    // nobody listens yet
        let first = stream(broadcast, bufferLimit: 8)
        let small = stream(broadcast, bufferLimit: 2)
        for value in 1...5 { broadcast.yield(value) }
        broadcast.finish()
        broadcast.yield(6)                                    // after finish: nowhere
        var heard: [Int] = []
        for await value in first { heard.append(value) }
        #expect(heard == [1, 2, 3, 4, 5])
        var kept: [Int] = []
        for await value in small { kept.append(value) }
        #expect(kept == [4, 5])                               // bounded: the oldest were dropped
        #expect(small.droppedCount == 3)
        var late: [Int] = []
        for await value in stream(broadcast, bufferLimit: 8) { late.append(value) }
        #expect(late.isEmpty)
        #expect(broadcast.sinkCount == 0)
    }

    @Test("a consumer that stops is forgotten at the next event, or at the next subscription of an idle feature; the others go on")
    func consumerStops() async {
        let broadcast = EventBroadcast<Int>()
        let kept = stream(broadcast, bufferLimit: 8)
        let stopping = stream(broadcast, bufferLimit: 8)
        let task = Task {
            for await _ in stopping { break }
        }
        broadcast.yield(1)
        await task.value
        stopping.cancel()
        broadcast.yield(2)
        #expect(broadcast.sinkCount == 1)
        // Idle: a released stream goes at the next subscription.
        do { _ = stream(broadcast, bufferLimit: 8) }
        _ = stream(broadcast, bufferLimit: 8)
        #expect(broadcast.sinkCount == 2)
        broadcast.finish()
        var heard: [Int] = []
        for await value in kept { heard.append(value) }
        #expect(heard == [1, 2])
    }
}

@Suite("EventStream: PlayerKit's one stream type", .timeLimit(.minutes(1)))
struct EventStreamTests {
    @Test("a full buffer drops the oldest and counts it; the default limit is 1024; a limit below 1 is 1")
    func bufferPolicy() async {
        let (stream, continuation) = EventStream<Int>.makeStream(bufferLimit: 3)
        for value in 1...5 { #expect(continuation.yield(value)) }
        continuation.finish()
        #expect(!continuation.yield(6))                       // ended: refused
        var heard: [Int] = []
        for await value in stream { heard.append(value) }
        #expect(heard == [3, 4, 5])
        #expect(stream.droppedCount == 2)
        #expect(stream.bufferLimit == 3)
        #expect(EventStream<Int>.makeStream().stream.bufferLimit == 1024)
        #expect(EventStream<Int>.defaultBufferLimit == 1024)
        #expect(EventStream<Int>.makeStream(bufferLimit: 0).stream.bufferLimit == 1)
    }

    @Test("cancel ends it after what waits; the producer hears of it at once; a handler set later runs at once")
    func cancel() async {
        let (stream, continuation) = EventStream<Int>.makeStream()
        let ended = Locked(0)
        continuation.onTermination { ended.withLock { $0 += 1 } }
        continuation.yield(1)
        stream.cancel()
        #expect(continuation.isFinished)
        #expect(ended.withLock { $0 } == 1)
        #expect(!continuation.yield(2))
        var heard: [Int] = []
        for await value in stream { heard.append(value) }
        #expect(heard == [1])
        continuation.onTermination { ended.withLock { $0 += 1 } }
        #expect(ended.withLock { $0 } == 2)
        continuation.finish()
        #expect(ended.withLock { $0 } == 2)                   // once each
    }

    @Test("released by its consumer, the stream ends")
    func release() async {
        let continuation: EventStream<Int>.Continuation
        do {
            let made = EventStream<Int>.makeStream()
            continuation = made.continuation
            _ = made.stream
        }
        #expect(continuation.isFinished)
    }

    @Test("a cancelled iterating task ends the stream; a waiting reader wakes up with nil")
    func taskCancelled() async {
        let (stream, continuation) = EventStream<Int>.makeStream()
        let reader = Task {
            var count = 0
            for await _ in stream { count += 1 }
            return count
        }
        continuation.yield(1)
        while continuation.isFinished == false {
            reader.cancel()
            await Task.yield()
        }
        #expect(await reader.value <= 1)
    }

    @Test("first(timeout:where:) returns the match, nil at its timeout with the stream still usable, nil at the end")
    func first() async {
        let (stream, continuation) = EventStream<Int>.makeStream()
        for value in [1, 2, 3] { continuation.yield(value) }
        #expect(await stream.first(timeout: .seconds(5)) { $0 == 2 } == 2)
        #expect(await stream.first(timeout: .milliseconds(50)) { $0 == 9 } == nil)   // 3 consumed
        continuation.yield(4)
        #expect(await stream.first(timeout: .seconds(5)) { _ in true } == 4)
        continuation.finish()
        #expect(await stream.first(timeout: .seconds(5)) { _ in true } == nil)
    }
}
