import Foundation
import Logging
import PlayerKitSupport

/// Software frames of one player, rendered by mpv into memory PlayerKit reuses, at the size
/// and pixel format the app chose. Made by ``Player/makeFrameOutput(_:delivery:)`` on a player
/// created with ``PlayerConfiguration/VideoOutput/frames``.
///
/// ```swift
/// let player = try await Player.create(configuration: .init(videoOutput: .frames))
/// let output = try player.makeFrameOutput(FrameFormat(width: 640, height: 360, pixelFormat: .bgr0))
/// _ = try await player.load("Media/clip-a.mp4")
/// for await frame in output.frames {
///     draw(frame)                      // frame.withUnsafeBytes { ... }, frame.info.videoTime, ...
/// }
/// ```
///
/// **Two deliveries.** ``FrameDelivery/stream``: a thread PlayerKit owns renders every frame
/// when mpv makes it due and hands it to ``frames`` (one consumer) and ``latestFrame``. A slow
/// consumer is never queued up: it gets the newest frame, whose ``FrameInfo/framesMissed``
/// says how many it did not see. ``FrameDelivery/pull``: nothing renders until the app's display
/// loop asks, with ``renderIfDue(into:stride:)`` (into memory the app owns, such as a locked SDL
/// texture) or ``nextFrameIfDue()``; mpv then paces video to those calls.
///
/// **Threading.** Every method may be called from any thread. mpv's rules are kept inside:
/// nothing calls mpv from its update callback, one render call at a time, and the render thread
/// never waits on the core.
///
/// **Lifetime.** ``close()`` (or releasing the output) frees mpv's renderer; the player keeps
/// playing without video and can get a new output, which takes effect from the next load. When
/// the player shuts down, or is dropped, first, the renderer goes with it (before the core, as
/// mpv requires), ``frames`` ends, and calls throw ``FrameOutputError/playerShutDown(_:)``.
public final class FrameOutput: Sendable {
    /// The player whose frames these are.
    let playerID: PlayerID
    /// Size and layout of every frame.
    public let format: FrameFormat
    /// How frames are handed out.
    let delivery: FrameDelivery
    private let engine: SoftwareRenderer

    init(core: PlayerCore, format: FrameFormat, delivery: FrameDelivery) throws(FrameOutputError) {
        playerID = core.id
        self.format = format
        self.delivery = delivery
        engine = try SoftwareRenderer(core: core, format: format, delivery: delivery)
    }

    deinit { engine.close() }

    /// The rendered frames, newest first when the reader is slow (``FrameDelivery/stream``
    /// only; for a pull output it is empty): an ``EventStream`` whose buffer keeps the newest
    /// frame, and whose frames say in ``FrameInfo/framesMissed`` how many the reader did not see.
    /// One consumer: every read of this property is the same stream; iterate it from one task.
    /// It ends when the output closes or the player shuts down, and on ``EventStream/cancel()``
    /// (for good: the output renders on, into ``latestFrame``).
    public var frames: EventStream<VideoFrame> { EventStream(channel: engine.frames, endsOnRelease: false) }

    /// The newest rendered frame, whether or not a reader of ``frames`` took it (stream
    /// delivery); for a pull output, the last frame ``nextFrameIfDue()`` returned. Never blocks
    /// on mpv; a display loop can poll it.
    public var latestFrame: VideoFrame? { engine.latest }

    /// Sets (or, with nil, removes) a handler that receives every rendered frame, on the thread
    /// that rendered it (PlayerKit's render thread, or the thread of a pull call), right after
    /// it is rendered: no frame is missed, whatever a reader of ``frames`` does. The handler
    /// must return quickly and must not call the player or mpv (it holds up the next frame);
    /// keep the frame or copy what you need and hand the work elsewhere. For frame-exact
    /// bookkeeping (timing, counting, analysis); show frames from ``frames`` or ``latestFrame``.
    public func setFrameHandler(_ handler: (@Sendable (VideoFrame) -> Void)?) {
        // The old handler is released after the lock: what it captured may run a deinit.
        let box = handler.map(FrameHandler.init)
        let old = engine.frameHandler.withLock { current in
            defer { current = box }
            return current
        }
        _ = old
    }

