import Foundation
import PlayerKitCore
import PlayerKitSupport

/// Loops a list of clips forever on one player, seamlessly: the background-video treadmill.
///
/// ```swift
/// let loop = try ClipLoop(player: background, clips: ["intro.mp4", "waves.mp4", "city.mp4"])
/// try await loop.start()      // plays clip 0, 1, 2, 0, 1, 2, ... until stop()
/// ```
///
/// **Seamless.** The clips are joined into one mpv timeline (an `edl://` of the clips,
/// repeated to cover at least half an hour, then looped with `loop-file`), so moving from one
/// clip to the next is a segment change inside one playback: no file is reopened and no
/// decoder restarts between clips. Measured seams are one frame interval frame to frame (a gap
/// of about 0 ms); only the wrap of the whole timeline (every 30 minutes or more) costs about a
/// frame more. mpv's playlist with gapless audio and prefetching, measured the same way, left
/// gaps of 30-45 ms at every change between clips with audio (each entry reopens its file and
/// restarts playback); see Documentation/Performance.md.
///
/// **Events** (``ClipEvent``s, published on the player's pipeline, keyed by its ID):
/// ``ClipEvent/clipChanged(index:seam:)`` at every clip change (`index` into the clips it was given) and
/// ``ClipEvent/loopWrapped(count:seam:)`` each time the list starts over, both with the
/// measured ``SeamTiming``. Seam events are published with the third frame of the new clip
/// (two frame intervals after the change), once the seam could be measured; the first clip's
/// ``ClipEvent/clipChanged(index:seam:)`` comes with its first frame. While the loop runs,
/// ``/PlayerKitCore/PlayerEvent/positionChanged(_:)`` comes with every frame (``/PlayerKitCore/Player/observeEveryFrame()``:
/// the seam timing needs frame times); positions count along the joined timeline.
///
/// **Unplayable clips** are found before playback starts (each clip is opened once by a
/// headless probe player), reported with ``ClipEvent/clipUnplayable(index:error:)`` (the
/// error names the clip), and left out; the loop goes on with the others.
///
/// Written, as every PlayerKit feature, against the core's public API only.
///
/// **Threading.** Methods may be called from any thread or task. The loop's state is one lock,
/// changed in single steps. It follows its player in an `.immediate` bus handler, one frame at a
/// time on the thread that delivers the player's events, and publishes what a frame decided after
/// releasing the lock. ``start()`` calls run one after another and suspend while the clips are
/// probed and loaded; ``stop()`` may come at any time (a start still probing the clips then
/// returns without loading them) and never waits (it sends `stop` to the player).
public final class ClipLoop: Sendable {
    /// The player the clips play on.
    let player: any MediaPlayer
    /// The clips, in order, as given.
    let clips: [MediaSource]

    /// The timeline is repeated until it lasts at least this long (seconds)...
    static let minimumTimeline: Double = 1800
    /// ...unless that would take more than this many segments.
    static let maximumSegments = 2000

    private struct Segment: Sendable {
        /// Index into `clips`.
        let clip: Int
        /// Start within one pass over the playable clips.
        let offset: Double
        let duration: Double
    }

    /// A seam seen but not reported yet: it is measured over the first two frames after it.
    private struct PendingSeam: Sendable {
        var events: [ClipEvent]
        /// The median frame offset (clock time minus media time) over the frames before it.
        let baseline: Double?
        /// Seconds between the last frame before and the first frame after.
        let frameInterval: Double?
        var offsetsAfter: [Double]
    }

