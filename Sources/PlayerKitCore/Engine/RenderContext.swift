internal import CMPV
import Foundation
import PlayerKitSupport

/// One `mpv_render_context`: the only owner of its pointer, for the software and the OpenGL
/// renderer alike.
///
/// mpv's rules, kept here:
/// - Only one `mpv_render_*` call at a time per context: every call holds `lock`.
/// - Nothing calls mpv from the update callback: it only runs ``UpdateTarget/fire()``, which
///   the owner makes a signal (wake a render thread, tell the app a frame wants drawing).
/// - The context is freed before its core: ``MPVHandle/destroy()`` frees the attached context
///   first, so a player dropped without ``Player/shutdown()`` is safe too.
/// - The render thread never waits on a blocking mpv call: these calls are the only mpv calls
///   it makes.
final class RenderContext: @unchecked Sendable {
    // @unchecked: `raw` is only read and written under `lock`.
    enum API: Sendable { case software, openGL }

    /// Why the context is gone.
    enum Ending: Sendable { case closed, coreDestroyed }

    let api: API
    let playerID: PlayerID
    private let lock = NSLock()
    /// Signalled when a ``free(_:)`` in progress is done, for a second caller that must not
    /// return before (the core's destruction: mpv aborts if the core goes first). Waited on
    /// with no lock of PlayerKit's held.
    private let freed = MonotonicCondition()
    /// Under `freed`'s lock: where the context is in its freeing.
    private var freeProgress = FreeProgress.live
    private enum FreeProgress { case live, freeing, freed }
    private var raw: OpaquePointer?
    private var ending: Ending?
    /// Retained for the context's life: the update callback's target, and for OpenGL the
    /// get-proc-address function mpv may call while the context exists.
    private let updateTarget: Unmanaged<UpdateTarget>
    private let procAddressBox: Unmanaged<ProcAddressBox>?

    /// What the update callback runs: a signal, never mpv.
    final class UpdateTarget: Sendable {
        let fire: @Sendable () -> Void
        init(_ fire: @escaping @Sendable () -> Void) { self.fire = fire }
    }

    final class ProcAddressBox: Sendable {
        let lookUp: @Sendable (String) -> UnsafeMutableRawPointer?
        init(_ lookUp: @escaping @Sendable (String) -> UnsafeMutableRawPointer?) { self.lookUp = lookUp }
    }

    private init(api: API, playerID: PlayerID, raw: OpaquePointer, updateTarget: Unmanaged<UpdateTarget>,
                 procAddressBox: Unmanaged<ProcAddressBox>?) {
        self.api = api
        self.playerID = playerID
        self.raw = raw
        self.updateTarget = updateTarget
        self.procAddressBox = procAddressBox
    }

    deinit {
        free(.closed)
        updateTarget.release()
        procAddressBox?.release()
    }

    /// Creates a context on `handle`'s core and attaches it there (one per core).
    /// - Parameter getProcAddress: nil for the software renderer; for OpenGL, the app's lookup.
    static func attach(
        to handle: MPVHandle, api: API, getProcAddress: (@Sendable (String) -> UnsafeMutableRawPointer?)?,
        onUpdate: @escaping @Sendable () -> Void
    ) throws(FrameOutputError) -> RenderContext {
        let target = Unmanaged.passRetained(UpdateTarget(onUpdate))
        let box = getProcAddress.map { Unmanaged.passRetained(ProcAddressBox($0)) }
        let result: Result<RenderContext, FrameOutputError> = handle.attachRenderContext { raw -> Result<RenderContext, FrameOutputError> in
            var context: OpaquePointer?
            let status: Int32
            switch api {
            case .software:
                status = "sw".withCString { name in
                    var params = [
                        mpv_render_param(type: MPV_RENDER_PARAM_API_TYPE, data: UnsafeMutableRawPointer(mutating: name)),
                        mpv_render_param(type: MPV_RENDER_PARAM_INVALID, data: nil),
                    ]
                    return mpv_render_context_create(&context, raw, &params)
                }
            case .openGL:
                var initParams = mpv_opengl_init_params(
                    get_proc_address: playerKitGetProcAddress, get_proc_address_ctx: box?.toOpaque())
                status = "opengl".withCString { name in
                    withUnsafeMutablePointer(to: &initParams) { initPointer in
                        var params = [
                            mpv_render_param(type: MPV_RENDER_PARAM_API_TYPE, data: UnsafeMutableRawPointer(mutating: name)),
                            mpv_render_param(type: MPV_RENDER_PARAM_OPENGL_INIT_PARAMS, data: UnsafeMutableRawPointer(initPointer)),
                            mpv_render_param(type: MPV_RENDER_PARAM_INVALID, data: nil),
                        ]
                        return mpv_render_context_create(&context, raw, &params)
                    }
                }
            }
            guard status >= 0, let context else {
                return .failure(.rendererUnavailable(playerID: handle.playerID, MPVHandle.error(status)))
            }
            let renderContext = RenderContext(
                api: api, playerID: handle.playerID, raw: context, updateTarget: target, procAddressBox: box)
            mpv_render_context_set_update_callback(context, playerKitRenderUpdate, target.toOpaque())
            return .success(renderContext)
        }
        switch result {
        case .success(let context):
            return context
        case .failure(let error):
            target.release()
            box?.release()
            throw error
        }
    }

