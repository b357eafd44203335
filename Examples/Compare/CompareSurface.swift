import CGTK
import GTKSupport
import PlayerKit
import Synchronization

/// How the two pictures are shown.
enum ViewMode: String, CaseIterable, Sendable {
    /// A on the left half, B on the right half, each letterboxed.
    case sideBySide = "side"
    /// One picture: A left of the divider, B right of it.
    case wipe
    /// One picture: the absolute difference of A and B per colour channel (black where equal).
    case difference
    /// A alone (A's fullscreen).
    case onlyA = "a"
    /// B alone (B's fullscreen).
    case onlyB = "b"

    /// The number the fragment shader knows the mode by.
    var shaderValue: GLint {
        switch self {
        case .sideBySide: 0
        case .wipe: 1
        case .difference: 2
        case .onlyA: 3
        case .onlyB: 4
        }
    }
}

/// Set by mpv's threads when a player has a frame, cleared on the main loop: one queued redraw
/// at a time, however many frames arrive.
final class RedrawRequest: Sendable {
    private let queued = Atomic(false)

    /// Whether a redraw should be queued now (none is queued yet). Any thread.
    func claim() -> Bool { queued.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged }

    /// The queued redraw ran. Main loop.
    func done() { queued.store(false, ordering: .releasing) }
}

/// Both players drawn with PlayerKit's OpenGL path into one `GtkGLArea`, composed there.
///
/// mpv draws each player into a framebuffer object of the app's (a texture), then one small
/// shader puts the two textures on screen side by side, as a wipe or as their difference. Both
/// renderers live in the area's own GL context: mpv's renderer belongs to the context that was
/// current when it was made, and the wipe and the difference need both pictures in one context.
@MainActor
final class CompareSurface {
    /// The GL area, once ``makeArea()`` made it (GTK must be initialized first).
    private(set) var area: Widget?
    private let players: [Player]
    private var renderers: [OpenGLRenderer] = []
    private var targets: [RenderTarget] = [RenderTarget(), RenderTarget()]
    private var program: GLuint = 0
    private var vertexArray: GLuint = 0
    private var uniforms: (mode: GLint, divider: GLint, width: GLint, a: GLint, b: GLint) = (-1, -1, -1, -1, -1)
    private let redraw = RedrawRequest()

    /// What is shown; changing it redraws.
    var mode: ViewMode = .sideBySide { didSet { queueRender() } }
    /// The wipe's divider, from 0 (left edge: all B) to 1 (right edge: all A).
    var divider: Double = 0.5 { didSet { queueRender() } }
    /// Called once the renderers exist (the moment to load media), or with why they could not be made.
    var onReady: (Result<Void, AppFailure>) -> Void = { _ in }
    /// Called when drawing fails (a player shut down under the surface, mpv's renderer failed).
    var onDrawFailure: (String) -> Void = { _ in }
    /// How many times the area was drawn, and how many of those had a new frame of each player.
    private(set) var draws = 0
    private(set) var newFrames = [0, 0]

    /// An offscreen picture of one player.
    struct RenderTarget {
        var framebuffer: GLuint = 0
        var texture: GLuint = 0
        var width = 0
        var height = 0
    }

    init(players: [Player]) {
        precondition(players.count == 2, "the surface shows two players")
        self.players = players
    }

    /// Makes the GL area, once GTK is initialized (in the application's `activate`).
    func makeArea() -> Widget {
        if let area { return area }
        let area = gtk_gl_area_new()!
        self.area = area
        let glArea = gtkCast(area, to: GtkGLArea.self)
        gtk_gl_area_set_has_depth_buffer(glArea, 0)
        gtk_gl_area_set_has_stencil_buffer(glArea, 0)
        gtk_gl_area_set_auto_render(glArea, 0)  // drawn when a player has a frame or the view changes
        gtk_widget_set_hexpand(area, 1)
        gtk_widget_set_vexpand(area, 1)
        gtk_widget_set_size_request(area, 320, 180)
        Signal.on(area, "realize") { [unowned self] in realize() }
        Signal.on(area, "unrealize") { [unowned self] in unrealize() }
        Signal.onRender(area) { [unowned self] in render() }
        return area
    }

    /// The area was destroyed with its window.
    func forgetArea() { area = nil }

    /// The area's size in pixels (its size in the layout times the screen's scale).
    var pixelSize: (width: Int, height: Int) {
        guard let area else { return (0, 0) }
        let scale = Int(gtk_widget_get_scale_factor(area))
        return (Int(gtk_widget_get_width(area)) * scale, Int(gtk_widget_get_height(area)) * scale)
    }

    func queueRender() {
        guard let area else { return }
        gtk_gl_area_queue_render(gtkCast(area, to: GtkGLArea.self))
    }

    // MARK: GL context lifetime

