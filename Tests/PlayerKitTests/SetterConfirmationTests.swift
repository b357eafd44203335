@testable import PlayerKitCore
import Testing

/// `PlaybackModel`'s setter confirmation on its own (`SetterConfirmation`): which observations a
/// set makes stale, and when its confirming read must be asked again.
@Suite("Setter confirmation: a set value stands until mpv's answer", .timeLimit(.minutes(1)))
struct SetterConfirmationTests {
    @Test("observations are stale while the confirming read is in flight; its answer ends that")
    func staleUntilAnswered() {
        var confirmations = SetterConfirmation()
        confirmations.confirm("volume", request: 7)
        #expect(confirmations.isConfirming("volume") && !confirmations.isConfirming("speed"))
        #expect(confirmations.pendingRequests == [7])
        #expect(confirmations.answered(99, value: .double(50), succeeded: true) == nil)   // not a confirmation
        let answer = confirmations.answered(7, value: .double(50), succeeded: true)
        #expect(answer?.name == "volume" && answer?.readAgain == false)                   // nothing reported yet
        #expect(!confirmations.isConfirming("volume") && confirmations.pendingRequests.isEmpty)
    }

    @Test("a newer set supersedes the read in flight: the older answer confirms nothing")
    func superseded() {
        var confirmations = SetterConfirmation()
        confirmations.confirm("speed", request: 1)
        confirmations.confirm("speed", request: 2)
        #expect(confirmations.answered(1, value: .double(1.5), succeeded: true) == nil)
        #expect(confirmations.isConfirming("speed"))
        #expect(confirmations.answered(2, value: .double(2), succeeded: true)?.name == "speed")
    }

    @Test("an answer unlike mpv's last report is read again (mpv may never report it); a failed read is not")
    func readAgain() {
        var confirmations = SetterConfirmation()
        confirmations.reported("mute", .flag(false))
        confirmations.confirm("mute", request: 3)
        #expect(confirmations.answered(3, value: .flag(true), succeeded: true)?.readAgain == true)
        confirmations.confirm("mute", request: 4)
        #expect(confirmations.answered(4, value: .flag(false), succeeded: true)?.readAgain == false)
        confirmations.confirm("mute", request: 5)
        #expect(confirmations.answered(5, value: .none, succeeded: false)?.readAgain == false)
    }

    @Test("reads whose answers were lost are forgotten; a newer read of the same property stays")
    func lostAnswers() {
        var confirmations = SetterConfirmation()
        confirmations.confirm("volume", request: 1)
        confirmations.confirm("speed", request: 2)
        confirmations.forget([1])
        #expect(!confirmations.isConfirming("volume") && confirmations.isConfirming("speed"))
        confirmations.confirm("volume", request: 3)
        confirmations.forget([1])
        #expect(confirmations.isConfirming("volume"))
    }
}
