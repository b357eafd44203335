import PlayerKitSupport
import Testing

@Suite("EventBroadcast: the one registry of features' events that belong to no player", .timeLimit(.minutes(1)))
struct EventBroadcastTests {
    @Test("every stream hears what is broadcast after it was made, in order; a consumer behind keeps the newest; finish ends all, and later streams at once")
    func broadcast() async {
        let broadcast = EventBroadcast<Int>()
        broadcast.yield(0)                                    // nobody listens yet
        let first = broadcast.stream(bufferLimit: 8)
        let small = broadcast.stream(bufferLimit: 2)
        for value in 1...5 { broadcast.yield(value) }
        broadcast.finish()
        broadcast.yield(6)                                    // after finish: nowhere
        var heard: [Int] = []
        for await value in first { heard.append(value) }
        #expect(heard == [1, 2, 3, 4, 5])
        var kept: [Int] = []
        for await value in small { kept.append(value) }
        #expect(kept == [4, 5])                               // bounded: the oldest were dropped
        var late: [Int] = []
        for await value in broadcast.stream(bufferLimit: 8) { late.append(value) }
        #expect(late.isEmpty)
    }

    @Test("a consumer that stops is forgotten; the others go on")
    func consumerStops() async {
        let broadcast = EventBroadcast<Int>()
        let kept = broadcast.stream(bufferLimit: 8)
        let stopping = broadcast.stream(bufferLimit: 8)
        let task = Task {
            for await _ in stopping { break }
        }
        broadcast.yield(1)
        await task.value
        broadcast.yield(2)
        broadcast.finish()
        var heard: [Int] = []
        for await value in kept { heard.append(value) }
        #expect(heard == [1, 2])
    }
}