    /// The area has its GL context: compile the shader and make the two renderers (before any
    /// media is loaded, as mpv's render API asks).
    private func realize() {
        guard let area else { return }
        let glArea = gtkCast(area, to: GtkGLArea.self)
        gtk_gl_area_make_current(glArea)
        if let error = gtk_gl_area_get_error(glArea) {
            onReady(.failure(.openGL(String(cString: error.pointee.message))))
            return
        }
        let usesES = gdk_gl_context_get_use_es(gtk_gl_area_get_context(glArea)) != 0
        do {
            program = try Shader.program(es: usesES)
        } catch {
            onReady(.failure(error))
            return
        }
        uniforms = (
            glGetUniformLocation(program, "mode"), glGetUniformLocation(program, "divider"),
            glGetUniformLocation(program, "width"), glGetUniformLocation(program, "a"), glGetUniformLocation(program, "b")
        )
        glGenVertexArrays(1, &vertexArray)
        // snippet: renderers
        let redraw = redraw
        do {
            for player in players {
                let renderer = try player.makeOpenGLRenderer(
                    getProcAddress: { name in cgtk_gl_proc_address(name) },
                    onFrameReady: { [weak self] in
                        // One of mpv's threads: only schedule the redraw.
                        guard redraw.claim() else { return }
                        MainLoop.post { [weak self] in
                            redraw.done()
                            self?.queueRender()
                        }
                    })
                renderers.append(renderer)
            }
        } catch {
            onReady(.failure(.renderer("\(error)")))
            return
        }
        onReady(.success(()))
        // end snippet
    }

    /// The GL context goes (the window closes): free mpv's renderers with it current, then the
    /// app's own GL objects.
    private func unrealize() {
        guard let area else { return }
        gtk_gl_area_make_current(gtkCast(area, to: GtkGLArea.self))
        // snippet: unrealize
        // Stop the players before their renderers go: a playing item would otherwise fail
        // ("video output initialization failed") when mpv loses its renderer.
        for player in players { try? player.send(.stop) }
        for renderer in renderers { renderer.close() }
        // end snippet
        renderers = []
        for index in targets.indices {
            glDeleteFramebuffers(1, &targets[index].framebuffer)
            glDeleteTextures(1, &targets[index].texture)
            targets[index] = RenderTarget()
        }
        glDeleteVertexArrays(1, &vertexArray)
        glDeleteProgram(program)
        program = 0
    }

    // MARK: Drawing

    private func render() -> Bool {
        let screen = cgtk_current_framebuffer()  // GtkGLArea's own framebuffer, never 0
        let (width, height) = pixelSize
        glClearColor(0.08, 0.08, 0.08, 1)
        glClear(GLbitfield(GL_COLOR_BUFFER_BIT))
        guard renderers.count == 2, width >= 2, height >= 1 else { return true }
        // snippet: render
        // Each player at the size it is shown at: half the width side by side.
        let paneWidth = mode == .sideBySide ? width / 2 : width
        for index in 0..<2 where shows(index) {
            prepareTarget(index, width: paneWidth, height: height)
            do {
                if try renderers[index].render(
                    framebuffer: GLint(targets[index].framebuffer), width: paneWidth, height: height, flipY: true)
                {
                    newFrames[index] += 1
                }
            } catch {
                onDrawFailure("\(error)")
                return true
            }
        }
        // end snippet
        // The two textures onto the area's framebuffer, composed by the shader.
        glBindFramebuffer(GLenum(GL_FRAMEBUFFER), GLuint(screen))
        glViewport(0, 0, GLsizei(width), GLsizei(height))
        glDisable(GLenum(GL_BLEND))
        glUseProgram(program)
        glBindVertexArray(vertexArray)
        for index in 0..<2 {
            glActiveTexture(GLenum(GL_TEXTURE0 + Int32(index)))
            glBindTexture(GLenum(GL_TEXTURE_2D), targets[index].texture)
        }
        glUniform1i(uniforms.a, 0)
        glUniform1i(uniforms.b, 1)
        glUniform1i(uniforms.mode, mode.shaderValue)
        glUniform1f(uniforms.divider, GLfloat(divider))
        glUniform1f(uniforms.width, GLfloat(width))
        glDrawArrays(GLenum(GL_TRIANGLES), 0, 3)
        glBindVertexArray(0)
        glUseProgram(0)
        glActiveTexture(GLenum(GL_TEXTURE0))
        draws += 1
        return true
    }

    /// Whether player `index` is part of the picture in the current mode.
    private func shows(_ index: Int) -> Bool {
        switch mode {
        case .onlyA: index == 0
        case .onlyB: index == 1
        default: true
        }
    }

