import CMPV
import Dispatch
import Foundation
import Logging
import Synchronization

/// The engine half of a ``Player``: one mpv core, its event pump, and the state model.
///
/// Data flows one way: mpv's wakeup callback (signal only) -> ``drain()`` on the player's
/// serial pump queue (copy events, update the model under `state`'s lock) -> the sink, which
/// enqueues each numbered batch on the delivery queue (the delegate runs there, outside any
/// lock). Commands flow the other way through ``handle``.
final class PlayerCore: Sendable {
    /// Everything the pump and the API share, behind one lock that is never held while
    /// calling mpv or app code.
    struct State: Sendable {
        var model: PlaybackModel
        var loadWaiters: [UInt64: LoadWaiter] = [:]
        var entryWaiters: [Int64: LoadWaiter] = [:]
        var nextReplyID: UInt64 = 1
        var sequenceNumber: UInt64 = 0
        var isShutDown = false
        /// Receives each numbered batch, under the lock: it must only enqueue, never block or call out.
        var sink: (@Sendable ([PlayerEventRecord]) -> Void)?
    }

    struct LoadWaiter: Sendable {
        let source: String
        let continuation: CheckedContinuation<Result<MediaInfo, PlayerError>, Never>
    }

    let id: PlayerID
    let handle: MPVHandle
    let state: Locked<State>
    private let pumpQueue: DispatchQueue
    private let teardownQueue: DispatchQueue
    private let signal: WakeupSignal
    private let signalContext: Locked<Unmanaged<WakeupSignal>?>
    private let mpvLogger: Logger

    init(id: PlayerID, configuration: PlayerConfiguration) throws(PlayerError) {
        self.id = id
        self.handle = try MPVHandle(playerID: id, options: configuration.mpvOptions)
        self.state = Locked(State(model: PlaybackModel(positionInterval: configuration.positionUpdateInterval)))
        self.pumpQueue = DispatchQueue(label: "PlayerKit.pump.\(id)")
        self.teardownQueue = DispatchQueue(label: "PlayerKit.teardown.\(id)")
        var logger = Logger(label: "PlayerKit.mpv")
        logger[metadataKey: "player"] = "\(id)"
        self.mpvLogger = logger
        let signal = WakeupSignal(queue: pumpQueue)
        self.signal = signal
        self.signalContext = Locked(nil)
        signal.setDrain { [weak self] in self?.drain() }

        try handle.withHandle { raw throws(PlayerError) in
            // Observed as nodes: mpv sends each in its native type (flag, int64, double, ...).
            for (index, name) in PlaybackModel.observedProperties.enumerated() {
                let status = mpv_observe_property(raw, UInt64(index + 1), name, MPV_FORMAT_NODE)
                if status < 0 { throw .propertyNotFound(name: name) }
            }
            mpv_request_log_messages(raw, configuration.mpvLogLevel.rawValue)
        }
    }

    /// Connects the sink, emits ``PlayerEvent/created`` and starts the pump. Events mpv queued
    /// since creation follow.
    func start(sink: @escaping @Sendable ([PlayerEventRecord]) -> Void) {
        state.withLock { state in
            state.sink = sink
            Self.emit(&state, [.event(.created)], id: id)
        }
        let context = Unmanaged.passRetained(signal)
        signalContext.withLock { $0 = context }
        _ = handle.ifAlive { mpv_set_wakeup_callback($0, playerKitWakeup, context.toOpaque()) }
        signal.fire()
    }

    // MARK: Event pump

