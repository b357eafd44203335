import Foundation
import Glibc
import PlayerKitCore
import PlayerKitSupport

/// An ``OrientationSource`` that follows an X11 screen's rotation through the RandR extension.
///
/// Each iteration opens its own connection to the X server, yields the screen's current
/// orientation first, then one element per change, as RandR reports screen changes (no
/// polling). Repeated values are not yielded. Iteration ends when the consuming task is
/// cancelled; it throws ``FullscreenPolicyError/orientationSourceUnavailable(_:)`` when there is
/// no display to follow (no `DISPLAY`, the server cannot be reached, no RandR extension, or
/// libX11/libXrandr are not installed).
///
/// **Mapping.** The screen's *natural* shape is its size with the rotation undone. A naturally
/// wide screen (a desktop monitor) is ``Orientation/landscapeLeft`` unrotated,
/// ``Orientation/portrait`` turned left (RandR's 90°), ``Orientation/landscapeRight`` upside down
/// (180°) and ``Orientation/portraitUpsideDown`` turned right (270°). A naturally tall screen (a
/// phone panel) is ``Orientation/portrait`` unrotated, then ``Orientation/landscapeLeft``,
/// ``Orientation/portraitUpsideDown`` and ``Orientation/landscapeRight``. The rotation is the one
/// RandR reports for the screen (its 1.1 view, which follows the primary output).
///
/// libX11 and libXrandr are loaded when an iteration starts (libmpv already depends on both),
/// so PlayerKit does not need X11 headers to build.
///
/// ```swift
/// let policy = FullscreenPolicy()
/// let task = policy.follow(RandROrientationSource())
/// ```
public struct RandROrientationSource: OrientationSource {
    /// The X display to follow, e.g. ":0"; nil for the `DISPLAY` environment variable.
    let display: String?

    /// A source for `display` (nil: the `DISPLAY` environment variable).
    public init(display: String? = nil) {
        self.display = display
    }

    /// The screen's orientation now, read once.
    /// - Throws: ``FullscreenPolicyError/orientationSourceUnavailable(_:)``.
    public func currentOrientation() throws(FullscreenPolicyError) -> Orientation {
        let connection = try RandRConnection(display: display)
        defer { connection.close() }
        return connection.orientation()
    }

    /// Iterates over orientations: the current one, then each change.
    public struct AsyncIterator: AsyncIteratorProtocol {
        var base: AsyncThrowingStream<Orientation, any Error>.Iterator

        /// The next orientation; nil once the consuming task is cancelled.
        /// - Throws: ``FullscreenPolicyError/orientationSourceUnavailable(_:)``.
        public mutating func next() async throws -> Orientation? {
            try await base.next()
        }
    }

    /// Starts following the screen: opens a connection on a thread of its own, closed when the
    /// iteration ends.
    public func makeAsyncIterator() -> AsyncIterator {
        let display = self.display
        let (stream, continuation) = AsyncThrowingStream<Orientation, any Error>.makeStream()
        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0 else {
            continuation.finish(throwing: FullscreenPolicyError.orientationSourceUnavailable(
                "cannot create a wake-up pipe: \(String(cString: strerror(errno)))"))
            return AsyncIterator(base: stream.makeAsyncIterator())
        }
        let (wakeRead, wakeWrite) = (fds[0], fds[1])
        continuation.onTermination = { _ in
            var byte: UInt8 = 1
            _ = write(wakeWrite, &byte, 1)
        }
        let thread = Thread {
            defer { close(wakeRead); close(wakeWrite) }
            let connection: RandRConnection
            do {
                connection = try RandRConnection(display: display)
            } catch {
                continuation.finish(throwing: error)
                return
            }
            defer { connection.close() }
            connection.watchScreenChanges()
            var last = connection.orientation()
            continuation.yield(last)
            while true {
                switch connection.waitForEvents(orWake: wakeRead) {
                case .events:
                    guard connection.processEvents() else { continue }
                    let now = connection.orientation()
                    if now != last {
                        last = now
                        continuation.yield(now)
                    }
                case .woken:
                    continuation.finish()
                    return
                case .lost:
                    continuation.finish(throwing: FullscreenPolicyError.orientationSourceUnavailable(
                        "lost the connection to X display \"\(connection.name)\""))
                    return
                }
            }
        }
        thread.name = "PlayerKit.randr"
        thread.start()
        return AsyncIterator(base: stream.makeAsyncIterator())
    }

