internal import CMPV
import Dispatch
import Foundation
import Logging
import PlayerKitSupport
import Synchronization

/// The engine half of a ``Player``: one mpv core, its event pump, and the state model.
///
/// Data flows one way: mpv's wakeup callback (signal only) -> ``drain()`` on the player's
/// serial pump queue (copy events, update the model and number the events under `state`'s
/// lock, into an outbox) -> one deliverer at a time empties the outbox, in order and with no
/// lock held, into the sink (the player's bus, which every listener subscribes to). Commands flow the other way as
/// typed operations (``send(_:reply:)``, ``request(_:timeout:)``, ``load(argument:source:startPaused:)``),
/// each making its mpv requests through ``handle`` and its model update in the same step.
final class PlayerCore: Sendable {
    /// Everything the pump and the API share, behind one lock that is never held while
    /// calling mpv or app code.
    struct State: Sendable {
        var model: PlaybackModel
        /// Which load waits for which answer and entry (a sub-machine of its own).
        var loads = LoadCorrelation<LoadWaiter>()
        /// Operations sent with ``send(_:)`` whose reply has not come yet, by reply ID.
        var sentOperations = PendingReplies<SentRequest>()
        /// Awaited seeks mpv accepted that have not landed yet, by ticket (their reply ID).
        var seekReplies = PendingReplies<SentReply>()
        /// Awaited property reads (``read(_:timeout:)``), by reply ID (``readIDBit`` set).
        var propertyReads = PendingReplies<PropertyRead>()
        var nextReplyID: UInt64 = 1
        var nextReadID: UInt64 = 1
        /// Loads and sent operations whose answer was due when mpv's event queue overflowed:
        /// those still unanswered once the recovery's reads are answered lost theirs.
        var sequenceNumber: UInt64 = 0
        /// The time of the latest event emitted: event times never go back.
        var lastEventTime: ContinuousClock.Instant?
        var isShutDown = false
        /// Set with the final ``PlayerEvent/shutDown``: from ``PlayerEvent/shuttingDown`` until
        /// then, features' events are still taken (their last words about the player).
        var eventsClosed = false
        /// Receives each numbered batch, in order, from the one deliverer (no lock held), for
        /// the subscribers the phase reaches (``DeliveryPhase``).
        var sink: (@Sendable ([PlayerEventRecord], DeliveryPhase) -> Void)?
        /// Numbered events not yet handed to the sink.
        var outbox: [PlayerEventRecord] = []
        /// Whether some thread is emptying the outbox right now.
        var delivering = false
        /// Makes the core pool's ready cores whole again (``CorePool/refillNow(options:)``):
        /// run once, at the player's first frame, when its load no longer shares the machine
        /// with a core's creation. Moved to ``poolRefillDue`` by ``emit(_:_:timestamp:at:)``.
        var poolRefill: (@Sendable () -> Void)?
        /// The pool refill to run, outside the lock, by the thread delivering the outbox.
        var poolRefillDue: (@Sendable () -> Void)?
        /// Answers decided under the lock, handed to their callers after it (``update(_:)``):
        /// a caller's continuation, or the next step of ``requestInTurn(_:timeout:)``, never runs
        /// under this lock.
        var answers: [(reply: SentReply, result: Result<MPVValue, PlayerError>)] = []
        /// Sent settings of one property coalesce (``send(_:reply:)``): a property with a set
        /// in flight maps to the latest set sent meanwhile (nil: none), which is handed to mpv
        /// when the one in flight is answered. So a setting sent in a tight loop (a slider
        /// dragged, a fade) takes at most one place in mpv's queue at a time, and mpv ends with
        /// the latest value.
        var setsInFlight: [String: HeldSet?] = [:]
        /// Held sets whose turn came (the set before them was answered or lost), to hand over
        /// after the lock (``handOverHeldSets()``).
        var heldSetsDue: [HeldSet] = []
    }

    /// A sent setting held behind one of the same property in flight: the operation, and the
    /// reads reserved to confirm it.
    struct HeldSet: Sendable {
        let operation: EngineOperation
        let reads: [(replyID: UInt64, name: String)]
        /// The confirmations mpv's answer to the set gives (``SentRequest/confirmedByAnswer``).
        let confirmedByAnswer: [(replyID: UInt64, name: String)]

        /// What to read when the set is not carried out: every confirmation, read.
        var readsIfRefused: [PlaybackModel.Output] {
            let all = reads + confirmedByAnswer
            return all.isEmpty ? [] : [.requestProperties(all)]
        }
    }

    /// One request of a sent operation: what to report if mpv refuses it, and whether it is the
    /// operation's last request (whose success applies the operation to the model).
    struct SentRequest: Sendable {
        let operation: EngineOperation
        let request: EngineOperation.Request
        let isLast: Bool
        /// The caller waiting for the answer (``request(_:timeout:)``), if any: it gets a refusal
        /// instead of an error event.
        var reply: SentReply?
        /// On the last request: the reads that confirm what the operation set, asked for when
        /// mpv answered it (so each request takes one place in mpv's queue at a time, and the
        /// reads come after the sets). Lost with the answer in an overflow, when the recovery's
        /// re-read stands in for them.
        var confirmingReads: [(replyID: UInt64, name: String)] = []
        /// On the last request: the setters' confirmations that mpv's answer itself gives
        /// (``PlaybackModel/Output/confirmWithSetAnswer(_:)``): settled when it accepts the
        /// request, read as ``confirmingReads`` are when it refuses it.
        var confirmedByAnswer: [(replyID: UInt64, name: String)] = []
        /// The property of a coalescing sent setting (``State/setsInFlight``), nil otherwise.
        var coalescedProperty: String?
    }

    /// The one-shot end of a ``request(_:timeout:)`` wait: resumed by whichever comes first
    /// (the last request's success, the first refusal, a lost answer, the timeout, shutdown),
    /// once. Resuming only hands a result to a waiting task; it never blocks.
    final class SentReply: Sendable {
        private let completion: Locked<(@Sendable (Result<MPVValue, PlayerError>) -> Void)?>

        init(_ completion: @escaping @Sendable (Result<MPVValue, PlayerError>) -> Void) {
            self.completion = Locked(completion)
        }

        func resume(_ result: Result<MPVValue, PlayerError>) {
            let completion = self.completion.withLock { value in
                defer { value = nil }
                return value
            }
            completion?(result)
        }
    }

    /// One awaited property read: the property, and the caller's end of the wait.
    struct PropertyRead: Sendable {
        let name: String
        let reply: SentReply
    }

    /// Marks the reply IDs of ``read(_:timeout:)``: the model numbers its own reads from 1 in
    /// the same space (mpv's get-property replies), so the core's never meet them.
    static let readIDBit: UInt64 = 1 << 63

    struct LoadWaiter: Sendable {
        /// What `loadfile` got (mpv's `filename` of the entry).
        let argument: String
        let source: String
        let completion: LoadCompletion
    }

    let id: PlayerID
    let handle: MPVHandle
    /// What this libmpv can do (protocols, commands), for checking input before mpv sees it.
    let catalog: MPVCatalog
    /// The app's stream schemes registered on this core (``PlayerConfiguration/streamProviders``).
    let streamProtocols: StreamProtocols
    let state: Locked<State>
    /// Held while a command's read-outs are handed on and the command handed to mpv (and while
    /// a load's requests are handed over): a command or load that a handler sends in reaction
    /// to those read-outs reaches mpv after the command that caused them. Taken before `state`,
    /// never the other way round; held over no app code and no wait for mpv (mpv's async calls
    /// only queue the request). Its value counts the hand-overs (a `Void` value would leave
    /// the lock's object with no stored value of its own: ThreadSanitizer then took the access
    /// to it for one to the object's header, and reported a race).
    private let handoff = Locked<UInt64>(0)
    /// How many hand-overs were made, counted once each is done (for tests: taking the gate
    /// waits for one under way).
    var handOvers: UInt64 { handoff.withLock { $0 } }
    /// The position as the pump saw it, for stamping rendered frames (``FrameOutput``).
    let frameClock = FrameClock()
    private let pumpQueue: DispatchQueue
    private let teardownQueue: DispatchQueue
    private let signal: WakeupSignal
    private let signalContext: Locked<Unmanaged<WakeupSignal>?>
    private let mpvLogger: Logger
    /// PlayerKit's own messages about this player (``PlayerConfiguration/logger``).
    let logger: Logger
    /// Messages of the player's frame outputs and renderers.
    let frameLogger: Logger
    /// The mpv log levels the app asked for (``PlayerConfiguration/mpvLogLevel``); errors are
    /// requested from mpv in any case, for the errors that end an item.
    private let forwardedLogLevels: Set<MPVEvent.LogLevel>
    /// Where records' display timestamps come from (``PlayerConfiguration/wallClock``).
    private let wallClock: @Sendable () -> Date
    /// FFmpeg's lines credited to this player (``FFmpegLog``), queued by FFmpeg's threads for the
    /// pump, oldest first (at most ``ffmpegLinesKept``: a flood drops the oldest).
    private let ffmpegLines = Locked<[FFmpegLog.Line]>([])
    private static let ffmpegLinesKept = 256
    /// The player's registration with ``FFmpegLog`` (from ``start(sink:)`` to teardown).
    private let ffmpegToken = Locked<FFmpegLineAttribution.Token?>(nil)
    /// Asks for position and cache once per position interval while playing (nil for a zero
    /// interval, where they are observed instead). Runs on the pump queue.
    private let pollTimer: RepeatingTimer?
    /// How long a load waits for its item (``PlayerConfiguration/loadTimeout``).
    private let loadTimeout: Duration
    /// Whether the player keeps the pitch with PlayerKit's own filter
    /// (``PlayerConfiguration/pitchFilter``): then a muted player runs it without its search
    /// (``EngineOperation/setPitchFilter(muted:)``).
    private let hasPitchFilter: Bool
    /// Whether the player's sound goes to an output (``PlayerConfiguration/isHeard``): one that
    /// nobody hears keeps its video on its own clock, whatever ``PlayerCommand/setVideoClock(_:)`` says.
    private let isHeard: Bool

