import DequeModule
import Dispatch

/// A limit on how many players hold loaded media (and so a decoder, its frame buffers and a
/// demuxer cache) at once.
///
/// Loading through the budget takes a slot; ``release(_:)`` unloads the player's media (mpv's
/// `stop`: the decoder, its buffers and the demuxer cache are freed, not merely paused) and
/// gives the slot to the next caller. When every slot is taken, a load either fails at once with
/// ``PlayerError/decoderBudgetFull(limit:holders:)`` or waits for a slot, as the caller chooses
/// with ``WhenFull``. A player that cannot get a slot is never left loaded-but-black.
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
/// **Threading.** Every method may be called from any thread or task.
public final class DecoderBudget: Sendable {
    /// What a load does when every slot is taken.
    public enum WhenFull: Sendable, Hashable {
        /// Throw ``PlayerError/decoderBudgetFull(limit:holders:)`` at once.
        case fail
        /// Wait for a slot, at most `timeout`; then throw ``PlayerError/timedOut(operation:after:)``.
        case wait(timeout: Duration)
    }

    /// How many players may hold loaded media at once.
    public let limit: Int

    private struct Waiter {
        let ticket: UInt64
        let player: PlayerID
        /// Frees the slot if the player shuts down once it holds it.
        let watch: PlayerSubscription
        /// Held weakly: a waiter whose player is gone or shut down is skipped.
        let weakPlayer: WeakPlayer
        let continuation: CheckedContinuation<Result<Void, PlayerError>, Never>
    }

    private struct State {
        /// Each holder's shutdown watch.
        var holders: [PlayerID: PlayerSubscription] = [:]
        var order: [PlayerID] = []
        var waiters = Deque<Waiter>()
        var nextTicket: UInt64 = 0
    }

    private let state = Locked(State())

    /// Creates a budget of `limit` slots.
    /// - Throws: ``PlayerError/invalidArgument(name:value:reason:)`` when `limit` is below 1.
    public init(limit: Int) throws(PlayerError) {
        guard limit >= 1 else {
            throw .invalidArgument(name: "decoder budget", value: "\(limit)", reason: "must be 1 or more players")
        }
        self.limit = limit
    }

    /// The players holding a slot, in the order they got it.
    public var holders: [PlayerID] { state.withLock { $0.order } }

    /// How many slots are free.
    public var availableSlots: Int { state.withLock { limit - $0.holders.count } }

    /// How many callers wait for a slot.
    public var waitingCount: Int { state.withLock { $0.waiters.count } }

    /// Whether `player` holds a slot.
    public func holds(_ player: Player) -> Bool { state.withLock { $0.holders[player.id] != nil } }

    // MARK: Loading

    /// Takes a slot for `player` (or keeps the one it holds) and loads `source` into it.
    /// - Parameters:
    ///   - startPaused: stay paused on the first frame, as ``Player/load(_:startPaused:)``.
    ///   - whenFull: fail at once (the default) or wait for a slot.
    /// - Returns: the loaded item's information.
    /// - Throws: ``PlayerError/decoderBudgetFull(limit:holders:)``,
    ///   ``PlayerError/timedOut(operation:after:)``, ``PlayerError/loadCancelled(source:)`` when
    ///   the waiting task is cancelled, or any error of ``Player/load(_:startPaused:)`` (the
    ///   slot is then freed).
    @discardableResult
    public func load(_ source: MediaSource, into player: Player, startPaused: Bool = false,
                     whenFull: WhenFull = .fail) async throws(PlayerError) -> MediaInfo {
        try await acquire(for: player, source: source, whenFull: whenFull)
        do throws(PlayerError) {
            return try await player.load(source, startPaused: startPaused)
        } catch {
            free(player.id)
            throw error
        }
    }

    /// Takes a slot for `player` and prepares `source` paused on its first frame, as
    /// ``Player/preload(_:timeout:)``.
    /// - Throws: as ``load(_:into:startPaused:whenFull:)``.
    @discardableResult
    public func preload(_ source: MediaSource, into player: Player, whenFull: WhenFull = .fail) async throws(PlayerError) -> MediaInfo {
        try await acquire(for: player, source: source, whenFull: whenFull)
        do throws(PlayerError) {
            return try await player.preload(source)
        } catch {
            free(player.id)
            throw error
        }
    }

