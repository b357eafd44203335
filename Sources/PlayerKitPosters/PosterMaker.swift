import Foundation
import PlayerKitCore
import PlayerKitSupport

/// Poster frames for many items from a small pool of players: the frame at a time, or the
/// first frame that is not black, of each item, scaled to fit a box, as a ``/PlayerKitCore/VideoFrame``
/// and, when asked, as a PNG file. What a feed needs for its 100 items without 100 players
/// (AVFoundation's `AVAssetImageGenerator` does this job on Apple platforms).
///
/// ```swift
/// let maker = PosterMaker(configuration: .init(width: 320, height: 180))
/// for await result in maker.posters(for: items.map { PosterRequest(source: $0, moment: .firstNonBlackFrame()) }) {
///     switch result.outcome {
///     case .success(let poster): show(poster.frame, at: result.index)
///     case .failure(let error): logger.warning("\(error)")    // names the item
///     }
/// }
/// await maker.shutdown()
/// ```
///
/// **The pool.** The maker creates up to its configuration's `concurrency` players
/// (software frames at the box's size, no audio) the first time it needs them and keeps them
/// for later requests; each takes the next item as soon as it is done with one. ``shutdown()``
/// frees them. Between batches the players hold no item.
///
/// **Bounds.** Every item has its configuration's `timeoutPerItem` on the maker's clock
/// for its load and its frame; an item that takes longer fails with
/// ``PosterError/timedOut(_:after:)`` and the player goes on with the next item. A first-non-black
/// search looks at most at ``PosterMoment/firstNonBlackFrame(within:)``'s span.
///
/// **Cancelling.** Ending the iteration over ``posters(for:)->EventStream<PosterResult>`` (leaving the loop, or cancelling the
/// task that iterates) stops the batch: items not started are never loaded, and an item being
/// made is unloaded (for a cached source, its download is cancelled with it).
///
/// **The media cache.** Give it sources a `MediaCache` (PlayerKitCache) made: the poster's reads
/// go through the cache, so the bytes it fetched are there when a player plays the item later.
///
/// **Threading.** Every method may be called from any thread or task; batches may run at the
/// same time (they share the pool, first come first served). Results of one batch arrive in the
/// order the items finish, each with its index.
public final class PosterMaker: Sendable {
    /// How the maker works.
    public struct Configuration: Sendable, Hashable {
        /// The box every poster fits in, in pixels: a poster keeps its item's aspect ratio, as
        /// large as fits. From 1 to 8192.
        var width: Int
        /// See `width`.
        var height: Int
        /// How many players make posters at once (default 2: one per core of a small machine).
        var concurrency: Int
        /// How long one item may take, from its load to its frame (default 10 s).
        var timeoutPerItem: Duration

        /// A configuration.
        /// - Parameters:
        ///   - width: the box every poster fits in, in pixels (with `height`): a poster keeps
        ///     its item's aspect ratio, as large as fits. Each from 1 to 8192.
        ///   - height: see `width`.
        ///   - concurrency: how many players make posters at once, 1 to 16 (default 2: one per
        ///     core of a small machine).
        ///   - timeoutPerItem: how long one item may take, from its load to its frame (default 10 s).
        public init(width: Int = 320, height: Int = 180, concurrency: Int = 2, timeoutPerItem: Duration = .seconds(10)) {
            self.width = width
            self.height = height
            self.concurrency = concurrency
            self.timeoutPerItem = timeoutPerItem
        }
    }


    /// The configuration.
    let configuration: Configuration
    /// The clock every item's timeout runs on.
    let clock: any MonotonicClock

    /// Makes the players of the pool.
    typealias PlayerFactory = @Sendable () async throws(PlayerError) -> any MediaPlayer
    private let makePlayer: PlayerFactory
    private let format: FrameFormat

    /// One player of the pool and the frames it renders.
    private final class Worker: Sendable {
        let player: any MediaPlayer
        let source: any VideoFrameSource
        let frames: FrameWaiter

        init(player: any MediaPlayer, source: any VideoFrameSource, frames: FrameWaiter) {
            self.player = player
            self.source = source
            self.frames = frames
        }
    }