    /// Where a new player's core comes from.
    enum CoreSource: Sendable {
        /// A ready core from the pool when there is one, else one created now
        /// (``CorePool/take(options:keep:)``).
        case pool
        /// The core ``CorePool/claim(options:keep:wait:_:)`` gave (the pool's refill is
        /// scheduled already), or nil: one created now.
        case claimed(PreparedCore?)
    }

    /// Checks the settings a player is created with.
    /// - Throws: ``PlayerError/invalidArgument(name:value:reason:)`` naming the first one out of range.
    static func validate(_ configuration: PlayerConfiguration) throws(PlayerError) {
        guard configuration.networkTimeout > .zero, configuration.networkTimeout <= .seconds(86_400) else {
            throw .invalidArgument(name: "networkTimeout", value: "\(configuration.networkTimeout)", reason: "must be positive and at most a day")
        }
        if let timeout = configuration.bufferingTimeout, timeout <= .zero {
            throw .invalidArgument(name: "bufferingTimeout", value: "\(timeout)", reason: "must be positive (nil waits as long as mpv does)")
        }
        guard (0...CorePool.largestCount).contains(configuration.readyCores) else {
            throw .invalidArgument(name: "readyCores", value: "\(configuration.readyCores)", reason: "must be from 0 to \(CorePool.largestCount)")
        }
        for (name, timeout) in [("loadTimeout", configuration.loadTimeout), ("shutdownTimeout", configuration.shutdownTimeout)] {
            guard timeout > .zero, timeout <= .seconds(86_400) else {
                throw .invalidArgument(name: name, value: "\(timeout)", reason: "must be positive and at most a day")
            }
        }
    }

    init(id: PlayerID, configuration: PlayerConfiguration, core source: CoreSource = .pool) throws(PlayerError) {
        try Self.validate(configuration)
        self.id = id
        let options = configuration.mpvOptions(for: id)
        hasPitchFilter = options.last { $0.0 == "af" }?.1 == PlayerConfiguration.pitchFilter
        isHeard = configuration.isHeard
        // A core made ready ahead with these options, or one created now; the pool then makes
        // the next ones ready in the background (``PlayerConfiguration/readyCores``).
        let prepared: PreparedCore
        switch source {
        case .pool:
            prepared = try CorePool.shared.take(options: options, keep: configuration.readyCores)
        case .claimed(let core?):
            prepared = core
        case .claimed(nil):
            prepared = try PreparedCore(options: options.filter { !CorePool.perPlayerOptions.contains($0.0) }, madeAhead: false)
        }
        let handle = try MPVHandle(playerID: id, adopting: prepared, options: options)
        self.handle = handle
        // On failure the handle's deinit destroys the core.
        self.catalog = try MPVCatalog.shared(using: handle)
        self.streamProtocols = try StreamProtocols(
            providers: configuration.streamProviders, handle: handle, catalog: catalog,
            logger: configuration.logger(for: id, label: "PlayerKit.streams"))
        var state = State(model: PlaybackModel(
            positionInterval: configuration.positionUpdateInterval, bufferingTimeout: configuration.bufferingTimeout,
            networkTimeout: configuration.networkTimeout))
        // The app's own choice among mpv's options counts too.
        state.model.timestampsRebased = configuration.extraOptions[PlaybackModel.timestampOriginProperty] != "no"

        state.poolRefill = { CorePool.shared.refillNow(options: options) }
        self.state = Locked(state)
        self.pumpQueue = PumpQueue.make(for: id)
        self.loadTimeout = configuration.loadTimeout
        self.wallClock = configuration.wallClock
        self.teardownQueue = DispatchQueue(label: "PlayerKit.teardown.\(id)")
        self.mpvLogger = configuration.logger(for: id, label: "PlayerKit.mpv")
        self.logger = configuration.logger(for: id, label: "PlayerKit")
        self.frameLogger = configuration.logger(for: id, label: "PlayerKit.frames")
        self.forwardedLogLevels = MPVEvent.LogLevel.levels(upTo: configuration.mpvLogLevel)
        pollTimer = configuration.positionUpdateInterval > .zero
            ? RepeatingTimer(interval: configuration.positionUpdateInterval, queue: pumpQueue) : nil
        let signal = WakeupSignal(queue: pumpQueue)
        self.signal = signal
        self.signalContext = Locked(nil)
        signal.setDrain { [weak self] in self?.drain() }

        try handle.withHandle { raw throws(PlayerError) in
            // Observed as nodes: mpv sends each in its native type (flag, int64, double, ...).
            for (index, name) in PlaybackModel.observedProperties(positionInterval: configuration.positionUpdateInterval).enumerated() {
                let status = mpv_observe_property(raw, UInt64(index + 1), name, MPV_FORMAT_NODE)
                if status < 0 { throw .propertyNotFound(name: name) }
            }
            // At least errors: their lines say why an item failed (MPVError.logMessages).
            let level: PlayerConfiguration.MPVLogLevel = [.none, .fatal].contains(configuration.mpvLogLevel)
                ? .error : configuration.mpvLogLevel
            mpv_request_log_messages(raw, level.mpvName)
            // While mpv waits in this hook a failing item's path is readable (names playlist entries).
            mpv_hook_add(raw, 0, PlaybackModel.loadFailHook, 0)
        }
    }

    /// Connects the sink, emits ``PlayerEvent/created`` and starts the pump. Events mpv queued
    /// since creation follow.
    func start(sink: @escaping @Sendable ([PlayerEventRecord], DeliveryPhase) -> Void) {
        let wall = wallClock()
        let deliver = state.withLock { state in
            state.sink = sink
            return emit(&state, [.event(.created)], timestamp: wall)
        }
        if deliver { deliverOutbox() }
        let queued = ffmpegLines
        let token = FFmpegLog.shared.register(levels: forwardedLogLevels) { [signal] line in
            queued.withLock { lines in
                lines.append(line)
                if lines.count > Self.ffmpegLinesKept { lines.removeFirst(lines.count - Self.ffmpegLinesKept) }
            }
            signal.fire()
        }
        ffmpegToken.withLock { $0 = token }
        let context = Unmanaged.passRetained(signal)
        signalContext.withLock { $0 = context }
        _ = handle.ifAlive { mpv_set_wakeup_callback($0, playerKitWakeup, context.toOpaque()) }
        signal.fire()
        pollTimer?.start { [weak self] in self?.applyIntent { $0.poll(now: .now) } }
    }

    /// How many users asked for per-frame positions (``observeEveryPosition(_:)``).
    private let everyPositionUsers = Locked(0)
    /// The observation ID for per-frame `time-pos`, apart from the fixed observations (1...n)
    /// and the model's request IDs (from 2^48).
    private static let everyPositionObservation: UInt64 = 1 << 40

    /// Asks mpv for every `time-pos` change (one per frame) while at least one user wants it,
    /// so ``PlayerEvent/positionChanged(_:)`` comes per frame and its timestamps time frames.
    /// Balanced calls: `true` adds a user, `false` removes one.
    func observeEveryPosition(_ enabled: Bool) {
        observeTimePosition(id: Self.everyPositionObservation, users: everyPositionUsers, enabled: enabled)
    }