    /// Frames rendered so far.
    var renderedFrameCount: UInt64 { engine.counters.withLock { $0.rendered } }

    /// How many frame buffers the output has allocated in its life. Steady rendering reuses
    /// them: this stays at a handful unless the app keeps many frames alive at once.
    var allocatedBufferCount: Int { engine.allocatedBufferCount }

    /// Frames rendered that no reader of ``frames`` ever received (a slow reader's misses).
    var missedFrameCount: UInt64 { UInt64(engine.frames.droppedCount) }

    /// Pull delivery: renders the current frame into a buffer of the output's pool when a new
    /// frame is due (mpv queued one and its display time has come), else returns nil. Never
    /// waits for the frame's display time.
    /// - Throws: ``FrameOutputError/wrongDelivery(expected:actual:)`` on a stream output,
    ///   ``FrameOutputError/outputClosed(_:)``, ``FrameOutputError/playerShutDown(_:)``,
    ///   ``FrameOutputError/renderFailed(playerID:_:)``.
    public func nextFrameIfDue() throws(FrameOutputError) -> VideoFrame? {
        try engine.pullFrame()
    }

    /// Pull delivery: renders the current frame into memory the app owns, when a new frame is
    /// due; returns its info, or nil when none is due. `destination` must hold
    /// `stride * format.height` bytes; `stride` must cover a row and be a multiple of 4 (a
    /// multiple of 64 and a 64-byte aligned pointer are fastest).
    /// - Throws: ``FrameOutputError/invalidDestination(stride:reason:)`` and the errors of
    ///   ``nextFrameIfDue()``.
    public func renderIfDue(into destination: UnsafeMutableRawPointer, stride: Int) throws(FrameOutputError) -> FrameInfo? {
        try engine.pullInto(destination, stride: stride)
    }

    /// Frees mpv's renderer: rendering stops, ``frames`` ends, later calls throw
    /// ``FrameOutputError/outputClosed(_:)``. Waits for a render in progress and, while the
    /// player has video loaded, for mpv to take that video down (`mpv_render_context_free`, on
    /// the calling thread). Idempotent.
    public func close() { engine.close() }

    /// Whether the output was closed or its player shut down.
    var isClosed: Bool { !engine.context.isAlive }

    /// The output at one moment (as ``PlayerSnapshot`` is for a player): for tests. An app sees
    /// the output closed when ``frames`` ends, and the rendered count in each frame's
    /// ``FrameInfo/sequenceNumber``.
    struct Snapshot: Sendable, Hashable {
        /// Whether the output is closed (``FrameOutput/close()``, or its player shut down):
        /// it renders nothing more.
        let isClosed: Bool
        /// How many frames mpv rendered into the output so far: the ``FrameInfo/sequenceNumber``
        /// of the newest (a frame drawn again counts again; frames the reader missed count too).
        let framesRendered: UInt64
    }

    /// Whether the output is closed and how many frames it rendered. Never blocks on mpv; safe
    /// from any thread.
    var snapshot: Snapshot {
        Snapshot(isClosed: isClosed, framesRendered: engine.counters.withLock { $0.rendered })
    }
}

extension VideoFrame {
    func withFramesMissed(_ missed: UInt64) -> VideoFrame {
        let old = info
        return VideoFrame(
            info: FrameInfo(
                playerID: old.playerID, format: old.format, stride: old.stride, videoTime: old.videoTime,
                sequenceNumber: old.sequenceNumber, framesMissed: missed, isNewFrame: old.isNewFrame,
                renderedAt: old.renderedAt),
            buffer: buffer)
    }
}

