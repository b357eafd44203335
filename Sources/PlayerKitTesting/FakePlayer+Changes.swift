import Foundation
import PlayerKitCore
import PlayerKitSupport
import Synchronization

// The one way a fake's state changes: under its lock, events queued in the order of the
// changes, then delivered with no lock held; and its playback timers.
extension FakePlayer {
    // MARK: The one way state changes

    /// Runs `body` under the lock with the events it adds; then refreshes the derived state and
    /// the timers, queues the events (numbered in the order of the changes), and, with no lock
    /// held, runs what `body` returned and delivers the events.
    /// Emits `events` now: published at once, or held by an interleaved `delivery`.
    func emitNow(_ events: [PlayerEvent]) {
        emitter.enqueue(events, at: clock.now)
        deliver()
    }

    /// Hands the queued events to the bus now, or leaves it to an interleaved `delivery`.
    func deliver() {
        let emitter = emitter
        if !delivery.hold({ emitter.deliverQueued() }, of: id) { emitter.deliverQueued() }
    }

    func change(_ body: (inout State, inout [PlayerEvent]) -> (() -> Void)?) {
        let now = clock.now
        let (after, frames) = model.withLock { state -> ((() -> Void)?, [(FakeFrameSource, VideoFrame)]) in
            defer { state.renderedFrames = [] }
            var events: [PlayerEvent] = []
            let after = body(&state, &events)
            if !state.isShutDown || events.last == .shutDown {
                refreshState(&state, &events)
                rescheduleTimers(&state, now: now)
                // `shutDown` is always last.
                if let index = events.firstIndex(of: .shutDown) {
                    events.remove(at: index)
                    events.append(.shutDown)
                }
                // Held: numbered and held under the fake's lock, so they keep the order of the changes.
                emitter.enqueue(state.reported(events), at: now)
            }
            return (after, state.renderedFrames)
        }
        after?()
        for (source, frame) in frames { source.deliver(frame) }
        deliver()
    }

    func refreshState(_ state: inout State, _ events: inout [PlayerEvent]) {
        if let change = state.machine.refresh() { events.append(change) }
    }

    /// The next position report and the item's end, from the current state.
    func rescheduleTimers(_ state: inout State, now: ContinuousClock.Instant) {
        for timer in state.playbackTimers { timer.cancel() }
        state.playbackTimers = []
        guard !state.isShutDown, state.phase == .loaded, !state.isPaused, !state.machine.isWaitingForCache, let media = state.media,
              let position = state.position(at: now) else { return }
        let generation = state.generation
        let interval = state.frameObservations > 0 ? Duration.seconds(1 / max(media.frameRate, 1)) : positionInterval
        let rate = state.speed * state.speedCorrection * (state.direction == .forward ? 1 : -1)
        let remaining = state.direction == .forward ? media.duration - position : position
        // A live stream (an infinite duration) has no end to reach: a Duration of it traps.
        let toEnd: Duration = remaining.isFinite ? .seconds(max(remaining, 0) / abs(rate)) : .seconds(Int64.max / 4)
        if toEnd > interval {
            state.playbackTimers.append(clock.schedule(at: now.advanced(by: interval)) { [weak self] in self?.tick(generation) })
        }
        if remaining.isFinite {
            state.playbackTimers.append(clock.schedule(at: now.advanced(by: toEnd)) { [weak self] in self?.reachEnd(generation) })
        }
        // The next frame, on the grid of frame intervals from the moment playback last changed.
        if state.frameSource != nil, state.firstFrameShown {
            let frameInterval = Duration.seconds(1 / (max(media.frameRate, 1) * abs(rate)))
            let elapsed = now - state.anchorTime
            var next = state.anchorTime.advanced(by: frameInterval * Int(elapsed / frameInterval))
            while next <= now { next = next.advanced(by: frameInterval) }  // strictly later, whatever the rounding
            if next - now < toEnd {
                state.playbackTimers.append(clock.schedule(at: next) { [weak self] in self?.renderTick(generation) })
            }
        }
    }

    func renderTick(_ generation: UInt64) {
        let now = clock.now
        change { state, _ in
            guard state.generation == generation, !state.isPaused, let position = state.position(at: now) else { return nil }
            self.render(&state, videoTime: position)
            return nil
        }
    }

    /// Renders a frame into the open frame source, if any (handed over after the lock).
    func render(_ state: inout State, videoTime: Double?) {
        guard let source = state.frameSource, !source.isClosed else { return }
        state.frameNumber += 1
        let info = FrameInfo(playerID: id, format: source.format, videoTime: videoTime,
                             sequenceNumber: state.frameNumber, renderedAt: clock.now)
        state.renderedFrames.append((source, VideoFrame(info: info, filledWith: state.media?.frameColor ?? RGBColor(red: 0, green: 0, blue: 0))))
    }

    func tick(_ generation: UInt64) {
        let now = clock.now
        change { state, events in
            guard state.generation == generation, let position = state.position(at: now) else { return nil }
            events.append(.positionChanged(position))
            return nil
        }
    }

    func reachEnd(_ generation: UInt64) {
        let now = clock.now
        change { state, events in
            guard state.generation == generation, state.phase == .loaded, !state.isPaused, let media = state.media else { return nil }
            let forward = state.direction == .forward
            let loops: Bool
            switch state.loopMode {
            case .off: loops = false
            case .forever: loops = true
            case .playCount:
                loops = (state.playsLeft ?? 0) > 0
                if loops { state.playsLeft = (state.playsLeft ?? 1) - 1 }
            }
            if loops {
                state.anchorPosition = forward ? 0 : media.duration
                state.anchorTime = now
                events.append(.seekCompleted(position: state.anchorPosition))
                return nil
            }
            state.anchorPosition = forward ? media.duration : 0
            state.anchorTime = now
            self.render(&state, videoTime: nil)  // mpv gives an item's last frame no position
            events.append(.positionChanged(state.anchorPosition))
            events.append(.itemEnded(.finished))
            state.generation += 1
            state.phase = .ended
            state.media = nil
            state.firstFrameShown = false
            return nil
        }
    }
}

/// A ``FakePlayer``'s frame source: keeps the newest frame and hands each to the handler.
final class FakeFrameSource: VideoFrameSource {
    let format: FrameFormat
    private struct State {
        var latest: VideoFrame?
        var handler: (@Sendable (VideoFrame) -> Void)?
        var isClosed = false
    }
    private let state = Locked(State())

    init(format: FrameFormat) {
        self.format = format
    }

    var latestFrame: VideoFrame? { state.withLock { $0.latest } }
    var isClosed: Bool { state.withLock { $0.isClosed } }

    func setFrameHandler(_ handler: (@Sendable (VideoFrame) -> Void)?) {
        let old = state.withLock { state in
            defer { state.handler = handler }
            return state.handler
        }
        _ = old  // released after the lock
    }

    func close() {
        state.withLock { state in
            state.isClosed = true
            state.handler = nil
        }
    }

    /// Records `frame` as the newest and calls the handler with it, outside the lock.
    func deliver(_ frame: VideoFrame) {
        let handler = state.withLock { state -> (@Sendable (VideoFrame) -> Void)? in
            guard !state.isClosed else { return nil }
            state.latest = frame
            return state.handler
        }
        handler?(frame)
    }
}

extension Double {
    /// Self, or nil for an infinite value (a live item's duration).
    var nonInfinite: Double? { isInfinite ? nil : self }
}