    /// A `time-pos` observation under `id` that lives while `users` is above zero: `enabled`
    /// adds a user (the first one starts it), `false` removes one (the last one ends it).
    private func observeTimePosition(id: UInt64, users: Locked<Int>, enabled: Bool) {
        let change = users.withLock { users -> Bool? in
            users += enabled ? 1 : -1
            if enabled, users == 1 { return true }
            if !enabled, users == 0 { return false }
            return nil
        }
        guard let change else { return }
        _ = handle.ifAlive { raw in
            if change {
                mpv_observe_property(raw, id, "time-pos", MPV_FORMAT_NODE)
            } else {
                mpv_unobserve_property(raw, id)
            }
        }
    }

    /// How many users asked for buffered-media reports (``observeBufferedMedia(_:)``).
    private let bufferedMediaUsers = Locked(0)
    /// The observation ID of `demuxer-cache-state` for ``PlayerEvent/bufferedMediaChanged(_:)``.
    static let bufferedMediaObservation: UInt64 = 1 << 43

    /// Asks mpv for every change of its demuxer cache's state while at least one user wants
    /// it, reported as ``PlayerEvent/bufferedMediaChanged(_:)``. Balanced calls, as
    /// ``observeEveryPosition(_:)``. `mpv_observe_property` does not wait for the core.
    func observeBufferedMedia(_ enabled: Bool) {
        let change = bufferedMediaUsers.withLock { users -> Bool? in
            users += enabled ? 1 : -1
            if enabled, users == 1 { return true }
            if !enabled, users == 0 { return false }
            return nil
        }
        guard let change else { return }
        _ = handle.ifAlive { raw in
            if change {
                mpv_observe_property(raw, Self.bufferedMediaObservation, "demuxer-cache-state", MPV_FORMAT_NODE)
            } else {
                mpv_unobserve_property(raw, Self.bufferedMediaObservation)
            }
        }
    }

    /// From mpv's `demuxer-cache-state`: the position up to which the player has its source in
    /// memory (`cache-end`), and up to which it can seek in it (the furthest end of its
    /// `seekable-ranges`: mpv refuses a seek past it; on a live stream it ends about a segment
    /// before the cache does, at the last segment's first keyframe).
    static func bufferedMedia(from state: MPVValue) -> BufferedMedia {
        guard case .map(let entries) = state else { return BufferedMedia(cachedUntil: nil, seekableUntil: nil) }
        let end = entries.first { $0.key == "cache-end" }?.value.doubleValue
        var seekable: Double?
        if case .array(let ranges)? = entries.first(where: { $0.key == "seekable-ranges" })?.value {
            for case .map(let range) in ranges {
                if let rangeEnd = range.first(where: { $0.key == "end" })?.value.doubleValue { seekable = max(seekable ?? rangeEnd, rangeEnd) }
            }
        }
        return BufferedMedia(cachedUntil: end, seekableUntil: seekable)
    }

    /// How many frame outputs want the frame clock fed (``observeFrameClock(_:)``).
    private let frameClockUsers = Locked(0)
    /// The observation ID of the frame clock's own `time-pos` observation.
    static let frameClockObservation: UInt64 = 1 << 41

    /// Asks mpv for every `time-pos` change while at least one frame output lives, for the
    /// ``frameClock`` only: these changes update no read-out and publish no event, so a frame
    /// output costs no per-frame traffic through the fan-out. Balanced calls, as
    /// ``observeEveryPosition(_:)``. `mpv_observe_property` does not wait for the core.
    func observeFrameClock(_ enabled: Bool) {
        observeTimePosition(id: Self.frameClockObservation, users: frameClockUsers, enabled: enabled)
    }

    /// The observation IDs of the app's property observations (``observeProperty(_:)``) have
    /// this bit, apart from the fixed observations, the per-frame ones and the request IDs.
    static let appObservationBit: UInt64 = 1 << 42
    /// The app's live property observations, by observation ID. A change that mpv queued before
    /// an observation ended is dropped by the pump, so none is reported after its cancel.
    private let appObservations = Locked<(next: UInt64, live: Set<UInt64>)>((1, []))

    /// Asks mpv for every change of property `name` (a top-level name, or a sub-property such as
    /// `metadata/by-key/title`), reported as ``PlayerEvent/propertyChanged(name:value:)``, the
    /// current value first. Returns the observation's ID for ``endPropertyObservation(_:)``.
    /// `mpv_observe_property` does not wait for the core.
    func observeProperty(_ name: String) throws(PlayerError) -> UInt64 {
        // A shut-down player says so first, whatever the name (as every call on it does).
        guard !isShutDown else { throw .playerShutDown(id) }
        let topLevel = String(name.prefix { $0 != "/" })
        guard !name.isEmpty, catalog.properties.contains(topLevel) else { throw .propertyNotFound(name: name) }
        let observation = appObservations.withLock { observations -> UInt64 in
            let observation = Self.appObservationBit | observations.next
            observations.next += 1
            observations.live.insert(observation)
            return observation
        }
        let status = handle.ifAlive { mpv_observe_property($0, observation, name, MPV_FORMAT_NODE) }
        guard let status, status >= 0 else {
            appObservations.withLock { _ = $0.live.remove(observation) }
            if status == nil || isShutDown { throw .playerShutDown(id) }
            throw .propertyNotFound(name: name)
        }
        return observation
    }

    /// Ends an observation from ``observeProperty(_:)``. Idempotent; never waits.
    func endPropertyObservation(_ observation: UInt64) {
        guard appObservations.withLock({ $0.live.remove(observation) }) != nil else { return }
        _ = handle.ifAlive { mpv_unobserve_property($0, observation) }
    }

    // MARK: Event pump

    /// Drains mpv's queue down to `MPV_EVENT_NONE`. Runs only on `pumpQueue`. Never blocks:
    /// `mpv_wait_event` with timeout 0, and only non-blocking async requests.
    private func drain() {
        // When mpv signalled the events: they carry that time, not the moment this thread got
        // to them (a pump scheduled late on a busy machine would move every frame change).
        let scheduled = signal.rearm()
        // FFmpeg's lines credited to the player, written before the events below were read.
        takeFFmpegLines()
        // One event at a time: copy it (mpv reuses its memory at the next call), apply it and
        // deliver what it produced, then ask for the next. Delivering before the next
        // mpv_wait_event matters for latency: the call that finds the queue empty can take tens
        // of microseconds, because libmpv refreshes observed properties inside it.
        while let event = nextEvent() {
            let signalled = signal.signalled(since: scheduled)
            switch event {
            case .logMessage(let level, let prefix, let text):
                if LibMPV.isSpuriousAONullError(prefix: prefix, text: text) { continue }
                if forwardedLogLevels.contains(level) { logMPVMessage(level: level, prefix: prefix, text: text) }
                if level == .error || level == .fatal { update { $0.model.apply(event) } }
            case .queueOverflow:
                // Events were lost: re-read the state, and tell every channel (eventsLost).
                mpvLogger.warning("mpv's event queue overflowed and events were lost; re-reading the player's state")
                update { state in
                    state.loads.overflowed()
                    state.sentOperations.overflowed()
                    state.propertyReads.overflowed()
                    return state.model.recoverLostEvents()
                }
            case .commandReply(let replyID, let error, let result):
                update { state in
                    Self.loadReply(&state, replyID: replyID, error: error, result: result)
                        + Self.sentReply(&state, replyID: replyID, error: error, result: result)
                        + state.model.apply(event)
                }
            case .setPropertyReply(let replyID, let error):
                guard replyID != 0 else { continue }
                update { Self.sentReply(&$0, replyID: replyID, error: error, result: .none) }
                handOverHeldSets()
            case .propertyReply(let replyID, let error, let name, let value) where replyID & Self.readIDBit != 0:
                let read = state.withLock { $0.propertyReads.take(replyID) }
                read?.reply.resume(error >= 0 ? .success(value) : .failure(MPVHandle.propertyError(name: name, value: nil, status: error)))
            case .propertyChanged(Self.frameClockObservation, _, let value):
                frameClock.note(value.doubleValue)
            case .propertyChanged(Self.bufferedMediaObservation, _, let value):
                guard bufferedMediaUsers.withLock({ $0 > 0 }) else { continue }
                update(at: signalled) { _ in [.event(.bufferedMediaChanged(Self.bufferedMedia(from: value)))] }
            case .propertyChanged(let observation, let name, let value) where observation & Self.appObservationBit != 0:
                guard appObservations.withLock({ $0.live.contains(observation) }) else { continue }
                update(at: signalled) { _ in [.event(.propertyChanged(name: name, value: value))] }
            default:
                if case .fileLoaded = event { noteOpened() }
                if case .endFile(_, let reason, _, _, _) = event, reason == .error || reason == .endOfFile { noteOpened() }
                update(at: signalled) { state in
                    var outputs = state.model.apply(event)
                    if let playlist = state.model.takeRecoveredPlaylist() { outputs += Self.recoverLoads(&state, playlist: playlist, id: id) }
                    return outputs
                }
            }
        }
        // mpv's queue and log are empty, and FFmpeg's lines written meanwhile are in: hooks and
        // failures held for their log lines can go on.
        takeFFmpegLines()
        applyIntent { $0.drained() }
        // Sets held behind ones whose answers were lost in an overflow.
        handOverHeldSets()
    }

