import Foundation
import Logging
import PlayerKitCore
import PlayerKitSupport

/// Plays a timeline of video clips and still images, each with its own speed, direction and
/// mirroring, as one stream of software frames the app pulls on its own display clock: the
/// video-sequencer pattern (clips recorded by the user, edited while they play).
///
/// ```swift
/// let sequencer = try ClipSequencer(clips: [
///     .video("a.mp4"), .video("b.mp4", speed: 2), .still("title.png", duration: .seconds(1.5)),
///     .video("c.mp4", direction: .backward, flip: .horizontal),
/// ], format: FrameFormat(width: 640, height: 360, pixelFormat: .bgr0))
/// try await sequencer.start()
/// // The app's display loop, 30 or 60 times a second:
/// if let frame = sequencer.frame(at: .now) { show(frame.frame) }
/// ```
///
/// **How.** Three players with software frame outputs (``/PlayerKitCore/FrameOutput``) take turns: the
/// current clip's, the next clip's (prepared: loaded, mirrored, at its speed and direction,
/// paused on its first frame, which is already rendered) and the previous one's until it is
/// released. Half a tick before a boundary the next player starts (so each of its frames is
/// rendered half a tick before the pull that shows it), and its first frame is shown at the
/// boundary's pull, so clips follow each other without a gap; the player beyond the neighbours is
/// released (media unloaded, renderer freed). A clip's place in the output is its length
/// divided by its speed (a still: its duration), counted from the pull at which it started.
///
/// **Edits while playing.** ``setClips(_:)`` changes the timeline at once; the current clip
/// plays on, and the next boundary goes to whatever clip follows it then (re-prepared in the
/// background if it changed). Removing the current clip lets it finish.
///
/// **A clip that cannot play** (a missing file, media mpv cannot read) is skipped: its
/// preparation fails with ``SequencerEvent/clipFailed(clipID:error:)``, the clip after it is
/// prepared in its place, and the output goes on to that one at the boundary (or finishes when
/// none follows). An edit that changes the clip, or removes and adds it again, gives it another
/// try. The first clip's failure is thrown by ``start(at:)`` instead.
///
/// **Events.** Each player publishes ``SequencerEvent``s by its ID (clip started, boundary
/// with its gap, clip failed, finished) through the core's pipeline.
///
/// Written against the core's public API only, as an app could write it.
///
/// **Threading.** Every method may be called from any thread; ``frame(at:)`` never waits for
/// mpv (it reads the newest frame rendered by its instant and, at a boundary, may send `play`). The sequencer's
/// state changes only under its lock, in steps that return what to do (send, publish, release),
/// done after the lock is let go; preparations run one at a time in the background (one task,
/// recorded in the same state). One lock around the state, its actions outside, as
/// Architecture.md's model says.
public final class ClipSequencer: Sendable {
    /// Size and layout of every output frame.
    let format: FrameFormat
    /// The players taking turns (three).
    let players: [any MediaPlayer]
    /// The clock the output's time, the next clip's early start and the first-frame waits run on.
    private let clock: any MonotonicClock

    /// The one lock: every field of the sequencer's state, the background maintenance included.
    private let state: Locked<State>
    private static let logger = Logger(label: "PlayerKit.sequencer")

    struct Slot: Sendable {
        let player: any MediaPlayer
        var output: (any VideoFrameSource)?
        /// The output's last few frames, so a pull picks the one rendered by its instant.
        var recent: RecentFrames?
        var clipID: String?
        /// Loaded and showing its first frame.
        var isReady = false
        /// The media's duration, seconds.
        var duration: Double?
        /// Whether the clip's turn began.
        var isStarted = false
        /// Whether `play` was sent (half a tick before its turn, or at it).
        var isPlaying = false
        /// Bumped at each preparation, so a stale one does not mark the slot ready.
        var generation = 0
    }

    /// A clip to start at an instant, if its slot is still the one prepared (`generation`).
    typealias EarlyStart = (clipID: String, generation: Int, at: ContinuousClock.Instant)

