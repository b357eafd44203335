import ArgumentParser
import CGLHost
import Dispatch
import ExampleSupport
import Foundation
import PlayerKit

/// Frames the app draws, as Benchmarks/c/frames.c measures them: N looping players, counted
/// over `seconds` after a one-second warm-up.
/// - `--mode sw`: each player's `FrameOutput` (stream delivery, bgr0) read by a task of the app
///   as an async sequence: new frames received, frames the reader missed, late frames (more than
///   1.5 frame intervals after the previous one), CPU per frame.
/// - `--mode gl`: each player's `OpenGLRenderer` drawing into a framebuffer object of one EGL
///   context (no surface, Mesa) on one thread: time per render (render + glFinish) as well.
struct Frames: AsyncParsableCommand {
    @Option var mode = "sw"
    @Option var players = 1
    @Option var seconds: Double = 10
    @Option var width = 1280
    @Option var height = 720
    @Option var media: String

    final class Tally: @unchecked Sendable {
        // @unchecked: every field under `lock`.
        let lock = NSLock()
        var counting = false
        var frames = 0, late = 0, missed = 0
        var renderSeconds = 0.0, renders = 0

        func note(previous: ContinuousClock.Instant?, now: ContinuousClock.Instant, missed: Int = 0) {
            lock.withLock {
                guard counting else { return }
                frames += 1
                self.missed += missed
                if let previous, (now - previous).inSeconds > 1.5 / 30 { late += 1 }
            }
        }
    }

    func run() async throws {
        var configuration = PlayerConfiguration(videoOutput: .frames, audioOutput: .none)
        configuration.eventBus = PlayerEventBus(label: "frames")
        let created = try (0..<players).map { _ in try Player(configuration: configuration) }
        for player in created { try await player.perform(.setLoop(.forever)) }
        let tally = Tally()
        let cpu: Double
        if mode == "gl" {
            cpu = try await runOpenGL(created, tally: tally)
        } else {
            cpu = try await runSoftware(created, tally: tally)
        }
        let expected = Int(30 * seconds) * players
        let (frames, late, missed, renderSeconds, renders) = tally.lock.withLock {
            (tally.frames, tally.late, tally.missed, tally.renderSeconds, tally.renders)
        }
        print(String(
            format: "{\"players\": %d, \"seconds\": %.1f, \"frames\": %d, \"frames_per_second_per_player\": %.2f, "
                + "\"cpu_ms_per_frame\": %.3f, \"late\": %d, \"missing\": %d, \"reader_missed\": %d, \"render_ms\": %.3f}",
            players, seconds, frames, Double(frames) / seconds / Double(players), frames > 0 ? cpu * 1000 / Double(frames) : 0,
            late, max(0, expected - frames), missed, renders > 0 ? renderSeconds * 1000 / Double(renders) : 0))
        for player in created { await player.shutdown() }
    }

    /// Counting window: warm up, count for `seconds`, return the process's CPU time in it.
    func countingWindow(_ tally: Tally) async throws -> Double {
        try await Task.sleep(for: .seconds(1))
        let cpuStart = cpuSeconds()
        tally.lock.withLock { tally.counting = true }
        try await Task.sleep(for: .milliseconds(Int(seconds * 1000)))
        tally.lock.withLock { tally.counting = false }
        return cpuSeconds() - cpuStart
    }

    func runSoftware(_ created: [Player], tally: Tally) async throws -> Double {
        let format = try FrameFormat(width: width, height: height, pixelFormat: .bgr0)
        let outputs = try created.map { try $0.makeFrameOutput(format) }
        let readers = outputs.map { output in
            Task {
                var previous: ContinuousClock.Instant?
                for await frame in output.frames where frame.info.isNewFrame {
                    tally.note(previous: previous, now: frame.info.renderedAt, missed: Int(frame.info.framesMissed))
                    previous = frame.info.renderedAt
                }
            }
        }
        for player in created { _ = try await player.load(MediaSource(media)) }
        let cpu = try await countingWindow(tally)
        for player in created { try? await player.stop() }
        for output in outputs { output.close() }
        for reader in readers { await reader.value }
        return cpu
    }