    /// Drains mpv's queue down to `MPV_EVENT_NONE`. Runs only on `pumpQueue`. Never blocks:
    /// `mpv_wait_event` with timeout 0, and only non-blocking async requests.
    private func drain() {
        signal.rearm()
        var outputs: [PlaybackModel.Output] = []
        var logs: [(mpv_log_level, String, String)] = []
        var overflowed = false
        // Copy every pending event before asking for the next (mpv reuses the memory).
        var events: [MPVEvent] = []
        _ = handle.ifAlive { raw in
            while let pointer = mpv_wait_event(raw, 0), let event = MPVEvent(copying: pointer.pointee) {
                events.append(event)
            }
        }
        guard !events.isEmpty else { return }
        let now = ContinuousClock.now
        state.withLock { state in
            for event in events {
                switch event {
                case .logMessage(let level, let prefix, let text): logs.append((level, prefix, text))
                case .queueOverflow: overflowed = true
                case .commandReply(let replyID, let error, let result):
                    outputs += Self.loadReply(&state, replyID: replyID, error: error, result: result)
                default: break
                }
                outputs += state.model.apply(event, now: now)
            }
            Self.emit(&state, outputs, id: id)
        }
        for (level, prefix, text) in logs { logMPVMessage(level: level, prefix: prefix, text: text) }
        if overflowed { mpvLogger.warning("mpv event queue overflowed; some events were dropped") }
        finish(outputs)
    }

    /// Turns a `loadfile` reply into an entry waiter (or a failure).
    private static func loadReply(_ state: inout State, replyID: UInt64, error: Int32, result: MPVValue)
        -> [PlaybackModel.Output]
    {
        guard let waiter = state.loadWaiters.removeValue(forKey: replyID) else { return [] }
        guard error >= 0, let entryID = result["playlist_entry_id"]?.intValue else {
            state.model.noteReplacementFailed()
            let mpvError = MPVError(code: error, message: MPVErrorMessages.message(for: error))
            waiter.continuation.resume(returning: .failure(.loadFailed(source: waiter.source, mpvError)))
            return []
        }
        state.entryWaiters[entryID] = waiter
        return state.model.awaitEntry(entryID, source: waiter.source)
    }

    /// Numbers the events of `outputs` and hands them to the sink, under the lock: numbering
    /// and handing over in one step is what keeps every player's events in order when the
    /// pump and an API call (an optimistic pause, say) produce events at the same time. The
    /// sink only enqueues the batch on the delivery queue; no app code runs under the lock.
    private static func emit(_ state: inout State, _ outputs: [PlaybackModel.Output], id: PlayerID) {
        var records: [PlayerEventRecord] = []
        let now = Date()
        for case .event(let event) in outputs {
            state.sequenceNumber += 1
            records.append(PlayerEventRecord(playerID: id, event: event, sequenceNumber: state.sequenceNumber, timestamp: now))
        }
        if !records.isEmpty { state.sink?(records) }
    }

    /// Carries out the rest of a model's outputs outside the lock: mpv requests and waiters.
    private func finish(_ outputs: [PlaybackModel.Output]) {
        for output in outputs {
            switch output {
            case .requestProperties(let requests):
                for request in requests { handle.requestProperty(request.name, replyID: request.replyID) }
            case .loadResolved(let entryID, let result):
                let waiter = state.withLock { $0.entryWaiters.removeValue(forKey: entryID) }
                waiter?.continuation.resume(returning: result)
            case .event:
                break
            }
        }
    }

    /// Runs a model intent under the lock and delivers what it produces.
    func applyIntent(_ intent: (inout PlaybackModel) -> [PlaybackModel.Output]) {
        let outputs = state.withLock { state in
            let outputs = intent(&state.model)
            Self.emit(&state, outputs, id: id)
            return outputs
        }
        finish(outputs)
    }

    private func logMPVMessage(level: mpv_log_level, prefix: String, text: String) {
        let message = "[\(prefix)] \(text.hasSuffix("\n") ? String(text.dropLast()) : text)"
        switch level {
        case MPV_LOG_LEVEL_FATAL: mpvLogger.critical("\(message)")
        case MPV_LOG_LEVEL_ERROR: mpvLogger.error("\(message)")
        case MPV_LOG_LEVEL_WARN: mpvLogger.warning("\(message)")
        case MPV_LOG_LEVEL_INFO: mpvLogger.info("\(message)")
        case MPV_LOG_LEVEL_V, MPV_LOG_LEVEL_DEBUG: mpvLogger.debug("\(message)")
        default: mpvLogger.trace("\(message)")
        }
    }

    // MARK: Loading

