import Foundation
import PlayerKitCore
import PlayerKitSupport
import Synchronization

// A fake's commands (checked, refused on request, carried out on its model) and the hooks
// features use.
extension FakePlayer {
    // MARK: Commands

    /// Checks `command` as ``/PlayerKitCore/Player/send(_:)`` does and carries it out at once; a refusal set
    /// with ``refuseCommands(_:)`` is published as ``/PlayerKitCore/PlayerEvent/error(_:)``.
    public func send(_ command: PlayerCommand) throws(PlayerError) {
        do throws(PlayerError) {
            try execute(command)
        } catch let error where isRefusal(error, of: command) {
            emitNow([.error(error)])
        }
    }

    /// Checks `command`, waits ``replyDelay`` on the clock, then carries it out and returns, as
    /// ``/PlayerKitCore/Player/perform(_:timeout:)`` does; `timeout` is clock time.
    public func perform(_ command: PlayerCommand, timeout: Duration = .seconds(10)) async throws(PlayerError) {
        guard timeout > .zero else {
            throw .invalidArgument(name: "timeout", value: "\(timeout)", reason: "must be positive")
        }
        try check(command)
        let delay = replyDelay
        if delay > .zero {
            if delay >= timeout {
                try? await clock.sleep(until: clock.now.advanced(by: timeout), tolerance: nil)
                throw .timedOut(operation: "\(command) on player \(id)", after: timeout)
            }
            // Cancelling the task does not withdraw the command (as on a real player).
            let deadline = clock.now.advanced(by: delay)
            let answered = await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
                let id = model.withLock { state -> UInt64? in
                    guard !state.isShutDown else { return nil }
                    state.lastWaiterID += 1
                    state.replyWaiters[state.lastWaiterID] = continuation
                    return state.lastWaiterID
                }
                guard let id else { return continuation.resume(returning: false) }
                let timer = clock.schedule(at: deadline, awaited: true) { [weak self] in
                    self?.model.withLock { $0.replyWaiters.removeValue(forKey: id) }?.resume(returning: true)
                }
                model.withLock { $0.timers.append(timer) }
            }
            guard answered else { throw .playerShutDown(id) }
        }
        try execute(command)
    }

    func isRefusal(_ error: PlayerError, of command: PlayerCommand) -> Bool {
        guard let refusal = model.withLock({ $0.refusal }) else { return false }
        return refusal(command) == error
    }

    /// The checks a real player makes before mpv sees the command.
    func check(_ command: PlayerCommand) throws(PlayerError) {
        try command.validate()
        let (down, hasMedia) = model.withLock { ($0.isShutDown || $0.shuttingDown, $0.phase == .loaded) }
        guard !down else { throw .playerShutDown(id) }
        switch command {
        case .seek, .seekBy:
            guard hasMedia else { throw .noMediaLoaded(operation: "seek") }
        case .stepFrame, .stepFrameBack:
            guard hasMedia else { throw .noMediaLoaded(operation: "step a frame") }
        case .selectTrack(let kind, let id):
            guard hasMedia else { throw .noMediaLoaded(operation: "select a track") }
            let available = model.withLock { $0.tracks }.filter { $0.kind == kind }.map(\.id)
            if let id, !available.contains(id) { throw .unknownTrack(kind: kind, id: id, available: available) }
        case .setVolume(let volume):
            guard volume <= 130 else {
                throw .invalidArgument(name: "volume", value: "\(volume)", reason: "must be at most 130 (mpv's volume-max)")
            }
        case .setFullscreen(let fullscreen):
            if let arbiter = fullscreenArbiter, let reason = arbiter.refusal(ofFullscreen: fullscreen, for: self) {
                throw .fullscreenRefused(id, reason: reason)
            }
        default:
            break
        }
    }

    /// Checks and carries out `command` now.
    func execute(_ command: PlayerCommand) throws(PlayerError) {
        try check(command)
        if command == .next || command == .previous {
            // A fake plays one item at a time, so mpv's refusal of a playlist step without a
            // next or previous entry.
            throw .commandFailed(command: [command.description], MPVError(code: -12, message: "error running command"))
        }
        if let refusal = model.withLock({ $0.refusal }), let error = refusal(command) { throw error }
        let now = clock.now
        change { state, events in
            state.commands.append(command)
            let current = state.position(at: now)
            switch command {
            case .play:
                if state.isPaused, state.phase == .loaded { state.anchorPosition = current ?? 0; state.anchorTime = now }
                state.isPaused = false
            case .pause:
                if !state.isPaused, state.phase == .loaded { state.anchorPosition = current ?? 0; state.anchorTime = now }
                state.isPaused = true
            case .seek(let target, _):
                self.seek(&state, &events, to: state.itemTime(target), now: now)
            case .seekBy(let offset, _):
                self.seek(&state, &events, to: (current ?? 0) + offset, now: now)
            case .setSpeed(let speed):
                state.anchorPosition = current ?? state.anchorPosition
                state.anchorTime = now
                if state.speed != speed { events.append(.speedChanged(speed)) }
                state.speed = speed
                state.speedCorrection = 1
            case .setSpeedCorrection(let factor):
                // Plays faster or slower, as a real player does; no speed event: the speed is still the app's.
                state.anchorPosition = current ?? state.anchorPosition
                state.anchorTime = now
                state.speedCorrection = factor
            case .setVolume(let volume):
                if state.volume != volume { events.append(.volumeChanged(volume)) }
                state.volume = volume
            case .setMuted(let muted):
                if state.isMuted != muted { events.append(.muteChanged(muted)) }
                state.isMuted = muted
            case .setLoop(let mode):
                if state.loopMode != mode { events.append(.loopModeChanged(mode)) }
                state.loopMode = mode
                if case .playCount(let count) = mode { state.playsLeft = count - 1 } else { state.playsLeft = nil }
            case .setPlaybackDirection(let direction):
                state.anchorPosition = current ?? state.anchorPosition
                state.anchorTime = now
                state.direction = direction
            case .setFullscreen(let fullscreen):
                if state.isFullscreen != fullscreen { events.append(.fullscreenStateChanged(fullscreen)) }
                state.isFullscreen = fullscreen
            case .setTimestampOrigin(let origin):
                state.timestampOrigin = origin
            case .setPositionTiming(let timing):
                state.positionTiming = timing
            case .setVideoClock(let clock):
                state.videoClock = clock
            case .setBufferAfterStall(let duration):
                state.bufferAfterStall = duration
            case .selectTrack(let kind, let id):
                let before = state.tracks
                for index in state.tracks.indices where state.tracks[index].kind == kind {
                    state.tracks[index].isSelected = state.tracks[index].id == id
                }
                if state.tracks != before { events.append(.tracksChanged(state.tracks)) }
            case .stop:
                return self.endItem(&state, &events, reason: .stopped)
            case .stepFrame, .stepFrameBack:
                // The next (or previous) frame of the item's frame grid, as mpv's frame-step:
                // from a position between two frames, back is the frame shown there. Paused
                // there, with the frame rendered.
                guard let media = state.media, state.phase == .loaded else { break }
                let rate = max(media.frameRate, 1)
                let shown = ((current ?? 0) * rate + 1e-6).rounded(.down)
                let onFrame = abs((current ?? 0) * rate - shown) < 1e-6
                let target = command == .stepFrame ? shown + 1 : (onFrame ? shown - 1 : shown)
                let lastFrame = max(((media.duration * rate) - 1e-6).rounded(.up) - 1, 0)
                state.anchorPosition = min(max(target, 0), lastFrame) / rate
                state.anchorTime = now
                state.isPaused = true
                events.append(.positionChanged(state.anchorPosition))
                self.render(&state, videoTime: state.anchorPosition)
            default:
                break
            }
            return nil
        }
    }

    func seek(_ state: inout State, _ events: inout [PlayerEvent], to target: Double, now: ContinuousClock.Instant) {
        guard let media = state.media, state.phase == .loaded else { return }
        // Past the end of what it can seek (``setBufferedMedia(_:)``'s `seekableUntil`): refused
        // without an error, as mpv refuses a seek past a live stream's seekable ranges (no
        // `seekCompleted`; it plays on from where it was).
        if let end = state.bufferedMedia?.seekableUntil, state.reported(target) > end { return }
        let position = min(max(target, 0), media.duration)
        state.anchorPosition = position
        state.anchorTime = now
        events.append(.seekCompleted(position: position))
        events.append(.positionChanged(position))
        if state.firstFrameShown { render(&state, videoTime: position) }
    }

    // MARK: Features' hooks

    /// Publishes a feature's event in the fake's order.
    public func publish(_ event: some PlayerFeatureEvent) {
        emitNow([.feature(event)])
    }

    /// Reports the position with every frame (at the item's `frameRate`) while the
    /// observation lives.
    public func observeEveryFrame() -> PropertyObservation {
        change { state, _ in
            state.frameObservations += 1
            return nil
        }
        return PropertyObservation { [weak self] in
            self?.change { state, _ in
                state.frameObservations -= 1
                return nil
            }
        }
    }

    /// Reports how far the fake holds its source (``setBufferedMedia(_:)``) while the
    /// observation lives: the current value first, when there is one.
    public func observeBufferedMedia() -> PropertyObservation {
        change { state, events in
            state.bufferedMediaObservations += 1
            if state.bufferedMediaObservations == 1, let media = state.bufferedMedia, !state.isShutDown {
                events.append(.bufferedMediaChanged(media))
            }
            return nil
        }
        return PropertyObservation { [weak self] in
            self?.change { state, _ in
                state.bufferedMediaObservations -= 1
                return nil
            }
        }
    }

    /// Gives the fake a frame source at `format` (see the type's "Frames"); one at a time, as a
    /// real player's frame output.
    /// - Throws: ``/PlayerKitCore/FrameOutputError/alreadyAttached(playerID:)`` while one is open,
    ///   ``/PlayerKitCore/FrameOutputError/playerShutDown(_:)``.
    public func makeFrameSource(_ format: FrameFormat) throws(FrameOutputError) -> any VideoFrameSource {
        let made = model.withLock { state -> Result<FakeFrameSource, FrameOutputError> in
            guard !state.isShutDown else { return .failure(.playerShutDown(id)) }
            if let open = state.frameSource, !open.isClosed { return .failure(.alreadyAttached(playerID: id)) }
            let source = FakeFrameSource(format: format)
            state.frameSourceReference = WeakReference(source)
            state.frameNumber = 0
            return .success(source)
        }
        return try made.get()
    }

    /// The fullscreen arbiter, held weakly.
    public var fullscreenArbiter: (any FullscreenArbiter)? { model.withLock { $0.arbiter.object } }

    /// Replaces the arbiter when the current one is `expected`.
    @discardableResult
    public func setFullscreenArbiter(_ newArbiter: (any FullscreenArbiter)?, replacing expected: (any FullscreenArbiter)?) -> Bool {
        model.withLock { state in
            guard state.arbiter.object === expected else { return false }
            state.arbiter = WeakReference(newArbiter)
            return true
        }
    }
}
