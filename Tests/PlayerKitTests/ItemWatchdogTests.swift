@testable import PlayerKitCore
import Testing

/// `PlaybackModel`'s item watchdog on its own (`ItemWatchdog`): the buffering timeout and the
/// truncation check, on a clock the test moves.
@Suite("Item watchdog: the buffering timeout and streams cut short", .timeLimit(.minutes(1)))
struct ItemWatchdogTests {
    let start = ContinuousClock.now

    @Test("an item buffering for the timeout is given up once; leaving buffering starts the count again")
    func bufferingTimeout() {
        var watchdog = ItemWatchdog(bufferingTimeout: .seconds(5))
        #expect(watchdog.tick(now: start, state: .buffering, source: "a.mp4", position: 3) == nil)       // starts the count
        #expect(watchdog.tick(now: start + .seconds(4), state: .buffering, source: "a.mp4", position: 3) == nil)
        #expect(watchdog.tick(now: start + .seconds(4.5), state: .playing, source: "a.mp4", position: 3) == nil)  // reset
        #expect(watchdog.tick(now: start + .seconds(6), state: .buffering, source: "a.mp4", position: 3) == nil)
        let expected = PlayerError.bufferingTimedOut(source: "a.mp4", position: 3, after: .seconds(5))
        #expect(watchdog.tick(now: start + .seconds(11), state: .buffering, source: "a.mp4", position: 3) == expected)
        #expect(watchdog.tick(now: start + .seconds(20), state: .buffering, source: "a.mp4", position: 3) == nil)  // once
        #expect(watchdog.takeGivenUp() == expected)
        #expect(watchdog.takeGivenUp() == nil)
    }

    @Test("no timeout: buffering lasts as long as it does; a new item forgets a given-up one")
    func noTimeoutAndNewItem() {
        var forever = ItemWatchdog(bufferingTimeout: nil)
        #expect(forever.tick(now: start, state: .buffering, source: "a", position: nil) == nil)
        #expect(forever.tick(now: start + .seconds(3600), state: .buffering, source: "a", position: nil) == nil)
        var watchdog = ItemWatchdog(bufferingTimeout: .seconds(1))
        _ = watchdog.tick(now: start, state: .buffering, source: "a", position: nil)
        #expect(watchdog.tick(now: start + .seconds(1), state: .buffering, source: "a", position: nil) != nil)
        watchdog.itemStarted()
        #expect(watchdog.givenUp == nil)
    }

    @Test("an end well short of the duration is a truncation, unless the demuxer read near the end; a near end is finished")
    func truncation() {
        var watchdog = ItemWatchdog(bufferingTimeout: nil)
        #expect(watchdog.truncation(duration: 60, position: 59.5, positionInterval: 0.25, speed: 1) == nil)
        #expect(watchdog.truncation(duration: 60, position: 20, positionInterval: 0.25, speed: 1)
            == .truncated(position: 20, duration: 60))
        watchdog.noteDemuxed(until: 59.8)   // the last packet read was near the end: the position lags
        #expect(watchdog.truncation(duration: 60, position: 20, positionInterval: 0.25, speed: 1) == nil)
        watchdog.itemStarted()
        #expect(watchdog.truncation(duration: 60, position: 20, positionInterval: 0.25, speed: 1) != nil)
        #expect(watchdog.truncation(duration: nil, position: 20, positionInterval: 0.25, speed: 1) == nil)
    }
}