    /// Unloads `player`'s media, which frees its decoder, buffers and cache, and gives its
    /// slot to the next waiter. The player stays usable (state ``PlayerState/idle``). Soon
    /// after, the freed heap is handed back to the system (`malloc_trim`), so the process's
    /// resident memory really falls.
    /// - Throws: ``PlayerError/notHoldingDecoder(_:)`` when `player` holds no slot (for
    ///   example when it was released already).
    public func release(_ player: Player) throws(PlayerError) {
        guard state.withLock({ $0.holders[player.id] != nil }) else { throw .notHoldingDecoder(player.id) }
        player.releaseMedia()
        free(player.id)
    }

    // MARK: Slots

    private func acquire(for player: Player, source: MediaSource, whenFull: WhenFull) async throws(PlayerError) {
        guard !player.isShutDown else { throw .playerShutDown(player.id) }
        let id = player.id
        // Made before taking the lock (the bus has locks of its own); cancelled if unused.
        let watch = shutdownWatch(for: player)
        enum Outcome { case granted, alreadyHeld, full([PlayerID]), wait(UInt64) }
        let outcome = state.withLock { state -> Outcome in
            if state.holders[id] != nil { return .alreadyHeld }
            if state.holders.count < limit, state.waiters.isEmpty {
                state.holders[id] = watch
                state.order.append(id)
                return .granted
            }
            if case .fail = whenFull { return .full(state.order) }
            state.nextTicket += 1
            return .wait(state.nextTicket)
        }
        switch outcome {
        case .granted: return
        case .alreadyHeld:
            watch.cancel()
        case .full(let holders):
            watch.cancel()
            throw .decoderBudgetFull(limit: limit, holders: holders)
        case .wait(let ticket):
            guard case .wait(let timeout) = whenFull else { return }
            let result = await wait(ticket: ticket, player: player, watch: watch, source: source, timeout: timeout)
            if case .failure = result { watch.cancel() }
            try result.get()
        }
    }

    private func wait(ticket: UInt64, player: Player, watch: PlayerSubscription, source: MediaSource,
                      timeout: Duration) async -> Result<Void, PlayerError> {
        let limit = limit
        let id = player.id
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Result<Void, PlayerError>, Never>) in
                let grantedAtOnce = state.withLock { state -> Bool in
                    // A slot may have come free between the first look and now.
                    if state.holders.count < limit, state.waiters.isEmpty {
                        state.holders[id] = watch
                        state.order.append(id)
                        return true
                    }
                    state.waiters.append(Waiter(ticket: ticket, player: id, watch: watch, weakPlayer: WeakPlayer(value: player), continuation: continuation))
                    return false
                }
                if grantedAtOnce {
                    continuation.resume(returning: .success(()))
                    return
                }
                DispatchQueue.global().asyncAfter(deadline: .now() + timeout.timeInterval) { [weak self] in
                    self?.abandon(ticket, with: .timedOut(
                        operation: "waiting for a slot of the decoder budget of \(limit) for player \"\(id)\"", after: timeout))
                }
            }
        } onCancel: {
            abandon(ticket, with: .loadCancelled(source: source.description))
        }
    }

    /// Ends a wait that has not been granted yet.
    private func abandon(_ ticket: UInt64, with error: PlayerError) {
        let waiter = state.withLock { state -> Waiter? in
            guard let index = state.waiters.firstIndex(where: { $0.ticket == ticket }) else { return nil }
            return state.waiters.remove(at: index)
        }
        waiter?.continuation.resume(returning: .failure(error))
    }

    /// Frees the player's slot when it shuts down (its last event).
    private func shutdownWatch(for player: Player) -> PlayerSubscription {
        let id = player.id
        return player.eventBus.subscribe(to: id, kinds: [.shutDown], delivery: .immediate) { [weak self] _ in
            self?.free(id)
        }
    }

    /// Frees `id`'s slot and hands free slots to waiters, first come first served.
    private func free(_ id: PlayerID) {
        var granted: [Waiter] = []
        var gone: [Waiter] = []
        let watch = state.withLock { state -> PlayerSubscription? in
            guard let watch = state.holders.removeValue(forKey: id) else { return nil }
            state.order.removeAll { $0 == id }
            while state.holders.count < limit, let waiter = state.waiters.popFirst() {
                guard let player = waiter.weakPlayer.value, !player.isShutDown else {
                    gone.append(waiter)
                    continue
                }
                state.holders[waiter.player] = waiter.watch
                state.order.append(waiter.player)
                granted.append(waiter)
            }
            return watch
        }
        watch?.cancel()
        for waiter in granted { waiter.continuation.resume(returning: .success(())) }
        for waiter in gone {
            waiter.watch.cancel()
            waiter.continuation.resume(returning: .failure(.playerShutDown(waiter.player)))
        }
    }
}

extension Duration {
    /// The duration in seconds, for Dispatch.
    var timeInterval: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }
}
