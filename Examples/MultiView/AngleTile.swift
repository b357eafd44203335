import CGTK
import GTKSupport
import PlayerKit
import Synchronization

/// One angle's picture: a `GtkGLArea` into which PlayerKit's OpenGL path draws the angle's
/// player, with a label over it (the angle's ID and its measured skew).
///
/// mpv draws straight into the area's framebuffer at the area's size: each angle has its own GL
/// context (its area's), and its renderer is made when the area gets that context (before any
/// media loads, as mpv's render API asks) and closed when it loses it.
@MainActor
final class AngleTile {
    let player: Player
    /// The overlay: the GL area with the label on top; what the grid lays out.
    private(set) var widget: Widget?
    private var area: Widget?
    private var label: Widget?
    private var renderer: OpenGLRenderer?
    private let redraw = Redraw()
    /// Called once the renderer exists (or with why it could not be made).
    var onReady: (Result<Void, MultiViewFailure>) -> Void = { _ in }
    /// Called when drawing fails.
    var onDrawFailure: (String) -> Void = { _ in }
    /// Called on a click on the tile.
    var onClick: () -> Void = {}
    /// How many times the area was drawn with a new frame.
    private(set) var newFrames = 0

    /// Set by mpv's thread when the player has a frame, cleared on the main loop: one queued
    /// redraw at a time, however many frames arrive.
    private final class Redraw: Sendable {
        private let queued = Atomic(false)
        func claim() -> Bool { queued.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged }
        func done() { queued.store(false, ordering: .releasing) }
    }

    init(player: Player) {
        self.player = player
    }

    /// Makes the widgets, once GTK is initialized.
    func makeWidget() -> Widget {
        if let widget { return widget }
        let overlay = gtk_overlay_new()!
        let area = gtk_gl_area_new()!
        let glArea = gtkCast(area, to: GtkGLArea.self)
        gtk_gl_area_set_has_depth_buffer(glArea, 0)
        gtk_gl_area_set_has_stencil_buffer(glArea, 0)
        gtk_gl_area_set_auto_render(glArea, 0)  // drawn when the player has a frame
        gtk_widget_set_hexpand(area, 1)
        gtk_widget_set_vexpand(area, 1)
        gtk_widget_set_size_request(area, 160, 90)
        Signal.on(area, "realize") { [unowned self] in realize() }
        Signal.on(area, "unrealize") { [unowned self] in unrealize() }
        Signal.onRender(area) { [unowned self] in render() }
        let click = gtk_gesture_click_new()!
        Signal.onPressed(UnsafeMutableRawPointer(click)) { [unowned self] _, _, _ in onClick() }
        gtk_widget_add_controller(area, click)
        gtk_overlay_set_child(OpaquePointer(overlay), area)
        let label = gtk_label_new(player.id.rawValue)!
        gtk_widget_set_halign(label, GTK_ALIGN_START)
        gtk_widget_set_valign(label, GTK_ALIGN_START)
        gtk_widget_set_margin_start(label, 6)
        gtk_widget_set_margin_top(label, 4)
        gtk_widget_add_css_class(label, "osd")  // GTK's own translucent on-screen style
        gtk_overlay_add_overlay(OpaquePointer(overlay), label)
        self.area = area
        self.label = label
        widget = overlay
        return overlay
    }

    /// The widgets are gone with their window.
    func forget() {
        widget = nil
        area = nil
        label = nil
    }

    /// Shows `text` over the picture.
    func setLabel(_ text: String) {
        guard let label else { return }
        gtk_label_set_text(OpaquePointer(label), text)
    }

    /// The picture's size in pixels.
    var pixelSize: (width: Int, height: Int) {
        guard let area else { return (0, 0) }
        let scale = Int(gtk_widget_get_scale_factor(area))
        return (Int(gtk_widget_get_width(area)) * scale, Int(gtk_widget_get_height(area)) * scale)
    }

    private func queueRender() {
        guard let area else { return }
        gtk_gl_area_queue_render(gtkCast(area, to: GtkGLArea.self))
    }

    private func realize() {
        guard let area else { return }
        let glArea = gtkCast(area, to: GtkGLArea.self)
        gtk_gl_area_make_current(glArea)
        if let error = gtk_gl_area_get_error(glArea) {
            onReady(.failure(.openGL(String(cString: error.pointee.message))))
            return
        }
        let redraw = redraw
        do {
            renderer = try player.makeOpenGLRenderer(
                getProcAddress: { name in cgtk_gl_proc_address(name) },
                onFrameReady: { [weak self] in
                    // One of mpv's threads: only schedule the redraw.
                    guard redraw.claim() else { return }
                    MainLoop.post { [weak self] in
                        redraw.done()
                        self?.queueRender()
                    }
                })
        } catch {
            onReady(.failure(.renderer("\(player.id): \(error)")))
            return
        }
        onReady(.success(()))
    }

    private func unrealize() {
        guard let area else { return }
        gtk_gl_area_make_current(gtkCast(area, to: GtkGLArea.self))
        // Stop the player before its renderer goes: a playing item would otherwise fail when mpv
        // loses its renderer.
        try? player.send(.stop)
        renderer?.close()
        renderer = nil
    }

    private func render() -> Bool {
        let screen = cgtk_current_framebuffer()  // GtkGLArea's own framebuffer, never 0
        let (width, height) = pixelSize
        glClearColor(0, 0, 0, 1)
        glClear(GLbitfield(GL_COLOR_BUFFER_BIT))
        guard let renderer, width >= 1, height >= 1 else { return true }
        do {
            if try renderer.render(framebuffer: screen, width: width, height: height, flipY: true) { newFrames += 1 }
        } catch {
            onDrawFailure("\(player.id): \(error)")
        }
        return true
    }
}

/// Why the app could not show its angles.
enum MultiViewFailure: Error, CustomStringConvertible {
    case openGL(String)
    case renderer(String)
    case media(String)

    var description: String {
        switch self {
        case .openGL(let reason): "OpenGL: \(reason)"
        case .renderer(let reason): "an angle's OpenGL renderer: \(reason)"
        case .media(let reason): "media: \(reason)"
        }
    }
}
