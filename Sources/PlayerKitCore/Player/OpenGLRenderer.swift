import Foundation
import PlayerKitSupport

/// Draws one player's video with OpenGL into the app's own context: a window of SDL, GTK4's
/// `GtkGLArea`, Qt's `QOpenGLWidget`, a Wayland EGL surface, or an offscreen framebuffer. Made
/// by ``Player/makeOpenGLRenderer(getProcAddress:onFrameReady:)`` on a player created with
/// ``PlayerConfiguration/VideoOutput/frames``, with the app's GL context current.
///
/// ```swift
/// // On the GL thread, context current:
/// let renderer = try player.makeOpenGLRenderer(
///     getProcAddress: { name in SDL_GL_GetProcAddress(name) },
///     onFrameReady: { pushRedrawEvent() })          // any thread: only schedule a redraw
/// // In the redraw handler, on the GL thread:
/// try renderer.render(framebuffer: 0, width: w, height: h)
/// SDL_GL_SwapWindow(window); renderer.reportSwap()
/// ```
///
/// Several renderers (one per player) can draw into one window: render each into its own
/// framebuffer object and compose them (the `mosaic` example blits four into a 2x2 grid).
///
/// **Threading.** ``render(framebuffer:width:height:flipY:)``, ``reportSwap()`` and
/// ``close()`` must be called on the thread where the app's GL context (the one current at
/// creation) is current. `onFrameReady` runs on one of mpv's threads: it should schedule a
/// redraw (post an event, queue a render) and return; it must not render. No lock of
/// PlayerKit's is held while it or `getProcAddress` runs, so both may call the player, and
/// `onFrameReady` may ``close()`` the renderer (mpv frees it on a PlayerKit thread once the
/// callback returned, with no GL context current).
///
/// **Lifetime.** Call ``close()`` on the GL thread before the player shuts down and before
/// the GL context goes. If the player shuts down first, PlayerKit frees the renderer on its
/// own thread, with no GL context current: mpv's GL objects are then left in the app's context
/// (Mesa tolerates this; close first to be safe everywhere). Releasing the renderer closes it
/// on the releasing thread.
public final class OpenGLRenderer: Sendable {
    /// The player whose video this draws.
    let playerID: PlayerID
    private let context: RenderContext
    private let pending: Locked<Bool>

    init(
        core: PlayerCore, getProcAddress: @escaping @Sendable (String) -> UnsafeMutableRawPointer?,
        onFrameReady: @escaping @Sendable () -> Void
    ) throws(FrameOutputError) {
        playerID = core.id
        let pending = Locked(true)
        self.pending = pending
        context = try RenderContext.attach(to: core.handle, api: .openGL, getProcAddress: getProcAddress) {
            pending.withLock { $0 = true }
            AppCodeMark.calling { onFrameReady() }
        }
    }

    deinit { context.free(.closed) }

    /// Whether mpv asked for a redraw since the last ``render(framebuffer:width:height:flipY:)``
    /// (for apps that poll from a display loop instead of reacting to `onFrameReady`).
    public var needsRedraw: Bool { pending.withLock { $0 } }

    /// Draws the player's current frame into `framebuffer` (0: the window's default
    /// framebuffer), filling `width` x `height` pixels (letterboxed to the video's aspect
    /// ratio). Returns whether mpv had a new frame (false: the last frame was drawn again).
    /// Never waits for the frame's display time, so a display loop driving several players is
    /// never held up by one of them.
    /// - Parameters:
    ///   - framebuffer: the OpenGL framebuffer object to draw into; 0 for the window's own.
    ///   - width: the width to fill, in pixels (1 to 8192).
    ///   - height: the height to fill, in pixels (1 to 8192).
    ///   - flipY: true for a window's default framebuffer (GL's origin is bottom-left);
    ///     false for a framebuffer object whose texture the app samples top-down.
    /// - Throws: ``FrameOutputError/invalidSize(width:height:)``,
    ///   ``FrameOutputError/outputClosed(_:)``, ``FrameOutputError/playerShutDown(_:)``,
    ///   ``FrameOutputError/renderFailed(playerID:_:)``.
    @discardableResult
    public func render(framebuffer: Int32 = 0, width: Int, height: Int, flipY: Bool = true) throws(FrameOutputError) -> Bool {
        guard FrameFormat.sizeRange.contains(width), FrameFormat.sizeRange.contains(height) else {
            throw .invalidSize(width: width, height: height)
        }
        pending.withLock { $0 = false }
        let hasNewFrame = try context.update()
        try context.renderOpenGL(framebuffer: framebuffer, width: width, height: height, flipY: flipY, waitForDisplayTime: false)
        return hasNewFrame
    }

    /// Tells mpv the frame was put on screen (after the app's buffer swap), which improves its
    /// timing. Optional, but call it after every swap or never.
    public func reportSwap() { context.reportSwap() }

    /// Frees mpv's renderer (on the GL thread, context current). Video of the player stops:
    /// while the player has video loaded, this waits for mpv to take it down
    /// (`mpv_render_context_free`). The player stays usable and can get a new renderer.
    /// Idempotent.
    public func close() { context.free(.closed) }

    /// Whether the renderer was closed or its player shut down.
    var isClosed: Bool { !context.isAlive }
}
