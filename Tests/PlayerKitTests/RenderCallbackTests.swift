@testable import PlayerKitCore
import Foundation
import Testing
import PlayerKit
import PlayerKitSupport

/// The render path's callbacks run app code with no lock of PlayerKit's held: an OpenGL
/// renderer's get-proc-address and its `onFrameReady` may call back into PlayerKit (issue 51).
/// Before, the first ran under the core's render-context lock (a second renderer made from it
/// hung), and the second could not close its renderer (it hung in mpv's update lock).
@Suite("Render callbacks that call back into PlayerKit (real libmpv, Mesa's OpenGL)", .timeLimit(.minutes(1)))
struct RenderCallbackTests {
    static var framesConfiguration: PlayerConfiguration {
        var configuration = Fixtures.headless
        configuration.videoOutput = .frames
        return configuration
    }

    @Test("get-proc-address may call the player: a second renderer made from it is refused, the player answers, and the player then takes an output")
    func procAddressCallsBack() async throws {
        let (player, _) = try await Fixtures.player(configuration: Self.framesConfiguration)
        defer { Task { await player.shutdown() } }
        let nested = Locked<Result<Bool, FrameOutputError>?>(nil)
        let state = Locked<PlayerState?>(nil)
        // No GL context is current: mpv asks for functions, gets none, and gives up (a typed
        // error), after the lookup called the player.
        #expect {
            try player.makeOpenGLRenderer(getProcAddress: { _ in
                if nested.withLock({ $0 }) == nil {
                    let result = Result { () throws(FrameOutputError) -> Bool in
                        _ = try player.makeOpenGLRenderer(getProcAddress: { _ in nil }, onFrameReady: {})
                        return true
                    }
                    nested.withLock { $0 = result }
                    state.withLock { $0 = player.snapshot.state }
                }
                return nil
            }, onFrameReady: {})
        } throws: { error in
            guard case FrameOutputError.rendererUnavailable(let id, _) = error else { return false }
            return id == player.id
        }
        #expect(nested.withLock { $0 } == .failure(.alreadyAttached(playerID: player.id)))
        #expect(state.withLock { $0 } != nil)
        // The slot is free again once the failed renderer is gone.
        let output = try player.makeFrameOutput(FrameFormat(width: 160, height: 120))
        try await player.perform(.setLoop(.forever))
        _ = try await player.load(MediaSource(Fixtures.fixture("quadrants.mp4")))
        var frames = 0
        for await _ in output.frames {
            frames += 1
            if frames == 2 { break }
        }
        #expect(frames == 2)
    }

    @Test("onFrameReady may close its renderer and call the player: the renderer is closed, the player plays on, takes a new output, and shuts down in time")
    func frameReadyClosesRenderer() async throws {
        let (player, _) = try await Fixtures.player(configuration: Self.framesConfiguration)
        let gl: SurfacelessGL
        do { gl = try SurfacelessGL() } catch {
            Issue.record("no OpenGL context from Mesa: \(error)")
            await player.shutdown()
            return
        }
        let box = Locked<OpenGLRenderer?>(nil)
        let (closed, closing) = AsyncStream.makeStream(of: PlayerState.self)
        // Created with the context current on this thread (no suspension point since it was made).
        let renderer = try player.makeOpenGLRenderer(getProcAddress: gl.lookUp, onFrameReady: {
            // On one of mpv's threads, inside its update callback.
            guard let renderer = box.withLock({ $0.take() }) else { return }
            renderer.close()
            let state = player.snapshot.state
            try? player.send(.setVolume(50))
            closing.yield(state)
            closing.finish()
        })
        box.withLock { $0 = renderer }
        try player.send(.setLoop(.forever))
        async let loaded = player.load(MediaSource(Fixtures.fixture("quadrants.mp4")))
        var called = false
        for await _ in closed { called = true }
        #expect(called)
        _ = try await loaded
        #expect(throws: FrameOutputError.outputClosed(player.id)) {
            try renderer.render(framebuffer: 0, width: 16, height: 16)
        }
        // The core's one render context is free again: a software output takes it and gets the
        // frames of the next item (mpv turns video off when a context goes during playback).
        let output = try player.makeFrameOutput(FrameFormat(width: 160, height: 120))
        #expect(!output.snapshot.isClosed && output.snapshot.framesRendered == 0)
        _ = try await player.load(MediaSource(Fixtures.fixture("quadrants.mp4")))
        var frames = 0
        var newest: UInt64 = 0
        for await frame in output.frames {
            frames += 1
            newest = frame.info.sequenceNumber
            if frames == 2 { break }
        }
        #expect(frames == 2)
        // The snapshot counts what was rendered: at least the frames read.
        #expect(output.snapshot.framesRendered >= newest && newest >= 2)
        output.close()
        #expect(output.snapshot.isClosed)
        #expect(player.snapshot.volume == 50)
        await player.shutdown()
        gl.destroy()
    }
}