    /// Forwards and applies FFmpeg's lines credited to the player (``FFmpegLog``), in the order
    /// they were written: to the player's logger at the levels it asked for (as mpv's own lines),
    /// and to the model when they are warnings, errors or request starts (they say why an item
    /// failed, and when a request that failed began).
    private func takeFFmpegLines() {
        let lines = ffmpegLines.withLock { lines -> [FFmpegLog.Line] in
            defer { lines = [] }
            return lines
        }
        guard !lines.isEmpty else { return }
        for line in lines where forwardedLogLevels.contains(line.level) {
            logMPVMessage(level: line.level, prefix: line.module, text: line.text)
        }
        let read = lines.filter { $0.isSevere || $0.startsRequest }
        guard !read.isEmpty else { return }
        update { state in
            read.flatMap { state.model.readFFmpegLine(level: $0.level, text: $0.text, at: $0.time) }
        }
    }

    /// The item being opened loaded or failed: FFmpeg's lines naming its server are no longer
    /// taken to be this player's for that reason alone (``FFmpegLineAttribution``).
    private func noteOpened() {
        if let token = ffmpegToken.withLock({ $0 }) { FFmpegLog.shared.noteOpened(token) }
    }

    /// After a recovery from lost events: sent operations still unanswered lost their answer
    /// (the state was re-read instead); a load whose `loadfile` answer was lost waits for its
    /// entry, found in the re-read playlist by file name (the newest), or fails.
    private static func recoverLoads(_ state: inout State, playlist: MPVValue, id: PlayerID) -> [PlaybackModel.Output] {
        for sent in state.sentOperations.takeLost() {
            if let property = sent.coalescedProperty { setAnswered(&state, property) }
            if let reply = sent.reply { state.answers.append((reply, .failure(.replyLost(id, operation: describe(sent.request))))) }
        }
        for read in state.propertyReads.takeLost() {
            state.answers.append((read.reply, .failure(.replyLost(id, operation: "read \(read.name)"))))
        }
        var outputs: [PlaybackModel.Output] = []
        let entries = playlist.arrayValue ?? []
        let named = entries.compactMap { entry -> (name: String, id: Int64)? in
            guard let name = entry["filename"]?.stringValue, let id = entry["id"]?.intValue else { return nil }
            return (name, id)
        }
        for (waiter, entryID) in state.loads.recover(entries: named, name: \.argument) {
            if let entryID {
                outputs += state.model.awaitEntry(entryID, source: waiter.source)
            } else {
                waiter.completion.resume(.failure(PlaybackModel.lostEventsError(waiter.source)))
            }
        }
        return outputs
    }

    /// The next event, copied; nil at `MPV_EVENT_NONE` or once the handle is destroyed.
    private func nextEvent() -> MPVEvent? {
        handle.ifAlive { raw -> MPVEvent? in
            guard let pointer = mpv_wait_event(raw, 0) else { return nil }
            return MPVEvent(copying: pointer.pointee)
        } ?? nil
    }

    /// Turns a `loadfile` reply into an entry waiter (or a failure).
    private static func loadReply(_ state: inout State, replyID: UInt64, error: Int32, result: MPVValue)
        -> [PlaybackModel.Output]
    {
        let entryID = error >= 0 ? result["playlist_entry_id"]?.intValue : nil
        guard let waiter = state.loads.answered(replyID: replyID, entry: entryID) else { return [] }
        guard let entryID else {
            state.model.noteReplacementFailed()
            // mpv refused the `loadfile` itself: no item was opened, so no line is about it.
            let mpvError = MPVError(
                code: error, message: MPVErrorMessages.message(for: error),
                logMessages: ["mpv refused the loadfile command (\(MPVErrorMessages.message(for: error))); nothing was opened"])
            waiter.completion.resume(.failure(.loadFailed(source: waiter.source, mpvError)))
            return []
        }
        return state.model.awaitEntry(entryID, source: waiter.source)
    }

    /// The reply to one request of an operation sent with ``send(_:)``: a refusal becomes an
    /// ``PlayerEvent/error(_:)`` naming the request; the last request's success applies the
    /// operation to the model.
    private static func sentReply(_ state: inout State, replyID: UInt64, error: Int32, result: MPVValue)
        -> [PlaybackModel.Output]
    {
        guard let sent = state.sentOperations.take(replyID) else { return [] }
        if let property = sent.coalescedProperty { Self.setAnswered(&state, property) }
        // The reads confirming the sets: after a refusal too, to put the read-outs back (then
        // the confirmations the answer would have given are read as well).
        let confirming: [PlaybackModel.Output] = sent.confirmingReads.isEmpty ? [] : [.requestProperties(sent.confirmingReads)]
        guard error >= 0 else {
            let refused = sent.confirmingReads + sent.confirmedByAnswer
            let confirming: [PlaybackModel.Output] = refused.isEmpty ? [] : [.requestProperties(refused)]
            sent.operation.revert(&state.model)
            // A caller waiting for the answer hears the refusal; nobody else needs to.
            if let reply = sent.reply {
                state.answers.append((reply, .failure(Self.error(of: sent.request, status: error))))
                return confirming
            }
            return [.event(.error(Self.error(of: sent.request, status: error)))] + confirming
        }
        guard sent.isLast else { return [] }
        if !sent.confirmedByAnswer.isEmpty { state.model.setAnswered(sent.confirmedByAnswer.map(\.replyID)) }
        var outputs = confirming + sent.operation.applied(to: &state.model, result: result)
        if let reply = sent.reply, sent.operation.landsOnRestart {
            // Accepted, not yet shown: the caller waits until the seek lands.
            state.seekReplies.add(reply, replyID: replyID)
            outputs += state.model.awaitSeekLanding(ticket: replyID)
            return outputs
        }
        if let reply = sent.reply { state.answers.append((reply, .success(result))) }
        return outputs
    }

    /// The set of `property` in flight was answered (or lost): the set held behind it, if any,
    /// is due (it stays in flight), else the property has none in flight.
    private static func setAnswered(_ state: inout State, _ property: String) {
        if let held = state.setsInFlight[property], let held {
            state.setsInFlight[property] = .some(nil)
            state.heldSetsDue.append(held)
        } else {
            state.setsInFlight[property] = nil
        }
    }

    /// Hands the held sets whose turn came to mpv (outside the lock; safe on the pump).
    private func handOverHeldSets() {
        let due = state.withLock { state -> [(HeldSet, UInt64, EngineOperation.Request)] in
            let due = state.heldSetsDue
            state.heldSetsDue = []
            guard !state.isShutDown else { return [] }
            return due.map { held in
                let replyID = state.nextReplyID
                state.nextReplyID += 1
                // The values as the model has them now (a speed under the latest correction).
                let request = held.operation.requests(for: state.model)[0]
                state.sentOperations.add(SentRequest(
                    operation: held.operation, request: request, isLast: true, reply: nil,
                    confirmingReads: held.reads, confirmedByAnswer: held.confirmedByAnswer,
                    coalescedProperty: Self.coalescedProperty(of: held.operation)), replyID: replyID)
                return (held, replyID, request)
            }
        }
        for (held, replyID, request) in due {
            guard case .set(let name, let value) = request else { continue }
            do throws(PlayerError) {
                try handle.setPropertyAsync(name, value, replyID: replyID)
            } catch {
                // Not queued: nothing will answer it; read what mpv has (it puts the read-out
                // back), and report the refusal as a sent command's refusal is.
                state.withLock { state in
                    _ = state.sentOperations.take(replyID)
                    Self.setAnswered(&state, name)
                }
                finish(held.readsIfRefused)
                applyIntent { _ in [.event(.error(error))] }
                handOverHeldSets()
            }
        }
    }

    /// The property a sent operation sets when it is one setting that coalesces: a single set of
    /// a property with a read-out (``PlaybackModel/settableProperties``).
    static func coalescedProperty(of operation: EngineOperation) -> String? {
        let requests = operation.requests
        guard requests.count == 1, case .set(let name, _) = requests[0], PlaybackModel.settableProperties.contains(name) else { return nil }
        return name
    }

    /// A request as a log or an error names it: `set speed to 1.5`, `seek 10 absolute+exact`.
    static func describe(_ request: EngineOperation.Request) -> String {
        switch request {
        case .set(let name, let value): "set \(name) to \(MPVHandle.plain(value))"
        case .command(let arguments): arguments.joined(separator: " ")
        }
    }

