import ArgumentParser
import CGLHost
import Dispatch
import ExampleSupport
import Foundation
import PlayerKit

/// Four players drawn with OpenGL into one window the app owns (SDL2), as a 2x2 grid: each
/// player renders into a framebuffer object of its own through PlayerKit's OpenGL path, and the
/// app blits the four into its window. `--headless` renders the same grid offscreen (EGL
/// without a surface), with no display at all. The bus prints every event with its player's ID.
@main
struct Mosaic: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "playerkit-mosaic",
        abstract: "Draw four PlayerKit players into one OpenGL window of the app's own, as a 2x2 grid.")

    @OptionGroup var logging: LoggingOptions

    @Option(help: "Stop this many seconds after the clips are loaded.")
    var seconds: Double = 6

    @Flag(help: "Print one JSON object per line: every event with its player's ID, then a summary.")
    var json = false

    @Flag(help: "Render offscreen with EGL (no window, no display needed).")
    var headless = false

    @Option(help: "Window size as WIDTHxHEIGHT (even numbers).")
    var size = "640x480"

    @Option(help: "Write the last composed grid to this file (binary PPM), for checking or viewing.")
    var snapshot: String?

    @Option(help: "The four clips, comma-separated (default: the shipped Media/tile-1.mp4 ... tile-4.mp4).")
    var media: String?

    func validate() throws {
        guard seconds > 0, seconds.isFinite else { throw ValidationError("--seconds must be above 0, got \(seconds)") }
        guard Self.parseSize(size) != nil else { throw ValidationError("--size must be WIDTHxHEIGHT with even numbers from 2 to 8192, got \(size)") }
        if let media, media.split(separator: ",").count != 4 { throw ValidationError("--media needs four clips, got \(media)") }
    }

    static func parseSize(_ text: String) -> (width: Int, height: Int)? {
        let parts = text.split(separator: "x").compactMap { Int($0) }
        guard parts.count == 2, parts.allSatisfy({ (2...8192).contains($0) && $0 % 2 == 0 }) else { return nil }
        return (parts[0], parts[1])
    }

    func run() async throws {
        logging.bootstrap()
        _ = Interruption.shared  // Ctrl-C ends the drawing and shuts the players down
        let (width, height) = Self.parseSize(size)!
        let clips = media.map { $0.split(separator: ",").map(String.init) }
            ?? (1...4).map { ExampleSupport.shippedMedia("tile-\($0).mp4") }
        let start = ContinuousClock.now
        let json = json

        // The bus prints every event of the four, by ID, on one queue (lines never interleave).
        // Subscribed by ID before the players exist, so it hears each one's `created` too.
        let ids = (1...4).map { PlayerID(stringLiteral: "tile-\($0)") }
        let shutDowns = Tally()
        let subscription = PlayerEventBus.shared.subscribe(
            to: .players(Set(ids)), delivery: .queue(DispatchQueue(label: "mosaic.events"))
        ) { record in
            let t = ExampleSupport.seconds(since: start)
            if json {
                ExampleSupport.printLine(JSONEventLine(record, t: t).json)
            } else {
                ExampleSupport.printLine(String(format: "%8.3f  %@  %@", t, record.playerID.rawValue, record.event.description))
            }
            if record.event == .shutDown { shutDowns.increment() }
        }

        // Four players with those IDs; video goes to the renderer the app attaches.
        var configuration = PlayerConfiguration(videoOutput: .frames, audioOutput: .none)
        configuration = logging.applied(to: configuration)
        configuration.positionUpdateInterval = .milliseconds(500)
        let players = try ids.map { try Player(id: $0, configuration: configuration) }

        // All GL work happens on one thread of the app's, where its context is current (an
        // async task may resume on any thread, so the GL loop does not run in one).
        let (messages, post) = AsyncStream<GLThreadMessage>.makeStream()
        let options = GLThreadOptions(
            width: width, height: height, headless: headless, json: json, seconds: seconds, snapshot: snapshot, start: start)
        // When the clips are loaded: the GL thread draws from the start, and for `--seconds` after this.
        let loadsDone = Guarded<ContinuousClock.Instant?>(nil)
        let thread = Thread {
            runGLThread(players: players, options: options, loadsDone: loadsDone, post: post)
            post.finish()
        }
        thread.name = "mosaic.gl"
        thread.start()

        var failure: String?
        for await message in messages {
            switch message {
            case .renderersReady:
                // Renderers exist: load the clips (looping), then let the loop start.
                for (player, clip) in zip(players, clips) where Interruption.shared.receivedSignal == nil {
                    do {
                        try await player.perform(.setLoop(.forever))
                        _ = try await player.load(MediaSource(clip))
                    } catch {
                        failure = "\(player.id): \(error)"
                    }
                }
                loadsDone.withLock { $0 = .now }
            case .failed(let reason):
                failure = reason
                loadsDone.withLock { $0 = .now }
            }
        }
        for player in players { await player.shutdown() }
        // Every player's last event, printed, before the program ends (at most 15 s: a player
        // whose core mpv could not destroy within its shutdownTimeout reports it only later).
        if !(await shutDowns.wait(for: players.count, timeout: .seconds(15))) {
            FileHandle.standardError.write(Data("not every player reported its shutdown within 15 s\n".utf8))
        }
        subscription.cancel()
        // A load cut short by Ctrl-C (the renderers closed under it) is no failure.
        if let failure, Interruption.shared.receivedSignal == nil {
            FileHandle.standardError.write(Data("mosaic: \(failure)\n".utf8))
            throw ExitCode(1)
        }
    }
}