/// The engine side of a ``FrameOutput``: the render context, the buffer pool, and (stream
/// delivery) the render thread.
final class SoftwareRenderer: @unchecked Sendable {
    // @unchecked: `wake`'s fields are read and written under `wake`; the rest is immutable or Locked.
    let context: RenderContext
    /// The frames for ``FrameOutput/frames``: the newest one waits; a frame after a gap says how
    /// many were dropped before it.
    let frames = EventChannel<VideoFrame>(limit: 1, markGap: { frame, dropped in frame = frame.withFramesMissed(UInt64(dropped)) })
    private let core: PlayerCore
    private let format: FrameFormat
    private let delivery: FrameDelivery
    private let pool: FrameBufferPool
    private let latestFrame = Locked<VideoFrame?>(nil)
    /// ``FrameOutput/setFrameHandler(_:)``.
    /// The app's frame handler, in a class (``FrameHandler``).
    let frameHandler = Locked<FrameHandler?>(nil)
    let counters = Locked(Counters())
    private let wake = MonotonicCondition()
    private var updatePending = false
    private var closing = false
    /// How long the idle render thread waits for mpv's update callback before it looks again
    /// whether its context still lives: the wake-up that ``RenderContext/free(_:)`` sends is not
    /// the only way the thread learns that it is over.
    static let idleCheckInterval: Duration = .seconds(1)
    /// Whether this output still feeds the player's frame clock (``PlayerCore/observeFrameClock(_:)``).
    private let observingClock = Locked(true)
    /// How long a render thread waits for the position of a new frame before using the last one
    /// (a little over a frame at 30 fps; mpv renders ahead of display time by up to 50 ms).
    private static let positionWait: Duration = .milliseconds(40)

    struct Counters: Sendable {
        var rendered: UInt64 = 0
        /// The frame clock's change count used for the previous new frame.
        var clockUpdatesUsed: UInt64 = 0
    }

    init(core: PlayerCore, format: FrameFormat, delivery: FrameDelivery) throws(FrameOutputError) {
        self.core = core
        self.format = format
        self.delivery = delivery
        pool = FrameBufferPool(byteCount: format.byteCount)
        let signal = RenderSignal()
        context = try RenderContext.attach(to: core.handle, api: .software, getProcAddress: nil) { signal.fire() }
        // Frames are stamped with positions: ask for every one while the output lives.
        core.observeFrameClock(true)
        signal.target = WeakReference(self)
        if delivery == .stream {
            let thread = Thread { [self] in renderLoop() }
            thread.name = "PlayerKit.render.\(core.id)"
            thread.start()
        } else {
            frames.finish()
        }
    }

    /// The update callback's work: note that mpv has something, wake the render thread.
    fileprivate func noteUpdate() {
        wake.lock()
        updatePending = true
        wake.signal()
        wake.unlock()
    }

    var latest: VideoFrame? { latestFrame.withLock { $0 } }

    var allocatedBufferCount: Int { pool.allocations.withLock { $0 } }

    func close() {
        wake.lock()
        closing = true
        wake.signal()
        wake.unlock()
        context.free(.closed)
        stopObservingClock()
        frames.finish()
    }

    private func stopObservingClock() {
        let wasObserving = observingClock.withLock { observing -> Bool in
            defer { observing = false }
            return observing
        }
        if wasObserving { core.observeFrameClock(false) }
    }

    // MARK: Stream delivery

    private func renderLoop() {
        while true {
            wake.lock()
            var idle = false
            while !updatePending && !closing {
                if !wake.wait(timeout: Self.idleCheckInterval) {
                    idle = !updatePending && !closing
                    break
                }
            }
            let stop = closing
            updatePending = false
            wake.unlock()
            if stop { break }
            // Nothing came for a while: end if the context is gone (checked outside `wake`, so
            // the render lock is never taken while `wake` is held), else wait again.
            if idle {
                if context.isAlive { continue }
                break
            }
            do throws(FrameOutputError) {
                guard try context.update() else { continue }
                let next = try context.nextFrame()
                guard next.isPresent else { continue }
                let buffer = pool.take()
                let frame = VideoFrame(info: try render(into: buffer.pointer, stride: format.stride, next: next, paced: true), buffer: buffer)
                latestFrame.withLock { $0 = frame }
                if let handler = frameHandler.withLock({ $0 }) { AppCodeMark.calling { handler.call(frame) } }
                frames.send(frame)
            } catch .renderFailed(_, let error) {
                core.frameLogger.warning("render failed", metadata: ["error": "\(error)"])
            } catch {
                break  // closed, or the player shut down
            }
        }
        frames.finish()
        stopObservingClock()
    }

