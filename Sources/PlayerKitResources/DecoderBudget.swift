import DequeModule
import PlayerKitCore
import PlayerKitSupport

/// A limit on how many players hold loaded media (and so a decoder, its frame buffers and a
/// demuxer cache) at once.
///
/// Loading through the budget takes a slot; ``release(_:)`` unloads the player's media
/// (``/PlayerKitCore/Player/releaseMedia()``: the decoder, its buffers and the demuxer cache are freed, not
/// merely paused) and gives the slot to the next caller. When every slot is taken, a load either
/// fails at once with ``DecoderBudgetError/full(limit:holders:)`` or waits for a slot, as the
/// caller chooses with ``WhenFull``. A player that cannot get a slot is never left
/// loaded-but-black.
///
/// ```swift
/// let budget = try DecoderBudget(limit: 4)
/// try await budget.load("clip.mp4", into: player)                       // fails when full
/// try await budget.load("next.mp4", into: other, whenFull: .wait(timeout: .seconds(5)))
/// try budget.release(player)                                          // unloads; frees the slot
/// ```
///
/// A player keeps its slot across further loads through the budget. Its slot is freed when it
/// is released, when a load through the budget fails, and when the player shuts down (or is
/// dropped). Waiters get slots in the order they asked.
///
/// Written, as every PlayerKit feature, against the core's public API only.
///
/// **Threading.** Every method may be called from any thread or task. The budget's bookkeeping
/// is one lock around its slots and waiters, changed in single steps; what a step decides
/// (resuming a waiter, unloading a player) runs after the lock is released. Its handler of a
/// holder's shutdown runs on the thread that delivers the event and only takes that lock. Loads
/// themselves run in the caller's task, outside the lock. Timeouts are measured on the budget's
/// clock (``init(limit:clock:)``).
public final class DecoderBudget: Sendable {
    /// What a load does when every slot is taken.
    public enum WhenFull: Sendable, Hashable {
        /// Throw ``DecoderBudgetError/full(limit:holders:)`` at once.
        case fail
        /// Wait for a slot, at most `timeout` (on the budget's monotonic clock); then throw
        /// ``DecoderBudgetError/timedOut(player:limit:after:)``.
        case wait(timeout: Duration)
    }

    /// How many players may hold loaded media at once.
    let limit: Int
    /// The clock waits are timed on.
    let clock: any MonotonicClock

    private struct Waiter {
        let ticket: UInt64
        let player: PlayerID
        /// Frees the slot if the player shuts down once it holds it.
        let watch: PlayerSubscription
        /// Held weakly: a waiter whose player is gone or shut down is skipped.
        let playerReference: WeakReference<any MediaPlayer>
        let continuation: CheckedContinuation<Result<Void, DecoderBudgetError>, Never>
        /// Ends the wait at its timeout; cancelled when the wait ends otherwise.
        let timer: Task<Void, Never>
    }

    private struct Holder {
        /// Frees the slot when the player shuts down (its last event).
        let watch: PlayerSubscription
        /// Held weakly: a holder that shut down or is gone frees its slot at the next look,
        /// even before its last event reached the budget.
        let player: WeakReference<any MediaPlayer>
    }

    private struct State {
        var holders: [PlayerID: Holder] = [:]
        var order: [PlayerID] = []
        var waiters = Deque<Waiter>()
        var lastTicket: UInt64 = 0

        /// Gives free slots to waiters, first come first served; returns the waiters granted
        /// and those whose player went away meanwhile.
        mutating func grantWaiters(limit: Int) -> (granted: [Waiter], gone: [Waiter]) {
            var granted: [Waiter] = []
            var gone: [Waiter] = []
            while holders.count < limit, let waiter = waiters.popFirst() {
                guard let player = waiter.playerReference.object, !player.isShutDown else {
                    gone.append(waiter)
                    continue
                }
                holders[waiter.player] = Holder(watch: waiter.watch, player: waiter.playerReference)
                order.append(waiter.player)
                granted.append(waiter)
            }
            return (granted, gone)
        }
    }

    private let state = Locked(State())

    /// Creates a budget of `limit` slots whose waits are timed on `clock`.
    /// - Throws: ``DecoderBudgetError/invalidLimit(_:)`` when `limit` is below 1.
    public init(limit: Int, clock: any MonotonicClock = ContinuousClock()) throws(DecoderBudgetError) {
        guard limit >= 1 else { throw .invalidLimit(limit) }
        self.limit = limit
        self.clock = clock
    }

