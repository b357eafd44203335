import Foundation
import PlayerKit

/// What the example programs share: the shipped media, elapsed time, and the `--json` line format.
public enum ExampleSupport {
    /// The path of a clip shipped in the repository's Media folder (found from this source
    /// file's location, so `swift run` works from anywhere inside the checkout).
    public static func shippedMedia(_ name: String) -> String {
        let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let candidate = repository.appendingPathComponent("Media").appendingPathComponent(name).path
        return FileManager.default.fileExists(atPath: candidate) ? candidate : "Media/" + name
    }

    /// Seconds since `start`, as a Double.
    public static func seconds(since start: ContinuousClock.Instant) -> Double {
        ContinuousClock.now.seconds(since: start)
    }

    /// Writes one line to standard output at once, with one write(2) and no stdio buffer, so
    /// each line arrives whole even when the output is a pipe (`| jq`). (Flushing stdio with
    /// `fflush(nil)` instead would also lock stdin, and deadlock with a blocked `readLine()`.)
    /// Examples print every line through here, so lines keep their order.
    /// A player's statistics in one short line, for a tile or a pane:
    /// "25.0 fps · 0 dropped · 4.2 s ahead · 1 stall".
    public static func statisticsSummary(_ figures: PlaybackStatistics) -> String {
        let fps = figures.renderedFrameRate.map { String(format: "%.1f fps", $0) } ?? "- fps"
        let dropped = (figures.framesDroppedByDecoder ?? 0) + (figures.framesDroppedByOutput ?? 0)
        let ahead = figures.bufferAhead.map { String(format: "%.1f s ahead", $0) } ?? "- ahead"
        return "\(fps) · \(dropped) dropped · \(ahead) · \(figures.stallCount) stall\(figures.stallCount == 1 ? "" : "s")"
    }

    public static func printLine(_ line: String) {
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
    }
}

/// One line of `--json` output: `player`, `event`, `t`, and the event's own fields.
public struct JSONEventLine: Encodable, Sendable {
    /// The player's ID.
    public let player: String
    /// The event's name (``PlayerEvent/name``).
    public private(set) var event: String
    /// Seconds since the program started, rounded to milliseconds.
    public let t: Double
    /// The new state, on state changes.
    public var state: String?
    /// The previous state, on state changes.
    public var from: String?
    /// Seconds, on position and seek events.
    public var position: Double?
    /// Seconds, on duration and media-loaded events.
    public var duration: Double?
    /// Why an item ended.
    public var reason: String?
    /// The error's description.
    public var error: String?
    /// Any other payload, as text.
    public var value: String?
    /// Whether the player is fullscreen, on fullscreen changes.
    public var fullscreen: Bool?
    /// The policy's owner, on ownership changes ("" when nobody owns it).
    public var owner: String?
    /// The orientation, on orientation changes.
    public var orientation: String?
    /// The number of a scripted step, on the lines an example prints about its script.
    public var step: Int?
    /// What a scripted step does, e.g. "right claims the policy".
    public var action: String?
    /// The clip's index, on clip changes.
    public var index: Int?
    /// How many times the list started over, on wrap-arounds.
    public var count: Int?
    /// The seam's gap in milliseconds (how much later than scheduled the next clip's first
    /// frame appeared), on clip changes and wrap-arounds.
    public var gapMs: Double?
    /// Milliseconds from the outgoing clip's last frame to the incoming clip's first, on seams.
    public var frameToFrameMs: Double?
    /// A sync group member's distance from the group's clock in milliseconds, on drift events.
    public var driftMs: Double?
    /// A sequencer clip's ID, on the sequencer's frame and boundary lines.
    public var clip: String?
    /// Seconds into the clip's media, on sequencer frame lines.
    public var sourceTime: Double?
    /// Seconds of sequencer output (its display clock), on sequencer frame lines.
    public var outputTime: Double?
    /// The mirroring applied, on sequencer frame lines ("none", "horizontal", ...).
    public var flip: String?
    /// On sequencer frame lines: whether the pull brought a new picture (false: the one before
    /// again, such as mpv's redraw of it).
    public var isNewFrame: Bool?
    /// On sequencer frame lines: how many milliseconds after its tick the display loop asked
    /// for the frame (a busy machine wakes it late).
    public var lateMs: Double?
    /// On sequencer frame lines: when the frame was rendered, in milliseconds from the tick
    /// (negative: before it).
    public var renderedMs: Double?
    /// Summary figures in milliseconds (median, 99th percentile, largest).
    public var p50Ms: Double?
    /// See ``p50Ms``.
    public var p99Ms: Double?
    /// See ``p50Ms``.
    public var maxMs: Double?
    /// A pass over a list (the feed's `--server` mode scrolls twice), on per-pass summaries.
    public var pass: Int?
    /// Bytes that came over the network, on cache summaries.
    public var networkBytes: Int64?
    /// Bytes read from the cache, on cache summaries.
    public var cacheBytes: Int64?
    /// Bytes a cancelled download did not fetch (an item's size less what was cached).
    public var savedBytes: Int64?
    /// An item's size in bytes.
    public var sizeBytes: Int64?
    /// Whether the item is a live stream, on media-loaded events.
    public var live: Bool?
    /// Why a live source was lost, on its `networkFailed` error (``NetworkFailure``'s words).
    public var cause: String?
    /// The player's playback statistics, on `statisticsUpdated` lines.
    public var statistics: PlaybackStatistics?
    /// The alarm (its kind, start and, once cleared, end), on `alarmRaised` and `alarmCleared` lines.
    public var alarm: Alarm?
    /// The player's loudness, on `loudnessUpdated` lines.
    public var loudness: Loudness?

