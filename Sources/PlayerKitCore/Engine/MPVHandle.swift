internal import CMPV
import Foundation
import PlayerKitSupport
import Synchronization

/// Serializes every core creation in the process: `LC_NUMERIC` is process-global and
/// `mpv_create` refuses to work unless it is "C", and starting many cores at the same
/// instant has crashed some mpv builds (mpv #13185, #13228).
/// The value counts the cores created so far (a zero-sized value would share its address
/// with the lock's own storage and confuse ThreadSanitizer's access tracking).
private let creationLock = Locked<UInt64>(0)

/// One libmpv core (`mpv_handle`) and the only owner of its pointer.
///
/// Every call goes through a read-write gate: ordinary calls (from any thread, concurrently,
/// as libmpv allows) hold it shared; ``destroy()`` holds it exclusively, so it waits for calls
/// in flight and every later call fails with ``PlayerError/playerShutDown(_:)``. No mpv
/// function can therefore reach a destroyed handle.
///
/// No call waits for a destruction: once ``destroy()`` has begun, calls fail at once, as they
/// do after it (`mpv_terminate_destroy` lasts as long as mpv's threads take to stop, which a
/// ``MediaStreamProvider`` that never returns can make forever).
final class MPVHandle: @unchecked Sendable {
    // @unchecked: `raw` is immutable and only used under `gate`; `destroyed` is only
    // written under the exclusive gate and read under the shared gate.
    private let raw: OpaquePointer
    private let gate: ReadWriteGate
    private var destroyed = false
    /// Set when ``destroy()`` begins: later calls fail without touching the gate.
    private let destroying = Atomic<Bool>(false)
    /// The render context attached to this core (at most one, as mpv allows), freed by
    /// ``destroy()`` before the core: mpv aborts the process when a core goes first.
    private let attachedRenderContext = Locked<RenderAttachment?>(nil)

    /// The render context of the core: being created (reserved, so a second attach is refused
    /// while the first runs the app's code), or attached.
    private enum RenderAttachment: Sendable {
        case attaching
        case attached(RenderContext)
    }
    let playerID: PlayerID
    /// Whether the core was made ready ahead of its player (``CorePool``).
    let madeAhead: Bool

    /// Adopts `core`, created ready ahead (``CorePool``), for player `playerID`, and sets the
    /// options named after the player (``CorePool/perPlayerOptions``) from `options`.
    /// - Throws: ``PlayerError/invalidOption(name:value:_:)`` (the core is destroyed then) or
    ///   ``PlayerError/creationFailed(reason:)`` for a core adopted already.
    init(playerID: PlayerID, adopting core: PreparedCore, options: [(String, String)]) throws(PlayerError) {
        self.playerID = playerID
        self.gate = ReadWriteGate()
        self.madeAhead = core.madeAhead
        guard let raw = core.adopt() else { throw .creationFailed(reason: "the prepared core was taken already") }
        self.raw = raw
        // Sent, not awaited: setting an option of an initialized core waits for its thread
        // (0.2 ms), and the player's first request comes after it anyway (mpv runs one client's
        // requests in order). The reply (ID 0) is dropped by the pump.
        for (name, value) in options where CorePool.perPlayerOptions.contains(name) {
            // mpv copies the value before returning.
            let status = value.withCString { text -> Int32 in
                var pointer: UnsafePointer<CChar>? = text
                return withUnsafeMutablePointer(to: &pointer) { mpv_set_property_async(raw, 0, name, MPV_FORMAT_STRING, $0) }
            }
            if status < 0 {
                throw .invalidOption(name: name, value: value, MPVHandle.error(status))
            }
        }
    }

    /// Creates and initializes a core with the given options (set before `mpv_initialize`),
    /// one at a time in the process.
    /// - Throws: ``PlayerError/creationFailed(reason:)`` or ``PlayerError/invalidOption(name:value:_:)``.
    static func createCore(options: [(String, String)]) throws(PlayerError) -> OpaquePointer {
        let created: Result<OpaquePointer, PlayerError> = creationLock.withLock { created in
            // Once, before the process's first core: its threads' memory in two arenas.
            _ = ArenaBound.applied
            // Once, before the process's first player core: FFmpeg's log, credited by thread.
            _ = FFmpegLog.installed
            setlocale(LC_NUMERIC, "C")
            guard let handle = mpv_create() else {
                return .failure(.creationFailed(reason: "mpv_create returned NULL (out of memory or bad locale)"))
            }
            for (name, value) in options {
                let status = mpv_set_option_string(handle, name, value)
                if status < 0 {
                    mpv_terminate_destroy(handle)
                    return .failure(.invalidOption(name: name, value: value, MPVHandle.error(status)))
                }
            }
            let status = mpv_initialize(handle)
            if status < 0 {
                mpv_terminate_destroy(handle)
                return .failure(.creationFailed(reason: "mpv_initialize failed: \(MPVHandle.error(status))"))
            }
            created += 1
            return .success(handle)
        }
        return try created.get()
    }

