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
        /// Awaited property reads (``read(_:timeout:)``), by reply ID (``MPVRequestIDs/readBit`` set).
        var propertyReads = PendingReplies<PropertyRead>()
        /// Reply numbers of sent operations and loads, and of awaited reads (``MPVRequestIDs``).
        var operationIDs = MPVRequestIDs.Counter(first: 1)
        var readIDs = MPVRequestIDs.Counter(first: 1, mask: MPVRequestIDs.readBit)
        var isShutDown = false
        /// Receives each numbered batch, in order, from the one deliverer (no lock held), for
        /// the subscribers the phase reaches (``DeliveryPhase``).
        var sink: (@Sendable ([PlayerEventRecord], DeliveryPhase) -> Void)?
        /// The player's events on their way to the sink: numbered, timed, gated at shutdown
        /// (``EventOutbox``, the same a fake's ``PlayerEventEmitter`` keeps).
        var outbox: EventOutbox
        /// Stalls, start-up and frames shown, tallied from the events as they are numbered
        /// (``emit(_:_:timestamp:at:)``) and, while statistics are observed, from each frame.
        var tally = PlaybackTally()
        /// The alarms raised from the detectors' reports and the positions shown, while alarms
        /// are watched (``watchAlarms(_:)``).
        var alarms = AlarmTracker()
        /// Makes the core pool's ready cores whole again (``CorePool/refillNow(options:)``):
        /// run once, at the player's first frame, when its load no longer shares the machine
        /// with a core's creation. Moved to ``poolRefillDue`` at the first frame (``emit(_:_:timestamp:at:)``).
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
    let handoff = Locked<UInt64>(0)
    /// How many hand-overs were made, counted once each is done (for tests: taking the gate
    /// waits for one under way).
    var handOvers: UInt64 { handoff.withLock { $0 } }
    /// The position as the pump saw it, for stamping rendered frames (``FrameOutput``).
    let frameClock = FrameClock()
    let pumpQueue: DispatchQueue
    let teardownQueue: DispatchQueue
    let signal: WakeupSignal
    let signalContext: Locked<Unmanaged<WakeupSignal>?>
    let mpvLogger: Logger
    /// PlayerKit's own messages about this player (``PlayerConfiguration/logger``).
    let logger: Logger
    /// Messages of the player's frame outputs and renderers.
    let frameLogger: Logger
    /// The mpv log levels the app asked for (``PlayerConfiguration/mpvLogLevel``); errors are
    /// requested from mpv in any case, for the errors that end an item.
    let forwardedLogLevels: Set<MPVEvent.LogLevel>
    /// Where records' display timestamps come from (``PlayerConfiguration/wallClock``).
    let wallClock: @Sendable () -> Date
    /// FFmpeg's lines credited to this player (``FFmpegLog``), queued by FFmpeg's threads for the
    /// pump, oldest first (at most ``ffmpegLinesKept``: a flood drops the oldest).
    let ffmpegLines = Locked<[FFmpegLog.Line]>([])
    static let ffmpegLinesKept = 256
    /// The player's registration with ``FFmpegLog`` (from ``start(sink:)`` to teardown).
    let ffmpegToken = Locked<FFmpegLineAttribution.Token?>(nil)
    /// Asks for position and cache once per position interval while playing (nil for a zero
    /// interval, where they are observed instead). Runs on the pump queue.
    let pollTimer: RepeatingTimer?
    /// How long a load waits for its item (``PlayerConfiguration/loadTimeout``).
    let loadTimeout: Duration
    /// Whether the player keeps the pitch with PlayerKit's own filter
    /// (``PlayerConfiguration/pitchFilter``): then a muted player runs it without its search
    /// (``EngineOperation/setPitchFilter(muted:)``).
    let hasPitchFilter: Bool
    /// Whether the player's sound goes to an output (``PlayerConfiguration/isHeard``): one that
    /// nobody hears keeps its video on its own clock, whatever ``PlayerCommand/setVideoClock(_:)`` says.
    let isHeard: Bool

    // Observation counts (PlayerCore+Observations.swift).
    /// How many users asked for per-frame positions (``observeEveryPosition(_:)``).
    let everyPositionUsers = Locked(0)
    /// How many users asked for buffered-media reports (``observeBufferedMedia(_:)``).
    let bufferedMediaUsers = Locked(0)
    /// How many frame outputs want the frame clock fed (``observeFrameClock(_:)``).
    let frameClockUsers = Locked(0)
    /// How many statistics observations count frames (``observeStatistics(every:)``: the first
    /// starts the count, the last ends it).
    let statisticsFrameUsers = Locked(0)
    /// The statistics observations and their sampling timer (PlayerCore+Statistics.swift).
    let statisticsObservers = Locked(StatisticsObservers())
    /// The alarm watches, the loudness observations and their sampling timer
    /// (PlayerCore+Alarms.swift).
    let alarmWatchers = Locked(AlarmWatchers())
    /// How many watches observe each alarm detector's metadata, in ``AlarmKind/allCases`` order.
    let alarmMetadataUsers = AlarmKind.allCases.map { _ in Locked(0) }
    /// Whether the alarms hold a user of the per-frame `time-pos` observation: only while a
    /// fault is under way (``syncAlarmPositions()``).
    let alarmPositionsObserved = Locked(false)
    /// The app's live property observations, by observation ID. A change that mpv queued before
    /// an observation ended is dropped by the pump, so none is reported after its cancel.
    let appObservations = Locked<(next: UInt64, live: Set<UInt64>)>((1, []))

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
            networkTimeout: configuration.networkTimeout), outbox: EventOutbox(playerID: id))
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

    /// Whether ``shutdown()`` has begun.
    var isShutDown: Bool { state.withLock { $0.isShutDown } }
}