    /// The typed error of a refused request.
    private static func error(of request: EngineOperation.Request, status: Int32) -> PlayerError {
        switch request {
        case .set(let name, let value): return MPVHandle.propertyError(name: name, value: value, status: status)
        case .command(let arguments): return MPVHandle.commandError(arguments, status: status)
        }
    }

    /// Numbers the events of `outputs` into the outbox. Called under the lock. Returns true
    /// when the caller must become the deliverer (nobody is delivering and there is work).
    ///
    /// Numbering under the lock and delivering from one thread at a time, in outbox order, is
    /// what keeps every player's events in order when the pump and an API call (an optimistic
    /// pause, say) produce events at the same time, while no lock is held during delivery.
    /// Each record gets the monotonic time (for measuring) and the wall-clock time (for display).
    private func emit(_ state: inout State, _ outputs: [PlaybackModel.Output], timestamp: Date,
                      at signalled: ContinuousClock.Instant? = nil) -> Bool {
        var time: ContinuousClock.Instant?
        for case .event(let event) in outputs {
            // Once shutdown began, only shuttingDown, the features' last events and the final
            // shutDown go out: nothing follows shutDown.
            if state.isShutDown, event != .shutDown {
                let lastWords: Bool
                switch event {
                case .shuttingDown, .feature: lastWords = !state.eventsClosed
                default: lastWords = false
                }
                guard lastWords else { continue }
            }
            if event == .firstFrame, state.poolRefill != nil {
                state.poolRefillDue = state.poolRefill
                state.poolRefill = nil
            }
            state.sequenceNumber += 1
            var now = time ?? signalled ?? ContinuousClock.now
            if let last = state.lastEventTime, last > now { now = last }
            time = now
            state.lastEventTime = now
            state.outbox.append(PlayerEventRecord(
                playerID: id, event: event, sequenceNumber: state.sequenceNumber, time: now, timestamp: timestamp))
        }
        guard !state.delivering, !state.outbox.isEmpty else { return false }
        state.delivering = true
        return true
    }

    /// Empties the outbox into the sink, batch by batch, until it stays empty. Only the thread
    /// that ``emit(_:_:)`` chose runs this; events produced meanwhile (also by a handler
    /// that calls back into the player) join the outbox and are delivered next, in order.
    private func deliverOutbox() {
        while let batch = takeOutboxBatch() {
            batch.poolRefill?()
            batch.sink?(batch.records, .all)
        }
    }

    /// A batch of the outbox, taken for delivery: its records, the sink, and a pool refill due.
    private typealias OutboxBatch = (
        records: [PlayerEventRecord], sink: (@Sendable ([PlayerEventRecord], DeliveryPhase) -> Void)?,
        poolRefill: (@Sendable () -> Void)?
    )

    /// The outbox's next batch, the sink and a pool refill due, for the thread that delivers;
    /// nil (and the delivering role given up) once the outbox is empty.
    private func takeOutboxBatch() -> OutboxBatch? {
        state.withLock { state in
            guard !state.outbox.isEmpty else {
                state.delivering = false
                return nil
            }
            var batch: [PlayerEventRecord] = []
            swap(&batch, &state.outbox)
            defer { state.poolRefillDue = nil }
            return (batch, state.sink, state.poolRefillDue)
        }
    }

    /// Carries out the rest of a model's outputs outside the lock: mpv requests and waiters.
    private func finish(_ outputs: [PlaybackModel.Output]) {
        for output in outputs {
            switch output {
            case .requestProperties(let requests), .confirmWithSetAnswer(let requests):
                // (A confirmation by an answer reaches here only when no set carries it: read.)
                let refused = requests.filter { !handle.requestProperty($0.name, replyID: $0.replyID) }
                // A request mpv refused (queue full) is answered as failed, so nothing waits for it.
                if !refused.isEmpty, !isShutDown {
                    applyIntent { model in
                        refused.flatMap { model.apply(.propertyReply(replyID: $0.replyID, error: -1, name: $0.name, value: .none)) }
                    }
                }
            case .loadResolved(let entryID, let result):
                let waiter = state.withLock { $0.loads.resolved(entry: entryID) }
                waiter?.completion.resume(result)
            case .loadRedirected(let from, let to):
                state.withLock { $0.loads.redirected(from: from, to: to) }
            case .stopItem:
                try? send(.command(.stop))
            case .continueHook(let hookID):
                _ = handle.ifAlive { mpv_hook_continue($0, hookID) }
            case .seekLanded(let ticket, let position):
                let reply = state.withLock { $0.seekReplies.take(ticket) }
                reply?.resume(.success(position.map(MPVValue.double) ?? .none))
            case .scheduleReconnect(let delay, let generation):
                // On the pump's queue, after `delay` on the monotonic clock (DispatchTime).
                pumpQueue.asyncAfter(deadline: .now() + delay.inSeconds) { [weak self] in
                    guard let self, !self.isShutDown else { return }
                    self.applyIntent { $0.reconnectDue(generation: generation) }
                }
            case .reopen(let index, let replyID, let attempt, let cause):
                logger.notice("the live source was lost (\(cause)); opening it again, attempt \(attempt)")
                if let token = ffmpegToken.withLock({ $0 }), let source = state.withLock({ $0.model.snapshot.source }) {
                    FFmpegLog.shared.noteLoading(source, for: token)
                }
                do throws(PlayerError) {
                    try handle.commandAsync(["playlist-play-index", String(index)], replyID: replyID)
                } catch {
                    if !isShutDown { applyIntent { $0.reopenRefused() } }
                }
            case .event:
                break
            }
        }
    }

    /// Runs a model intent under the lock and delivers what it produces.
    func applyIntent(_ intent: (inout PlaybackModel) -> [PlaybackModel.Output]) {
        update { intent(&$0.model) }
    }

    /// Changes the state under the lock, numbers the events produced, then (outside the lock)
    /// delivers them and carries out the other outputs.
    /// `signalled`: when mpv signalled the event being applied (``WakeupSignal/signalled(since:)``),
    /// the time its events carry; nil: now.
    private func update(at signalled: ContinuousClock.Instant? = nil, _ change: (inout State) -> [PlaybackModel.Output]) {
        // The app's wall clock (``PlayerConfiguration/wallClock``) is read before the lock: no
        // app code runs under it.
        let wall = wallClock()
        let (outputs, deliver, answers) = state.withLock { state in
            let outputs = change(&state)
            let answers = state.answers
            state.answers = []
            return (outputs, emit(&state, outputs, timestamp: wall, at: signalled), answers)
        }
        if deliver { deliverOutbox() }
        for answer in answers { answer.reply.resume(answer.result) }
        finish(outputs)
    }

    private func logMPVMessage(level: MPVEvent.LogLevel, prefix: String, text: String) {
        let message = "[\(prefix)] \(text.hasSuffix("\n") ? String(text.dropLast()) : text)"
        let metadata: Logger.Metadata = ["module": "\(prefix)"]
        switch level {
        case .fatal: mpvLogger.critical("\(message)", metadata: metadata)
        case .error: mpvLogger.error("\(message)", metadata: metadata)
        case .warn: mpvLogger.warning("\(message)", metadata: metadata)
        case .info: mpvLogger.info("\(message)", metadata: metadata)
        case .verbose, .debug: mpvLogger.debug("\(message)", metadata: metadata)
        case .trace: mpvLogger.trace("\(message)", metadata: metadata)
        }
    }

    // MARK: Operations

    /// Hands `operation` to mpv without waiting (`mpv_set_property_async`,
    /// `mpv_command_async`): safe anywhere, the pump included. mpv runs the async requests of
    /// one core in the order they were made. What the operation sets shows in the read-outs
    /// from the moment it is handed over, and its change events are published then, in order
    /// with the pump's events (numbered under the same lock), with no wait for mpv's answer; a
    /// read asked for when mpv answers the last request confirms them
    /// (``PlaybackModel/noteSet(_:_:)``; observations older than it are ignored meanwhile). A
    /// refusal arrives as an ``PlayerEvent/error(_:)``, and that read then puts the read-out
    /// back to what mpv has, with its change event.
    /// - Throws: ``PlayerError/playerShutDown(_:)``, or an error when mpv cannot even queue it.
    func send(_ operation: EngineOperation, reply: SentReply? = nil) throws(PlayerError) {
        // A player nobody hears has no sound for its video to wait for: its null output keeps
        // the system's time, as its video does on its own clock (EngineOptions).
        if !isHeard, case .command(.setVideoClock(.audio)) = operation {
            return try sendOne(.command(.setVideoClock(.independent)), reply: reply)
        }
        // A muted player's pitch is not heard: its pitch filter runs without its search while
        // muted (set after the mute, put back before the unmute). Never the operation's own
        // failure: the filter is PlayerKit's business.
        if case .append(let argument, _) = operation, let token = ffmpegToken.withLock({ $0 }) {
            FFmpegLog.shared.noteSource(argument, for: token)
        }
        guard hasPitchFilter, case .command(.setMuted(let muted)) = operation else {
            return try sendOne(operation, reply: reply)
        }
        if !muted { try? sendOne(.setPitchFilter(muted: false)) }
        try sendOne(operation, reply: reply)
        if muted { try? sendOne(.setPitchFilter(muted: true)) }
    }