    deinit {
        // The owner normally destroys the handle; this is the last line of defence.
        if !destroyed { mpv_terminate_destroy(raw) }
    }

    static func error(_ status: Int32) -> MPVError {
        MPVError(code: status, message: String(cString: mpv_error_string(status)))
    }

    /// Takes the gate shared unless the handle is destroyed or being destroyed; never waits
    /// for ``destroy()``. Returns false (holding nothing) when the handle is gone or going.
    private func enter() -> Bool {
        guard !destroying.load(ordering: .acquiring) else { return false }
        // Only destroy() takes the gate exclusively: failing to take it shared means a
        // destruction holds it (glibc's default lock lets readers in while a writer waits).
        guard gate.tryLockShared() else { return false }
        if destroyed {
            gate.unlock()
            return false
        }
        return true
    }

    /// Runs `body` with the live handle, holding the gate shared.
    /// - Throws: ``PlayerError/playerShutDown(_:)`` once the handle's destruction has begun, or
    ///   what `body` throws.
    func withHandle<Value>(_ body: (OpaquePointer) throws(PlayerError) -> Value) throws(PlayerError) -> Value {
        guard enter() else { throw .playerShutDown(playerID) }
        defer { gate.unlock() }
        return try body(raw)
    }

    /// Runs `body` with the live handle, or returns nil once its destruction has begun. Never
    /// throws, never waits for the destruction.
    func ifAlive<Value>(_ body: (OpaquePointer) -> Value) -> Value? {
        guard enter() else { return nil }
        defer { gate.unlock() }
        return body(raw)
    }

    /// Destroys the core: waits for calls in flight, then `mpv_terminate_destroy`, which blocks
    /// until the core has stopped. Idempotent. Must not be called from the wakeup callback.
    /// Calls made meanwhile fail at once (they do not wait for it).
    func destroy() {
        PumpQueue.assertNotOnPump("mpv_terminate_destroy")
        destroying.store(true, ordering: .releasing)
        gate.lockExclusive()
        defer { gate.unlock() }
        guard !destroyed else { return }
        destroyed = true
        if case .attached(let context) = attachedRenderContext.withLock({ $0 }) { context.free(.coreDestroyed) }
        mpv_terminate_destroy(raw)
    }

    /// mpv's clock in microseconds (`mpv_get_time_us`, safe on render threads); nil once destroyed.
    func timeMicroseconds() -> Int64? {
        ifAlive { mpv_get_time_us($0) }
    }

    /// Creates a render context with `create` (under the shared gate, so ``destroy()`` waits
    /// for it) and attaches it: the one context of this core until it is freed.
    /// - Throws: ``FrameOutputError/alreadyAttached(playerID:)`` while another context lives,
    ///   ``FrameOutputError/playerShutDown(_:)`` once the core is destroyed.
    func attachRenderContext(
        _ create: (OpaquePointer) -> Result<RenderContext, FrameOutputError>
    ) -> Result<RenderContext, FrameOutputError> {
        guard enter() else { return .failure(.playerShutDown(playerID)) }
        defer { gate.unlock() }
        let reservation = attachedRenderContext.withLock { attached -> (reserved: Bool, previous: RenderContext?) in
            switch attached {
            case .attaching: return (false, nil)
            case .attached(let existing) where existing.isAlive: return (false, nil)
            case .attached(let existing):
                attached = .attaching
                return (true, existing)
            case nil:
                attached = .attaching
                return (true, nil)
            }
        }
        guard reservation.reserved else { return .failure(.alreadyAttached(playerID: playerID)) }
        // A context closed from its own update callback is freed on another thread, and mpv
        // takes one context per core: wait until it is gone (at once when it is).
        reservation.previous?.free(.closed)
        // `create` runs the app's code (OpenGL's get-proc-address, called by mpv while it
        // creates the context) with no lock of PlayerKit's held: the slot is reserved instead,
        // so the app may call the player from there (a second attach is refused, a shutdown
        // goes on on the teardown queue once this returns). Only the gate is held, shared, as
        // for every call on the handle: mpv must not destroy the core while it creates a context.
        let result = create(raw)
        attachedRenderContext.withLock { attached in
            if case .success(let context) = result { attached = .attached(context) } else { attached = nil }
        }
        return result
    }

