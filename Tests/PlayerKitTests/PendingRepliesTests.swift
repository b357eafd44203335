@testable import PlayerKitCore
import Testing

/// The engine's pending replies on their own (`PendingReplies`): each answer takes its request
/// once, and after an overflow the requests still unanswered are taken as lost.
@Suite("Pending replies: answered once, or lost with an overflow", .timeLimit(.minutes(1)))
struct PendingRepliesTests {
    @Test("an answer takes its request once; a withdrawn request is no longer pending")
    func answeredOnce() {
        var replies = PendingReplies<String>()
        #expect(replies.isEmpty)
        replies.add("set volume", replyID: 1)
        replies.add("seek", replyID: 2)
        #expect(replies.take(1) == "set volume" && replies.take(1) == nil)
        #expect(replies.take(7) == nil)
        #expect(replies.take(2) == "seek" && replies.isEmpty)
    }

    @Test("after an overflow, the requests due then and still unanswered are lost, in the order sent; later ones are not")
    func lost() {
        var replies = PendingReplies<String>()
        replies.add("b", replyID: 5)
        replies.add("a", replyID: 3)
        replies.add("answered", replyID: 4)
        replies.overflowed()
        replies.add("after", replyID: 6)
        #expect(replies.take(4) == "answered")
        #expect(replies.takeLost() == ["a", "b"])
        #expect(replies.takeLost().isEmpty)
        #expect(replies.take(6) == "after")
    }

    @Test("shutdown takes every pending request, in the order sent")
    func takeAll() {
        var replies = PendingReplies<String>()
        replies.add("second", replyID: 9)
        replies.add("first", replyID: 2)
        replies.overflowed()
        #expect(replies.takeAll() == ["first", "second"])
        #expect(replies.isEmpty && replies.takeLost().isEmpty)
    }
}