    private struct State: Sendable {
        var segments: [Segment] = []
        var cycleLength: Double = 0
        var timelineLength: Double = 0
        var subscription: PlayerSubscription?
        var observation: PropertyObservation?
        // Tracking, from position events.
        var lastFrame: (time: ContinuousClock.Instant, position: Double)?
        var timelinePass = 0
        var current: (cycle: Int, segment: Int)?
        var wraps = 0
        var seams: [SeamTiming] = []
        /// Media seconds played since the loop started (continuous across wraps).
        var mediaClock: Double = 0
        var lastSpeed: Double = 1
        /// Recent frame offsets: clock seconds (since `origin`) minus media time at the current speed.
        var recentOffsets: [Double] = []
        var pending: PendingSeam?
        /// Counts ``stop()`` calls, so a start that was stopped while probing does not load.
        var stops: UInt64 = 0
    }

    private let state = Locked(State())
    /// Serializes ``start()`` calls.
    private let operations = AsyncSerialGate()
    /// The zero of the frame offsets (any fixed instant will do).
    private let origin = ContinuousClock.now

    /// A loop of `clips` on `player`. Nothing plays until ``start()``.
    /// - Parameters:
    ///   - player: the player the clips play on.
    ///   - clips: the clips, in order.
    ///   - makeProber: makes the player ``start()`` reads the clips' durations with (and shuts
    ///     down after); nil for a headless, silent ``/PlayerKitCore/Player`` of the loop's own. A test passes
    ///     a factory of fakes.
    /// - Throws: ``/PlayerKitCore/PlayerError/invalidArgument(name:value:reason:)`` for an empty list.
    public init(player: any MediaPlayer, clips: [MediaSource],
                makeProber: (@Sendable () async throws(PlayerError) -> any MediaPlayer)? = nil) throws(PlayerError) {
        guard !clips.isEmpty else {
            throw .invalidArgument(name: "clip list", value: "[]", reason: "needs at least one clip")
        }
        self.player = player
        self.clips = clips
        self.makeProber = makeProber
    }

    /// Makes the player that reads the clips' durations; nil for a headless, silent
    /// ``/PlayerKitCore/Player`` of its own (made with ``/PlayerKitCore/Player/create(id:configuration:delegate:)``).
    private let makeProber: (@Sendable () async throws(PlayerError) -> any MediaPlayer)?

    deinit {
        let (subscription, observation) = state.withLock { ($0.subscription, $0.observation) }
        subscription?.cancel()
        observation?.cancel()
    }

    /// The indexes (into the clips it was given) of the clips that play, once ``start()`` has probed them.
    var playableClips: [Int] { state.withLock { $0.segments.map(\.clip) } }
    /// The index (into the clips it was given) of the clip on screen, nil before the first frame.
    var currentClip: Int? {
        state.withLock { state in state.current.map { state.segments[$0.segment].clip } }
    }
    /// How many times the list has started over.
    var wrapCount: Int { state.withLock { $0.wraps } }
    /// The seams measured so far, in order: the latest 10,000 of them.
    var seams: [SeamTiming] { state.withLock { $0.seams } }

    /// How many seams ``seams`` keeps (hours of one-second clips).
    static let seamHistoryLimit = 10_000