/// What the GL thread needs to know.
struct GLThreadOptions: Sendable {
    let width: Int, height: Int
    let headless: Bool
    let json: Bool
    let seconds: Double
    let snapshot: String?
    let start: ContinuousClock.Instant
}

/// What the GL thread tells the program.
enum GLThreadMessage: Sendable {
    case renderersReady
    case failed(String)
}

/// The GL thread: host, renderers, the draw loop, the summary; then renderers closed here,
/// where the context is current, before the players shut down.
func runGLThread(
    players: [Player], options: GLThreadOptions, loadsDone: Guarded<ContinuousClock.Instant?>, post: AsyncStream<GLThreadMessage>.Continuation
) {
    let app: MosaicApp
    do {
        app = try MosaicApp(players: players, options: options)
    } catch {
        post.yield(.failed("\(error)"))
        return
    }
    post.yield(.renderersReady)
    do {
        try app.drawUntilDeadline(loadedAt: loadsDone)
    } catch {
        post.yield(.failed("\(error)"))
    }
    app.finish()
}

/// The app's GL side: its host (a window or offscreen), a framebuffer per player and the
/// players' renderers. Lives on the GL thread only.
final class MosaicApp {
    let options: GLThreadOptions
    var width: Int { options.width }
    var height: Int { options.height }
    let host: GLHost
    let players: [Player]
    var renderers: [OpenGLRenderer] = []
    var tiles: [Tile] = []
    var composed = 0

    /// One player's framebuffer object and what was drawn into it.
    struct Tile {
        var framebuffer: GLuint = 0
        var texture: GLuint = 0
        var newFrames = 0
        var renderTime: Duration = .zero
        var renders = 0
    }

    init(players: [Player], options: GLThreadOptions) throws {
        self.options = options
        self.players = players
        host = try options.headless
            ? GLHost.offscreen(width: options.width, height: options.height)
            : GLHost.window(width: options.width, height: options.height)
        // One framebuffer object per player, a quarter of the window each.
        for _ in players {
            var tile = Tile()
            glGenTextures(1, &tile.texture)
            glBindTexture(GLenum(GL_TEXTURE_2D), tile.texture)
            glTexImage2D(GLenum(GL_TEXTURE_2D), 0, GL_RGBA8, GLsizei(options.width / 2), GLsizei(options.height / 2), 0,
                         GLenum(GL_RGBA), GLenum(GL_UNSIGNED_BYTE), nil)
            glTexParameteri(GLenum(GL_TEXTURE_2D), GLenum(GL_TEXTURE_MIN_FILTER), GL_LINEAR)
            glGenFramebuffers(1, &tile.framebuffer)
            glBindFramebuffer(GLenum(GL_FRAMEBUFFER), tile.framebuffer)
            glFramebufferTexture2D(GLenum(GL_FRAMEBUFFER), GLenum(GL_COLOR_ATTACHMENT0), GLenum(GL_TEXTURE_2D), tile.texture, 0)
            tiles.append(tile)
        }
        glBindFramebuffer(GLenum(GL_FRAMEBUFFER), 0)
        // The renderers, made with the GL context current, before any media is loaded.
        for player in players {
            renderers.append(try player.makeOpenGLRenderer(getProcAddress: host.getProcAddress, onFrameReady: host.wake))
        }
    }

