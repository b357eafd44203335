import Foundation
import Testing
import PlayerKit
@testable import PlayerKitDisplay

@Suite("RandR orientation source", .timeLimit(.minutes(4)))
struct OrientationSourceTests {
    @Test("RandR rotations map to orientations for naturally wide and naturally tall screens")
    func mapping() {
        // Naturally wide 1280x720: the reported size swaps when turned a quarter.
        #expect(RandROrientationSource.orientation(rotation: 1, width: 1280, height: 720) == .landscapeLeft)
        #expect(RandROrientationSource.orientation(rotation: 2, width: 720, height: 1280) == .portrait)
        #expect(RandROrientationSource.orientation(rotation: 4, width: 1280, height: 720) == .landscapeRight)
        #expect(RandROrientationSource.orientation(rotation: 8, width: 720, height: 1280) == .portraitUpsideDown)
        // Naturally tall 720x1280 (a phone panel).
        #expect(RandROrientationSource.orientation(rotation: 1, width: 720, height: 1280) == .portrait)
        #expect(RandROrientationSource.orientation(rotation: 2, width: 1280, height: 720) == .landscapeLeft)
        #expect(RandROrientationSource.orientation(rotation: 4, width: 720, height: 1280) == .portraitUpsideDown)
        #expect(RandROrientationSource.orientation(rotation: 8, width: 1280, height: 720) == .landscapeRight)
        // Reflection bits (16, 32) do not change the orientation.
        #expect(RandROrientationSource.orientation(rotation: 2 | 16, width: 720, height: 1280) == .portrait)
    }

    @Test("reads the orientation of real X servers: a wide screen and a tall one")
    func readsRealScreens() async throws {
        let wide = try await VirtualDisplay.start(size: "1280x720")
        defer { wide.stop() }
        let tall = try await VirtualDisplay.start(size: "720x1280")
        defer { tall.stop() }
        #expect(try RandROrientationSource(display: wide.display).currentOrientation() == .landscapeLeft)
        #expect(try RandROrientationSource(display: tall.display).currentOrientation() == .portrait)
    }

    @Test("a policy following the source takes the screen's orientation and fullscreens its owner")
    func policyFollowsSource() async throws {
        let tall = try await VirtualDisplay.start(size: "720x1280")
        defer { tall.stop() }
        let policy = FullscreenPolicy(orientationControlsFullscreen: true)
        let (owner, events) = try await Fixtures.player()
        try await policy.claim(owner)
        let wide = try await VirtualDisplay.start(size: "1280x720")
        defer { wide.stop() }
        // Portrait first (the policy starts in landscape), then a wide screen: landscape again,
        // and the owner enters fullscreen.
        let portraitTask = policy.follow(RandROrientationSource(display: tall.display))
        #expect(await events.waitFor { if case .orientationChanged(.portrait)? = $0.event.feature(FullscreenEvent.self) { return true }; return false } != nil)
        #expect(policy.orientation == .portrait && !policy.isFullscreen)
        portraitTask.cancel()
        _ = await portraitTask.result // ends once cancelled: the source's thread is woken
        let mark = events.mark
        let landscapeTask = policy.follow(RandROrientationSource(display: wide.display))
        #expect(await events.waitFor(after: mark) { $0.event.feature(FullscreenEvent.self) == .fullscreenChanged(true) } != nil)
        #expect(policy.orientation == .landscapeLeft && policy.isFullscreen)
        landscapeTask.cancel()
        _ = await landscapeTask.result
        await owner.shutdown()
    }

    @Test("no display, or one that cannot be reached, is a typed error naming it")
    func unavailable() {
        #expect(throws: FullscreenPolicyError.orientationSourceUnavailable("no X display: DISPLAY is not set")) {
            try RandROrientationSource(display: "").currentOrientation()
        }
        #expect(throws: FullscreenPolicyError.orientationSourceUnavailable("cannot open X display \":4321\"")) {
            try RandROrientationSource(display: ":4321").currentOrientation()
        }
    }

    @Test("following an unreachable display ends the follow task with the typed error")
    func followUnreachable() async {
        let policy = FullscreenPolicy()
        let result = await policy.follow(RandROrientationSource(display: ":4321")).result
        #expect(throws: FullscreenPolicyError.orientationSourceUnavailable("cannot open X display \":4321\"")) { try result.get() }
    }

    @Test("an X server that goes away ends the iteration with an error, and the process lives on")
    func serverGoesAway() async throws {
        let display = try await VirtualDisplay.start()
        var iterator = RandROrientationSource(display: display.display).makeAsyncIterator()
        #expect(try await iterator.next() == .landscapeLeft)
        display.stop()
        await #expect(throws: FullscreenPolicyError.orientationSourceUnavailable("lost the connection to X display \"\(display.display)\"")) {
            _ = try await iterator.next()
        }
    }
}