    struct State: Sendable {
        var clips: [SequenceClip]
        var slots: [Slot]
        var outputStart: ContinuousClock.Instant?
        /// The clip now shown, and where it was in the timeline (for when it is removed).
        var current: SequenceClip?
        var currentIndexHint = 0
        /// Output time at which the current clip started.
        var currentStart: Duration = .zero
        var isFinished = false
        // Measurement of the output.
        var lastPull: (clipID: String, sequenceNumber: UInt64, outputTime: Duration)?
        /// Output time at which the current clip's newest distinct frame was first shown.
        var lastDistinctTime: Duration?
        /// Source times of the current clip's distinct frames (to estimate its frame interval).
        var distinctSourceTimes: [Double] = []
        var currentFirstPull: Duration?
        var recentTicks: [Duration] = []
        var boundaries: [SequenceBoundary] = []
        var stillHolds: [StillHold] = []
        /// Set at a switch, completed at the incoming clip's first pull.
        var pendingBoundary: (from: SequenceClip, lastFrame: Duration, hold: Duration, firstPull: Duration?)?
        /// The frame the last pull returned.
        var lastFrame: SequencedFrame?
        /// The next clip's start, planned half a tick before its turn.
        var earlyStart: EarlyStart?
        /// An early start decided by a pull, whose timer the pull's caller arms after the lock.
        var earlyStartToArm: EarlyStart?
        /// Set by ``shutdown()``: a pending early start does nothing.
        var isShutDown = false
        /// Clips that could not be prepared, as they were then (by ID): skipped while they stay
        /// so; an edit that changes or re-adds one gives it another try.
        var failed: [String: SequenceClip] = [:]
        /// The background maintenance (``maintain()``): at most one runs; asked for while it
        /// runs, it goes round once more when it is done (it reads what is wanted then).
        var maintenance: (task: Task<Void, Never>?, again: Bool) = (nil, false)
    }

    /// A sequencer over `clips`, on three players of its own.
    /// - Parameters:
    ///   - clips: the timeline, in order: clips and stills.
    ///   - format: the output frames' size and pixel layout.
    ///   - playerIDPrefix: the players are named "<prefix>-1", "-2", "-3" (default: "sequencer-"
    ///     and a short random part, so several sequencers can live side by side).
    ///   - configuration: the players' configuration; its video output is set to
    ///     ``/PlayerKitCore/PlayerConfiguration/VideoOutput/frames``. Default: silent.
    /// - Throws: ``/PlayerKitCore/PlayerError/invalidArgument(name:value:reason:)`` for an empty timeline, a
    ///   clip's bad speed or duration, or two clips with one ID; the errors of creating players.
    public convenience init(
        clips: [SequenceClip], format: FrameFormat, playerIDPrefix: String? = nil,
        configuration: PlayerConfiguration = PlayerConfiguration(videoOutput: .frames, audioOutput: .none)
    ) throws(PlayerError) {
        var configuration = configuration
        configuration.videoOutput = .frames
        let frames = configuration
        let prefix = playerIDPrefix ?? "sequencer-\(UUID().uuidString.prefix(6).lowercased())"
        try self.init(clips: clips, format: format) { (slot: Int) throws(PlayerError) -> any MediaPlayer in
            try Player(id: PlayerID(stringLiteral: "\(prefix)-\(slot)"), configuration: frames)
        }
    }

    /// A sequencer over `clips`, on the players `makePlayer` makes: the seam an app's tests use
    /// (PlayerKitTesting's `FakePlayer`s on a `ManualClock`), or players configured the app's way.
    /// - Parameters:
    ///   - clips: the timeline, in order: clips and stills.
    ///   - format: the output frames' size and pixel layout.
    ///   - clock: the clock of the output's time, the next clip's early start and the waits for a
    ///     prepared clip's first frame (a one-shot timer on the clock times the start).
    ///   - makePlayer: makes the player for slot 1, 2 and 3, once each, before this returns. Each
    ///     must be able to make frame sources (``/PlayerKitCore/MediaPlayer/makeFrameSource(_:)``: a
    ///     `Player` created with ``/PlayerKitCore/PlayerConfiguration/VideoOutput/frames``).
    /// - Throws: ``/PlayerKitCore/PlayerError/invalidArgument(name:value:reason:)`` for an empty timeline, a
    ///   clip's bad speed or duration, or two clips with one ID; `makePlayer`'s errors (the players
    ///   made before it failed are dropped).
    public init(
        clips: [SequenceClip], format: FrameFormat, clock: any MonotonicClock = ContinuousClock(),
        makePlayer: (Int) throws(PlayerError) -> any MediaPlayer
    ) throws(PlayerError) {
        guard !clips.isEmpty else { throw .invalidArgument(name: "clips", value: "[]", reason: "the timeline needs at least one clip") }
        for clip in clips { try clip.validate() }
        try Self.checkUnique(clips)
        self.format = format
        self.clock = clock
        var players: [any MediaPlayer] = []
        do throws(PlayerError) {
            for slot in 1...3 { players.append(try makePlayer(slot)) }
        } catch {
            // Dropped, the players made so far shut down in the background (their IDs are free at
            // once): no task is left behind.
            players.removeAll()
            throw error
        }
        self.players = players
        state = Locked(State(clips: clips, slots: players.map { Slot(player: $0) }))
    }