    /// Tests only (`HandOverOrderTests`): run on the sending thread, under the hand-over gate,
    /// after a command's read-outs were handed on and before the command is handed to mpv.
    static let beforeHandOverForTests = Locked<(@Sendable () -> Void)?>(nil)

    private func sendOne(_ operation: EngineOperation, reply: SentReply? = nil) throws(PlayerError) {
        // The requests' names now (for coalescing); their values under the lock below, as the
        // model has them when they are handed over (``EngineOperation/requests(for:)``).
        var requests = operation.requests
        // The app's wall clock is read before the lock: no app code runs under it.
        let wall = wallClock()
        let coalesced = reply == nil ? Self.coalescedProperty(of: operation) : nil
        // The read-outs go to the subscribers that only hand them on (queued handlers,
        // streams) before mpv has the command, so their threads are woken before mpv's and do
        // not wait for a CPU behind them (issue 53: the queued handler heard a setter 60-80 us
        // later on an idle 2-CPU machine, 11-14 us now); immediate handlers hear them after.
        // The hand-over gate keeps a command sent in reaction behind this one.
        let (prepared, failure, firstBatch): (
            (replyIDs: [UInt64], reads: [PlaybackModel.Output], deliver: Bool)?, PlayerError?,
            OutboxBatch?
        ) = handoff.withLock { handOvers in
            handOvers &+= 1
            let prepared: (replyIDs: [UInt64], reads: [PlaybackModel.Output], deliver: Bool)? = state.withLock { state in
                guard !state.isShutDown else { return nil }
                operation.prepare(&state.model)
                requests = operation.requests(for: state.model)
                let outputs = operation.handedOver(to: &state.model)
                var reads: [(replyID: UInt64, name: String)] = []
                var confirmedByAnswer: [(replyID: UInt64, name: String)] = []
                for output in outputs {
                    switch output {
                    case .requestProperties(let requested): reads += requested
                    case .confirmWithSetAnswer(let confirmed): confirmedByAnswer += confirmed
                    default: break
                    }
                }
                if let coalesced {
                    if state.setsInFlight[coalesced] != nil {
                        // One in flight: this one waits behind it, replacing any waiting already.
                        state.setsInFlight[coalesced] = .some(HeldSet(operation: operation, reads: reads, confirmedByAnswer: confirmedByAnswer))
                        return ([], [], emit(&state, outputs, timestamp: wall))
                    }
                    state.setsInFlight[coalesced] = .some(nil)
                } else {
                    // Any other set of a property supersedes a held one (it is newer).
                    for case .set(let name, _) in requests where state.setsInFlight[name] != nil {
                        state.setsInFlight[name] = .some(nil)
                    }
                }
                let replyIDs = requests.indices.map { index in
                    let replyID = state.nextReplyID
                    state.nextReplyID += 1
                    let isLast = index == requests.count - 1
                    state.sentOperations.add(SentRequest(
                        operation: operation, request: requests[index], isLast: isLast, reply: reply,
                        confirmingReads: isLast ? reads : [], confirmedByAnswer: isLast ? confirmedByAnswer : [],
                        coalescedProperty: coalesced), replyID: replyID)
                    return replyID
                }
                // What to read if mpv does not take the requests: every confirmation.
                let readsIfRefused = reads + confirmedByAnswer
                return (replyIDs, readsIfRefused.isEmpty ? [] : [.requestProperties(readsIfRefused)], emit(&state, outputs, timestamp: wall))
            }
            guard let prepared else { return (nil, nil, nil) }
            let firstBatch = prepared.deliver ? takeOutboxBatch() : nil
            if let first = firstBatch { first.sink?(first.records, .handingOn) }
            Self.beforeHandOverForTests.withLock { $0 }?()
            var failure: PlayerError?
            for (request, replyID) in zip(requests, prepared.replyIDs) {
                do throws(PlayerError) {
                    switch request {
                    case .set(let name, let value): try handle.setPropertyAsync(name, value, replyID: replyID)
                    case .command(let arguments): try handle.commandAsync(arguments, replyID: replyID)
                    }
                } catch {
                    state.withLock { state in
                        for pending in prepared.replyIDs { _ = state.sentOperations.take(pending) }
                        if let coalesced { Self.setAnswered(&state, coalesced) }
                        operation.revert(&state.model)
                    }
                    failure = error
                    break
                }
            }
            return (prepared, failure, firstBatch)
        }
        guard let prepared else { throw .playerShutDown(id) }
        // Outside the gate: the immediate handlers (the app's code) hear the first batch, and
        // the outbox is emptied as ever (this thread still has the delivering role).
        if let first = firstBatch {
            first.poolRefill?()
            first.sink?(first.records, .runningAppCode)
            deliverOutbox()
        }
        if let failure {
            // Not queued: read now what mpv has, which puts the read-outs back.
            finish(prepared.reads)
            handOverHeldSets()
            throw failure
        }
    }

    /// Hands `operation` to mpv as ``send(_:reply:)`` does and suspends until mpv answered: the
    /// last request's result, or the first refusal. No thread waits: mpv's answer, read by the
    /// pump, resumes the caller. Bounded by `timeout` on the monotonic clock
    /// (``PlayerError/timedOut(operation:after:)``; mpv may still carry the operation out), by
    /// shutdown (``PlayerError/playerShutDown(_:)``), and by a lost answer
    /// (``PlayerError/replyLost(_:operation:)``). Cancelling the caller does not withdraw it.
    @discardableResult
    func request(_ operation: EngineOperation, timeout: Duration) async throws(PlayerError) -> MPVValue {
        try await Self.requestAll([(self, .success(operation))], timeout: timeout)[0].get()
    }

    /// ``request(_:timeout:)`` on several cores at once: every operation is handed to its core
    /// first, one right after another and none waiting for mpv, and then every answer is awaited
    /// (one timer bounds them all). An item that is already a failure (a check refused it) is not
    /// sent and keeps its error. Returns one result per item, in item order.
    static func requestAll(
        _ items: [(core: PlayerCore, operation: Result<EngineOperation, PlayerError>)], timeout: Duration
    ) async -> [Result<MPVValue, PlayerError>] {
        guard !items.isEmpty else { return [] }
        return await withCheckedContinuation { (continuation: CheckedContinuation<[Result<MPVValue, PlayerError>], Never>) in
            let collected = Locked<(results: [Result<MPVValue, PlayerError>], left: Int)>(
                (Array(repeating: .success(.none), count: items.count), items.count))
            let expiry = Expiry()
            // Each reply resumes once (SentReply), so each index is recorded once.
            let record = { @Sendable (index: Int, result: Result<MPVValue, PlayerError>) in
                let all = collected.withLock { collected -> [Result<MPVValue, PlayerError>]? in
                    collected.results[index] = result
                    collected.left -= 1
                    return collected.left == 0 ? collected.results : nil
                }
                guard let all else { return }
                expiry.cancel()
                continuation.resume(returning: all)
            }
            var pending: [(index: Int, reply: SentReply, operation: String)] = []
            for (index, item) in items.enumerated() {
                let reply = SentReply { record(index, $0) }
                do throws(PlayerError) {
                    let operation = try item.operation.get()
                    try item.core.send(operation, reply: reply)
                    let description = operation.requests.map(Self.describe).joined(separator: "; ")
                    pending.append((index, reply, "\(description) on player \(item.core.id)"))
                } catch {
                    reply.resume(.failure(error))
                }
            }
            guard !pending.isEmpty else { return }
            let sent = pending
            // On the monotonic clock; withdrawn (and `sent` released) once every reply is in, or
            // never armed when they all came first. A reply already resumed ignores the timeout.
            expiry.arm(after: timeout) {
                for item in sent { item.reply.resume(.failure(.timedOut(operation: item.operation, after: timeout))) }
            }
        }
    }

    /// ``requestAll(_:timeout:)`` one core after another: each operation is handed to its core
    /// once the core before answered, by the thread that read that answer (a pump), so no task
    /// or thread waits between two cores and none is blocked. A failure (a check, a refusal)
    /// does not stop the turn: the next core gets its operation at once. One timer bounds them
    /// all; when it fires, the operations not yet answered, and those not yet handed over, end
    /// with ``PlayerError/timedOut(operation:after:)``. Returns one result per item, in order.
    static func requestInTurn(
        _ items: [(core: PlayerCore, operation: Result<EngineOperation, PlayerError>)], timeout: Duration
    ) async -> [Result<MPVValue, PlayerError>] {
        guard !items.isEmpty else { return [] }
        return await withCheckedContinuation { (continuation: CheckedContinuation<[Result<MPVValue, PlayerError>], Never>) in
            let expiry = Expiry()
            let turn = InTurn(items: items, timeout: timeout, finish: {
                expiry.cancel()
                continuation.resume(returning: $0)
            })
            expiry.arm(after: timeout) { turn.expire() }
            turn.hand(0)
        }
    }

