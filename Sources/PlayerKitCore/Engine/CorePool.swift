internal import CMPV
import Dispatch
import PlayerKitSupport

/// mpv cores created and initialized ahead of the players that will use them
/// (``PlayerConfiguration/readyCores``): creating a core takes milliseconds (tens under load),
/// taking a ready one does not.
///
/// Cores are kept by the options they were made with, less the ones named after a player
/// (``CorePool/perPlayerOptions``), which the taker sets. A core is taken only by a player whose
/// options are the same, so a ready core is the core that player would have created: nothing
/// ran on it (no command, no observation, no load) before the player took it.
///
/// **Threading.** One lock around the table of ready cores; cores are created on a queue of
/// the pool's (at the default priority: mpv's threads inherit it), one at a time (creation takes a process-wide lock anyway), never with
/// the pool's lock held. ``take(options:keep:)`` never waits for a refill; ``claim(options:keep:wait:_:)``
/// (``Player/create(id:configuration:delegate:)``'s way) is handed the core a refill under way
/// is making, when no core is ready, instead of creating a second one beside it: its callback
/// runs on the pool's queue then, or on a queue of the deadlines' when the wait ends first.
final class CorePool: Sendable {
    /// The pool of the process.
    static let shared = CorePool()

    /// Options named after the player (set by the taker once it knows its ID); the rest are
    /// the pool's key.
    static let perPlayerOptions: Set<String> = ["audio-client-name"]

    /// The most ready cores kept for one set of options.
    static let largestCount = 16

    /// How many sets of options keep ready cores: the ones players were last created with. An
    /// app that gives each player options of its own (a title in ``PlayerConfiguration/extraOptions``)
    /// would otherwise leave a ready core behind for every player, which none would take.
    static let keptSettings = 4

    private struct State: Sendable {
        /// Ready cores by their options.
        var ready: [[String]: [PreparedCore]] = [:]
        /// How many each set of options should have ready (the latest taker's wish).
        var wanted: [[String]: Int] = [:]
        /// The options whose refill is under way.
        var filling: Set<[String]> = []
        /// The claims waiting for the core a refill under way is making, by options, oldest
        /// first (``claim(options:keep:wait:_:)``).
        var waiting: [[String]: [Waiter]] = [:]
        /// The number of the next waiting claim.
        var nextWaiter: UInt64 = 0
        /// The options players were created with, the latest last (at most ``keptSettings``).
        var latest: [[String]] = []

        /// Makes `key` the latest options; returns the ready cores of options that are no longer
        /// among the ``keptSettings`` latest, which keep none from now on.
        mutating func use(_ key: [String]) -> [PreparedCore] {
            latest.removeAll { $0 == key }
            latest.append(key)
            guard latest.count > CorePool.keptSettings else { return [] }
            let dropped = latest.prefix(latest.count - CorePool.keptSettings)
            latest.removeFirst(dropped.count)
            return dropped.flatMap { old -> [PreparedCore] in
                wanted[old] = nil
                return ready.removeValue(forKey: old) ?? []
            }
        }
    }

    /// A claim waiting for the core a refill is making.
    private struct Waiter: Sendable {
        let number: UInt64
        let handOver: @Sendable (PreparedCore?) -> Void
    }

    private let state = Locked(State())
    // At the default priority: mpv's threads inherit the priority of the thread that creates the
    // core (Linux threads take their creator's nice value; libdispatch runs a utility queue at
    // nice 2), and a player that takes the core keeps them for its life. On the global default
    // queue's threads, not the overcommitting ones a serial queue gets by default, which the
    // players' pumps run on: with a refill there, the delivery hop of a command's read-out doubled
    // for the rest of the process (`playerkit-bench round-trip --gap-us 500`, p50 21-33 us against
    // 14-22; measured, libdispatch's reason not pinned down).
    private let queue = DispatchQueue(label: "PlayerKit.core-pool", target: .global(qos: .default))

    /// The key of `options`: each `name=value`, in order, without the per-player ones.
    static func key(_ options: [(String, String)]) -> [String] {
        options.filter { !perPlayerOptions.contains($0.0) }.map { "\($0.0)=\($0.1)" }
    }