    /// Renders the next frame into `pointer` and numbers it and stamps it with its media time.
    /// - Parameter paced: let mpv hold the call until the frame's display time, and wait
    ///   (briefly) for the frame's position (the render thread); false for an app's pull.
    private func render(
        into pointer: UnsafeMutableRawPointer, stride: Int, next: RenderContext.NextFrame, paced: Bool
    ) throws(FrameOutputError) -> FrameInfo {
        try context.renderSoftware(
            width: format.width, height: format.height, format: format.pixelFormat.name,
            stride: stride, pointer: pointer, waitForDisplayTime: paced)
        let renderedAt = ContinuousClock.now
        let used = counters.withLock { $0.clockUpdatesUsed }
        var reading = core.frameClock.read()
        if next.isNew, paced, reading.updates == used {
            reading = core.frameClock.waitForChange(after: used, timeout: Self.positionWait)
        }
        let number = counters.withLock { counters -> UInt64 in
            counters.rendered += 1
            if next.isNew { counters.clockUpdatesUsed = reading.updates }
            return counters.rendered
        }
        return FrameInfo(
            playerID: core.id, format: format, stride: stride, videoTime: reading.position, sequenceNumber: number,
            framesMissed: 0, isNewFrame: next.isNew, renderedAt: renderedAt)
    }

    // MARK: Pull delivery

    /// Whether a frame is due: mpv has one and its display time has come.
    private func frameIsDue() throws(FrameOutputError) -> RenderContext.NextFrame? {
        try context.checkAlive()
        guard delivery == .pull else { throw .wrongDelivery(expected: .pull, actual: delivery) }
        _ = try context.update()
        let next = try context.nextFrame()
        guard next.isPresent else { return nil }
        if next.targetTime > 0, let now = core.handle.timeMicroseconds(), next.targetTime > now { return nil }
        return next
    }

    func pullFrame() throws(FrameOutputError) -> VideoFrame? {
        guard let next = try frameIsDue() else { return nil }
        let buffer = pool.take()
        let frame = VideoFrame(info: try render(into: buffer.pointer, stride: format.stride, next: next, paced: false), buffer: buffer)
        latestFrame.withLock { $0 = frame }
        if let handler = frameHandler.withLock({ $0 }) { AppCodeMark.calling { handler.call(frame) } }
        return frame
    }

    func pullInto(_ destination: UnsafeMutableRawPointer, stride: Int) throws(FrameOutputError) -> FrameInfo? {
        try context.checkAlive()
        let row = format.width * format.pixelFormat.bytesPerPixel
        guard stride >= row else { throw .invalidDestination(stride: stride, reason: "a row of \(format.width) pixels needs \(row) bytes") }
        guard stride % format.pixelFormat.bytesPerPixel == 0 else {
            throw .invalidDestination(stride: stride, reason: "not a multiple of \(format.pixelFormat.bytesPerPixel) bytes")
        }
        guard Int(bitPattern: destination) % format.pixelFormat.bytesPerPixel == 0 else {
            throw .invalidDestination(stride: stride, reason: "the pointer is not aligned to \(format.pixelFormat.bytesPerPixel) bytes")
        }
        guard let next = try frameIsDue() else { return nil }
        return try render(into: destination, stride: stride, next: next, paced: false)
    }
}

/// What the update callback holds: a weak link to the renderer (the context outlives neither).
final class RenderSignal: @unchecked Sendable {
    // @unchecked: `target` is set once, before the context can call back... and read under `lock`.
    private let lock = NSLock()
    private var _target: WeakReference<SoftwareRenderer>?
    var target: WeakReference<SoftwareRenderer>? {
        get { lock.withLock { _target } }
        set { lock.withLock { _target = newValue } }
    }

    func fire() { target?.object?.noteUpdate() }
}

/// An app's frame handler (``FrameOutput/setFrameHandler(_:)``), in a class: a closure kept in a
/// `Locked` directly comes out of `withLock { $0 }` wrapped in two more reabstraction thunks each
/// time (the inout write-back stores the wrapped one), so every frame ran through a chain that
/// grew by two thunks per frame (WakeupSignalTests shows the same for the pump's drain).
final class FrameHandler: Sendable {
    let call: @Sendable (VideoFrame) -> Void
    init(_ call: @escaping @Sendable (VideoFrame) -> Void) { self.call = call }
}