    /// The error for a call on a context that is gone.
    private func goneError() -> FrameOutputError {
        ending == .coreDestroyed ? .playerShutDown(playerID) : .outputClosed(playerID)
    }

    /// Whether the context still exists.
    var isAlive: Bool { lock.withLock { raw != nil } }

    /// Throws why the context is gone, if it is.
    func checkAlive() throws(FrameOutputError) {
        lock.lock()
        defer { lock.unlock() }
        if raw == nil { throw goneError() }
    }

    /// `mpv_render_context_update`: whether a new frame should be rendered.
    func update() throws(FrameOutputError) -> Bool {
        lock.lock()
        defer { lock.unlock() }
        guard let raw else { throw goneError() }
        return mpv_render_context_update(raw) & UInt64(MPV_RENDER_UPDATE_FRAME.rawValue) != 0
    }

    /// What mpv says about the next frame to render.
    struct NextFrame: Sendable {
        /// Whether there is one (a new frame or a redraw request).
        var isPresent: Bool
        /// Whether it is a new video frame (not a redraw or a repeat of the last one).
        var isNew: Bool
        /// When it should be shown, in `mpv_get_time_us` microseconds; 0 when not timed.
        var targetTime: Int64
    }

    /// `MPV_RENDER_PARAM_NEXT_FRAME_INFO`.
    func nextFrame() throws(FrameOutputError) -> NextFrame {
        lock.lock()
        defer { lock.unlock() }
        guard let raw else { throw goneError() }
        var info = mpv_render_frame_info()
        let status = withUnsafeMutablePointer(to: &info) { pointer in
            mpv_render_context_get_info(raw, mpv_render_param(type: MPV_RENDER_PARAM_NEXT_FRAME_INFO, data: UnsafeMutableRawPointer(pointer)))
        }
        guard status >= 0 else { return NextFrame(isPresent: false, isNew: false, targetTime: 0) }
        let present = info.flags & UInt64(MPV_RENDER_FRAME_INFO_PRESENT.rawValue) != 0
        let redraw = info.flags & UInt64(MPV_RENDER_FRAME_INFO_REDRAW.rawValue | MPV_RENDER_FRAME_INFO_REPEAT.rawValue) != 0
        return NextFrame(isPresent: present, isNew: present && !redraw, targetTime: info.target_time)
    }

    /// Software rendering into `pointer` (which must hold `stride * height` bytes).
    /// - Parameter waitForDisplayTime: let mpv block until the frame's display time (pacing).
    func renderSoftware(
        width: Int, height: Int, format: String, stride: Int, pointer: UnsafeMutableRawPointer, waitForDisplayTime: Bool
    ) throws(FrameOutputError) {
        lock.lock()
        defer { lock.unlock() }
        guard let raw else { throw goneError() }
        var size: [Int32] = [Int32(width), Int32(height)]
        var strideValue = stride
        var block: Int32 = waitForDisplayTime ? 1 : 0
        let status = format.withCString { formatName in
            size.withUnsafeMutableBufferPointer { sizePointer in
                withUnsafeMutablePointer(to: &strideValue) { stridePointer in
                    withUnsafeMutablePointer(to: &block) { blockPointer in
                        var params = [
                            mpv_render_param(type: MPV_RENDER_PARAM_SW_SIZE, data: UnsafeMutableRawPointer(sizePointer.baseAddress)),
                            mpv_render_param(type: MPV_RENDER_PARAM_SW_FORMAT, data: UnsafeMutableRawPointer(mutating: formatName)),
                            mpv_render_param(type: MPV_RENDER_PARAM_SW_STRIDE, data: UnsafeMutableRawPointer(stridePointer)),
                            mpv_render_param(type: MPV_RENDER_PARAM_SW_POINTER, data: pointer),
                            mpv_render_param(type: MPV_RENDER_PARAM_BLOCK_FOR_TARGET_TIME, data: UnsafeMutableRawPointer(blockPointer)),
                            mpv_render_param(type: MPV_RENDER_PARAM_INVALID, data: nil),
                        ]
                        return mpv_render_context_render(raw, &params)
                    }
                }
            }
        }
        guard status >= 0 else { throw .renderFailed(playerID: playerID, MPVHandle.error(status)) }
    }