    /// Maps a RandR rotation and the screen's current size to an orientation (see the type's
    /// documentation). `rotation` is RandR's bit mask: 1 = 0°, 2 = 90°, 4 = 180°, 8 = 270°.
    static func orientation(rotation: UInt16, width: Int, height: Int) -> Orientation {
        let quarterTurns: Int
        switch rotation & 0x0F {
        case 2: quarterTurns = 1
        case 4: quarterTurns = 2
        case 8: quarterTurns = 3
        default: quarterTurns = 0
        }
        // Undo the rotation to find the natural shape.
        let naturallyWide = quarterTurns % 2 == 0 ? width >= height : height >= width
        let wideOrder: [Orientation] = [.landscapeLeft, .portrait, .landscapeRight, .portraitUpsideDown]
        let tallOrder: [Orientation] = [.portrait, .landscapeLeft, .portraitUpsideDown, .landscapeRight]
        return (naturallyWide ? wideOrder : tallOrder)[quarterTurns]
    }
}

// MARK: - libX11 / libXrandr, loaded at run time

/// The few Xlib and Xrandr functions the source needs, resolved with `dlsym`.
private struct XFunctions: @unchecked Sendable {
    typealias OpenDisplay = @convention(c) (UnsafePointer<CChar>?) -> OpaquePointer?
    typealias DisplayInt = @convention(c) (OpaquePointer?) -> Int32
    typealias DisplayScreenInt = @convention(c) (OpaquePointer?, Int32) -> Int32
    typealias RootWindow = @convention(c) (OpaquePointer?, Int32) -> UInt
    typealias NextEvent = @convention(c) (OpaquePointer?, UnsafeMutableRawPointer?) -> Int32
    typealias QueryExtension = @convention(c) (OpaquePointer?, UnsafeMutablePointer<Int32>?, UnsafeMutablePointer<Int32>?) -> Int32
    typealias SelectInput = @convention(c) (OpaquePointer?, UInt, Int32) -> Void
    typealias Rotations = @convention(c) (OpaquePointer?, Int32, UnsafeMutablePointer<UInt16>?) -> UInt16
    typealias UpdateConfiguration = @convention(c) (UnsafeMutableRawPointer?) -> Int32
    typealias IOErrorExitHandler = @convention(c) (OpaquePointer?, UnsafeMutableRawPointer?) -> Void
    typealias SetIOErrorExitHandler = @convention(c) (OpaquePointer?, IOErrorExitHandler?, UnsafeMutableRawPointer?) -> Void
    typealias IOErrorHandler = @convention(c) (OpaquePointer?) -> Int32
    typealias SetIOErrorHandler = @convention(c) (IOErrorHandler?) -> IOErrorHandler?

    let openDisplay: OpenDisplay
    let closeDisplay: DisplayInt
    let defaultScreen: DisplayInt
    let connectionNumber: DisplayInt
    let pending: DisplayInt
    let flush: DisplayInt
    let displayWidth: DisplayScreenInt
    let displayHeight: DisplayScreenInt
    let rootWindow: RootWindow
    let nextEvent: NextEvent
    let queryExtension: QueryExtension
    let selectInput: SelectInput
    let rotations: Rotations
    let updateConfiguration: UpdateConfiguration
    /// libX11 1.7 and later: a per-connection replacement for the `exit(1)` Xlib performs
    /// when a connection breaks.
    let setIOErrorExitHandler: SetIOErrorExitHandler?
    let setIOErrorHandler: SetIOErrorHandler