    func runOpenGL(_ created: [Player], tally: Tally) async throws -> Double {
        let (width, height, seconds) = (width, height, seconds)
        let ready = DispatchSemaphore(value: 0), loaded = DispatchSemaphore(value: 0)
        let failure = Guarded<String?>(nil)
        let finished = Guarded(false)
        let thread = Thread {
            // One GL thread: an EGL context without a surface, an FBO per player.
            guard let display = eglGetPlatformDisplay(EGLenum(EGL_PLATFORM_SURFACELESS_MESA), nil, nil),
                  eglInitialize(display, nil, nil) == EGL_TRUE else {
                failure.withLock { $0 = "no EGL display" }
                ready.signal()
                return
            }
            eglBindAPI(EGLenum(EGL_OPENGL_API))
            var attributes: [EGLint] = [EGL_SURFACE_TYPE, EGL_PBUFFER_BIT, EGL_RENDERABLE_TYPE, EGL_OPENGL_BIT, EGL_NONE]
            var config: EGLConfig?
            var count: EGLint = 0
            eglChooseConfig(display, &attributes, &config, 1, &count)
            var contextAttributes: [EGLint] = [EGL_CONTEXT_MAJOR_VERSION, 3, EGL_CONTEXT_MINOR_VERSION, 3, EGL_NONE]
            let context = eglCreateContext(display, config, nil, &contextAttributes)
            eglMakeCurrent(display, nil, nil, context)
            let wake = DispatchSemaphore(value: 0)
            var renderers: [OpenGLRenderer] = []
            var framebuffers: [GLuint] = []
            for player in created {
                var texture: GLuint = 0, framebuffer: GLuint = 0
                glGenTextures(1, &texture)
                glBindTexture(GLenum(GL_TEXTURE_2D), texture)
                glTexImage2D(GLenum(GL_TEXTURE_2D), 0, GL_RGBA8, GLsizei(width), GLsizei(height), 0, GLenum(GL_RGBA), GLenum(GL_UNSIGNED_BYTE), nil)
                glGenFramebuffers(1, &framebuffer)
                glBindFramebuffer(GLenum(GL_FRAMEBUFFER), framebuffer)
                glFramebufferTexture2D(GLenum(GL_FRAMEBUFFER), GLenum(GL_COLOR_ATTACHMENT0), GLenum(GL_TEXTURE_2D), texture, 0)
                framebuffers.append(framebuffer)
                do {
                    renderers.append(try player.makeOpenGLRenderer(
                        getProcAddress: { unsafeBitCast(eglGetProcAddress($0), to: UnsafeMutableRawPointer?.self) },
                        onFrameReady: { wake.signal() }))
                } catch {
                    failure.withLock { $0 = "\(error)" }
                }
            }
            ready.signal()
            loaded.wait()
            var previous: [ContinuousClock.Instant?] = Array(repeating: nil, count: renderers.count)
            while !finished.withLock({ $0 }) {
                _ = wake.wait(timeout: .now() + .milliseconds(10))
                for index in renderers.indices where renderers[index].needsRedraw {
                    let began = ContinuousClock.now
                    let isNew = (try? renderers[index].render(
                        framebuffer: GLint(framebuffers[index]), width: width, height: height, flipY: false)) ?? false
                    glFinish()
                    let now = ContinuousClock.now
                    renderers[index].reportSwap()
                    tally.lock.withLock {
                        if tally.counting {
                            tally.renderSeconds += (now - began).inSeconds
                            tally.renders += 1
                        }
                    }
                    if isNew {
                        tally.note(previous: previous[index], now: now)
                        previous[index] = now
                    }
                }
            }
            for player in created { try? player.send(.stop) }
            for renderer in renderers { renderer.close() }
            eglMakeCurrent(display, nil, nil, nil)
            eglDestroyContext(display, context)
            _ = seconds
        }
        thread.start()
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            DispatchQueue.global().async {
                ready.wait()
                continuation.resume()
            }
        }
        if let failure = failure.withLock({ $0 }) { throw ValidationError(failure) }
        for player in created { _ = try await player.load(MediaSource(media)) }
        loaded.signal()
        let cpu = try await countingWindow(tally)
        finished.withLock { $0 = true }
        while !thread.isFinished { try await Task.sleep(for: .milliseconds(10)) }
        return cpu
    }
}