    private static func checkUnique(_ clips: [SequenceClip]) throws(PlayerError) {
        var seen: Set<String> = []
        for clip in clips where !seen.insert(clip.id).inserted {
            throw .invalidArgument(name: "clip id", value: clip.id, reason: "is used by two clips of the timeline")
        }
    }

    // MARK: Read-outs

    /// The timeline, in order.
    public var clips: [SequenceClip] { state.withLock { $0.clips } }
    /// The ID of the clip shown now (nil before ``start(at:)``).
    var currentClipID: String? { state.withLock { $0.current?.id } }
    /// The IDs of the clips that are prepared (loaded, first frame ready) now.
    var preparedClipIDs: Set<String> {
        state.withLock { Set($0.slots.filter(\.isReady).compactMap(\.clipID)) }
    }
    /// Whether the last clip has ended.
    public var isFinished: Bool { state.withLock { $0.isFinished } }
    /// Every boundary so far, with its gap.
    public var boundaries: [SequenceBoundary] { state.withLock { $0.boundaries } }
    /// Every still shown so far, with how long it stayed.
    public var stillHolds: [StillHold] { state.withLock { $0.stillHolds } }

    // MARK: Playing

    /// Prepares the first clip and its neighbour, starts the first, and makes `instant` (default:
    /// when the first clip is ready) output time zero.
    /// - Throws: the errors of preparing the first clip (``/PlayerKitCore/Player/preload(_:timeout:)``).
    public func start(at instant: ContinuousClock.Instant? = nil) async throws(PlayerError) {
        guard let first = state.withLock({ $0.clips.first }) else { return }
        try await prepare(first, throwing: true)
        let slot = state.withLock { state -> Slot? in
                state.outputStart = instant ?? clock.now
                state.current = first
                state.currentIndexHint = 0
                state.currentStart = .zero
                guard let index = state.slots.firstIndex(where: { $0.clipID == first.id }) else { return nil }
                state.slots[index].isStarted = true
                state.slots[index].isPlaying = true
                return state.slots[index]
        }
        if let slot, !first.isStill { try? slot.player.send(.play) }
        if let slot { slot.player.publish(SequencerEvent.clipStarted(clipID: first.id, index: 0)) }
        scheduleMaintenance()
    }

    /// The output frame for display time `instant`: the newest frame, rendered by `instant`, of
    /// the clip whose turn it is, switching to the next clip when the current one's time is up
    /// (or it ended). A display loop that runs late and passes the instant it meant (its tick)
    /// gets the frame that was due then, not one mpv rendered since. Nil before ``start(at:)``
    /// and before the first frame. Never waits for mpv. `instant` nil: the clock's `now`.
    public func frame(at instant: ContinuousClock.Instant? = nil) -> SequencedFrame? {
        let instant = instant ?? clock.now
        let (result, startedPlayer, events, timer) = state.withLock { state in
            let (result, startedPlayer, events) = pull(&state, at: instant)
            defer { state.earlyStartToArm = nil }
            return (result, startedPlayer, events, state.earlyStartToArm)
        }
        // A one-shot timer on the clock (for `ContinuousClock` a Dispatch timer, not a task: it
        // must fire at its instant, and the cooperative pool may be busy), armed with no lock
        // held (the clock is the app's). It holds the sequencer weakly and does nothing once the
        // plan is stale or the sequencer shut down (startEarly checks both under the lock).
        if let timer { clock.runOnce(at: timer.at) { [weak self] in self?.startEarly(timer) } }
        if let startedPlayer { try? startedPlayer.send(.play) }
        for (player, event) in events { player.publish(event) }
        if startedPlayer != nil || events.contains(where: { if case .boundary = $0.1 { return true }; return false }) {
            scheduleMaintenance()
        }
        return result
    }