    /// Loaded once per process; the libraries stay loaded.
    static let loaded: Result<XFunctions, FullscreenPolicyError> = load()

    private static func load() -> Result<XFunctions, FullscreenPolicyError> {
        func open(_ name: String) -> Result<UnsafeMutableRawPointer, FullscreenPolicyError> {
            guard let handle = dlopen(name, RTLD_NOW | RTLD_LOCAL) else {
                let reason = dlerror().map { String(cString: $0) } ?? "unknown error"
                return .failure(.orientationSourceUnavailable("cannot load \(name): \(reason)"))
            }
            return .success(handle)
        }
        func symbol<T>(_ handle: UnsafeMutableRawPointer, _ name: String, as type: T.Type) throws(FullscreenPolicyError) -> T {
            guard let pointer = dlsym(handle, name) else {
                throw .orientationSourceUnavailable("symbol \(name) is missing")
            }
            return unsafeBitCast(pointer, to: type)
        }
        do {
            let x11 = try open("libX11.so.6").get()
            let xrandr = try open("libXrandr.so.2").get()
            return .success(XFunctions(
                openDisplay: try symbol(x11, "XOpenDisplay", as: OpenDisplay.self),
                closeDisplay: try symbol(x11, "XCloseDisplay", as: DisplayInt.self),
                defaultScreen: try symbol(x11, "XDefaultScreen", as: DisplayInt.self),
                connectionNumber: try symbol(x11, "XConnectionNumber", as: DisplayInt.self),
                pending: try symbol(x11, "XPending", as: DisplayInt.self),
                flush: try symbol(x11, "XFlush", as: DisplayInt.self),
                displayWidth: try symbol(x11, "XDisplayWidth", as: DisplayScreenInt.self),
                displayHeight: try symbol(x11, "XDisplayHeight", as: DisplayScreenInt.self),
                rootWindow: try symbol(x11, "XRootWindow", as: RootWindow.self),
                nextEvent: try symbol(x11, "XNextEvent", as: NextEvent.self),
                queryExtension: try symbol(xrandr, "XRRQueryExtension", as: QueryExtension.self),
                selectInput: try symbol(xrandr, "XRRSelectInput", as: SelectInput.self),
                rotations: try symbol(xrandr, "XRRRotations", as: Rotations.self),
                updateConfiguration: try symbol(xrandr, "XRRUpdateConfiguration", as: UpdateConfiguration.self),
                setIOErrorExitHandler: try? symbol(x11, "XSetIOErrorExitHandler", as: SetIOErrorExitHandler.self),
                setIOErrorHandler: try symbol(x11, "XSetIOErrorHandler", as: SetIOErrorHandler.self)))
        } catch {
            return .failure(error)
        }
    }
}

/// One connection to an X server, used by one thread at a time.
private final class RandRConnection {
    private let x: XFunctions
    private let display: OpaquePointer
    private let screen: Int32
    private let eventBase: Int32
    /// The display name, for messages.
    let name: String
    /// Room for one XEvent (a union of 24 longs).
    private let event = UnsafeMutableRawPointer.allocate(byteCount: 24 * MemoryLayout<Int>.size, alignment: MemoryLayout<Int>.alignment)

    init(display name: String?) throws(FullscreenPolicyError) {
        let chosen = name ?? ProcessInfo.processInfo.environment["DISPLAY"]
        guard let chosen, !chosen.isEmpty else {
            event.deallocate()
            throw .orientationSourceUnavailable("no X display: DISPLAY is not set")
        }
        let x: XFunctions
        switch XFunctions.loaded {
        case .success(let functions): x = functions
        case .failure(let error):
            event.deallocate()
            throw error
        }
        guard let display = x.openDisplay(chosen) else {
            event.deallocate()
            throw .orientationSourceUnavailable("cannot open X display \"\(chosen)\"")
        }
        // A broken connection must end the iteration, not the process: Xlib's default I/O
        // error handler and its default exit handler both call exit(1).
        BrokenConnections.install(x)
        BrokenConnections.adopt(display)
        x.setIOErrorExitHandler?(display, { _, _ in }, nil)
        var eventBase: Int32 = 0
        var errorBase: Int32 = 0
        guard x.queryExtension(display, &eventBase, &errorBase) != 0 else {
            _ = x.closeDisplay(display)
            event.deallocate()
            throw .orientationSourceUnavailable("X display \"\(chosen)\" has no RandR extension")
        }
        self.x = x
        self.display = display
        self.screen = x.defaultScreen(display)
        self.eventBase = eventBase
        self.name = chosen
    }