    /// Sends `loadfile` asynchronously and waits until the item loaded or failed.
    func load(arguments: [String], source: String) async -> Result<MediaInfo, PlayerError> {
        await withCheckedContinuation { (continuation: CheckedContinuation<Result<MediaInfo, PlayerError>, Never>) in
            let replyID: UInt64? = state.withLock { state in
                guard !state.isShutDown else { return nil }
                let replyID = state.nextReplyID
                state.nextReplyID += 1
                state.loadWaiters[replyID] = LoadWaiter(source: source, continuation: continuation)
                state.model.noteReplacing()
                return replyID
            }
            guard let replyID else {
                continuation.resume(returning: .failure(.playerShutDown(id)))
                return
            }
            do throws(PlayerError) {
                try handle.commandAsync(arguments, replyID: replyID)
            } catch {
                let waiter = state.withLock { state in
                    state.model.noteReplacementFailed()
                    return state.loadWaiters.removeValue(forKey: replyID)
                }
                waiter?.continuation.resume(returning: .failure(error))
            }
        }
    }

    // MARK: Teardown

    /// Whether ``shutdown()`` has begun.
    var isShutDown: Bool { state.withLock { $0.isShutDown } }

    /// Stops the pump and destroys the core; blocks until mpv is gone. Idempotent; safe from
    /// any thread except the pump queue. Pending loads fail with ``PlayerError/playerShutDown(_:)``.
    func shutdownBlocking() {
        teardownQueue.sync { teardown() }
    }

    /// Starts ``shutdownBlocking()`` on the teardown queue and calls `completion` when done.
    func shutdown(completion: @escaping @Sendable () -> Void) {
        teardownQueue.async {
            self.teardown()
            completion()
        }
    }

    private func teardown() {
        let firstTime = state.withLock { state -> Bool in
            defer { state.isShutDown = true }
            return !state.isShutDown
        }
        guard firstTime else { return }
        // 1. No more wakeups: returns only once no callback is running.
        _ = handle.ifAlive { mpv_set_wakeup_callback($0, nil, nil) }
        signalContext.withLock { context in
            context?.release()
            context = nil
        }
        // 2. Wait for a drain in progress; none is scheduled after this.
        pumpQueue.sync {}
        // 3. Destroy the core (waits for API calls in flight; later calls throw).
        handle.destroy()
        // 4. Fail whatever still waits, and say the player is gone.
        let waiters = state.withLock { state -> [LoadWaiter] in
            _ = state.model.cancelAllWaiters(with: .playerShutDown(id))
            let all = Array(state.loadWaiters.values) + Array(state.entryWaiters.values)
            state.loadWaiters.removeAll()
            state.entryWaiters.removeAll()
            // The last event; the pump is stopped, so nothing can follow it.
            Self.emit(&state, [.event(.shutDown)], id: id)
            state.sink = nil
            return all
        }
        for waiter in waiters { waiter.continuation.resume(returning: .failure(.playerShutDown(id))) }
    }
}

/// The wakeup callback handed to mpv. Runs on mpv's threads: it only schedules a drain and
/// calls no mpv function.
private func playerKitWakeup(_ context: UnsafeMutableRawPointer?) {
    guard let context else { return }
    Unmanaged<WakeupSignal>.fromOpaque(context).takeUnretainedValue().fire()
}

/// Coalesces mpv's wakeups into at most one scheduled drain at a time.
final class WakeupSignal: Sendable {
    private let scheduled = Atomic<Bool>(false)
    private let queue: DispatchQueue
    private let drain = Locked<(@Sendable () -> Void)?>(nil)

    init(queue: DispatchQueue) {
        self.queue = queue
    }

    func setDrain(_ body: @escaping @Sendable () -> Void) {
        drain.withLock { $0 = body }
    }

    /// Schedules a drain unless one is already scheduled. Fast and lock-free on the hot path.
    func fire() {
        guard !scheduled.exchange(true, ordering: .acquiringAndReleasing) else { return }
        queue.async { [self] in
            let body = drain.withLock { $0 }
            body?()
        }
    }

    /// Called by the drain before it reads events, so a wakeup during the drain schedules another.
    func rearm() {
        scheduled.store(false, ordering: .releasing)
    }
}