    /// The state of one ``requestInTurn(_:timeout:)``: which item is next, what each got.
    private final class InTurn: Sendable {
        private struct Progress {
            var results: [Result<MPVValue, PlayerError>?]
            var finished = false
        }
        private let items: [(core: PlayerCore, operation: Result<EngineOperation, PlayerError>)]
        private let timeout: Duration
        private let progress: Locked<Progress>
        private let finish: @Sendable ([Result<MPVValue, PlayerError>]) -> Void

        init(items: [(core: PlayerCore, operation: Result<EngineOperation, PlayerError>)], timeout: Duration,
             finish: @escaping @Sendable ([Result<MPVValue, PlayerError>]) -> Void) {
            self.items = items
            self.timeout = timeout
            self.progress = Locked(Progress(results: Array(repeating: nil, count: items.count)))
            self.finish = finish
        }

        /// Hands item `index` to its core; its answer hands the next. Nothing more is handed
        /// over once the timer ended the turn.
        func hand(_ index: Int) {
            guard index < items.count, !progress.withLock({ $0.finished }) else { return }
            let item = items[index]
            let reply = SentReply { [self] result in
                record(index, result)
                hand(index + 1)
            }
            do throws(PlayerError) {
                try item.core.send(try item.operation.get(), reply: reply)
            } catch {
                reply.resume(.failure(error))
            }
        }

        private func record(_ index: Int, _ result: Result<MPVValue, PlayerError>) {
            let all = progress.withLock { progress -> [Result<MPVValue, PlayerError>]? in
                guard !progress.finished else { return nil }
                progress.results[index] = result
                guard index == items.count - 1 else { return nil }
                progress.finished = true
                return progress.results.map { $0 ?? .success(.none) }
            }
            if let all { finish(all) }
        }

        /// The timer: whatever has no answer yet ends timed out.
        func expire() {
            let all = progress.withLock { progress -> [Result<MPVValue, PlayerError>]? in
                guard !progress.finished else { return nil }
                progress.finished = true
                return progress.results.enumerated().map { index, result in
                    result ?? .failure(.timedOut(operation: "\(Self.describe(items[index])) (in turn)", after: timeout))
                }
            }
            if let all { finish(all) }
        }

        private static func describe(_ item: (core: PlayerCore, operation: Result<EngineOperation, PlayerError>)) -> String {
            let operation = (try? item.operation.get()).map { $0.requests.map(PlayerCore.describe).joined(separator: "; ") } ?? "a refused operation"
            return "\(operation) on player \(item.core.id)"
        }
    }

    /// Reads a property without blocking (`mpv_get_property_async`) and suspends until mpv
    /// answered: its value, or its refusal as a typed error. No thread waits: the answer, read by
    /// the pump, resumes the caller. Bounded by `timeout` on the monotonic clock
    /// (``PlayerError/timedOut(operation:after:)``), by shutdown
    /// (``PlayerError/playerShutDown(_:)``) and by a lost answer
    /// (``PlayerError/replyLost(_:operation:)``).
    func read(_ name: String, timeout: Duration) async throws(PlayerError) -> MPVValue {
        let result = await withCheckedContinuation { (continuation: CheckedContinuation<Result<MPVValue, PlayerError>, Never>) in
            let expiry = Expiry()
            let reply = SentReply {
                expiry.cancel()
                continuation.resume(returning: $0)
            }
            let replyID: UInt64? = state.withLock { state in
                guard !state.isShutDown else { return nil }
                let replyID = Self.readIDBit | state.nextReadID
                state.nextReadID += 1
                state.propertyReads.add(PropertyRead(name: name, reply: reply), replyID: replyID)
                return replyID
            }
            guard let replyID else { return reply.resume(.failure(.playerShutDown(id))) }
            guard handle.requestProperty(name, replyID: replyID) else {
                state.withLock { _ = $0.propertyReads.take(replyID) }
                // Refused at once: the core is gone, or its event queue is full.
                return reply.resume(.failure(isShutDown ? .playerShutDown(id) : .replyLost(id, operation: "read \(name)")))
            }
            let id = self.id
            // On the monotonic clock; withdrawn (and its captures released) once the read is
            // answered.
            expiry.arm(after: timeout) { [weak self] in
                self?.state.withLock { _ = $0.propertyReads.take(replyID) }
                reply.resume(.failure(.timedOut(operation: "read \(name) on player \(id)", after: timeout)))
            }
        }
        return try result.get()
    }

    /// Re-reads mpv's track list into the model (after a command that adds tracks, so the
    /// read-out shows them when that command returns).
    func refreshTrackList(timeout: Duration) async throws(PlayerError) {
        let list = try await read("track-list", timeout: timeout)
        applyIntent { $0.noteTrackList(list) }
    }

    /// The audio output devices mpv's audio drivers see now.
    func audioDeviceList(timeout: Duration) async throws(PlayerError) -> [AudioDevice] {
        let list = try await read("audio-device-list", timeout: timeout)
        return (list.arrayValue ?? []).compactMap { entry in
            guard let name = entry["name"]?.stringValue else { return nil }
            return AudioDevice(name: name, description: entry["description"]?.stringValue ?? name)
        }
    }


    /// Unloads the media (`stop`, sent without waiting) and asks for the freed heap to go back
    /// to the system soon after. Does nothing once shut down. Safe anywhere, the pump included.
    func releaseMedia() {
        guard (try? send(.command(.stop))) != nil else { return }
        HeapTrim.request()
    }

    // MARK: Loading

