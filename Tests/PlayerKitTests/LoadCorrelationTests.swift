@testable import PlayerKitCore
import Testing

/// The engine's load correlation on its own (`LoadCorrelation`): which load waits for which
/// `loadfile` answer and playlist entry, through redirects, lost answers and shutdown.
@Suite("Load correlation: each load gets its own answer and entry", .timeLimit(.minutes(1)))
struct LoadCorrelationTests {
    @Test("a load waits for its answer, then for the entry the answer names; a refused one is resolved at once")
    func answerThenEntry() {
        var loads = LoadCorrelation<String>()
        let first = loads.begin(), second = loads.begin()
        #expect(!loads.isLatest(first) && loads.isLatest(second))
        loads.sent("a.mp4", replyID: 10)
        loads.sent("b.mp4", replyID: 11)
        #expect(loads.answered(replyID: 99, entry: 5) == nil)                  // no load's answer
        #expect(loads.answered(replyID: 10, entry: 1) == "a.mp4")
        #expect(loads.answered(replyID: 11, entry: nil) == "b.mp4")           // refused: nothing to wait for
        #expect(loads.resolved(entry: 2) == nil)
        #expect(loads.resolved(entry: 1) == "a.mp4")
        #expect(loads.resolved(entry: 1) == nil)                              // once
        loads.sent("c.mp4", replyID: 12)
        #expect(loads.unsent(replyID: 12) == "c.mp4" && loads.answered(replyID: 12, entry: 3) == nil)
    }

    @Test("a playlist file's load moves on to the entries put in its place")
    func redirect() {
        var loads = LoadCorrelation<String>()
        loads.sent("list.m3u", replyID: 1)
        _ = loads.answered(replyID: 1, entry: 4)
        loads.redirected(from: 4, to: 5)
        #expect(loads.resolved(entry: 4) == nil && loads.resolved(entry: 5) == "list.m3u")
    }

    @Test("after an overflow, a load whose answer is missing finds the newest entry of its file, or has lost its item")
    func lostAnswers() {
        var loads = LoadCorrelation<String>()
        loads.sent("a.mp4", replyID: 1)
        loads.sent("b.mp4", replyID: 2)
        loads.sent("c.mp4", replyID: 3)
        _ = loads.answered(replyID: 3, entry: 9)                               // answered before the overflow
        loads.overflowed()
        loads.sent("d.mp4", replyID: 4)                                        // sent after it: not a candidate
        let found = loads.recover(entries: [("a.mp4", 6), ("a.mp4", 7), ("x.mp4", 8)], name: { $0 })
        #expect(found.map(\.waiter) == ["a.mp4", "b.mp4"])
        #expect(found.map(\.entry) == [7, nil])
        #expect(loads.resolved(entry: 7) == "a.mp4")
        #expect(loads.answered(replyID: 4, entry: 10) == "d.mp4")
        #expect(loads.recover(entries: [], name: { $0 }).isEmpty)            // once
    }

    @Test("shutdown takes every waiting load, answered or not")
    func takeAll() {
        var loads = LoadCorrelation<String>()
        loads.sent("a.mp4", replyID: 1)
        loads.sent("b.mp4", replyID: 2)
        _ = loads.answered(replyID: 2, entry: 1)
        #expect(Set(loads.takeAll()) == ["a.mp4", "b.mp4"])
        #expect(loads.takeAll().isEmpty)
    }
}