    /// The pull, under the lock: boundary decision and measurement. Returns what to do outside it.
    private func pull(_ state: inout State, at instant: ContinuousClock.Instant)
        -> (SequencedFrame?, (any MediaPlayer)?, [(any MediaPlayer, SequencerEvent)])
    {
        guard let start = state.outputStart, var current = state.current else { return (nil, nil, []) }
        let now = instant - start
        var startedPlayer: (any MediaPlayer)?
        var events: [(any MediaPlayer, SequencerEvent)] = []
        if let last = state.lastPull, now > last.outputTime {
            state.recentTicks.append(now - last.outputTime)
            if state.recentTicks.count > 30 { state.recentTicks.removeFirst() }
        }

        // Is the current clip's time up?
        if !state.isFinished, let slotIndex = state.slots.firstIndex(where: { $0.clipID == current.id }) {
            let slot = state.slots[slotIndex]
            let length = Self.outputLength(of: current, duration: slot.duration)
            // Time is up at the pull nearest the scheduled end (within half a display tick).
            let halfTick = (Self.median(state.recentTicks) ?? .milliseconds(33)) / 2
            let timeUp = length.map { now + halfTick >= state.currentStart + $0 } ?? false
            // mpv ends the item as its last frame is rendered, often before the output has
            // pulled that frame. An ended clip gives way early only when it ended well before
            // its time (media shorter than its duration said) and its newest frame has been
            // shown; near its time, the turn ends at the pull nearest the scheduled end, so
            // the timeline never moves and the last frame gets its tick.
            let playerState = slot.player.state
            let shownSequence = state.lastPull.flatMap { $0.clipID == current.id ? $0.sequenceNumber : nil }
            let hasUnshownFrame = Self.frame(of: slot, renderedBy: instant, after: shownSequence)?.bringsNew ?? false
            let frameStep = Self.frameStep(of: current, sourceTimes: state.distinctSourceTimes) ?? .milliseconds(40)
            let endsSoon = length.map { now + halfTick + frameStep >= state.currentStart + $0 } ?? false
            let ended = !current.isStill && slot.isStarted
                && ([.idle, .failed].contains(playerState) || (playerState == .ended && !hasUnshownFrame && !endsSoon))
            if timeUp || ended {
                let nextClip = Self.playableClip(after: current.id, hint: state.currentIndexHint, in: state.clips, failed: state.failed)
                if let nextClip, let nextIndex = state.slots.firstIndex(where: { $0.clipID == nextClip.id && $0.isReady }) {
                    // The switch: the prepared next clip starts now; its first frame is ready.
                    let tick = Self.median(state.recentTicks) ?? .milliseconds(33)
                    let hold = Self.intendedHold(of: current, sourceTimes: state.distinctSourceTimes, tick: tick)
                    if current.isStill, let first = state.currentFirstPull, let last = state.lastPull?.outputTime {
                        if case .still(_, let duration) = current.content {
                            state.stillHolds.append(StillHold(clipID: current.id, intended: duration, shown: now - first))
                        }
                        state.pendingBoundary = (current, last, .zero, nil)
                    } else {
                        state.pendingBoundary = (current, state.lastDistinctTime ?? now, hold, nil)
                    }
                    state.current = nextClip
                    current = nextClip
                    state.currentIndexHint = state.clips.firstIndex(where: { $0.id == nextClip.id }) ?? state.currentIndexHint + 1
                    state.currentStart = now
                    state.currentFirstPull = nil
                    state.lastDistinctTime = nil
                    state.distinctSourceTimes = []
                    state.slots[nextIndex].isStarted = true
                    if !nextClip.isStill, !state.slots[nextIndex].isPlaying {
                        state.slots[nextIndex].isPlaying = true
                        startedPlayer = state.slots[nextIndex].player
                    }
                    events.append((state.slots[nextIndex].player, .clipStarted(clipID: nextClip.id, index: state.currentIndexHint)))
                } else if nextClip == nil {
                    state.isFinished = true
                    events.append((slot.player, .finished))
                }
                // Otherwise the next clip is not ready yet: hold the last frame (a gap).
            } else if let length, now + halfTick * 3 >= state.currentStart + length,
                      let nextClip = Self.playableClip(after: current.id, hint: state.currentIndexHint, in: state.clips, failed: state.failed),
                      !nextClip.isStill,
                      let nextIndex = state.slots.firstIndex(where: { $0.clipID == nextClip.id && $0.isReady }),
                      !state.slots[nextIndex].isPlaying,
                      state.earlyStart.map({ $0.clipID != nextClip.id || $0.generation != state.slots[nextIndex].generation }) ?? true
            {
                // The next pull is the switch. mpv makes a started clip's frames due one frame
                // interval apart from the moment it starts; started at a pull, every frame would
                // be due just as a pull reads, and a pull a millisecond early would show each a
                // tick late (the clip's last one never). Started half a tick before its turn,
                // each frame is rendered half a tick before the pull that shows it; its first
                // frame, already rendered, is shown at the switch either way.
                let plan: EarlyStart = (nextClip.id, state.slots[nextIndex].generation, start + now + halfTick)
                state.earlyStart = plan
                state.earlyStartToArm = plan  // its timer is armed by the caller, after the lock
            }
        }

        guard let slot = state.slots.first(where: { $0.clipID == current.id }), slot.isReady,
              let picked = Self.frame(
                  of: slot, renderedBy: instant, after: state.lastPull.flatMap { $0.clipID == current.id ? $0.sequenceNumber : nil })
        else { return (state.lastFrame, startedPlayer, events) }
        let frame = picked.frame
        // A repeat: the frame the last pull returned, or mpv's redraws of it (no new picture).
        let isRepeat = state.lastPull.map { $0.clipID == current.id && !picked.bringsNew } ?? false
        // mpv gives no position for an item's last frame (its `time-pos` goes from the frame
        // before straight to unavailable as the item ends), so that frame has no media time: it
        // is shown, timed one source frame step after the frame before.
        var sourceTime = frame.info.videoTime
        if !current.isStill, sourceTime == nil, let last = state.lastFrame, last.clipID == current.id {
            if isRepeat { return (last, startedPlayer, events) }
            sourceTime = Self.nextSourceTime(after: last.sourceTime, steps: state.distinctSourceTimes)
        }
        let isNewDistinct = !isRepeat || state.currentFirstPull == nil
        if state.currentFirstPull == nil {
            state.currentFirstPull = now
            if let pending = state.pendingBoundary {
                let boundary = SequenceBoundary(
                    fromClip: pending.from.id, toClip: current.id, lastFrameOfOutgoing: pending.lastFrame,
                    firstFrameOfIncoming: now, intendedHold: pending.hold)
                state.boundaries.append(boundary)
                state.pendingBoundary = nil
                events.append((slot.player, .boundary(boundary)))
            }
        }
        if isNewDistinct, !isRepeat {
            state.lastDistinctTime = now
            if let time = sourceTime { state.distinctSourceTimes.append(time) }
            if state.distinctSourceTimes.count > 12 { state.distinctSourceTimes.removeFirst() }
        }
        state.lastPull = (current.id, frame.info.sequenceNumber, now)
        let index = state.clips.firstIndex(where: { $0.id == current.id }) ?? state.currentIndexHint
        let result = SequencedFrame(
            clipID: current.id, clipIndex: index, sourceTime: sourceTime, outputTime: now, flip: current.flip,
            isRepeat: isRepeat, frame: frame)
        state.lastFrame = result
        return (result, startedPlayer, events)
    }