    private struct Pool: Sendable {
        var idle: [Worker] = []
        var created = 0
        var creating = 0
        /// Batches waiting for a worker, in arrival order.
        var waiting: [(id: UInt64, continuation: CheckedContinuation<Worker?, Never>)] = []
        var nextWaiter: UInt64 = 0
        var isShutDown = false
        var all: [Worker] = []
        /// Batches and single ``poster(for:)`` calls in progress: the pool unloads its players
        /// only when none is (unloading between two items of a batch raced the next item's load).
        var activeRequests = 0
    }

    private let pool = Locked(Pool())

    /// A maker with `configuration`, on `clock`.
    /// - Parameters:
    ///   - configuration: the box, the pool's size and the per-item timeout.
    ///   - streamProviders: custom-protocol readers for the pool's players (see
    ///     ``/PlayerKitCore/PlayerConfiguration/streamProviders``): give a `MediaCache`'s
    ///     `streamProvider` to make posters of sources that cache made, through it.
    ///   - clock: the clock of the per-item timeouts (default `ContinuousClock`; a test gives a
    ///     `ManualClock`).
    ///   - makePlayer: makes the pool's players (default: players of video output `.frames`, no
    ///     audio, with `streamProviders`; a test gives fakes).
    /// - Throws: ``PosterError/invalidConfiguration(_:reason:)`` for a box outside
    ///   1...8192, a concurrency below 1 or above 16, or a timeout that
    ///   is not positive.
    public init(configuration: Configuration = Configuration(), streamProviders: [any MediaStreamProvider] = [],
                clock: any MonotonicClock = ContinuousClock(),
                makePlayer: (@Sendable () async throws(PlayerError) -> any MediaPlayer)? = nil) throws(PosterError) {
        guard (1...16).contains(configuration.concurrency) else {
            throw .invalidConfiguration("concurrency \(configuration.concurrency)", reason: "must be between 1 and 16")
        }
        guard configuration.timeoutPerItem > .zero else {
            throw .invalidConfiguration("timeout \(configuration.timeoutPerItem)", reason: "must be positive")
        }
        do throws(FrameOutputError) {
            format = try FrameFormat(width: configuration.width, height: configuration.height)
        } catch {
            throw .invalidConfiguration("box \(configuration.width)x\(configuration.height)", reason: "\(error)")
        }
        self.configuration = configuration
        self.clock = clock
        if let makePlayer {
            self.makePlayer = makePlayer
        } else {
            var settings = PlayerConfiguration(videoOutput: .frames, audioOutput: .none)
            // No audio decoding and no subtitles: a poster needs only the picture.
            settings.selectedTrackKinds = [.video]
            settings.streamProviders = streamProviders
            self.makePlayer = FramePlayerFactory(configuration: settings).make
        }
    }

    /// Makes a poster for every request, `configuration.concurrency` at a time, and delivers each
    /// result as it is done (in the order they finish, each with its request's index). Ending
    /// the iteration cancels the rest (see the type's "Cancelling").
    ///
    /// The stream's buffer holds every result (its limit is the larger of
    /// ``/PlayerKitCore/EventStream/defaultBufferLimit`` and the number of requests), so none is dropped.
    public func posters(for requests: [PosterRequest]) -> EventStream<PosterResult> {
        let (stream, continuation) = EventStream<PosterResult>.makeStream(
            bufferLimit: max(requests.count, EventStream<PosterResult>.defaultBufferLimit))
        startBatch(requests, yield: { continuation.yield($0) }, finish: { continuation.finish() }, onTermination: continuation.onTermination)
        return stream
    }

    /// Runs a batch, handing each result to `yield`; `onTermination` registers what stops it
    /// when its reader goes.
    private func startBatch(
        _ requests: [PosterRequest], yield: @escaping @Sendable (PosterResult) -> Void, finish: @escaping @Sendable () -> Void,
        onTermination: (@escaping @Sendable () -> Void) -> Void
    ) {
        beginRequest()
        let batch = Task { [self] in
            defer { endRequest() }
            let next = Locked(0)
            await withTaskGroup(of: Void.self) { group in
                for _ in 0..<min(configuration.concurrency, requests.count) {
                    group.addTask { [self] in
                        while !Task.isCancelled {
                            let index = next.withLock { value -> Int? in
                                guard value < requests.count else { return nil }
                                defer { value += 1 }
                                return value
                            }
                            guard let index else { return }
                            let outcome = await make(requests[index])
                            if case .failure(.cancelled) = outcome, Task.isCancelled { return }
                            yield(PosterResult(index: index, request: requests[index], outcome: outcome))
                        }
                    }
                }
            }
            finish()
        }
        onTermination { batch.cancel() }
    }