    /// Probes the clips, then starts playing them in a loop from the first playable one.
    /// Returns once the joined timeline has loaded (or, when ``stop()`` came while the clips
    /// were being probed, without loading anything).
    /// - Throws: ``/PlayerKitCore/PlayerError/invalidArgument(name:value:reason:)`` when no clip can be
    ///   played (each failure was also reported as ``ClipEvent/clipUnplayable(index:error:)``),
    ///   or the errors of ``/PlayerKitCore/Player/load(_:startPaused:)``.
    public func start() async throws(PlayerError) {
        try await operations.run { () async throws(PlayerError) in
            let stopsBefore = state.withLock { $0.stops }
            let probed = await probe()
            guard state.withLock({ $0.stops }) == stopsBefore else { return }
            guard !probed.isEmpty else {
                throw .invalidArgument(name: "clip list", value: clips.map(\.description).joined(separator: ", "),
                                       reason: "none of the clips can be played")
            }
            var segments: [Segment] = []
            var offset = 0.0
            for (clip, duration) in probed {
                segments.append(Segment(clip: clip, offset: offset, duration: duration))
                offset += duration
            }
            let cycle = offset
            let repeats = max(1, min(Self.maximumSegments / segments.count, Int((Self.minimumTimeline / cycle).rounded(.up))))
            let timeline = MediaSource.joined(segments.map { clips[$0.clip] }, repeated: repeats)
            let watch = player.eventBus.subscribe(to: player.id, kinds: [.positionChanged], delivery: .immediate) {
                [weak self] record in
                guard case .positionChanged(let position) = record.event else { return }
                self?.frame(at: position, time: record.time)
            }
            let observation = player.observeEveryFrame()
            let previous = state.withLock { state -> (PlayerSubscription?, PropertyObservation?) in
                defer {
                    let stops = state.stops
                    state = State()
                    state.stops = stops
                    state.segments = segments
                    state.cycleLength = cycle
                    state.timelineLength = cycle * Double(repeats)
                    state.subscription = watch
                    state.observation = observation
                }
                return (state.subscription, state.observation)
            }
            previous.0?.cancel()
            previous.1?.cancel()
            do throws(PlayerError) {
                try await player.perform(.setLoop(.forever))
                try await player.load(timeline)
            } catch {
                stopFollowing()
                throw error
            }
        }
    }

    /// Stops following the player (no more clip events) and playback. The player stays usable.
    public func stop() {
        state.withLock { $0.stops += 1 }
        stopFollowing()
    }

    private func stopFollowing() {
        let (subscription, observation) = state.withLock { state in
            defer { state.subscription = nil; state.observation = nil }
            return (state.subscription, state.observation)
        }
        subscription?.cancel()
        if let observation {
            observation.cancel()
            // Never waits: mpv carries these out in order.
            try? player.send(.stop)
            try? player.send(.setLoop(.off))
        }
    }

    // MARK: Probing

    /// Opens each clip once on a headless, silent player of its own; returns (index, duration)
    /// for the playable ones and reports the others on the player as
    /// ``ClipEvent/clipUnplayable(index:error:)``.
    private func probe() async -> [(Int, Double)] {
        let prober: any MediaPlayer
        do throws(PlayerError) {
            if let makeProber {
                prober = try await makeProber()
            } else {
                var configuration = PlayerConfiguration(videoOutput: .none, audioOutput: .none)
                configuration.eventBus = PlayerEventBus(label: "clip-loop-probe")
                configuration.positionUpdateInterval = .seconds(3600)
                prober = try await Player.create(
                    id: PlayerID(stringLiteral: "\(player.id).probe.\(UUID().uuidString.prefix(8))"), configuration: configuration)
            }
        } catch {
            for index in clips.indices { player.publish(ClipEvent.clipUnplayable(index: index, error: error)) }
            return []
        }
        var playable: [(Int, Double)] = []
        for (index, clip) in clips.enumerated() {
            do throws(PlayerError) {
                let info = try await prober.load(clip, startPaused: true)
                if let duration = info.duration, duration > 0 {
                    playable.append((index, duration))
                } else {
                    player.publish(ClipEvent.clipUnplayable(
                        index: index, error: .invalidSource("\(clip) (no duration: a live stream cannot be looped)")))
                }
            } catch {
                player.publish(ClipEvent.clipUnplayable(index: index, error: error))
            }
        }
        await prober.shutdown()
        return playable
    }

    // MARK: Tracking

    /// Frames before a seam whose offsets make its baseline (recent ones only: the first
    /// frames after a load are held longer while playback starts).
    static let baselineFrames = 10
    /// Frames after a seam over which it is measured.
    static let measuredFrames = 3