    /// Loads `argument` (an absolute path or URL; `source` names it in errors), replacing the
    /// current item, and waits until it loaded or failed. `pause` is sent first, without
    /// waiting: mpv runs async requests of a core in order, so `loadfile` sees it, and a fresh
    /// core is busy starting up, so a synchronous set would add milliseconds to the first frame.
    ///
    /// Cancelling the awaiting task resolves the wait at once with
    /// ``PlayerError/loadCancelled(source:)`` and, unless a later load replaced this one,
    /// stops the item (as `stop()`), so mpv gives up opening it too. The wait is bounded by
    /// ``PlayerConfiguration/loadTimeout`` (a timer on the monotonic clock): when it passes, the
    /// wait ends with ``PlayerError/timedOut(operation:after:)`` and the item is stopped the same way.
    func load(argument: String, source: String, startPaused: Bool) async -> Result<MediaInfo, PlayerError> {
        do throws(PlayerError) {
            try handoff.withLock { handOvers throws(PlayerError) in
                handOvers &+= 1
                try handle.setPropertyAsync("pause", .flag(startPaused))
            }
        } catch {
            return .failure(error)
        }
        applyIntent { $0.notePause(startPaused) }
        if let token = ffmpegToken.withLock({ $0 }) { FFmpegLog.shared.noteLoading(argument, for: token) }
        let arguments = ["loadfile", argument, "replace"]
        let completion = LoadCompletion()
        let loadNumber = state.withLock { $0.loads.begin() }
        // mpv has no bound for an item that keeps opening (a trickling server, a stream
        // provider that never returns): the load's own, on the monotonic clock (DispatchTime).
        let timeout = loadTimeout
        let expiry = Expiry()
        expiry.arm(after: timeout) { [weak self] in
            self?.abandonLoad(completion, number: loadNumber, with: .timedOut(operation: "loading \(source)", after: timeout))
        }
        // Withdrawn, and its captures released, once the wait ends.
        defer { expiry.cancel() }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Result<MediaInfo, PlayerError>, Never>) in
                guard completion.start(continuation, cancelled: .failure(.loadCancelled(source: source))) else { return }
                let replyID: UInt64? = state.withLock { state in
                    guard !state.isShutDown else { return nil }
                    let replyID = state.nextReplyID
                    state.nextReplyID += 1
                    state.loads.sent(LoadWaiter(argument: argument, source: source, completion: completion), replyID: replyID)
                    state.model.noteReplacing()
                    return replyID
                }
                guard let replyID else {
                    completion.resume(.failure(.playerShutDown(id)))
                    return
                }
                do throws(PlayerError) {
                    try handoff.withLock { handOvers throws(PlayerError) in
                        handOvers &+= 1
                        try handle.commandAsync(arguments, replyID: replyID)
                    }
                } catch {
                    let waiter = state.withLock { state in
                        state.model.noteReplacementFailed()
                        return state.loads.unsent(replyID: replyID)
                    }
                    waiter?.completion.resume(.failure(error))
                }
            }
        } onCancel: {
            abandonLoad(completion, number: loadNumber, with: .loadCancelled(source: source))
        }
    }

    /// The wait for load number `number` ends before its item did (the task was cancelled, or
    /// the load timed out): end it with `error`, and stop the item unless a later load replaced
    /// it. Runs on the cancelling or timer thread; never blocks (``send(_:)`` does not wait).
    private func abandonLoad(_ completion: LoadCompletion, number: UInt64, with error: PlayerError) {
        guard completion.resume(.failure(error)) else { return }
        let isLatest = state.withLock { !$0.isShutDown && $0.loads.isLatest(number) }
        // The waiter stays registered: whatever resolves it later finds it already resolved.
        if isLatest { try? send(.command(.stop)) }
    }

    // MARK: Teardown

    /// Whether ``shutdown()`` has begun.
    var isShutDown: Bool { state.withLock { $0.isShutDown } }

    /// Stops the pump and destroys the core on the teardown queue, and calls `completion` when
    /// done. Idempotent. Pending loads fail with ``PlayerError/playerShutDown(_:)``.
    func shutdown(completion: @escaping @Sendable () -> Void) {
        teardownQueue.async {
            self.teardown()
            completion()
        }
    }

    /// Shuts down as ``shutdown(completion:)`` and waits for it, at most `timeout` (on the
    /// monotonic clock). Returns false when the time passed first: the teardown goes on in the
    /// background (mpv is still stopping its threads), and an error is logged.
    func shutdown(timeout: Duration) async -> Bool {
        let finished = await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            let once = Locked<CheckedContinuation<Bool, Never>?>(continuation)
            let expiry = Expiry()
            let resume = { @Sendable (finished: Bool) in
                expiry.cancel()
                once.withLock { $0.take() }?.resume(returning: finished)
            }
            expiry.arm(after: timeout) { resume(false) }
            shutdown { resume(true) }
        }
        if !finished {
            logger.error("""
                shutdown: mpv has not destroyed the core after \(timeout) (a stream provider's open or read that \
                does not return?); the player is shut down, and the core is destroyed in the background when mpv lets go
                """)
        }
        return finished
    }

    private func teardown() {
        let firstTime = state.withLock { state -> Bool in
            defer { state.isShutDown = true }
            return !state.isShutDown
        }
        guard firstTime else { return }
        // 0. Say so while features can still publish about the player (until shutDown below).
        let announced = wallClock()
        if state.withLock({ emit(&$0, [.event(.shuttingDown)], timestamp: announced) }) { deliverOutbox() }
        // 1. No more wakeups: returns only once no callback is running.
        _ = handle.ifAlive { mpv_set_wakeup_callback($0, nil, nil) }
        signalContext.withLock { context in
            context?.release()
            context = nil
        }
        // 2. Stop polling, and wait for a drain or poll in progress; none is scheduled after this.
        pollTimer?.cancel()
        pumpQueue.sync {}
        // A load-fail hook held for its log lines (``PlaybackModel/drained()``) is let go before
        // the core is destroyed, so mpv never tears down a client it still waits on.
        let heldHooks = state.withLock { $0.model.drained() }
        for case .continueHook(let hookID) in heldHooks {
            _ = handle.ifAlive { mpv_hook_continue($0, hookID) }
        }
        // 3. Destroy the core (waits for API calls in flight; later calls throw). mpv has closed
        //    every custom stream by then, so the stream providers can go.
        handle.destroy()
        streamProtocols.releaseAfterCoreDestroyed()
        if let token = ffmpegToken.withLock({ $0.take() }) { FFmpegLog.shared.unregister(token) }
        // 4. Fail whatever still waits, and say the player is gone.
        let wall = wallClock()
        let (waiters, replies, deliver) = state.withLock { state -> ([LoadWaiter], [SentReply], Bool) in
            _ = state.model.cancelAllWaiters(with: .playerShutDown(id))
            let all = state.loads.takeAll()
            let replies = state.sentOperations.takeAll().compactMap(\.reply) + state.seekReplies.takeAll()
                + state.propertyReads.takeAll().map(\.reply)
            // The last event; the pump is stopped, so nothing can follow it.
            state.eventsClosed = true
            return (all, replies, emit(&state, [.event(.shutDown)], timestamp: wall))
        }
        if deliver { deliverOutbox() }
        for waiter in waiters { waiter.completion.resume(.failure(.playerShutDown(id))) }
        for reply in replies { reply.resume(.failure(.playerShutDown(id))) }
    }
}

/// The one-shot end of a ``PlayerCore/load(argument:source:startPaused:)`` wait: resumed by
/// whichever comes first (the item loads or fails, the task is cancelled, shutdown), once.
final class LoadCompletion: Sendable {
    private enum Stage {
        case notStarted, cancelledEarly, waiting(CheckedContinuation<Result<MediaInfo, PlayerError>, Never>), done
    }
    private let stage = Locked<Stage>(.notStarted)

    /// Starts the wait; false (after resuming with `cancelled`) when the task was cancelled
    /// before the wait began.
    func start(_ continuation: CheckedContinuation<Result<MediaInfo, PlayerError>, Never>, cancelled: Result<MediaInfo, PlayerError>) -> Bool {
        let wasCancelled = stage.withLock { stage -> Bool in
            if case .cancelledEarly = stage {
                stage = .done
                return true
            }
            stage = .waiting(continuation)
            return false
        }
        if wasCancelled { continuation.resume(returning: cancelled) }
        return !wasCancelled
    }

    /// Ends the wait with `result`. Returns false when it had already ended. Before the wait
    /// began, only a cancellation is recorded (and returns true).
    @discardableResult
    func resume(_ result: Result<MediaInfo, PlayerError>) -> Bool {
        let continuation = stage.withLock { stage -> CheckedContinuation<Result<MediaInfo, PlayerError>, Never>?? in
            switch stage {
            case .notStarted:
                stage = .cancelledEarly
                return .some(nil)
            case .waiting(let continuation):
                stage = .done
                return .some(continuation)
            case .cancelledEarly, .done:
                return nil
            }
        }
        guard let continuation else { return false }
        continuation?.resume(returning: result)
        return true
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
    /// When mpv last called the wakeup callback, and when the callback scheduled the drain now
    /// running or due: nanoseconds on the monotonic clock since ``origin``.
    private let latest = Atomic<Int64>(0)
    private let scheduling = Atomic<Int64>(0)
    private let origin = ContinuousClock.now
    private let queue: DispatchQueue
    /// The drain, in a class of its own: a closure kept in a `Locked` directly comes out of
    /// `withLock { $0 }` wrapped in two more reabstraction thunks each time (the inout write-back
    /// stores the wrapped one), and every drain ran through a chain that grew by two thunks per
    /// wakeup (WakeupSignalTests).
    private final class Drain: Sendable {
        let run: @Sendable () -> Void
        init(_ run: @escaping @Sendable () -> Void) { self.run = run }
    }
    private let drain = Locked<Drain?>(nil)

    init(queue: DispatchQueue) {
        self.queue = queue
    }

    func setDrain(_ body: @escaping @Sendable () -> Void) {
        let box = Drain(body)
        drain.withLock { $0 = box }
    }

    /// Schedules a drain unless one is already scheduled. Fast and lock-free on the hot path.
    func fire() {
        let now = Self.nanoseconds(ContinuousClock.now - origin)
        latest.store(now, ordering: .releasing)
        guard !scheduled.exchange(true, ordering: .acquiringAndReleasing) else { return }
        scheduling.store(now, ordering: .releasing)
        queue.async { [self] in
            let body = drain.withLock { $0 }
            body?.run()
        }
    }

    /// Called by the drain before it reads events, so a wakeup during the drain schedules another.
    /// Returns when the wakeup that scheduled this drain came (nanoseconds since ``origin``).
    @discardableResult
    func rearm() -> Int64 {
        let since = scheduling.load(ordering: .acquiring)
        scheduled.store(false, ordering: .releasing)
        return since
    }

    /// When mpv signalled the event the drain just read: its latest wakeup, which mpv calls as
    /// it queues an event or notes a property change, so at or after that moment and at or
    /// before now. Never before `since`, the wakeup that scheduled the drain (an event read
    /// before its own wakeup came gets that, not an older one). Nil when no wakeup came yet.
    func signalled(since: Int64) -> ContinuousClock.Instant? {
        let nanoseconds = max(latest.load(ordering: .acquiring), since)
        guard nanoseconds > 0 else { return nil }
        let instant = origin + .nanoseconds(nanoseconds)
        let now = ContinuousClock.now
        return instant < now ? instant : now
    }

    private static func nanoseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }
}
