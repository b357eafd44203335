// The code blocks of Documentation/Frames.md, compiled by `make test` (the DocSnippets test target builds them;
// Scripts/check-snippets.py checks that each block shown is the region here). Not run.
import Foundation
import Logging
import PlayerKit
import PlayerKitCache
import PlayerKitRooms
import PlayerKitTesting
import CGLHost

func snippet_softwareFrames() async throws {
    // snippet: softwareFrames
    var configuration = PlayerConfiguration(videoOutput: .frames, audioOutput: .none)
    let player = try await Player.create(id: "left", configuration: configuration)
    let output = try player.makeFrameOutput(FrameFormat(width: 640, height: 360, pixelFormat: .bgr0))
    _ = try await player.load("Media/clip-a.mp4")

    for await frame in output.frames {            // one consumer
        let time = frame.info.videoTime                 // seconds into the media
        let missed = frame.info.framesMissed       // frames rendered since the last one you saw
        frame.withUnsafeBytes { bytes in upload(bytes, stride: frame.info.stride, time: time, missed: missed) }
    }
    // end snippet
}

func snippet_openGL(player: Player, fbo: Int32, w: Int, h: Int, window: OpaquePointer) async throws {
    // snippet: openGL
    // On the GL thread, with the app's context current, before loading media:
    let renderer = try player.makeOpenGLRenderer(
        getProcAddress: { name in SDL_GL_GetProcAddress(name) },
        onFrameReady: { pushRedrawEvent() })      // any thread: schedule a redraw, nothing else
    // In the redraw, on the GL thread:
    try renderer.render(framebuffer: fbo, width: w, height: h, flipY: fbo == 0)
    SDL_GL_SwapWindow(window)
    renderer.reportSwap()
    // At the end, on the GL thread, before the player shuts down:
    renderer.close()
    // end snippet
}
/// What the guide's app does with a frame's bytes (a texture upload, say).
func upload(_ bytes: UnsafeRawBufferPointer, stride: Int, time: Double?, missed: UInt64) {}
/// What the guide's app does to redraw: an SDL user event, say.
func pushRedrawEvent() {}

func snippet_posters() async throws {
    // snippet: posters
    let maker = try PosterMaker(configuration: .init(width: 320, height: 180, concurrency: 2))
    let requests = ["a.mp4", "b.mp4"].map { name in
        PosterRequest(source: MediaSource(name), moment: .firstNonBlackFrame(within: 5),
                      pngFile: URL(fileURLWithPath: "/tmp/posters/\(name).png"))
    }
    for await result in maker.posters(for: requests) {      // in the order they finish
        switch result.outcome {
        case .success(let poster): print(poster.frame.info.format.width, poster.frame.info.format.height, poster.time)
        case .failure(let error): print(error)              // PosterError, naming the item
        }
    }
    await maker.shutdown()
    // end snippet
}