    /// The budget at one moment: its slots, who holds them and who waits for one, read
    /// together under one lock (as ``/PlayerKitCore/PlayerSnapshot`` is for a player).
    public struct Snapshot: Sendable, Hashable {
        /// How many players may hold loaded media at once (the budget's limit).
        public let limit: Int
        /// The players holding a slot, in the order they got it.
        public let holders: [PlayerID]
        /// The players whose loads wait for a slot (``WhenFull/wait(timeout:)``), first come
        /// first served: the first gets the next slot that frees.
        public let waiting: [PlayerID]
        /// How many slots are free: the limit less the holders.
        var freeSlots: Int { limit - holders.count }
    }

    /// The budget now: slots, holders and waiting loads, read together. A holder that shut
    /// down no longer holds a slot. Never waits.
    public var snapshot: Snapshot {
        freeGoneHolders()
        return state.withLock { Snapshot(limit: limit, holders: $0.order, waiting: $0.waiters.map(\.player)) }
    }

    /// How many slots are free.
    var availableSlots: Int {
        freeGoneHolders()
        return state.withLock { limit - $0.holders.count }
    }

    /// How many callers wait for a slot.
    var waitingCount: Int { state.withLock { $0.waiters.count } }

    /// Whether `player` holds a slot.
    func holds(_ player: any MediaPlayer) -> Bool { state.withLock { $0.holders[player.id] != nil } }

    // MARK: Loading

    /// Takes a slot for `player` (or keeps the one it holds) and loads `source` into it.
    /// - Parameters:
    ///   - source: the item to load, as for ``/PlayerKitCore/Player/load(_:startPaused:)``.
    ///   - player: the player to load it into.
    ///   - startPaused: stay paused on the first frame, as ``/PlayerKitCore/Player/load(_:startPaused:)``.
    ///   - whenFull: fail at once (the default) or wait for a slot.
    /// - Returns: the loaded item's information.
    /// - Throws: ``DecoderBudgetError/full(limit:holders:)``,
    ///   ``DecoderBudgetError/timedOut(player:limit:after:)``,
    ///   ``DecoderBudgetError/waitCancelled(_:)`` when the waiting task is cancelled, or
    ///   ``DecoderBudgetError/loadFailed(_:)`` with the error of ``/PlayerKitCore/Player/load(_:startPaused:)``
    ///   (the slot is then freed).
    @discardableResult
    public func load(_ source: MediaSource, into player: any MediaPlayer, startPaused: Bool = false,
                     whenFull: WhenFull = .fail) async throws(DecoderBudgetError) -> MediaInfo {
        try await acquire(for: player, whenFull: whenFull)
        do throws(PlayerError) {
            return try await player.load(source, startPaused: startPaused)
        } catch {
            free(player.id)
            throw .loadFailed(error)
        }
    }

    /// Takes a slot for `player` and prepares `source` paused on its first frame, as
    /// ``/PlayerKitCore/Player/preload(_:timeout:)``.
    /// - Throws: as ``load(_:into:startPaused:whenFull:)``.
    @discardableResult
    public func preload(_ source: MediaSource, into player: any MediaPlayer, whenFull: WhenFull = .fail) async throws(DecoderBudgetError) -> MediaInfo {
        try await acquire(for: player, whenFull: whenFull)
        do throws(PlayerError) {
            return try await player.preload(source)
        } catch {
            free(player.id)
            throw .loadFailed(error)
        }
    }

    /// Unloads `player`'s media (``/PlayerKitCore/Player/releaseMedia()``), which frees its decoder, buffers and
    /// cache, and gives its slot to the next waiter. The player stays usable (state
    /// ``/PlayerKitCore/PlayerState/idle`` once mpv has stopped). Soon after, the freed heap is handed back to
    /// the system, so the process's resident memory really falls.
    /// - Throws: ``DecoderBudgetError/notHolding(_:)`` when `player` holds no slot (for
    ///   example when it was released already).
    public func release(_ player: any MediaPlayer) throws(DecoderBudgetError) {
        guard state.withLock({ $0.holders[player.id] != nil }) else { throw .notHolding(player.id) }
        player.releaseMedia()
        free(player.id)
    }

    // MARK: Slots

    private func acquire(for player: any MediaPlayer, whenFull: WhenFull) async throws(DecoderBudgetError) {
        guard !player.isShutDown else { throw .loadFailed(.playerShutDown(player.id)) }
        let id = player.id
        freeGoneHolders()
        // Made before taking the lock (the bus has locks of its own); cancelled if unused.
        let watch = shutdownWatch(for: player)
        guard case .wait(let timeout) = whenFull else {
            enum Outcome { case granted, alreadyHeld, full([PlayerID]) }
            let outcome = state.withLock { state -> Outcome in
                if state.holders[id] != nil { return .alreadyHeld }
                guard state.holders.count < limit, state.waiters.isEmpty else { return .full(state.order) }
                state.holders[id] = Holder(watch: watch, player: WeakReference(player))
                state.order.append(id)
                return .granted
            }
            switch outcome {
            case .granted: return
            case .alreadyHeld: watch.cancel()
            case .full(let holders):
                watch.cancel()
                throw .full(limit: limit, holders: holders)
            }
            return
        }
        let result = await wait(player: player, watch: watch, timeout: timeout)
        if case .failure = result { watch.cancel() }
        try result.get()
    }