    /// The frame a pull at `instant` shows from `slot`: the newest one rendered by then. A
    /// display loop that runs late (a busy machine) asks for an instant already past; mpv may
    /// have rendered the clip's next frame since, and showing it would put the clip a frame
    /// ahead of the output clock, its last frame a tick early. When every frame kept is newer
    /// than `instant`, the oldest kept is the nearest.
    /// `bringsNew`: whether a new picture was rendered after frame `shown` (the one the last
    /// pull returned; nil: none of this clip) and by `instant`. mpv may render a clip's last
    /// picture and at once redraw it as the item ends; the redraw is the newest frame, but its
    /// picture was never shown.
    static func frame(
        of slot: Slot, renderedBy instant: ContinuousClock.Instant, after shown: UInt64?
    ) -> (frame: VideoFrame, bringsNew: Bool)? {
        if let recent = slot.recent { return recent.pick(renderedBy: instant, after: shown) }
        guard let latest = slot.output?.latestFrame else { return nil }
        return (latest, shown.map { latest.info.sequenceNumber > $0 } ?? true)
    }

    /// Starts the clip of `plan` (from its timer) if it is still the prepared next clip and was
    /// not started yet; the switch's pull starts it otherwise.
    private func startEarly(_ plan: EarlyStart) {
        let player = state.withLock { state -> (any MediaPlayer)? in
            guard !state.isShutDown, let current = state.current, !state.isFinished,
                  Self.playableClip(after: current.id, hint: state.currentIndexHint, in: state.clips, failed: state.failed)?.id == plan.clipID,
                  let index = state.slots.firstIndex(where: { $0.clipID == plan.clipID }),
                  state.slots[index].generation == plan.generation, state.slots[index].isReady,
                  !state.slots[index].isPlaying
            else { return nil }
            state.slots[index].isPlaying = true
            return state.slots[index].player
        }
        try? player?.send(.play)
    }

    /// The source time one frame step after `previous`, the step (signed: negative for a
    /// reversed clip) being the median of the steps between the recent distinct frames.
    static func nextSourceTime(after previous: Double?, steps times: [Double]) -> Double? {
        guard let previous else { return nil }
        let steps = zip(times, times.dropFirst()).map { $1 - $0 }.filter { $0 != 0 }
        guard let step = Statistics.median(steps) else { return nil }
        return ((previous + step) * 1_000_000).rounded() / 1_000_000
    }

