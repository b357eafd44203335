@testable import PlayerKitSync
import PlayerKit
import Testing

/// The correction arithmetic alone (pure logic: no player, no clock of its own).
/// 1.0's corrector, deprecated in 1.1 (superseded by ClockFollower and SyncSettings): still
/// tested as 1.0 callers use it. The checks run in a deprecated context (a deprecated witness
/// of a protocol, called through the protocol), so the build stays free of warnings; Swift
/// Testing refuses a deprecated test itself.
@Suite("Drift corrector (1.0, deprecated)", .timeLimit(.minutes(4)))
struct DriftCorrectorTests {
    private let checks: any DriftCorrectorChecking = DriftCorrectorChecks()

    @Test("ahead is slowed, behind is sped up, within the limit; far off is seeked to where the clock will be")
    func corrections() throws { try checks.corrections() }

    @Test("measuring only: reports, never commands")
    func measuringOnly() { checks.measuringOnly() }

    @Test("a single late frame does not trigger a seek: the drift is smoothed; a corrective seek is never before 0 and the clock's speed carries it")
    func smoothingAndSeekTargets() throws { try checks.smoothingAndSeekTargets() }
}

protocol DriftCorrectorChecking: Sendable {
    func corrections() throws
    func measuringOnly()
    func smoothingAndSeekTargets() throws
}

struct DriftCorrectorChecks: DriftCorrectorChecking {
    @available(*, deprecated, message: "runs 1.0's deprecated DriftCorrector")
    func corrections() throws {
        var corrector = DriftCorrector()
        corrector.restart(speed: 1)
        let start = ContinuousClock.now
        // 20 ms ahead: a speed a little under 1.
        let ahead = corrector.measure(position: 10.02, clock: 10, at: start, speed: 1)
        let aheadSpeed = try #require(speed(of: ahead.command))
        #expect(aheadSpeed < 1 && aheadSpeed >= 0.95)
        #expect(ahead.report != nil, "the first measurement is reported")
        // Far behind (smoothed beyond 0.25 s): a seek 0.1 s of clock ahead, no report yet.
        corrector.restart(speed: 2)
        let behind = corrector.measure(position: 9, clock: 10, at: start + .milliseconds(100), speed: 2)
        #expect(behind.command == .seek(to: 10.2, precision: .exact))
        #expect(behind.report == nil)
        #expect(corrector.correctiveSeeks == 1)
        // Frames while the seek lands are not measured.
        let landing = corrector.measure(position: 9.5, clock: 10.3, at: start + .milliseconds(300), speed: 2)
        #expect(landing.command == nil)
        // Landed 10 ms behind: a speed a little over 2, capped at +5%.
        let landed = corrector.measure(position: 11.19, clock: 11.2, at: start + .milliseconds(700), speed: 2)
        let landedSpeed = try #require(speed(of: landed.command))
        #expect(landedSpeed > 2 && landedSpeed <= 2.1)
        // The same drift again: no new command for a change under 0.2%.
        let again = corrector.measure(position: 11.23, clock: 11.24, at: start + .milliseconds(720), speed: 2)
        #expect(again.command == nil)
    }

    @available(*, deprecated, message: "runs 1.0's deprecated DriftCorrector")
    func measuringOnly() {
        var settings = DriftCorrector.Settings()
        settings.correctsDrift = false
        var corrector = DriftCorrector(settings: settings)
        let start = ContinuousClock.now
        let first = corrector.measure(position: 5, clock: 10, at: start, speed: 1)
        #expect(first.command == nil && first.report == -5)
        let second = corrector.measure(position: 5, clock: 10, at: start + .milliseconds(500), speed: 1)
        #expect(second.report == nil, "one report per second")
        let third = corrector.measure(position: 5, clock: 10, at: start + .milliseconds(1000), speed: 1)
        #expect(third.report != nil)
    }

    private func speed(of command: PlayerCommand?) -> Double? {
        if case .setSpeed(let speed) = command { speed } else { nil }
    }

    @available(*, deprecated, message: "runs 1.0's deprecated DriftCorrector")
    func smoothingAndSeekTargets() throws {
        var corrector = DriftCorrector()
        corrector.restart(speed: 1)
        let start = ContinuousClock.now
        _ = corrector.measure(position: 10, clock: 10, at: start, speed: 1)
        // One frame 0.5 s off: smoothed to 0.05, so a speed nudge at most, never a seek.
        let spike = corrector.measure(position: 10.5, clock: 10, at: start + .milliseconds(33), speed: 1)
        #expect(!spike.isSeek && corrector.correctiveSeeks == 0)
        #expect(abs((corrector.smoothedDrift ?? 0) - 0.05) < 1e-9 && corrector.lastDrift == 0.5)
        // Far ahead of a clock near 0: the seek target is the clock a little ahead, at its speed, and not below 0.
        corrector.restart(speed: 4)
        let farAhead = corrector.measure(position: 3, clock: 0, at: start + .seconds(1), speed: 4)
        #expect(farAhead.command == .seek(to: 0.4, precision: .exact))
        corrector.restart(speed: 1)
        let atZero = corrector.measure(position: 2, clock: 0, at: start + .seconds(2), speed: 1)
        #expect(atZero.command == .seek(to: 0.1, precision: .exact) && corrector.correctiveSeeks == 2)
        // The speed it asks for stays inside what a player accepts, at the ends of the range.
        corrector.restart(speed: 4)
        let behindAtMax = corrector.measure(position: 9.9, clock: 10, at: start + .seconds(3), speed: 4)
        if case .setSpeed(let speed)? = behindAtMax.command { #expect(speed <= 4) }
        corrector.restart(speed: 0.25)
        let aheadAtMin = corrector.measure(position: 10.1, clock: 10, at: start + .seconds(4), speed: 0.25)
        if case .setSpeed(let speed)? = aheadAtMin.command { #expect(speed >= 0.25) }
    }
}