    func close() {
        _ = x.closeDisplay(display)
        BrokenConnections.forget(display)
        event.deallocate()
    }

    /// The screen's orientation from its current rotation and size.
    func orientation() -> Orientation {
        var current: UInt16 = 1
        _ = x.rotations(display, screen, &current)
        return RandROrientationSource.orientation(
            rotation: current, width: Int(x.displayWidth(display, screen)), height: Int(x.displayHeight(display, screen)))
    }

    /// Asks the server for screen-change notifications (RRScreenChangeNotifyMask).
    func watchScreenChanges() {
        x.selectInput(display, x.rootWindow(display, screen), 1)
        _ = x.flush(display)
    }

    enum Wait { case events, woken, lost }

    /// Blocks until the X connection has input, `wake` becomes readable (the iteration ended),
    /// or the connection is lost. A lost connection is seen here, before Xlib reads from it, so
    /// Xlib's fatal I/O error path (which exits the process) is not taken.
    func waitForEvents(orWake wake: Int32) -> Wait {
        if x.pending(display) > 0 { return .events }
        let hangUp = Int16(POLLHUP | POLLERR | POLLNVAL) | Int16(truncatingIfNeeded: 0x2000) // POLLRDHUP
        var fds = [pollfd(fd: x.connectionNumber(display), events: Int16(POLLIN) | Int16(truncatingIfNeeded: 0x2000), revents: 0),
                   pollfd(fd: wake, events: Int16(POLLIN), revents: 0)]
        while true {
            let result = poll(&fds, 2, -1)
            if result < 0, errno == EINTR { continue }
            guard result > 0 else { return .lost }
            if fds[1].revents != 0 { return .woken }
            if fds[0].revents & hangUp != 0 { return .lost }
            return .events
        }
    }

    /// Reads every queued event; true when one of them was a screen change.
    func processEvents() -> Bool {
        var screenChanged = false
        while x.pending(display) > 0 {
            _ = x.nextEvent(display, event)
            let type = event.load(as: Int32.self)
            if type == eventBase { // eventBase + RRScreenChangeNotify (0)
                _ = x.updateConfiguration(event)
                screenChanged = true
            }
        }
        return screenChanged
    }
}

/// Xlib's I/O error handler is process-wide. PlayerKit's handler returns quietly for the
/// source's own connections and hands every other connection (the app's, mpv's) to the handler
/// that was installed before, so their behaviour does not change.
private enum BrokenConnections {
    private struct State: @unchecked Sendable {
        var installed = false
        var previous: XFunctions.IOErrorHandler?
        var ours: Set<OpaquePointer> = []
    }
    private static let state = Locked(State())

    static func install(_ x: XFunctions) {
        state.withLock { state in
            guard !state.installed else { return }
            state.installed = true
            state.previous = x.setIOErrorHandler { display in
                let (ours, previous) = BrokenConnections.state.withLock { state in
                    (display.map { state.ours.contains($0) } ?? false, state.previous)
                }
                if ours { return 0 }
                return previous?(display) ?? 0
            }
        }
    }

    static func adopt(_ display: OpaquePointer) { state.withLock { _ = $0.ours.insert(display) } }
    static func forget(_ display: OpaquePointer) { state.withLock { _ = $0.ours.remove(display) } }
}