    /// Makes target `index` a framebuffer object with a texture of `width` x `height`.
    private func prepareTarget(_ index: Int, width: Int, height: Int) {
        if targets[index].framebuffer == 0 {
            glGenFramebuffers(1, &targets[index].framebuffer)
            glGenTextures(1, &targets[index].texture)
        }
        guard targets[index].width != width || targets[index].height != height else { return }
        glBindTexture(GLenum(GL_TEXTURE_2D), targets[index].texture)
        glTexImage2D(GLenum(GL_TEXTURE_2D), 0, GL_RGBA8, GLsizei(width), GLsizei(height), 0, GLenum(GL_RGBA), GLenum(GL_UNSIGNED_BYTE), nil)
        glTexParameteri(GLenum(GL_TEXTURE_2D), GLenum(GL_TEXTURE_MIN_FILTER), GL_NEAREST)
        glTexParameteri(GLenum(GL_TEXTURE_2D), GLenum(GL_TEXTURE_MAG_FILTER), GL_NEAREST)
        glTexParameteri(GLenum(GL_TEXTURE_2D), GLenum(GL_TEXTURE_WRAP_S), GL_CLAMP_TO_EDGE)
        glTexParameteri(GLenum(GL_TEXTURE_2D), GLenum(GL_TEXTURE_WRAP_T), GL_CLAMP_TO_EDGE)
        glBindFramebuffer(GLenum(GL_FRAMEBUFFER), targets[index].framebuffer)
        glFramebufferTexture2D(GLenum(GL_FRAMEBUFFER), GLenum(GL_COLOR_ATTACHMENT0), GLenum(GL_TEXTURE_2D), targets[index].texture, 0)
        targets[index].width = width
        targets[index].height = height
    }

    /// The wipe divider's position for a point `x` pixels from the area's left edge (layout units).
    func dividerPosition(atX x: Double) -> Double {
        guard let area else { return 0.5 }
        let width = Double(gtk_widget_get_width(area))
        return width > 0 ? min(max(x / width, 0), 1) : 0.5
    }
}

/// The composing shader: a triangle that covers the area, and a fragment shader that picks each
/// pixel from A, B or both.
enum Shader {
    static let vertex = """
        out vec2 uv;
        void main() {
            vec2 corner = vec2(float((gl_VertexID << 1) & 2), float(gl_VertexID & 2));
            uv = corner;
            gl_Position = vec4(corner * 2.0 - 1.0, 0.0, 1.0);
        }
        """

    static let fragment = """
        in vec2 uv;
        out vec4 color;
        uniform sampler2D a;
        uniform sampler2D b;
        uniform int mode;
        uniform float divider;
        uniform float width;
        void main() {
            if (mode == 0) {
                color = uv.x < 0.5 ? texture(a, vec2(uv.x * 2.0, uv.y)) : texture(b, vec2(uv.x * 2.0 - 1.0, uv.y));
            } else if (mode == 1) {
                color = uv.x < divider ? texture(a, uv) : texture(b, uv);
                if (abs(uv.x - divider) * width < 1.0) color = vec4(1.0, 1.0, 0.0, 1.0);
            } else if (mode == 2) {
                color = vec4(abs(texture(a, uv).rgb - texture(b, uv).rgb), 1.0);
            } else if (mode == 3) {
                color = texture(a, uv);
            } else {
                color = texture(b, uv);
            }
        }
        """

    /// Compiles and links the program for desktop GL 3.2 core or OpenGL ES 3.
    static func program(es: Bool) throws(AppFailure) -> GLuint {
        let header = es ? "#version 300 es\nprecision mediump float;\n" : "#version 150\n"
        let vertexShader = try compile(GLenum(GL_VERTEX_SHADER), header + vertex)
        let fragmentShader = try compile(GLenum(GL_FRAGMENT_SHADER), header + fragment)
        let program = glCreateProgram()
        glAttachShader(program, vertexShader)
        glAttachShader(program, fragmentShader)
        glLinkProgram(program)
        glDeleteShader(vertexShader)
        glDeleteShader(fragmentShader)
        var linked: GLint = 0
        glGetProgramiv(program, GLenum(GL_LINK_STATUS), &linked)
        guard linked != 0 else {
            var log = [GLchar](repeating: 0, count: 1024)
            glGetProgramInfoLog(program, GLsizei(log.count), nil, &log)
            glDeleteProgram(program)
            throw .openGL("the composing shader did not link: \(Shader.text(log))")
        }
        return program
    }

    /// A GL info log (a NUL-terminated buffer) as text.
    static func text(_ log: [GLchar]) -> String {
        String(decoding: log.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    private static func compile(_ type: GLenum, _ source: String) throws(AppFailure) -> GLuint {
        let shader = glCreateShader(type)
        source.withCString { text in
            var pointer: UnsafePointer<GLchar>? = text
            glShaderSource(shader, 1, &pointer, nil)
        }
        glCompileShader(shader)
        var compiled: GLint = 0
        glGetShaderiv(shader, GLenum(GL_COMPILE_STATUS), &compiled)
        guard compiled != 0 else {
            var log = [GLchar](repeating: 0, count: 1024)
            glGetShaderInfoLog(shader, GLsizei(log.count), nil, &log)
            glDeleteShader(shader)
            throw .openGL("a composing shader did not compile: \(Shader.text(log))")
        }
        return shader
    }
}