    /// Called with every frame's position and its monotonic time, on the thread that delivers the player's events, in order.
    ///
    /// The seam's gap is how much later than scheduled the incoming clip's first frames
    /// appeared: the median offset (clock time minus media time) of the first
    /// ``measuredFrames`` frames after the seam, minus the median offset of the
    /// ``baselineFrames`` frames before it. Medians filter out frames whose observation was
    /// late because this process was busy: a real stall delays every later frame, while a
    /// late observation delays one. The events are therefore emitted with the third frame of
    /// the new clip (two frame intervals after the change).
    private func frame(at position: Double, time: ContinuousClock.Instant) {
        let speed = max(player.snapshot.speed ?? 1, 0.01)
        let events = state.withLock { state -> [ClipEvent] in
            guard !state.segments.isEmpty, state.cycleLength > 0 else { return [] }
            // A position far below the last one: the whole timeline wrapped (loop-file).
            var mediaStep = 0.0
            if let last = state.lastFrame {
                if position + 1 < last.position {
                    state.timelinePass += 1
                    mediaStep = (state.timelineLength - last.position) + position
                } else {
                    mediaStep = position - last.position
                }
            }
            let previousFrame = state.lastFrame
            state.lastFrame = (time, position)
            if speed != state.lastSpeed {
                state.recentOffsets.removeAll()  // the media clock runs at another rate now
                state.lastSpeed = speed
            }
            state.mediaClock += mediaStep
            let offset = time.seconds(since: origin) - state.mediaClock / speed

            var events: [ClipEvent] = []
            // Measure a pending seam with this frame.
            if var pending = state.pending {
                pending.offsetsAfter.append(offset)
                state.pending = pending
                if pending.offsetsAfter.count >= Self.measuredFrames {
                    events += Self.finish(&state)
                }
            }

            let passCycles = Int((state.timelineLength / state.cycleLength).rounded())
            let cycleInPass = min(Int((position + 0.0005) / state.cycleLength), passCycles - 1)
            let cycle = state.timelinePass * passCycles + cycleInPass
            let within = position - Double(cycleInPass) * state.cycleLength
            let segment = state.segments.lastIndex { $0.offset <= within + 0.0005 } ?? 0
            let changed = state.current.map { $0.cycle != cycle || $0.segment != segment } ?? true
            if changed {
                // A seam still being measured when the next comes: report it with what it has.
                if state.pending != nil { events += Self.finish(&state) }
                let first = state.current == nil
                state.current = (cycle, segment)
                var seamEvents: [ClipEvent] = [.clipChanged(index: state.segments[segment].clip, seam: nil)]
                if !first, cycle > state.wraps, segment == 0 {
                    state.wraps = cycle
                    seamEvents.append(.loopWrapped(count: cycle, seam: nil))
                }
                if first {
                    events += seamEvents
                } else {
                    state.pending = PendingSeam(
                        events: seamEvents, baseline: Statistics.median(state.recentOffsets),
                        frameInterval: previousFrame.map { time.seconds(since: $0.time) }, offsetsAfter: [offset])
                    if Self.measuredFrames <= 1 { events += Self.finish(&state) }
                }
            }
            state.recentOffsets.append(offset)
            if state.recentOffsets.count > Self.baselineFrames { state.recentOffsets.removeFirst() }
            return events
        }
        for event in events { player.publish(event) }
    }

    /// Completes the pending seam: its timing, recorded and attached to its events.
    private static func finish(_ state: inout State) -> [ClipEvent] {
        guard let pending = state.pending else { return [] }
        state.pending = nil
        var seam: SeamTiming?
        if let baseline = pending.baseline, let after = Statistics.median(pending.offsetsAfter),
           let interval = pending.frameInterval {
            let timing = SeamTiming(frameInterval: interval, gap: after - baseline)
            state.seams.append(timing)
            if state.seams.count > ClipLoop.seamHistoryLimit { state.seams.removeFirst() }
            seam = timing
        }
        return pending.events.map { event in
            switch event {
            case .clipChanged(let index, _): return .clipChanged(index: index, seam: seam)
            case .loopWrapped(let count, _): return .loopWrapped(count: count, seam: seam)
            case .clipUnplayable: return event
            }
        }
    }
}