    /// Makes one poster.
    /// - Throws: ``PosterError``, naming the item.
    public func poster(for request: PosterRequest) async throws(PosterError) -> Poster {
        beginRequest()
        defer { endRequest() }
        return try await make(request).get()
    }

    /// Shuts the pool's players down; later requests fail with ``PosterError/shutDown``. Batches
    /// running now end their items with that error. Idempotent.
    public func shutdown() async {
        let (workers, waiting) = pool.withLock { pool -> ([Worker], [CheckedContinuation<Worker?, Never>]) in
            pool.isShutDown = true
            defer { pool.waiting = []; pool.idle = [] }
            return (pool.all, pool.waiting.map(\.continuation))
        }
        for waiter in waiting { waiter.resume(returning: nil) }
        for worker in workers {
            worker.source.close()
            await worker.player.shutdown()
        }
    }

    // MARK: One item

    private func make(_ request: PosterRequest) async -> Result<Poster, PosterError> {
        guard !Task.isCancelled else { return .failure(.cancelled(request.source)) }
        let worker: Worker
        switch await takeWorker() {
        case .success(let taken): worker = taken
        case .failure(let error): return .failure(error)
        }
        let outcome = await withTaskCancellationHandler {
            await frame(for: request, on: worker)
        } onCancel: {
            worker.player.releaseMedia()
        }
        let result = outcome.flatMap { poster -> Result<Poster, PosterError> in
            guard let file = request.pngFile else { return .success(poster) }
            do throws(PosterError) {
                try poster.frame.writePNG(to: file)
                return .success(Poster(source: poster.source, frame: poster.frame, time: poster.time, pngFile: file))
            } catch {
                return .failure(error)
            }
        }
        if case .failure = result { worker.player.releaseMedia() }
        giveBack(worker)
        return result.mapError { error in Task.isCancelled ? .cancelled(request.source) : error }
    }

    /// Loads the item on `worker` and finds its frame, within the item's timeout.
    private func frame(for request: PosterRequest, on worker: Worker) async -> Result<Poster, PosterError> {
        let source = request.source
        let deadline = clock.now.advanced(by: configuration.timeoutPerItem)
        let timeout = configuration.timeoutPerItem
        worker.frames.reset()
        // The item's deadline, on the maker's clock: past it, the item is unloaded, which ends
        // whatever the worker is waiting for (a load, a seek; a frame wait has the deadline too).
        let expired = Locked(false), finished = Locked(false)
        defer { finished.withLock { $0 = true } }
        clock.runOnce(at: deadline) { [player = worker.player] in
            // Decided and sent under the lock the item's end takes: an item that ended first is
            // never unloaded (its player may be loading the next item), and one that ends now
            // waits until the unload is sent, so the next item's load comes after it.
            finished.withLock { finished in
                guard !finished else { return }
                expired.withLock { $0 = true }
                player.releaseMedia()
            }
        }
        let info: MediaInfo
        do throws(PlayerError) {
            info = try await worker.player.preload(source, timeout: timeout)
        } catch {
            if Task.isCancelled { return .failure(.cancelled(source)) }
            if case .timedOut = error { return .failure(.timedOut(source, after: timeout)) }
            if expired.withLock({ $0 }) { return .failure(.timedOut(source, after: timeout)) }
            if case .loadFailed(_, let mpvError) = error, Self.hasNoVideoTrack(mpvError) { return .failure(.noVideo(source)) }
            return .failure(.loadFailed(source, error))
        }
        guard let size = info.videoSize else { return .failure(.noVideo(source)) }
        let rate = worker.player.snapshot.frameRate ?? 30
        var frame: VideoFrame
        switch request.moment {
        case .time(let seconds):
            let target = min(max(seconds, 0), max((info.duration ?? seconds) - 1 / rate, 0))
            if target > 0.5 / rate {
                do throws(PlayerError) {
                    try await worker.player.perform(.seek(to: target, precision: .exact), timeout: timeout)
                } catch {
                    return .failure(Task.isCancelled ? .cancelled(source) : expired.withLock { $0 } ? .timedOut(source, after: timeout) : .loadFailed(source, error))
                }
                guard let found = await worker.frames.next(until: deadline, clock: clock, where: { frame in
                    (frame.info.videoTime ?? -1) >= target - 0.5 / rate
                }) else { return .failure(Task.isCancelled ? .cancelled(source) : .timedOut(source, after: timeout)) }
                frame = found
            } else {
                guard let found = await worker.frames.next(until: deadline, clock: clock, where: { _ in true }) else {
                    return .failure(Task.isCancelled ? .cancelled(source) : .timedOut(source, after: timeout))
                }
                frame = found
            }
        case .firstNonBlackFrame(let within):
            guard let first = await worker.frames.next(until: deadline, clock: clock, where: { _ in true }) else {
                return .failure(Task.isCancelled ? .cancelled(source) : .timedOut(source, after: timeout))
            }
            frame = first
            let limit = min(within, (info.duration ?? within) - 1 / rate)
            while frame.isMostlyBlack {
                let shown = frame.info.videoTime ?? 0
                guard shown + 1 / rate <= limit + 1e-6 else { return .failure(.noNonBlackFrame(source, within: within)) }
                do throws(PlayerError) {
                    try await worker.player.perform(.stepFrame, timeout: timeout)
                } catch {
                    return .failure(Task.isCancelled ? .cancelled(source) : expired.withLock { $0 } ? .timedOut(source, after: timeout) : .loadFailed(source, error))
                }
                guard let next = await worker.frames.next(until: deadline, clock: clock, where: { ($0.info.videoTime ?? -1) > shown + 1e-6 }) else {
                    return .failure(Task.isCancelled ? .cancelled(source) : .timedOut(source, after: timeout))
                }
                frame = next
            }
        }
        let picture = frame.fitted(aspect: size)
        return .success(Poster(source: source, frame: picture, time: frame.info.videoTime ?? 0, pngFile: nil))
    }