    /// A clip's share of the output: its length over its speed, or a still's duration.
    static func outputLength(of clip: SequenceClip, duration: Double?) -> Duration? {
        switch clip.content {
        case .still(_, let stillDuration): return stillDuration
        case .video:
            guard let duration, duration > 0 else { return nil }
            return .milliseconds(Int((duration / clip.speed * 1000).rounded()))
        }
    }

    /// How long beyond one tick the clip's last frame is meant to stay: its source frame
    /// interval (estimated from the distinct frames shown) over its speed, minus the tick.
    static func intendedHold(of clip: SequenceClip, sourceTimes: [Double], tick: Duration) -> Duration {
        guard let perFrame = frameStep(of: clip, sourceTimes: sourceTimes) else { return .zero }
        return perFrame > tick ? perFrame - tick : .zero
    }

    /// The output time between two of the clip's distinct frames: the median step between the
    /// recent ones' source times, over the clip's speed. Nil before two are known.
    static func frameStep(of clip: SequenceClip, sourceTimes: [Double]) -> Duration? {
        let steps = zip(sourceTimes, sourceTimes.dropFirst()).map { abs($1 - $0) }.filter { $0 > 0 }
        guard let step = Statistics.median(steps) else { return nil }
        return .milliseconds(Int((step / clip.speed * 1000).rounded()))
    }

    static func median(_ values: [Duration]) -> Duration? {
        guard !values.isEmpty else { return nil }
        return values.sorted()[values.count / 2]
    }

    /// The clip after the one with `id`; when it was removed, the clip now at its old place.
    static func clip(after id: String, hint: Int, in clips: [SequenceClip]) -> SequenceClip? {
        if let index = clips.firstIndex(where: { $0.id == id }) {
            return index + 1 < clips.count ? clips[index + 1] : nil
        }
        return hint < clips.count ? clips[hint] : nil
    }

    /// The first clip after the one with `id` (as ``clip(after:hint:in:)``) that did not fail to
    /// prepare: the output goes on without a clip that cannot play.
    static func playableClip(after id: String, hint: Int, in clips: [SequenceClip], failed: [String: SequenceClip]) -> SequenceClip? {
        var next = clip(after: id, hint: hint, in: clips)
        while let candidate = next, failed[candidate.id] == candidate {
            guard let index = clips.firstIndex(where: { $0.id == candidate.id }) else { return nil }
            next = index + 1 < clips.count ? clips[index + 1] : nil
        }
        return next
    }

    // MARK: Editing

    /// Replaces the timeline with `clips` (to insert, remove, move or replace clips: edit a copy
    /// of ``clips`` and set it). The current clip, found by its ID, plays on (to its end, if it
    /// left the timeline); the next boundary goes to whatever clip follows it then.
    /// - Throws: ``/PlayerKitCore/PlayerError/invalidArgument(name:value:reason:)`` for an empty
    ///   timeline, a bad clip, or an ID used by two clips.
    public func setClips(_ clips: [SequenceClip]) throws(PlayerError) {
        guard !clips.isEmpty else {
            throw .invalidArgument(name: "clips", value: "[]", reason: "the timeline needs at least one clip")
        }
        for clip in clips { try clip.validate() }
        try edit { current in current = clips }
    }

    private func edit(_ change: (inout [SequenceClip]) throws(PlayerError) -> Void) throws(PlayerError) {
        try state.withLock { state throws(PlayerError) in
                var clips = state.clips
                try change(&clips)
                try Self.checkUnique(clips)
                state.clips = clips
                // A failed clip that was changed, or removed (and maybe added again), gets another try.
                state.failed = state.failed.filter { id, clip in clips.contains { $0.id == id && $0 == clip } }
                // A prepared clip whose media or settings changed must be prepared again.
                for index in state.slots.indices {
                    guard let id = state.slots[index].clipID, id != state.current?.id else { continue }
                    if !clips.contains(where: { $0.id == id }) { state.slots[index].isReady = false }
                }
        }
        scheduleMaintenance()
    }

    // MARK: Preparing and releasing

    /// Runs ``maintain()`` in the background: starts it, or, while it runs, has it go round once
    /// more. Decided under the one lock; the work runs outside it.
    private func scheduleMaintenance() {
        state.withLock { state in
            guard !state.isShutDown else { return }
            if state.maintenance.task != nil {
                state.maintenance.again = true
                return
            }
            state.maintenance.task = Task { [weak self] in await self?.maintainUntilDone() }
        }
    }

    /// ``maintain()`` until no more was asked for meanwhile (or the sequencer shut down).
    private func maintainUntilDone() async {
        while true {
            if !Task.isCancelled { await maintain() }
            let again = state.withLock { state -> Bool in
                guard state.maintenance.again, !state.isShutDown, !Task.isCancelled else {
                    state.maintenance = (nil, false)
                    return false
                }
                state.maintenance.again = false
                return true
            }
            if !again { return }
        }
    }