    /// OpenGL rendering into framebuffer `fbo` (0: the default framebuffer) of the given size.
    /// The caller's GL context must be current.
    func renderOpenGL(framebuffer fbo: Int32, width: Int, height: Int, flipY: Bool, waitForDisplayTime: Bool) throws(FrameOutputError) {
        lock.lock()
        defer { lock.unlock() }
        guard let raw else { throw goneError() }
        var target = mpv_opengl_fbo(fbo: fbo, w: Int32(width), h: Int32(height), internal_format: 0)
        var flip: Int32 = flipY ? 1 : 0
        var block: Int32 = waitForDisplayTime ? 1 : 0
        let status = withUnsafeMutablePointer(to: &target) { targetPointer in
            withUnsafeMutablePointer(to: &flip) { flipPointer in
                withUnsafeMutablePointer(to: &block) { blockPointer in
                    var params = [
                        mpv_render_param(type: MPV_RENDER_PARAM_OPENGL_FBO, data: UnsafeMutableRawPointer(targetPointer)),
                        mpv_render_param(type: MPV_RENDER_PARAM_FLIP_Y, data: UnsafeMutableRawPointer(flipPointer)),
                        mpv_render_param(type: MPV_RENDER_PARAM_BLOCK_FOR_TARGET_TIME, data: UnsafeMutableRawPointer(blockPointer)),
                        mpv_render_param(type: MPV_RENDER_PARAM_INVALID, data: nil),
                    ]
                    return mpv_render_context_render(raw, &params)
                }
            }
        }
        guard status >= 0 else { throw .renderFailed(playerID: playerID, MPVHandle.error(status)) }
    }

    /// `mpv_render_context_report_swap`; ignored once the context is gone.
    func reportSwap() {
        lock.lock()
        defer { lock.unlock() }
        if let raw { mpv_render_context_report_swap(raw) }
    }

    /// Frees the context (idempotent). Waits for a render call in progress. Video of the
    /// current item stops; the core stays usable.
    /// Fires the update target once more afterwards (outside the lock), so a render thread
    /// waiting for an update wakes and finds the context gone.
    func free(_ reason: Ending) {
        // Taken out under the lock (no render call is in progress once we hold it, and none
        // starts once `raw` is nil), freed after it with no lock held: clearing the update
        // callback waits for a callback mpv is running, and that callback runs the app's
        // `onFrameReady`, which may call `render`, `isClosed` or `close` and so take this lock or
        // come back here. A second caller while a free is in progress (a renderer closed on its
        // thread while the core is destroyed on another) waits until the context is gone: the
        // core must not be destroyed before (a crash at SIGTERM in playerkit-mosaic, make test,
        // 2026-11-26). Only the app's own callback does not wait: the first caller waits for it.
        freed.lock()
        switch freeProgress {
        case .freed:
            freed.unlock()
            return
        case .freeing:
            if !AppCodeMark.isRunningAppCode {
                // mpv's own free, on the first caller's thread: no bound of PlayerKit's (the core
                // must not go before it), each wait on the monotonic clock, as a subscription's
                // cancel waits for its handler.
                while freeProgress != .freed { freed.wait(timeout: .seconds(1)) }
            }
            freed.unlock()
            return
        case .live:
            freeProgress = .freeing
            freed.unlock()
        }
        let taken = lock.withLock { () -> OpaquePointer? in
            let context = raw
            raw = nil
            ending = reason
            return context
        }
        if UpdateCallbackMark.isInside {
            // Closed from the update callback (the app's `onFrameReady`): mpv holds its update
            // lock while it runs it, and clearing the callback takes that lock. The context is
            // closed already (`raw` is nil); mpv frees it once the callback has returned.
            let address = Int(bitPattern: taken)
            DispatchQueue.global().async { self.release(OpaquePointer(bitPattern: address)) }
            return
        }
        release(taken)
    }

    /// Frees a context taken out by ``free(_:)`` and says it is gone (to a second ``free(_:)``
    /// waiting, and to a render thread waiting for an update).
    private func release(_ taken: OpaquePointer?) {
        if let taken {
            mpv_render_context_set_update_callback(taken, nil, nil)
            mpv_render_context_free(taken)
        }
        freed.lock()
        freeProgress = .freed
        freed.broadcast()
        freed.unlock()
        if taken != nil { updateTarget.takeUnretainedValue().fire() }
    }
}

/// The update callback handed to mpv: runs on mpv's threads, calls no mpv function.
private func playerKitRenderUpdate(_ context: UnsafeMutableRawPointer?) {
    guard let context else { return }
    let target = Unmanaged<RenderContext.UpdateTarget>.fromOpaque(context).takeUnretainedValue()
    UpdateCallbackMark.inside { target.fire() }
}

/// Marks the thread on which mpv runs a render context's update callback (with its update lock
/// held), so a ``RenderContext/free(_:)`` called from there does not clear the callback itself.
private enum UpdateCallbackMark {
    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        pthread_key_create(&key, nil)
        return key
    }()

    static var isInside: Bool { pthread_getspecific(key) != nil }

    static func inside(_ body: () -> Void) {
        let previous = pthread_getspecific(key)
        pthread_setspecific(key, UnsafeRawPointer(bitPattern: 1))
        defer { pthread_setspecific(key, previous) }
        body()
    }
}

/// The get-proc-address function handed to mpv's OpenGL renderer: the app's lookup.
private func playerKitGetProcAddress(_ context: UnsafeMutableRawPointer?, _ name: UnsafePointer<CChar>?) -> UnsafeMutableRawPointer? {
    guard let context, let name else { return nil }
    let box = Unmanaged<RenderContext.ProcAddressBox>.fromOpaque(context).takeUnretainedValue()
    let symbol = String(cString: name)
    return AppCodeMark.calling { box.lookUp(symbol) }
}