    /// Draws whenever a player has a frame, from the start, until `--seconds` after the clips
    /// are loaded (`loadedAt`), until the window closes, or until SIGINT or SIGTERM.
    func drawUntilDeadline(loadedAt: Guarded<ContinuousClock.Instant?>) throws {
        let duration = Duration.milliseconds(Int(options.seconds * 1000))
        while loadedAt.withLock({ $0 }).map({ ContinuousClock.now < $0 + duration }) ?? true {
            if host.waitForWork(timeoutMilliseconds: 10) == .quit || Interruption.shared.receivedSignal != nil { break }
            guard renderers.contains(where: \.needsRedraw) else { continue }
            // Each player into its own framebuffer; then the four into the grid.
            for index in renderers.indices where renderers[index].needsRedraw {
                let began = ContinuousClock.now
                let isNew = try renderers[index].render(
                    framebuffer: GLint(tiles[index].framebuffer), width: width / 2, height: height / 2, flipY: true)
                tiles[index].renderTime += ContinuousClock.now - began
                tiles[index].renders += 1
                if isNew { tiles[index].newFrames += 1 }
            }
            compose()
            host.present()
            for renderer in renderers { renderer.reportSwap() }
            composed += 1
        }
    }

    /// Prints the summary and writes the snapshot; stops the players (an item with no audio
    /// ends with an error when its video goes), closes the renderers here on the GL thread,
    /// and tears the host down.
    func finish() {
        compose()
        let pixels = readComposed()
        if let snapshot = options.snapshot {
            do { try writePPM(pixels, to: snapshot) } catch {
                FileHandle.standardError.write(Data("mosaic: cannot write \(snapshot): \(error)\n".utf8))
            }
        }
        summarize(pixels: pixels)
        for player in players { try? player.send(.stop) }  // on the GL thread: sent, not awaited
        for renderer in renderers { renderer.close() }
        for var tile in tiles {
            glDeleteFramebuffers(1, &tile.framebuffer)
            glDeleteTextures(1, &tile.texture)
        }
        host.close()
    }

    /// Blits the four framebuffers into the host's framebuffer: tile-1 top left, tile-2 top
    /// right, tile-3 bottom left, tile-4 bottom right (GL's origin is bottom left).
    func compose() {
        let (tw, th) = (GLint(width / 2), GLint(height / 2))
        glBindFramebuffer(GLenum(GL_DRAW_FRAMEBUFFER), host.framebuffer)
        glViewport(0, 0, GLsizei(width), GLsizei(height))
        glClearColor(0, 0, 0, 1)
        glClear(GLbitfield(GL_COLOR_BUFFER_BIT))
        for (index, tile) in tiles.enumerated() {
            let column = GLint(index % 2), row = GLint(index / 2)
            let x = column * tw, y = GLint(height) - (row + 1) * th
            glBindFramebuffer(GLenum(GL_READ_FRAMEBUFFER), tile.framebuffer)
            glBlitFramebuffer(0, 0, tw, th, x, y, x + tw, y + th, GLbitfield(GL_COLOR_BUFFER_BIT), GLenum(GL_NEAREST))
        }
        glBindFramebuffer(GLenum(GL_READ_FRAMEBUFFER), host.framebuffer)
    }

    /// The composed grid as RGB rows, top row first.
    func readComposed() -> [UInt8] {
        var bottomUp = [UInt8](repeating: 0, count: width * height * 3)
        glBindFramebuffer(GLenum(GL_READ_FRAMEBUFFER), host.framebuffer)
        glPixelStorei(GLenum(GL_PACK_ALIGNMENT), 1)
        glReadPixels(0, 0, GLsizei(width), GLsizei(height), GLenum(GL_RGB), GLenum(GL_UNSIGNED_BYTE), &bottomUp)
        var topDown = [UInt8](repeating: 0, count: bottomUp.count)
        let row = width * 3
        for line in 0..<height {
            topDown[(line * row)..<((line + 1) * row)] = bottomUp[((height - 1 - line) * row)..<((height - line) * row)]
        }
        return topDown
    }

    func writePPM(_ pixels: [UInt8], to path: String) throws {
        var data = Data("P6\n\(width) \(height)\n255\n".utf8)
        data.append(contentsOf: pixels)
        try data.write(to: URL(fileURLWithPath: path))
    }