    /// Keeps the current clip and the next one prepared and releases the rest.
    private func maintain() async {
        let (wanted, release) = state.withLock { state -> ([SequenceClip], [any MediaPlayer]) in
                var wanted: [SequenceClip] = []
                if let current = state.current {
                    wanted.append(current)
                    if let next = Self.playableClip(after: current.id, hint: state.currentIndexHint, in: state.clips, failed: state.failed) {
                        wanted.append(next)
                    }
                } else if let first = state.clips.first {
                    wanted.append(first)
                    if let next = Self.playableClip(after: first.id, hint: 1, in: state.clips, failed: state.failed) { wanted.append(next) }
                }
                let wantedIDs = Set(wanted.map(\.id))
                var release: [any MediaPlayer] = []
                for index in state.slots.indices {
                    if let id = state.slots[index].clipID, !wantedIDs.contains(id) {
                        release.append(state.slots[index].player)
                        state.slots[index].clipID = nil
                        state.slots[index].isReady = false
                        state.slots[index].isStarted = false
                        state.slots[index].generation += 1
                    }
                }
                return (wanted, release)
        }
        for player in release {
            try? await player.perform(.stop)
            let output = state.withLock { state -> (any VideoFrameSource)? in
                guard let index = state.slots.firstIndex(where: { $0.player === player && $0.clipID == nil }) else { return nil }
                defer {
                    state.slots[index].output = nil
                    state.slots[index].recent = nil
                }
                return state.slots[index].output
            }
            output?.close()
        }
        for clip in wanted {
            let needed = state.withLock { state in
                !state.slots.contains { $0.clipID == clip.id && ($0.isReady || $0.isStarted) } && state.failed[clip.id] != clip
            }
            if needed { try? await prepare(clip, throwing: false) }
        }
    }

    /// Loads `clip` into a free player, paused on its first frame, with a new frame output.
    private func prepare(_ clip: SequenceClip, throwing: Bool) async throws(PlayerError) {
        let claimed = state.withLock { state -> (Int, Int, any MediaPlayer, (any VideoFrameSource)?)? in
                let index = state.slots.firstIndex(where: { $0.clipID == clip.id })
                    ?? state.slots.firstIndex(where: { $0.clipID == nil })
                guard let index else { return nil }
                state.slots[index].clipID = clip.id
                state.slots[index].isReady = false
                state.slots[index].isStarted = false
                state.slots[index].isPlaying = false
                state.slots[index].generation += 1
                let output = state.slots[index].output
                state.slots[index].output = nil
                state.slots[index].recent = nil
                return (index, state.slots[index].generation, state.slots[index].player, output)
        }
        guard let (index, generation, player, oldOutput) = claimed else { return }
        /// The output made for this preparation, closed if the preparation fails.
        var made: (any VideoFrameSource)?
        do throws(PlayerError) {
            try? await player.perform(.stop)
            oldOutput?.close()
            let output: any VideoFrameSource
            do { output = try player.makeFrameSource(format) } catch {
                throw PlayerError.invalidArgument(name: "frame output", value: "\(format)", reason: error.description)
            }
            made = output
            let recent = RecentFrames()
            output.setFrameHandler { recent.record($0) }
            try await player.perform(.setSpeed(clip.isStill ? 1 : clip.speed))
            try await player.perform(.setPlaybackDirection(clip.isStill ? .forward : clip.direction))
            try await player.perform(.setFlip(clip.flip))
            let info = try await player.preload(clip.source)
            // The first frame is shown; wait until it is rendered into the output too.
            if output.latestFrame == nil { await recent.firstFrame(timeout: .seconds(5), clock: clock) }
            state.withLock { state in
                    guard state.slots[index].generation == generation else { return }
                    state.slots[index].output = output
                    state.slots[index].recent = recent
                    state.slots[index].duration = info.duration
                    state.slots[index].isReady = output.latestFrame != nil
            }
        } catch {
            // The player can make a new output for the next clip it is given.
            made?.close()
            Self.logger.warning("clip could not be prepared", metadata: ["clip": "\(clip.id)", "error": "\(error)"])
            player.publish(SequencerEvent.clipFailed(clipID: clip.id, error: error))
            let superseded = state.withLock { state -> Bool in
                    guard state.slots[index].generation == generation else { return true }
                    state.slots[index].clipID = nil
                    // Skipped from now on (unless an edit changes it): the clip after it is
                    // prepared in its place, and a pull waiting at the boundary moves on to that.
                    state.failed[clip.id] = clip
                    return false
            }
            if throwing { throw error }
            if !superseded { scheduleMaintenance() }
        }
    }