    /// Takes a slot at once when one is free and nobody waits, or queues for one.
    private func wait(player: any MediaPlayer, watch: PlayerSubscription, timeout: Duration) async -> Result<Void, DecoderBudgetError> {
        let limit = limit
        let id = player.id
        let clock = clock
        let ticket = state.withLock { state -> UInt64 in
            state.lastTicket += 1
            return state.lastTicket
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Result<Void, DecoderBudgetError>, Never>) in
                let timer = Task { [weak self] in
                    do {
                        try await clock.sleep(until: clock.now.advanced(by: timeout), tolerance: nil)
                    } catch {
                        return
                    }
                    self?.abandon(ticket, with: .timedOut(player: id, limit: limit, after: timeout))
                }
                enum Outcome { case granted, alreadyHeld, cancelled, queued }
                let outcome = state.withLock { state -> Outcome in
                    // Cancelled before it could queue: the cancellation handler found nothing to
                    // end (the flag is set before the handler runs, and both take the lock).
                    if Task.isCancelled { return .cancelled }
                    if state.holders[id] != nil { return .alreadyHeld }
                    if state.holders.count < limit, state.waiters.isEmpty {
                        state.holders[id] = Holder(watch: watch, player: WeakReference(player))
                        state.order.append(id)
                        return .granted
                    }
                    state.waiters.append(Waiter(
                        ticket: ticket, player: id, watch: watch, playerReference: WeakReference(player),
                        continuation: continuation, timer: timer))
                    return .queued
                }
                switch outcome {
                case .queued: break
                case .granted:
                    timer.cancel()
                    continuation.resume(returning: .success(()))
                case .alreadyHeld:
                    timer.cancel()
                    watch.cancel()
                    continuation.resume(returning: .success(()))
                case .cancelled:
                    timer.cancel()
                    continuation.resume(returning: .failure(.waitCancelled(id)))
                }
            }
        } onCancel: {
            abandon(ticket, with: .waitCancelled(id))
        }
    }

    /// Ends a wait that has not been granted yet.
    private func abandon(_ ticket: UInt64, with error: DecoderBudgetError) {
        let waiter = state.withLock { state -> Waiter? in
            guard let index = state.waiters.firstIndex(where: { $0.ticket == ticket }) else { return nil }
            return state.waiters.remove(at: index)
        }
        guard let waiter else { return }
        waiter.timer.cancel()
        waiter.continuation.resume(returning: .failure(error))
    }

    /// Frees the slots of holders that shut down or are gone, without waiting for their last
    /// event to reach the budget's handler (which then finds nothing to do).
    private func freeGoneHolders() {
        let gone = state.withLock { state in
            state.holders.filter { $0.value.player.object.map(\.isShutDown) ?? true }.map(\.key)
        }
        for id in gone { free(id) }
    }

    /// Frees the player's slot when it shuts down (its last event). Runs on the delivering
    /// thread: it takes the budget's lock for one step and resumes waiters, nothing more.
    private func shutdownWatch(for player: any MediaPlayer) -> PlayerSubscription {
        let id = player.id
        return player.eventBus.subscribe(to: id, kinds: [.shutDown], delivery: .immediate) { [weak self] _ in
            self?.free(id)
        }
    }

    /// Frees `id`'s slot and hands free slots to waiters, first come first served.
    private func free(_ id: PlayerID) {
        let (holder, granted, gone) = state.withLock { state -> (Holder?, [Waiter], [Waiter]) in
            guard let holder = state.holders.removeValue(forKey: id) else { return (nil, [], []) }
            state.order.removeAll { $0 == id }
            let (granted, gone) = state.grantWaiters(limit: limit)
            return (holder, granted, gone)
        }
        holder?.watch.cancel()
        for waiter in granted {
            waiter.timer.cancel()
            waiter.continuation.resume(returning: .success(()))
        }
        for waiter in gone {
            waiter.timer.cancel()
            waiter.watch.cancel()
            waiter.continuation.resume(returning: .failure(.loadFailed(.playerShutDown(waiter.player))))
        }
    }
}