    /// The mean colour of a quadrant's lower middle (below the moving box), as "#rrggbb".
    func quadrantColor(_ pixels: [UInt8], index: Int) -> String {
        let (tw, th) = (width / 2, height / 2)
        let x0 = (index % 2) * tw + tw / 4, y0 = (index / 2) * th + th / 2
        var sums = [0, 0, 0], count = 0
        for y in y0..<(y0 + th / 4) {
            for x in x0..<(x0 + tw / 2) {
                let offset = (y * width + x) * 3
                for channel in 0..<3 { sums[channel] += Int(pixels[offset + channel]) }
                count += 1
            }
        }
        return "#" + sums.map { String(format: "%02x", $0 / max(count, 1)) }.joined()
    }

    func summarize(pixels: [UInt8]) {
        let t = ExampleSupport.seconds(since: options.start)
        for (index, tile) in tiles.enumerated() {
            let milliseconds = tile.renders > 0 ? tile.renderTime.inSeconds * 1000 / Double(tile.renders) : 0
            let color = quadrantColor(pixels, index: index)
            if options.json {
                var line = JSONEventLine(player: players[index].id.rawValue, event: "tileSummary", t: t)
                line.index = index
                line.count = tile.newFrames
                line.p50Ms = (milliseconds * 1000).rounded() / 1000
                line.value = color
                ExampleSupport.printLine(line.json)
            } else {
                ExampleSupport.printLine(String(
                    format: "%@: quadrant %d, %d new frames, %.2f ms per render (mean), colour %@",
                    players[index].id.rawValue, index, tile.newFrames, milliseconds, color))
            }
        }
        if options.json {
            var line = JSONEventLine(player: "", event: "mosaicSummary", t: t)
            line.count = composed
            line.value = host.description
            ExampleSupport.printLine(line.json)
        } else {
            ExampleSupport.printLine("\(composed) grids composed in \(host.description)")
        }
    }
}

/// Where the GL context lives: an SDL window (on X11 or Wayland, wherever SDL runs) or an EGL
/// context with no surface at all, drawing into a framebuffer object. Used on the GL thread only.
final class GLHost: CustomStringConvertible {
    enum Work { case redraw, quit }

    private var window: OpaquePointer?
    private var glContext: SDL_GLContext?
    private var eglDisplay: EGLDisplay?
    private var eglContext: EGLContext?
    private var offscreenFramebuffer: GLuint = 0
    private var offscreenTexture: GLuint = 0
    let description: String
    /// The framebuffer the grid is composed into: the window's (0) or the offscreen one.
    var framebuffer: GLuint { window != nil ? 0 : offscreenFramebuffer }
    /// What the renderers' `onFrameReady` calls (any thread): wakes the loop.
    let wake: @Sendable () -> Void
    let getProcAddress: @Sendable (String) -> UnsafeMutableRawPointer?
    private static let redrawEvent = SDL_RegisterEvents(1)
    private let offscreenWake: DispatchSemaphore?

    private init(description: String, offscreenWake: DispatchSemaphore?, getProcAddress: @escaping @Sendable (String) -> UnsafeMutableRawPointer?) {
        self.description = description
        self.offscreenWake = offscreenWake
        self.getProcAddress = getProcAddress
        if let offscreenWake {
            wake = { offscreenWake.signal() }
        } else {
            let type = Self.redrawEvent
            wake = {
                var event = SDL_Event()
                event.type = type
                SDL_PushEvent(&event)  // thread-safe; wakes SDL_WaitEventTimeout
            }
        }
    }

    enum HostError: Error, CustomStringConvertible {
        case failed(String)
        var description: String { if case .failed(let text) = self { return text }; return "" }
    }

    /// An SDL window with an OpenGL 3.3 context, current on this thread.
    static func window(width: Int, height: Int) throws -> GLHost {
        guard SDL_Init(SDL_INIT_VIDEO | SDL_INIT_EVENTS) == 0 else { throw HostError.failed("SDL_Init: \(String(cString: SDL_GetError()))") }
        SDL_GL_SetAttribute(SDL_GL_DOUBLEBUFFER, 1)
        guard let window = SDL_CreateWindow(
            "PlayerKit mosaic", 0, 0, Int32(width), Int32(height), SDL_WINDOW_OPENGL.rawValue | SDL_WINDOW_SHOWN.rawValue)
        else { throw HostError.failed("SDL_CreateWindow: \(String(cString: SDL_GetError()))") }
        guard let context = SDL_GL_CreateContext(window) else {
            throw HostError.failed("SDL_GL_CreateContext: \(String(cString: SDL_GetError()))")
        }
        SDL_GL_MakeCurrent(window, context)
        SDL_GL_SetSwapInterval(0)  // the loop paces itself on the players' frames
        let renderer = glGetString(GLenum(GL_RENDERER)).map { String(cString: $0) } ?? "unknown"
        let host = GLHost(description: "an SDL window (\(renderer))", offscreenWake: nil) { name in SDL_GL_GetProcAddress(name) }
        host.window = window
        host.glContext = context
        return host
    }