    /// Stops background work and shuts the players down.
    public func shutdown() async {
            let (outputs, maintenance) = state.withLock { state -> ([any VideoFrameSource], Task<Void, Never>?) in
                state.isShutDown = true
                return (state.slots.compactMap(\.output), state.maintenance.task)
            }
            maintenance?.cancel()
            for player in players { try? await player.perform(.stop) }
            for output in outputs { output.close() }
            for player in players { await player.shutdown() }
    }
}

/// What a ``ClipSequencer`` publishes, by the ID of the player showing the clip.
@nonexhaustive
public enum SequencerEvent: PlayerFeatureEvent {
    /// A clip became the one shown (`index`: its place in the timeline then).
    case clipStarted(clipID: String, index: Int)
    /// A boundary was crossed; its gap is measured on the output.
    case boundary(SequenceBoundary)
    /// A clip could not be prepared; the sequencer goes on without it.
    case clipFailed(clipID: String, error: PlayerError)
    /// The last clip ended.
    case finished

    /// ``PlayerKitCore/PlayerEventKind/sequencer``: every event of ``SequencerEvent`` has this
    /// one kind (filter on it, then switch over the event).
    public var kind: PlayerEventKind { .sequencer }

    /// E.g. "sequencerBoundary(clip-1 -> clip-2, gap 33.4 ms)".
    public var description: String {
        switch self {
        case .clipStarted(let id, let index): return "sequencerClipStarted(\(id) at \(index))"
        case .boundary(let boundary):
            let gap = Double(boundary.gap.components.attoseconds) / 1e15 + Double(boundary.gap.components.seconds) * 1000
            return "sequencerBoundary(\(boundary.fromClip) -> \(boundary.toClip), gap \(String(format: "%.1f", gap)) ms)"
        case .clipFailed(let id, let error): return "sequencerClipFailed(\(id), \(error))"
        case .finished: return "sequencerFinished"
        }
    }
}

extension PlayerEventKind {
    /// Every ``SequencerEvent``, whatever its case: what a ``ClipSequencer`` reports about a player.
    public static let sequencer: PlayerEventKind = "sequencer"
}

/// The last few frames of one output, recorded by its frame handler on the render thread.
final class RecentFrames: Sendable {
    /// Enough for a display loop a few ticks late at 60 fps.
    static let capacity = 4
    private struct State {
        var frames: [VideoFrame] = []
        /// Waiting for the first frame, by number: resumed by it or by their timeout, once.
        var nextWaiter = 0
        var waiting: [Int: CheckedContinuation<Void, Never>] = [:]
    }
    /// The one lock: the frames and who waits for the first.
    private let state = Locked(State())

    func record(_ frame: VideoFrame) {
        let woken = state.withLock { state in
            if state.frames.count == Self.capacity { state.frames.removeFirst() }
            state.frames.append(frame)
            defer { state.waiting = [:] }
            return Array(state.waiting.values)
        }
        for waiter in woken { waiter.resume() }
    }

    /// Returns once a frame was recorded, or after `timeout` on `clock`.
    func firstFrame(timeout: Duration, clock: any MonotonicClock) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let number = state.withLock { state -> Int? in
                if !state.frames.isEmpty { return nil }
                state.nextWaiter += 1
                state.waiting[state.nextWaiter] = continuation
                return state.nextWaiter
            }
            guard let number else { return continuation.resume() }
            clock.runOnce(at: clock.now.advanced(by: timeout)) { [self] in
                let waiter = state.withLock { $0.waiting.removeValue(forKey: number) }
                waiter?.resume()
            }
        }
    }

    /// The newest frame rendered at or before `instant` (the oldest kept when all are newer;
    /// nil when none was recorded), and whether a new picture (not a redraw) was rendered after
    /// frame number `shown` up to that one (nil `shown`: always).
    func pick(renderedBy instant: ContinuousClock.Instant, after shown: UInt64?) -> (frame: VideoFrame, bringsNew: Bool)? {
        state.withLock { state -> (frame: VideoFrame, bringsNew: Bool)? in
            let frames = state.frames
            guard let index = frames.lastIndex(where: { $0.info.renderedAt <= instant }) ?? (frames.isEmpty ? nil : 0) else {
                return nil
            }
            guard let shown else { return (frames[index], true) }
            let bringsNew = frames[...index].contains { $0.info.sequenceNumber > shown && $0.info.isNewFrame }
                || (frames[index].info.sequenceNumber > shown && frames.first.map { $0.info.sequenceNumber > shown + 1 } ?? false)
            return (frames[index], bringsNew)
        }
    }
}