    /// A line that is not a player event (a script step, a status read-out): `player`,
    /// `event` and `t` only; set the other fields as needed.
    public init(player: String, event: String, t: Double) {
        self.player = player
        self.event = event
        self.t = (t * 1000).rounded() / 1000
    }

    /// The line for `record`, `t` seconds after the start.
    public init(_ record: PlayerEventRecord, t: Double) {
        self.init(player: record.playerID, event: record.event, t: t)
    }

    /// The line for `event` of `player` at `t` seconds, when there is no record (an error
    /// the app itself caught).
    public init(player id: PlayerID, event playerEvent: PlayerEvent, t: Double) {
        player = id.rawValue
        event = playerEvent.kind.rawValue
        self.t = (t * 1000).rounded() / 1000
        switch playerEvent {
        case .stateChanged(let old, let new):
            state = new.rawValue
            from = old.rawValue
        case .positionChanged(let seconds): position = seconds
        case .durationKnown(let seconds): duration = seconds
        case .mediaLoaded(let info):
            duration = info.duration
            value = info.videoSize?.description
            live = info.isLive
        case .seekCompleted(let seconds): position = seconds
        case .bufferingProgress(let percent): value = String(percent)
        case .bufferedMediaChanged(let media): value = media.description
        case .statisticsUpdated(let figures): statistics = figures
        case .alarmRaised(let raised), .alarmCleared(let raised): alarm = raised
        case .loudnessUpdated(let level): loudness = level
        case .volumeChanged(let volume): value = String(volume)
        case .muteChanged(let muted), .fullscreenStateChanged(let muted): value = String(muted)
        case .speedChanged(let speed): value = String(speed)
        case .tracksChanged(let tracks): value = tracks.filter(\.isSelected).map(\.description).joined(separator: ", ")
        case .videoDecoderChanged(let decoder): value = decoder?.description ?? "none"
        case .loopModeChanged(let mode): value = "\(mode)"
        case .playlistChanged(let playlist): value = playlist.description
        case .propertyChanged(let name, let changed): value = "\(name)=\(changed)"
        case .itemEnded(let endReason):
            reason = endReason.description
            if case .error(let failure) = endReason { error = failure.description }
        case .error(let failure):
            error = failure.description
            if case .networkFailed(_, let lost, _) = failure { cause = lost.description }
        case .eventsLost(let snapshot):
            state = snapshot.state.rawValue
            position = snapshot.position
            value = snapshot.description
        case .feature(let event): setFeature(event)
        case .created, .shuttingDown, .shutDown, .firstFrame: break
        @unknown default: value = playerEvent.description
        }
    }