    /// A core made with `options`: a ready one when there is one, else created now. Then, in
    /// the background, `keep` cores with these options are made ready for the next players
    /// (0: none, and the ready ones are let go).
    /// - Throws: what creating a core throws (``PlayerError/invalidOption(name:value:_:)``,
    ///   ``PlayerError/creationFailed(reason:)``); nothing is refilled then.
    func take(options: [(String, String)], keep: Int) throws(PlayerError) -> PreparedCore {
        let key = Self.key(options)
        let keep = max(0, min(Self.largestCount, keep))
        let (ready, surplus) = state.withLock { state -> (PreparedCore?, [PreparedCore]) in
            let evicted = state.use(key)
            state.wanted[key] = keep
            let ready = state.ready[key]?.popLast()
            let count = state.ready[key]?.count ?? 0
            guard count > keep else { return (ready, evicted) }
            let surplus = Array(state.ready[key]![keep...])
            state.ready[key]!.removeLast(count - keep)
            return (ready, surplus + evicted)
        }
        if !surplus.isEmpty { queue.async { surplus.forEach { $0.destroy() } } }
        let core: PreparedCore
        if let ready {
            core = ready
        } else {
            core = try PreparedCore(options: options.filter { !Self.perPlayerOptions.contains($0.0) }, madeAhead: false)
        }
        scheduleRefill(key, options: options)
        return core
    }

    /// Takes a core made with `options` without creating one, and calls `done` with it: a
    /// ready one at once; when none is ready but a refill for these options is making one, that
    /// core as soon as it is made (instead of creating a second one beside it, which would wait
    /// for the same process-wide creation lock, then take as long again), or nil if `wait`
    /// passes first; nil at once when neither. On nil the caller creates its own core. Then, as
    /// ``take(options:keep:)`` does, `keep` cores are made ready again in the background.
    ///
    /// `done` runs on the caller's thread (a ready core, or nil at once), on the pool's queue (a
    /// core handed over) or on the deadlines' queue (the wait ended), exactly once, never with
    /// the pool's lock held.
    func claim(
        options: [(String, String)], keep: Int, wait: Duration = CorePool.handOverWait,
        _ done: @escaping @Sendable (PreparedCore?) -> Void
    ) {
        let key = Self.key(options)
        let keep = max(0, min(Self.largestCount, keep))
        let once = Locked<(@Sendable (PreparedCore?) -> Void)?>(done)
        let expiry = Expiry()
        let handOver: @Sendable (PreparedCore?) -> Void = { core in
            expiry.cancel()
            if let done = once.withLock({ $0.take() }) {
                done(core)
            } else {
                // The wait ended first; the core, made for these options, is kept ready.
                core.map { self.putBack($0, key: key) }
            }
        }
        let outcome = state.withLock { state -> (ready: PreparedCore?, waiter: UInt64?, surplus: [PreparedCore]) in
            let evicted = state.use(key)
            state.wanted[key] = keep
            if let ready = state.ready[key]?.popLast() {
                let count = state.ready[key]?.count ?? 0
                guard count > keep else { return (ready, nil, evicted) }
                let surplus = Array(state.ready[key]![keep...])
                state.ready[key]!.removeLast(count - keep)
                return (ready, nil, surplus + evicted)
            }
            // With `keep` 0 the pool is off for these options: the taker creates its own core.
            guard keep > 0, state.filling.contains(key) else { return (nil, nil, evicted) }
            state.nextWaiter += 1
            state.waiting[key, default: []].append(Waiter(number: state.nextWaiter, handOver: handOver))
            return (nil, state.nextWaiter, evicted)
        }
        if !outcome.surplus.isEmpty { queue.async { outcome.surplus.forEach { $0.destroy() } } }
        scheduleRefill(key, options: options)
        guard let number = outcome.waiter else {
            handOver(outcome.ready)
            return
        }
        expiry.arm(after: wait) { [self] in
            let stillWaiting = state.withLock { state -> Bool in
                guard let index = state.waiting[key]?.firstIndex(where: { $0.number == number }) else { return false }
                state.waiting[key]!.remove(at: index)
                if state.waiting[key]!.isEmpty { state.waiting[key] = nil }
                return true
            }
            if stillWaiting { handOver(nil) }
        }
    }

    /// How long ``claim(options:keep:wait:_:)`` waits for a core a refill is making: a core takes
    /// about 5 ms to make (tens under load); a wait this long means the machine is stalled, and
    /// the claim's caller then creates its own core, as it would have without the pool.
    static let handOverWait: Duration = .milliseconds(500)

