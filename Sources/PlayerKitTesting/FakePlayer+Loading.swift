import Foundation
import PlayerKitCore
import PlayerKitSupport
import Synchronization

// A fake's loads and preloads, their ends, its release and shutdown.
extension FakePlayer {
    // MARK: Loading

    /// Loads `source` as ``/PlayerKitCore/Player/load(_:startPaused:)`` does, taking the item's
    /// `loadTime` on the clock. Cancelling the task ends the wait with
    /// ``/PlayerKitCore/PlayerError/loadCancelled(source:)`` and stops the item.
    /// - Throws: ``/PlayerKitCore/PlayerError/fileNotFound(path:)`` for a source the fake does not know (with no
    ///   default media), the item's `failure`, ``/PlayerKitCore/PlayerError/loadCancelled(source:)``
    ///   when another load or a stop replaced it, ``/PlayerKitCore/PlayerError/playerShutDown(_:)``.
    @discardableResult
    public func load(_ source: MediaSource, startPaused: Bool = false) async throws(PlayerError) -> MediaInfo {
        let name = source.description
        let token = model.withLock { state -> UInt64 in
            state.lastLoadToken += 1
            return state.lastLoadToken
        }
        let result = await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Result<MediaInfo, PlayerError>, Never>) in
                change { state, events in
                    guard !state.isShutDown else {
                        return { continuation.resume(returning: .failure(.playerShutDown(self.id))) }
                    }
                    guard let media = state.catalog[name] ?? state.defaultMedia else {
                        return { continuation.resume(returning: .failure(.fileNotFound(path: name))) }
                    }
                    let replaced = self.endItem(&state, &events, reason: .replaced)
                    state.generation += 1
                    state.phase = .loading
                    state.source = name
                    state.media = media
                    state.info = nil
                    state.isPaused = startPaused
                    state.firstFrameShown = false
                    state.anchorPosition = 0
                    state.playsLeft = nil
                    state.pendingLoad = PendingLoad(token: token, continuation: continuation)
                    // The item is loading before it can be loaded, however fast: a real player
                    // hears mpv's start of the file before the file is open.
                    self.refreshState(&state, &events)
                    let current = state.generation
                    if media.loadTime > .zero {
                        state.timers.append(self.clock.schedule(at: self.clock.now.advanced(by: media.loadTime), awaited: true) { [weak self] in
                            self?.finishLoad(current)
                        })
                        return replaced
                    }
                    let finish = self.completeLoad(&state, &events)
                    return { replaced?(); finish?() }
                }
            }
        } onCancel: {
            self.cancelLoad(token, source: name)
        }
        return try result.get()
    }

    /// Loads `source` paused and returns once its first frame is shown, as
    /// ``/PlayerKitCore/Player/preload(_:timeout:)``; `timeout` is clock time after the load.
    /// - Throws: as ``load(_:startPaused:)``, and ``/PlayerKitCore/PlayerError/timedOut(operation:after:)``.
    @discardableResult
    public func preload(_ source: MediaSource, timeout: Duration = .seconds(10)) async throws(PlayerError) -> MediaInfo {
        let info = try await load(source, startPaused: true)
        let result = await withCheckedContinuation { (continuation: CheckedContinuation<Result<Void, PlayerError>, Never>) in
            let waiterID = model.withLock { state -> UInt64? in
                if state.firstFrameShown || state.isShutDown { return nil }
                state.lastWaiterID += 1
                state.firstFrameWaiters.append(FirstFrameWaiter(id: state.lastWaiterID, continuation: continuation))
                return state.lastWaiterID
            }
            guard let waiterID else {
                let down = isShutDown
                continuation.resume(returning: down ? .failure(.playerShutDown(id)) : .success(()))
                return
            }
            let timer = clock.schedule(at: clock.now.advanced(by: timeout), awaited: true) { [weak self] in
                guard let self else { return }
                let waiter = self.model.withLock { state -> FirstFrameWaiter? in
                    guard let index = state.firstFrameWaiters.firstIndex(where: { $0.id == waiterID }) else { return nil }
                    return state.firstFrameWaiters.remove(at: index)
                }
                waiter?.continuation.resume(returning: .failure(
                    .timedOut(operation: "preloading \(source) (waiting for its first frame)", after: timeout)))
            }
            model.withLock { $0.timers.append(timer) }
        }
        try result.get()
        return info
    }

    func finishLoad(_ generation: UInt64) {
        change { state, events in
            guard state.generation == generation, state.phase == .loading else { return nil }
            return self.completeLoad(&state, &events)
        }
    }

    /// The load of the current item completes now: loaded (or failed).
    func completeLoad(_ state: inout State, _ events: inout [PlayerEvent]) -> (() -> Void)? {
        guard let media = state.media, let source = state.source else { return nil }
        let load = state.pendingLoad
        state.pendingLoad = nil
        if let failure = media.failure {
            state.phase = .failed
            state.generation += 1
            events.append(.itemEnded(.error(failure)))
            return { load?.continuation.resume(returning: .failure(failure)) }
        }
        state.phase = .loaded
        state.anchorTime = clock.now
        let tracks = media.audioTracks > 0 ? (1...media.audioTracks).map { Track(id: $0, kind: .audio, isSelected: $0 == 1) } : []
        // An infinite duration is a live stream: no duration, and live (``/PlayerKitCore/MediaInfo/isLive``).
        let info = MediaInfo(source: source, duration: media.duration.nonInfinite, videoSize: media.videoSize, title: nil, tracks: tracks,
                             isLive: media.duration == .infinity)
        state.info = info
        state.tracks = tracks
        // The state change comes first, then what was read about the item (the core's order).
        refreshState(&state, &events)
        if let duration = media.duration.nonInfinite { events.append(.durationKnown(duration)) }
        events.append(.mediaLoaded(info))
        if media.firstFrameDelay > .zero {
            let generation = state.generation
            state.timers.append(clock.schedule(at: clock.now.advanced(by: media.firstFrameDelay)) { [weak self] in
                self?.change { state, events in
                    guard state.generation == generation, state.phase == .loaded else { return nil }
                    return self?.showFirstFrame(&state, &events)
                }
            })
            return { load?.continuation.resume(returning: .success(info)) }
        }
        let shown = showFirstFrame(&state, &events)
        return { load?.continuation.resume(returning: .success(info)); shown?() }
    }

    func showFirstFrame(_ state: inout State, _ events: inout [PlayerEvent]) -> (() -> Void)? {
        guard !state.firstFrameShown else { return nil }
        state.firstFrameShown = true
        events.append(.firstFrame)
        render(&state, videoTime: state.position(at: clock.now) ?? state.anchorPosition)
        let waiters = state.firstFrameWaiters
        state.firstFrameWaiters = []
        return { for waiter in waiters { waiter.continuation.resume(returning: .success(())) } }
    }

    func cancelLoad(_ token: UInt64, source: String) {
        change { state, events in
            guard let load = state.pendingLoad, load.token == token else { return nil }
            state.pendingLoad = nil
            let ended = self.endItem(&state, &events, reason: .stopped)
            state.phase = .idle
            return { load.continuation.resume(returning: .failure(.loadCancelled(source: source))); ended?() }
        }
    }

    /// Ends the current item (loading or loaded) with `reason`; returns what to run after the lock.
    func endItem(_ state: inout State, _ events: inout [PlayerEvent], reason: ItemEndReason) -> (() -> Void)? {
        guard state.phase == .loading || state.phase == .loaded else { return nil }
        let load = state.pendingLoad
        let waiters = state.firstFrameWaiters
        let source = state.source ?? ""
        state.pendingLoad = nil
        state.firstFrameWaiters = []
        state.generation += 1
        state.phase = .idle
        state.media = nil
        state.info = nil
        state.firstFrameShown = false
        events.append(.itemEnded(reason))
        return {
            load?.continuation.resume(returning: .failure(.loadCancelled(source: source)))
            for waiter in waiters { waiter.continuation.resume(returning: .failure(.loadCancelled(source: source))) }
        }
    }

    /// Unloads the item (`itemEnded(.stopped)`, idle) and counts the release. Never waits.
    public func releaseMedia() {
        change { state, events in
            guard !state.isShutDown else { return nil }
            state.releaseCount += 1
            return self.endItem(&state, &events, reason: .stopped)
        }
    }

    /// Shuts the fake down: pending loads and waits fail with
    /// ``/PlayerKitCore/PlayerError/playerShutDown(_:)``, ``/PlayerKitCore/PlayerEvent/shutDown`` is published last, and the ID
    /// is free. Safe to call more than once.
    public func shutdown() async {
        let id = id
        // First shuttingDown, while features can still publish about the fake, as a real
        // player's shutdown does.
        let first = model.withLock { state -> Bool in
            defer { state.shuttingDown = true }
            return !state.shuttingDown && !state.isShutDown
        }
        if first { emitNow([.shuttingDown]) }
        change { state, events in
            guard !state.isShutDown else { return nil }
            state.isShutDown = true
            let load = state.pendingLoad
            let waiters = state.firstFrameWaiters
            let replies = state.replyWaiters.values
            state.replyWaiters = [:]
            let timers = state.timers + state.playbackTimers
            state.pendingLoad = nil
            state.firstFrameWaiters = []
            state.timers = []
            state.playbackTimers = []
            state.generation += 1
            events.append(.shutDown)
            return {
                for timer in timers { timer.cancel() }
                load?.continuation.resume(returning: .failure(.playerShutDown(id)))
                for waiter in waiters { waiter.continuation.resume(returning: .failure(.playerShutDown(id))) }
                for reply in replies { reply.resume(returning: false) }
            }
        }
        releaseID()
    }
}