    /// An asynchronous command; its reply arrives as a command-reply event with `replyID`.
    func commandAsync(_ arguments: [String], replyID: UInt64) throws(PlayerError) {
        try withHandle { handle throws(PlayerError) in
            let status = withCStringArray(arguments) { mpv_command_async(handle, replyID, $0) }
            if status == MPV_ERROR_EVENT_QUEUE_FULL.rawValue { throw .eventQueueFull(playerID, operation: arguments.joined(separator: " ")) }
            guard status >= 0 else { throw .commandFailed(command: arguments, MPVHandle.error(status)) }
        }
    }

    /// Sets a property without waiting for the core; the reply arrives as a set-property-reply
    /// event with `replyID` (0: the pump ignores it). mpv runs async requests of one handle in
    /// the order they were made, so a `loadfile` sent after it sees the new value.
    func setPropertyAsync(_ name: String, _ value: MPVValue, replyID: UInt64 = 0) throws(PlayerError) {
        try withHandle { handle throws(PlayerError) in
            // mpv copies the value before returning.
            let status = MPVNode.withNode(value) { mpv_set_property_async(handle, replyID, name, MPV_FORMAT_NODE, $0) }
            if status == MPV_ERROR_EVENT_QUEUE_FULL.rawValue {
                throw .eventQueueFull(playerID, operation: "set \(name) to \(MPVHandle.plain(value))")
            }
            guard status >= 0 else { throw MPVHandle.propertyError(name: name, value: value, status: status) }
        }
    }

    /// Reads a property synchronously (blocks while the core is busy: never on a pump queue).
    /// Only while a core is created (its catalog); everything after reads with
    /// ``requestProperty(_:replyID:)``.
    func property(_ name: String) throws(PlayerError) -> MPVValue {
        PumpQueue.assertNotOnPump("get property \(name)")
        return try withHandle { handle throws(PlayerError) in
            var node = mpv_node()
            let status = mpv_get_property(handle, name, MPV_FORMAT_NODE, &node)
            guard status >= 0 else { throw MPVHandle.propertyError(name: name, value: nil, status: status) }
            defer { mpv_free_node_contents(&node) }
            return MPVNode.value(from: node)
        }
    }

    /// Requests a property value; the answer arrives as a get-property-reply event.
    /// Non-blocking, so the event pump may use it.
    /// - Returns: false when mpv refused the request (its event queue is full) or the handle is gone.
    @discardableResult
    func requestProperty(_ name: String, replyID: UInt64) -> Bool {
        (ifAlive { mpv_get_property_async($0, replyID, name, MPV_FORMAT_NODE) } ?? -1) >= 0
    }

    /// The error of a failed command, as ``PlayerError/commandFailed(command:_:)``.
    static func commandError(_ arguments: [String], status: Int32) -> PlayerError {
        .commandFailed(command: arguments, error(status))
    }

    static func propertyError(name: String, value: MPVValue?, status: Int32) -> PlayerError {
        switch status {
        case MPV_ERROR_PROPERTY_NOT_FOUND.rawValue:
            return .propertyNotFound(name: name)
        case MPV_ERROR_PROPERTY_UNAVAILABLE.rawValue:
            return .propertyUnavailable(name: name)
        default:
            return .invalidPropertyValue(name: name, value: value.map(Self.plain) ?? "", error(status))
        }
    }

    /// The value as a user typed it: strings without quotes.
    static func plain(_ value: MPVValue) -> String {
        if case .string(let string) = value { return string }
        return value.description
    }
}

/// A pthread read-write lock on the heap (it must not move).
final class ReadWriteGate: @unchecked Sendable {
    private let lock = UnsafeMutablePointer<pthread_rwlock_t>.allocate(capacity: 1)

    init() {
        lock.initialize(to: pthread_rwlock_t())
        pthread_rwlock_init(lock, nil)
    }

    deinit {
        pthread_rwlock_destroy(lock)
        lock.deallocate()
    }

    /// Takes the lock shared unless a writer holds it; false (holding nothing) when one does.
    func tryLockShared() -> Bool { pthread_rwlock_tryrdlock(lock) == 0 }
    func lockExclusive() { pthread_rwlock_wrlock(lock) }
    func unlock() { pthread_rwlock_unlock(lock) }
}