    /// Keeps `core`, made with the options of `key`, ready when fewer than wanted are, or lets
    /// it go (on the pool's queue).
    func putBack(_ core: PreparedCore, key: [String]) {
        let kept = state.withLock { state -> Bool in
            guard (state.ready[key]?.count ?? 0) < (state.wanted[key] ?? 0) else { return false }
            state.ready[key, default: []].append(core)
            return true
        }
        if !kept { queue.async { core.destroy() } }
    }

    /// Makes the ready cores for `options` whole again now, rather than ``refillDelay`` after the
    /// take: called at the taker's first frame, when its load no longer shares the machine with a
    /// core's creation. Nothing happens when they are whole, or a refill is under way.
    func refillNow(options: [(String, String)]) {
        let rest = options.filter { !Self.perPlayerOptions.contains($0.0) }
        let key = Self.key(rest)
        queue.async { [self] in refill(key, options: rest) }
    }

    /// Makes the ready cores for `options` whole again, a while after a player took one: later,
    /// so the taker's creation and first load do not share the machine with a core's creation
    /// (which holds locks of mpv's that the taker's first calls take too: a player that took a
    /// ready core waited up to 4 ms in them while the next one was created).
    private func scheduleRefill(_ key: [String], options: [(String, String)]) {
        let rest = options.filter { !Self.perPlayerOptions.contains($0.0) }
        queue.asyncAfter(deadline: .now() + Self.refillDelay.withLock { $0 }.inSeconds) { [self] in refill(key, options: rest) }
    }

    /// Makes `count` cores with `options` ready, the ones ready already counted, and calls
    /// `done` on a queue of PlayerKit's once they are and the process's first load is warm
    /// (``DecoderWarmUp``, run by the first call), or with the first creation's error: what
    /// ``Player/prepareReadyCores(for:)`` waits for. The options become the latest players'
    /// (their cores are kept as a taker's are), and `count` the number kept for them: ready
    /// ones beyond it are let go.
    func prepare(options: [(String, String)], count: Int, _ done: @escaping @Sendable (PlayerError?) -> Void) {
        let key = Self.key(options)
        let count = max(0, min(Self.largestCount, count))
        let evicted = state.withLock { state -> [PreparedCore] in
            let evicted = state.use(key)
            state.wanted[key] = count
            let ready = state.ready[key]?.count ?? 0
            guard ready > count else { return evicted }
            let surplus = Array(state.ready[key]![count...])
            state.ready[key]!.removeLast(ready - count)
            return surplus + evicted
        }
        let rest = options.filter { !Self.perPlayerOptions.contains($0.0) }
        // On the pool's queue, after any refill under way (which runs there too).
        queue.async { [self] in
            evicted.forEach { $0.destroy() }
            // The process's first load made warm meanwhile, on threads of its own (once), after
            // the first ready core: FFmpeg writes its messages to the log of the first mpv core
            // of the process that is still alive, and to standard error once that core is
            // destroyed, until another core starts. The warm-up's core, destroyed within
            // milliseconds, must not be that one.
            var warmUpStarted = false
            while state.withLock({ ($0.ready[key]?.count ?? 0) < ($0.wanted[key] ?? 0) }) {
                let core: PreparedCore
                do throws(PlayerError) {
                    core = try PreparedCore(options: rest, madeAhead: true)
                } catch {
                    DecoderWarmUp.start()
                    done(error)
                    return
                }
                if !warmUpStarted {
                    warmUpStarted = true
                    DecoderWarmUp.start()
                }
                let extra = state.withLock { state -> PreparedCore? in
                    guard (state.ready[key]?.count ?? 0) < (state.wanted[key] ?? 0) else { return core }
                    state.ready[key, default: []].append(core)
                    return nil
                }
                extra?.destroy()
            }
            // (Started here when the cores were ready already: another core is alive then.)
            DecoderWarmUp.start()
            DecoderWarmUp.whenFinished { done(nil) }
        }
    }

    /// How long after a player took a core the next one is made ready, unless the player's
    /// first frame came first (``refillNow(options:)``): 0.2 s (tests lengthen it).
    static let refillDelay = Locked<Duration>(.milliseconds(200))

    /// Runs on the pool's queue before a refill creates a core (tests hold a refill there).
    static let beforeRefillCreatesForTests = Locked<(@Sendable () -> Void)?>(nil)