    /// The fields of the features' events PlayerKit ships; others go to `value`.
    private mutating func setFeature(_ event: any PlayerFeatureEvent) {
        switch event {
        case let event as FullscreenEvent:
            switch event {
            case .fullscreenChanged(let isFullscreen):
                self.event = "fullscreenChanged"
                fullscreen = isFullscreen
            case .ownershipChanged(let newOwner):
                self.event = "fullscreenOwnershipChanged"
                owner = newOwner?.rawValue ?? ""
            case .fullscreenUndone(let currentOwner):
                self.event = "fullscreenUndone"
                owner = currentOwner.rawValue
            case .orientationChanged(let newOrientation):
                self.event = "orientationChanged"
                orientation = newOrientation.rawValue
            case .orientationRequested(let newOrientation):
                self.event = "orientationRequested"
                orientation = newOrientation.rawValue
            @unknown default: value = event.description
            }
        case let event as ClipEvent:
            switch event {
            case .clipChanged(let clip, let seam):
                self.event = "clipChanged"
                index = clip
                setSeam(seam)
            case .loopWrapped(let wraps, let seam):
                self.event = "loopWrapped"
                count = wraps
                setSeam(seam)
            case .clipUnplayable(let clip, let failure):
                self.event = "clipUnplayable"
                index = clip
                error = failure.description
            @unknown default: value = event.description
            }
        case let event as SyncEvent:
            // The drift as a figure (event "syncDrift", as in 1.x's lines); the correction's steps
            // (joined, aligned, ...) as text.
            if case .drift(let drift) = event { self.event = "syncDrift"; driftMs = (drift * 10_000).rounded() / 10 } else { value = event.description }
            if case .corrected(let speed) = event { self.event = "syncCorrection"; self.value = String(speed) }
        default:
            // A feature's kind names the feature; its case is the first word of its description
            // ("mprisRequest(Pause from playerctl ...)").
            self.event = String(event.description.prefix { $0.isLetter || $0.isNumber })
            value = event.description
        }
    }

    private mutating func setSeam(_ seam: SeamTiming?) {
        guard let seam else { return }
        gapMs = (seam.gap * 10_000).rounded() / 10
        frameToFrameMs = (seam.frameInterval * 10_000).rounded() / 10
    }

    /// The line as compact JSON with sorted keys.
    public var json: String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        guard let data = try? encoder.encode(self) else { return "{}" }
        return String(decoding: data, as: UTF8.self)
    }
}

/// A counter that tasks can wait on: `await tally.wait(for: 3)` returns once ``increment()``
/// was called three times. Used by the examples and benchmarks to wait for events, never by
/// sleeping; ``wait(for:timeout:)`` gives up after a time.
public final class Tally: Sendable {
    // PlayerKit's Guarded (PlayerKitSupport, public), not Synchronization.Mutex: ThreadSanitizer
    // cannot see Mutex's futex on Linux and reports every access under it as a race.
    private struct State {
        var count = 0
        var nextID = 0
        var waiters: [(id: Int, target: Int, continuation: CheckedContinuation<Bool, Never>)] = []
        /// Waits whose time ran out before they began: they return false at once.
        var expired: Set<Int> = []
    }
    private let state = Guarded(State())

    /// A tally at zero.
    public init() {}

    /// The current count.
    public var count: Int { state.withLock { $0.count } }

    /// Adds one and wakes the waiters whose target is reached.
    public func increment() {
        let ready = state.withLock { state -> [CheckedContinuation<Bool, Never>] in
            state.count += 1
            let count = state.count
            let done = state.waiters.filter { $0.target <= count }.map(\.continuation)
            state.waiters.removeAll { $0.target <= count }
            return done
        }
        ready.forEach { $0.resume(returning: true) }
    }

    /// Returns once the count reached `target`.
    public func wait(for target: Int) async {
        _ = await wait(for: target, timeout: nil)
    }

    /// Returns true once the count reached `target`, or false when `timeout` (on the monotonic
    /// clock; nil: none) passed first.
    @discardableResult
    public func wait(for target: Int, timeout: Duration?) async -> Bool {
        let id = state.withLock { state -> Int in
            state.nextID += 1
            return state.nextID
        }
        let timer = timeout.map { timeout in
            Task { [weak self] in
                try? await Task.sleep(for: timeout, clock: .continuous)
                guard !Task.isCancelled else { return }
                self?.expire(id)
            }
        }
        defer {
            timer?.cancel()
            state.withLock { _ = $0.expired.remove(id) }
        }
        return await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            let outcome = state.withLock { state -> Bool? in
                if state.count >= target { return true }
                if state.expired.remove(id) != nil { return false }
                state.waiters.append((id, target, continuation))
                return nil
            }
            if let outcome { continuation.resume(returning: outcome) }
        }
    }

    /// Ends the wait `id` with false if it still waits, or marks it expired if it has not begun.
    private func expire(_ id: Int) {
        let waiter = state.withLock { state -> CheckedContinuation<Bool, Never>? in
            guard let index = state.waiters.firstIndex(where: { $0.id == id }) else {
                state.expired.insert(id)
                return nil
            }
            return state.waiters.remove(at: index).continuation
        }
        waiter?.resume(returning: false)
    }
}