    // MARK: The pool

    private func takeWorker() async -> Result<Worker, PosterError> {
        enum Take { case worker(Worker), create, wait, shutDown }
        let take = pool.withLock { pool -> Take in
            if pool.isShutDown { return .shutDown }
            if let worker = pool.idle.popLast() { return .worker(worker) }
            if pool.created + pool.creating < configuration.concurrency {
                pool.creating += 1
                return .create
            }
            return .wait
        }
        switch take {
        case .shutDown:
            return .failure(.shutDown)
        case .worker(let worker):
            return .success(worker)
        case .create:
            do throws(PosterError) {
                let worker = try await createWorker()
                let kept = pool.withLock { pool -> Bool in
                    pool.creating -= 1
                    guard !pool.isShutDown else { return false }
                    pool.created += 1
                    pool.all.append(worker)
                    return true
                }
                guard kept else {
                    worker.source.close()
                    await worker.player.shutdown()
                    return .failure(.shutDown)
                }
                return .success(worker)
            } catch {
                pool.withLock { $0.creating -= 1 }
                return .failure(error)
            }
        case .wait:
            let worker = await withCheckedContinuation { (continuation: CheckedContinuation<Worker?, Never>) in
                let ready = pool.withLock { pool -> (Worker?, Bool) in
                    if pool.isShutDown { return (nil, true) }
                    if let worker = pool.idle.popLast() { return (worker, true) }
                    pool.nextWaiter += 1
                    pool.waiting.append((pool.nextWaiter, continuation))
                    return (nil, false)
                }
                if ready.1 { continuation.resume(returning: ready.0) }
            }
            return worker.map { .success($0) } ?? .failure(.shutDown)
        }
    }

    private func giveBack(_ worker: Worker) {
        let waiter = pool.withLock { pool -> CheckedContinuation<Worker?, Never>? in
            if !pool.waiting.isEmpty { return pool.waiting.removeFirst().continuation }
            if !pool.isShutDown { pool.idle.append(worker) }
            return nil
        }
        waiter?.resume(returning: worker)
    }

    private func beginRequest() {
        pool.withLock { $0.activeRequests += 1 }
    }