    /// How many claims wait for the core a refill is making for `options`.
    func waitingClaims(options: [(String, String)]) -> Int {
        state.withLock { $0.waiting[Self.key(options)]?.count ?? 0 }
    }

    /// How many cores with `options` are ready now.
    func readyCount(options: [(String, String)]) -> Int {
        state.withLock { $0.ready[Self.key(options)]?.count ?? 0 }
    }

    /// Lets every ready core go, and keeps none until a player takes one again; `done` is
    /// called on the pool's queue once they are destroyed (after a refill under way, which
    /// keeps what it made no more).
    func drain(_ done: @escaping @Sendable () -> Void) {
        let cores = state.withLock { state -> [PreparedCore] in
            defer {
                state.ready = [:]
                state.wanted = [:]
                state.latest = []
            }
            return state.ready.values.flatMap { $0 }
        }
        queue.async {
            cores.forEach { $0.destroy() }
            done()
        }
    }

    /// Makes cores with `options` ready until `key` has as many as wanted, one at a time on the
    /// pool's queue. Stops at the first failure (the options are the taker's, and worked a
    /// moment ago: a failure here is the machine's, and the next take creates its own core).
    private func refill(_ key: [String], options: [(String, String)]) {
        let start = state.withLock { state -> Bool in
            guard (state.ready[key]?.count ?? 0) < (state.wanted[key] ?? 0), !state.filling.contains(key) else { return false }
            state.filling.insert(key)
            return true
        }
        guard start else { return }
        queue.async { [self] in
            while true {
                let more = state.withLock { state -> Bool in
                    let more = (state.ready[key]?.count ?? 0) < (state.wanted[key] ?? 0) || state.waiting[key] != nil
                    if !more { state.filling.remove(key) }
                    return more
                }
                guard more else { return }
                Self.beforeRefillCreatesForTests.withLock { $0 }?()
                guard let core = try? PreparedCore(options: options, madeAhead: true) else {
                    // The claims waiting create their own cores (and meet the failure themselves).
                    let waiters = state.withLock { state -> [Waiter] in
                        state.filling.remove(key)
                        return state.waiting.removeValue(forKey: key) ?? []
                    }
                    waiters.forEach { $0.handOver(nil) }
                    return
                }
                // The oldest claim waiting gets it; else it is kept ready.
                let (waiter, extra) = state.withLock { state -> (Waiter?, PreparedCore?) in
                    if let waiter = state.waiting[key]?.first {
                        state.waiting[key]!.removeFirst()
                        if state.waiting[key]!.isEmpty { state.waiting[key] = nil }
                        return (waiter, nil)
                    }
                    guard (state.ready[key]?.count ?? 0) < (state.wanted[key] ?? 0) else { return (nil, core) }
                    state.ready[key, default: []].append(core)
                    return (nil, nil)
                }
                waiter?.handOver(core)
                extra?.destroy()
            }
        }
    }
}

/// A created and initialized mpv core that no player owns yet: destroyed with it unless an
/// ``MPVHandle`` adopts it (``adopt()``).
final class PreparedCore: @unchecked Sendable {
    // @unchecked: `raw` is handed over once, under the lock.
    private let raw: Locked<OpaquePointerBox?>
    /// Whether the pool made it ready ahead (else it was created for its taker).
    let madeAhead: Bool

    /// Creates and initializes a core with `options`, as ``MPVHandle`` does.
    init(options: [(String, String)], madeAhead: Bool) throws(PlayerError) {
        raw = Locked(OpaquePointerBox(try MPVHandle.createCore(options: options)))
        self.madeAhead = madeAhead
    }

    /// The core, now the caller's to destroy; nil when it was adopted or destroyed already.
    func adopt() -> OpaquePointer? {
        raw.withLock { box in
            defer { box = nil }
            return box?.pointer
        }
    }

    /// Destroys the core unless it was adopted (blocks while mpv stops its threads).
    func destroy() {
        if let pointer = adopt() { mpv_terminate_destroy(pointer) }
    }

    deinit {
        destroy()
    }
}

/// An mpv core's pointer, sendable as the pool hands it from thread to thread (one owner at a
/// time).
struct OpaquePointerBox: @unchecked Sendable {
    let pointer: OpaquePointer
    init(_ pointer: OpaquePointer) { self.pointer = pointer }
}
