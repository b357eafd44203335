@testable import PlayerKitCore
import Testing

/// `PlaybackModel`'s seek tracking on its own (`SeekTracking`): when a seek is under way, and when
/// an awaited one has landed, from mpv's answer, SEEK, PLAYBACK_RESTART and one read of the
/// position, in the order the pump reads them.
@Suite("Seek tracking: under way, and landed", .timeLimit(.minutes(1)))
struct SeekTrackingTests {
    @Test("an awaited seek lands on the read after the restart that follows its SEEK, not before")
    func landsAfterItsOwnRestart() {
        var seeks = SeekTracking()
        seeks.await(ticket: 1)
        #expect(!seeks.isSettling)
        // A restart read before this seek's SEEK belongs to an earlier one: no read, nothing lands.
        let r1 = seeks.restarted(readWith: 100)
        #expect(!r1)
        let r2 = seeks.answered(100)
        #expect(r2 == nil)
        seeks.seekExecuted()
        #expect(seeks.isSettling && seeks.isExecuting)
        let r3 = seeks.restarted(readWith: 101)
        #expect(r3)
        #expect(seeks.isSettling && !seeks.isExecuting && seeks.landingRead == 101)
        let r4 = seeks.answered(999)
        #expect(r4 == nil)      // another read's answer
        let r5 = seeks.answered(101)
        #expect(r5 == [1])
        #expect(!seeks.isSettling && seeks.tickets.isEmpty)
    }

    @Test("a seek answered while another is landing waits for a newer read; merged seeks land together")
    func laterSeeksWaitForANewerRead() {
        var seeks = SeekTracking()
        seeks.await(ticket: 1)
        seeks.seekExecuted()
        let r6 = seeks.restarted(readWith: 10)
        #expect(r6)
        seeks.await(ticket: 2)                   // answered while 1 is landing
        let r7 = seeks.answered(10)
        #expect(r7 == [1])       // 2 is not carried out yet
        seeks.await(ticket: 3)                   // mpv merges 2 and 3 into one SEEK
        seeks.seekExecuted()
        let r8 = seeks.restarted(readWith: 11)
        #expect(r8)
        let r9 = seeks.answered(11)
        #expect(r9 == [2, 3])
    }

    @Test("the item ending or a new one starting returns every waiting seek; a lost landing read is forgotten")
    func endsAndLosses() {
        var seeks = SeekTracking()
        seeks.await(ticket: 1)
        seeks.seekExecuted()
        seeks.await(ticket: 2)
        let r10 = seeks.itemEnded()
        #expect(r10 == [1, 2])
        #expect(!seeks.isSettling)

        seeks.await(ticket: 3)
        seeks.seekExecuted()
        let r11 = seeks.restarted(readWith: 20)
        #expect(r11)
        let r12 = seeks.itemStarted()
        #expect(r12 == [3])
        let r13 = seeks.answered(20)
        #expect(!seeks.isSettling && r13 == nil)   // about the old item

        seeks.seekExecuted()
        let r14 = seeks.restarted(readWith: 21)
        #expect(r14)
        seeks.forgetLost(99)                     // not the landing read: kept
        #expect(seeks.landingRead == 21)
        seeks.forgetLost(21)
        #expect(!seeks.isSettling)
    }
}