    /// The pool holds no item between batches: when the last batch or call in progress ends and
    /// every player is back, each is unloaded. The players are out of the idle list meanwhile,
    /// so a request that starts now waits for them and its load comes after the unload.
    private func endRequest() {
        let resting = pool.withLock { pool -> [Worker] in
            pool.activeRequests -= 1
            guard pool.activeRequests == 0, pool.idle.count == pool.created, pool.waiting.isEmpty else { return [] }
            defer { pool.idle = [] }
            return pool.idle
        }
        guard !resting.isEmpty else { return }
        for worker in resting { worker.player.releaseMedia() }
        for worker in resting { giveBack(worker) }
    }

    private func createWorker() async throws(PosterError) -> Worker {
        let player: any MediaPlayer
        do throws(PlayerError) {
            player = try await makePlayer()
        } catch {
            throw .playerUnavailable(error)
        }
        do throws(FrameOutputError) {
            let source = try player.makeFrameSource(format)
            let frames = FrameWaiter()
            source.setFrameHandler { frames.record($0) }
            return Worker(player: player, source: source, frames: frames)
        } catch {
            await player.shutdown()
            throw .playerUnavailable(.invalidArgument(name: "frame source", value: "\(format)", reason: "\(error)"))
        }
    }
}

/// The frames one worker's source rendered, and the worker's wait for the one it needs.
final class FrameWaiter: Sendable {
    private struct State {
        var frames: [VideoFrame] = []
        var waiter: (id: UInt64, predicate: @Sendable (VideoFrame) -> Bool, continuation: CheckedContinuation<VideoFrame?, Never>)?
        var nextID: UInt64 = 0
    }

    private let state = Locked(State())
    /// Frames kept for a wait that starts after they arrived.
    static let capacity = 8

    /// Forgets the frames of the item before.
    func reset() { state.withLock { $0.frames = [] } }

    func record(_ frame: VideoFrame) {
        let woken = state.withLock { state -> (CheckedContinuation<VideoFrame?, Never>)? in
            if let waiter = state.waiter, waiter.predicate(frame) {
                state.waiter = nil
                return waiter.continuation
            }
            if state.frames.count == Self.capacity { state.frames.removeFirst() }
            state.frames.append(frame)
            return nil
        }
        woken?.resume(returning: frame)
    }

    /// The first frame (kept or new) that `predicate` accepts, or nil at `deadline` or when the
    /// task is cancelled. Frames before it are dropped.
    func next(until deadline: ContinuousClock.Instant, clock: any MonotonicClock,
              where predicate: @escaping @Sendable (VideoFrame) -> Bool) async -> VideoFrame? {
        let id = state.withLock { state -> UInt64 in
            state.nextID += 1
            return state.nextID
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<VideoFrame?, Never>) in
                let found = state.withLock { state -> VideoFrame?? in
                    if let index = state.frames.firstIndex(where: predicate) {
                        let frame = state.frames[index]
                        state.frames.removeFirst(index + 1)
                        return .some(frame)
                    }
                    if Task.isCancelled { return .some(nil) }
                    state.frames = []
                    state.waiter = (id, predicate, continuation)
                    return nil
                }
                if let found { return continuation.resume(returning: found) }
                clock.runOnce(at: deadline) { [weak self] in self?.give(up: id) }
            }
        } onCancel: {
            give(up: id)
        }
    }

    private func give(up id: UInt64) {
        let waiter = state.withLock { state -> CheckedContinuation<VideoFrame?, Never>? in
            guard let waiter = state.waiter, waiter.id == id else { return nil }
            state.waiter = nil
            return waiter.continuation
        }
        waiter?.resume(returning: nil)
    }
}

/// The default player of a maker's pool.
private struct FramePlayerFactory: Sendable {
    let configuration: PlayerConfiguration

    func make() async throws(PlayerError) -> any MediaPlayer {
        try await Player.create(configuration: configuration)
    }
}

extension PosterMaker {
    /// Whether a load failure means the item has no video track. The pool's players decode no
    /// audio or subtitles, so an audio-only item leaves the player nothing to play, and the
    /// player says only that no stream was selected (the error's first line). A video track
    /// whose decoder failed names its own error first, and stays a load failure.
    static func hasNoVideoTrack(_ error: MPVError) -> Bool {
        error.code == -16 && error.reason?.hasPrefix("No video or audio streams selected") == true
    }
}