    /// An EGL context on Mesa's surfaceless platform (no display server) and a framebuffer
    /// object of the given size to draw into.
    static func offscreen(width: Int, height: Int) throws -> GLHost {
        guard let display = eglGetPlatformDisplay(EGLenum(EGL_PLATFORM_SURFACELESS_MESA), nil, nil),
              eglInitialize(display, nil, nil) == EGL_TRUE
        else { throw HostError.failed("no EGL surfaceless display (eglGetError 0x\(String(eglGetError(), radix: 16)))") }
        eglBindAPI(EGLenum(EGL_OPENGL_API))
        var attributes: [EGLint] = [EGL_SURFACE_TYPE, EGL_PBUFFER_BIT, EGL_RENDERABLE_TYPE, EGL_OPENGL_BIT, EGL_NONE]
        var config: EGLConfig?
        var count: EGLint = 0
        guard eglChooseConfig(display, &attributes, &config, 1, &count) == EGL_TRUE, count > 0 else {
            throw HostError.failed("no EGL config for OpenGL (eglGetError 0x\(String(eglGetError(), radix: 16)))")
        }
        var contextAttributes: [EGLint] = [EGL_CONTEXT_MAJOR_VERSION, 3, EGL_CONTEXT_MINOR_VERSION, 3, EGL_NONE]
        guard let context = eglCreateContext(display, config, nil, &contextAttributes),
              eglMakeCurrent(display, nil, nil, context) == EGL_TRUE
        else { throw HostError.failed("no EGL context (eglGetError 0x\(String(eglGetError(), radix: 16)))") }
        let renderer = glGetString(GLenum(GL_RENDERER)).map { String(cString: $0) } ?? "unknown"
        let host = GLHost(description: "an offscreen EGL framebuffer (\(renderer))", offscreenWake: DispatchSemaphore(value: 0)) { name in
            unsafeBitCast(eglGetProcAddress(name), to: UnsafeMutableRawPointer?.self)
        }
        host.eglDisplay = display
        host.eglContext = context
        glGenTextures(1, &host.offscreenTexture)
        glBindTexture(GLenum(GL_TEXTURE_2D), host.offscreenTexture)
        glTexImage2D(GLenum(GL_TEXTURE_2D), 0, GL_RGBA8, GLsizei(width), GLsizei(height), 0, GLenum(GL_RGBA), GLenum(GL_UNSIGNED_BYTE), nil)
        glGenFramebuffers(1, &host.offscreenFramebuffer)
        glBindFramebuffer(GLenum(GL_FRAMEBUFFER), host.offscreenFramebuffer)
        glFramebufferTexture2D(GLenum(GL_FRAMEBUFFER), GLenum(GL_COLOR_ATTACHMENT0), GLenum(GL_TEXTURE_2D), host.offscreenTexture, 0)
        return host
    }

    /// Waits until a renderer asks for a redraw (or the timeout passes); `.quit` when the
    /// window was closed.
    func waitForWork(timeoutMilliseconds: Int32) -> Work {
        if let offscreenWake {
            _ = offscreenWake.wait(timeout: .now() + .milliseconds(Int(timeoutMilliseconds)))
            return .redraw
        }
        var event = SDL_Event()
        if SDL_WaitEventTimeout(&event, timeoutMilliseconds) != 0 {
            repeat {
                if event.type == SDL_QUIT.rawValue { return .quit }
            } while SDL_PollEvent(&event) != 0
        }
        return .redraw
    }

    /// Shows the composed grid (swaps the window's buffers; offscreen: finishes drawing).
    func present() {
        if let window { SDL_GL_SwapWindow(window) } else { glFinish() }
    }

    func close() {
        if let window {
            SDL_GL_DeleteContext(glContext)
            SDL_DestroyWindow(window)
            SDL_Quit()
        } else if let eglDisplay {
            glDeleteFramebuffers(1, &offscreenFramebuffer)
            glDeleteTextures(1, &offscreenTexture)
            eglMakeCurrent(eglDisplay, nil, nil, nil)
            eglDestroyContext(eglDisplay, eglContext)
            eglTerminate(eglDisplay)
        }
    }
}
