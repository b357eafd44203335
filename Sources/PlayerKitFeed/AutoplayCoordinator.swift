import Foundation
import PlayerKitCore
import PlayerKitResources
import PlayerKitSupport

/// Plays the most visible item of a scrolling feed once scrolling settles, and keeps the rest
/// quiet: the autoplay logic every feed app writes by hand, without any UI.
///
/// The app registers its items (each with a player and a source, top to bottom), reports each
/// item's visible fraction (0 to 1) as it scrolls, and the coordinator decides:
/// * nothing changes while reports keep coming; once none came for ``Settings/settleDelay``
///   (0.3 s by default), the item with the largest visible fraction at or above
///   ``Settings/threshold`` (0.85) plays; on a tie the upper item wins;
/// * it plays muted by default (``Settings/startsMuted``); the item that played before pauses
///   on its frame;
/// * an item whose visible fraction drops to 0 is released: its load is cancelled if it was
///   loading, and its media unloaded (decoder and buffers freed, through the ``/PlayerKitResources/DecoderBudget``
///   when one is given);
/// * a visible item that is not playing is prepared paused on its first frame, a poster the app
///   can show (or save with ``/PlayerKitCore/Player/saveFrame(to:)``), while decoder slots allow;
/// * with a precacher (PlayerKitCache's `MediaCache`, any ``/PlayerKitCore/MediaPrecaching``), items within ``Settings/precacheDistance`` of a
///   visible item whose sources come from that cache are precached
///   (``Settings/precacheAmount``), and an item that moves farther away has its precache
///   cancelled (a released item's player stops reading, which stops its download too).
///
/// Every decision is published, with its reason, on the item's player as
/// ``AutoplayEvent/decision(_:)``: a subscriber of that player's ID hears why it plays, pauses or
/// was released, and one of every player's hears the whole feed's decisions:
///
/// ```swift
/// let decisions = PlayerEventBus.shared.subscribe(to: .all, kinds: [.autoplayDecision]) { record in
///     if case .decision(let decision)? = record.event.feature(AutoplayEvent.self) { print(decision) }
/// }
/// ```
///
/// Written, as every PlayerKit feature, against the core's public API only.
///
/// **Threading.** Methods may be called from any thread. The coordinator's state is one lock,
/// changed in single steps. A decision is made once reports have settled, by a task of the
/// coordinator's own that sleeps ``Settings/settleDelay`` on its clock (each report replaces the
/// one before, and a decision never overlaps the one before it); it drives players with
/// ``/PlayerKitCore/Player/send(_:)`` and ``/PlayerKitCore/Player/releaseMedia()``, which never wait for mpv.
public final class AutoplayCoordinator: Sendable {

    /// Tuning.
    public struct Settings: Sendable, Hashable {
        /// The smallest visible fraction an item needs to play. Default 0.85.
        public var threshold: Double = 0.85
        /// How long after the last report the decision is made. Default 0.3 s.
        public var settleDelay: Duration = .milliseconds(300)
        /// Whether a started item is muted. Default true.
        public var startsMuted = true
        /// Whether visible items that do not play are prepared on their first frame. Default true.
        public var preparesPosters = true
        /// With a cache: how many items above and below a visible item are precached. Default 2.
        public var precacheDistance = 2
        /// With a cache: how much of each item near the viewport is precached. Default 3 s.
        public var precacheAmount: PrecacheAmount = .seconds(3)

        /// The defaults.
        public init() {}
    }

    /// One decision and why.
    public struct Decision: Sendable, Hashable, CustomStringConvertible {
        /// What was done.
        public enum Action: String, Sendable, Hashable {
            /// The item plays.
            case play
            /// The item paused (on its frame).
            case pause
            /// The item left the screen: its load was cancelled or its media unloaded.
            case release
            /// The item was prepared paused on its first frame.
            case prepare
            /// The item came near the viewport: its start is being downloaded into the cache.
            case precache
            /// The item moved away from the viewport: its precache was cancelled.
            case cancelPrecache
        }
        /// The item.
        public let item: String
        /// What was done.
        public let action: Action
        /// Why, in words, e.g. "most visible (0.92 >= 0.85) after scrolling settled".
        public let reason: String
        /// When the decision was made.
        let time: Date

        /// "play item-3: most visible ...".
        public var description: String { "\(action.rawValue) \(item): \(reason)" }
    }

    /// The settings in force.
    let settings: Settings
    /// The budget loads go through, if any.
    let budget: DecoderBudget?
    /// What items near the viewport are precached through, if anything: PlayerKitCache's
    /// `MediaCache` (or an app's own ``/PlayerKitCore/MediaPrecaching``), wired by the app, so the
    /// feed builds without the cache module.
    let cache: (any MediaPrecaching)?
    /// The clock the settle delay is measured on.
    let clock: any MonotonicClock

    private struct Item: Sendable {
        let id: String
        let player: any MediaPlayer
        let source: MediaSource
        let order: Int
        var visibility: Double = 0
        var loadTask: Task<Void, Never>?
        /// Counts loads and releases, so a load that ended after a release changes nothing.
        var loadGeneration = 0
        var loaded = false
        /// A precache of the item's source, running.
        var precacheTask: Task<Void, Never>?
        /// The item's precache finished: not started again.
        var precached = false
    }

    private struct State: Sendable {
        var items: [String: Item] = [:]
        var nextOrder = 0
        var playing: String?
        var generation = 0
        var lastReport: ContinuousClock.Instant?
        /// The task waiting for reports to settle (the latest; each report replaces it).
        var settleTask: Task<Void, Never>?
    }

    /// The coordinator's state, changed in single steps under its lock.
    private let state = Locked(State())

    /// A coordinator.
    /// - Throws: ``/PlayerKitCore/PlayerError/invalidArgument(name:value:reason:)`` for a threshold outside
    ///   0...1 or a negative settle delay.
    ///   A negative ``Settings/precacheDistance`` is refused the same way.
    public init(settings: Settings = Settings(), budget: DecoderBudget? = nil, cache: (any MediaPrecaching)? = nil,
                clock: any MonotonicClock = ContinuousClock()) throws(PlayerError) {
        guard settings.threshold.isFinite, (0...1).contains(settings.threshold) else {
            throw .invalidArgument(name: "autoplay threshold", value: "\(settings.threshold)", reason: "must be between 0 and 1")
        }
        guard settings.settleDelay >= .zero else {
            throw .invalidArgument(name: "settle delay", value: "\(settings.settleDelay)", reason: "must be 0 or more")
        }
        guard settings.precacheDistance >= 0 else {
            throw .invalidArgument(name: "precache distance", value: "\(settings.precacheDistance)", reason: "must be 0 or more")
        }
        self.settings = settings
        self.budget = budget
        self.cache = cache
        self.clock = clock
    }

    deinit {
        // Loads the coordinator started are its own: they end with it.
        let tasks = state.withLock { state in
            state.items.values.compactMap(\.loadTask) + state.items.values.compactMap(\.precacheTask) + [state.settleTask].compactMap { $0 }
        }
        for task in tasks { task.cancel() }
    }

    /// The item playing now.
    public var playingItem: String? { state.withLock { $0.playing } }

    /// Adds an item below the ones added before.
    /// - Throws: ``/PlayerKitCore/PlayerError/invalidArgument(name:value:reason:)`` for an ID already used.
    public func add(_ id: String, player: any MediaPlayer, source: MediaSource) throws(PlayerError) {
        try change { state throws(PlayerError) in
            guard state.items[id] == nil else {
                throw .invalidArgument(name: "feed item", value: id, reason: "is already in the feed")
            }
            state.items[id] = Item(id: id, player: player, source: source, order: state.nextOrder)
            state.nextOrder += 1
        }
    }

    /// Reports how much of an item is visible (0: off screen, 1: entirely visible). Starts (or
    /// restarts) the settle delay.
    /// - Throws: ``/PlayerKitCore/PlayerError/invalidArgument(name:value:reason:)`` for an unknown item or a
    ///   fraction that is NaN or outside 0...1.
    public func reportVisibility(_ fraction: Double, of id: String) throws(PlayerError) {
        guard fraction.isFinite, (0...1).contains(fraction) else {
            throw .invalidArgument(name: "visible fraction", value: "\(fraction)", reason: "must be between 0 and 1")
        }
        let now = clock.now
        let generation = try change { state throws(PlayerError) -> Int in
            guard state.items[id] != nil else {
                throw .invalidArgument(name: "feed item", value: id, reason: "is not in the feed")
            }
            state.items[id]?.visibility = fraction
            state.lastReport = now
            state.generation += 1
            return state.generation
        }
        scheduleDecision(generation)
    }

    /// Reports that the feed is scrolling (without new fractions): postpones the decision.
    public func reportScrolling() {
        let now = clock.now
        let generation = change { state -> Int in
            state.lastReport = now
            state.generation += 1
            return state.generation
        }
        scheduleDecision(generation)
    }

    // MARK: Deciding

    /// The item that should play among `items` (ID, order, visible fraction): the largest
    /// fraction at or above `threshold`, the upper (smaller order) on a tie; nil if none.
    static func choose(_ items: [(id: String, order: Int, visibility: Double)], threshold: Double) -> String? {
        items.filter { $0.visibility >= threshold }
            .min { ($0.visibility, -$0.order) > ($1.visibility, -$1.order) }?.id
    }

    /// Replaces the settle task: the new one waits for the one before to end (so decisions never
    /// overlap), sleeps the settle delay on the clock, and decides unless a later report came.
    private func scheduleDecision(_ generation: Int) {
        let clock = clock
        let delay = settings.settleDelay
        state.withLock { state in
            let previous = state.settleTask
            previous?.cancel()
            // Under the pool check: the decision and the loads it starts (tasks that inherit it)
            // never block a pool thread.
            state.settleTask = Task { [weak self] in
                await previous?.value
                    do {
                        try await clock.sleep(until: clock.now.advanced(by: delay), tolerance: nil)
                    } catch {
                        return
                    }
                    self?.decide(ifStill: generation)
            }
        }
    }

    /// One step of the coordinator's state, under its lock.
    private func change<Result, Failure: Error>(_ body: (inout State) throws(Failure) -> Result) throws(Failure) -> Result {
        try state.withLock(body)
    }

    private func decide(ifStill generation: Int) {
        let snapshot = state.withLock { state -> (items: [Item], playing: String?)? in
            guard state.generation == generation else { return nil }  // more reports came: not settled
            return (Array(state.items.values).sorted { $0.order < $1.order }, state.playing)
        }
        guard let snapshot else { return }
        let winner = Self.choose(snapshot.items.map { ($0.id, $0.order, $0.visibility) }, threshold: settings.threshold)
        // Items off screen: release (cancels a load in progress).
        for item in snapshot.items where item.visibility == 0 && (item.loaded || item.loadTask != nil) {
            release(item)
            report(item.id, .release, "left the screen (visible 0)")
        }
        // The one that played before pauses, unless it wins again.
        if let previous = snapshot.playing, previous != winner,
           let item = snapshot.items.first(where: { $0.id == previous }), item.visibility > 0 {
            try? item.player.send(.pause)
            report(previous, .pause, winner.map { "\($0) is more visible" } ?? "below the threshold (\(Self.format(item.visibility)) < \(Self.format(settings.threshold)))")
        }
        state.withLock { state in
            if let previous = state.playing, previous != winner { state.playing = nil }
        }
        if let winner, winner != snapshot.playing, let item = snapshot.items.first(where: { $0.id == winner }) {
            let ties = snapshot.items.filter { $0.visibility == item.visibility && $0.id != winner }
            let reason = "most visible (\(Self.format(item.visibility)) >= \(Self.format(settings.threshold))) after scrolling settled"
                + (ties.isEmpty ? "" : "; tie with \(ties.map(\.id).joined(separator: ", ")) goes to the upper item")
            start(item)
            report(winner, .play, reason)
        }
        if cache != nil { precacheNearViewport(snapshot.items) }
        // Visible items that do not play get a poster frame.
        if settings.preparesPosters {
            for item in snapshot.items where item.id != winner && item.visibility > 0 && !item.loaded && item.loadTask == nil {
                prepare(item)
                report(item.id, .prepare, "visible (\(Self.format(item.visibility))), not playing: first frame as a poster")
            }
        }
    }

    /// Precaches items near a visible one; cancels the precaches of items that moved away (on the queue).
    private func precacheNearViewport(_ items: [Item]) {
        guard let cache else { return }
        let visible = items.filter { $0.visibility > 0 }.map(\.order)
        let current = state.withLock { $0.items }
        for item in items {
            guard let live = current[item.id] else { continue }
            let distance = visible.map { abs($0 - item.order) }.min()
            let near = distance.map { $0 <= settings.precacheDistance } ?? false
            if near, live.precacheTask == nil, !live.precached, !live.loaded, live.loadTask == nil, cache.canPrecache(item.source) {
                let source = item.source, amount = settings.precacheAmount, id = item.id
                let task = Task { [weak self] in
                    let finished = (try? await cache.precache(source, amount)) != nil
                    self?.state.withLock { state in
                        state.items[id]?.precacheTask = nil
                        if finished { state.items[id]?.precached = true }
                    }
                }
                state.withLock { $0.items[item.id]?.precacheTask = task }
                let where_ = distance == 0 ? "visible" : "\(distance!) item\(distance == 1 ? "" : "s") from the viewport"
                report(item.id, .precache, "\(where_): precaching \(Self.describe(amount))")
            } else if !near, let task = live.precacheTask {
                task.cancel()
                state.withLock { $0.items[item.id]?.precacheTask = nil }
                report(item.id, .cancelPrecache, "moved more than \(settings.precacheDistance) items from the viewport")
            }
        }
    }

    private static func describe(_ amount: PrecacheAmount) -> String {
        switch amount {
        case .bytes(let count): return "\(count) bytes"
        case .seconds(let seconds): return "\(format(seconds)) s"
        case .all: return "everything"
        @unknown default: return "\(amount)"
        }
    }

    /// Plays `item` (on the queue): at once when it is loaded; when its load is under way, its
    /// completion plays it; otherwise it is loaded first.
    private func start(_ item: Item) {
        let (loaded, loading) = state.withLock { state -> (Bool, Bool) in
            state.playing = item.id
            return (state.items[item.id]?.loaded ?? false, state.items[item.id]?.loadTask != nil)
        }
        if loaded {
            play(item.player)
        } else if !loading {
            load(item)
        }
    }

    private func prepare(_ item: Item) {
        load(item)
    }

    /// Unmuted or muted as the settings say, then playing; sent without waiting for mpv.
    private func play(_ player: any MediaPlayer) {
        try? player.send(.setMuted(settings.startsMuted))
        try? player.send(.play)
    }

    /// Prepares the item paused on its first frame. One load per item at a time; when it is
    /// done (on the queue), the item plays if the decision meanwhile made it the playing one.
    private func load(_ item: Item) {
        let budget = budget
        let generation = state.withLock { state -> Int in
            state.items[item.id]?.loadGeneration += 1
            return state.items[item.id]?.loadGeneration ?? 0
        }
        let task = Task { [weak self] in
            do throws(AutoplayLoadError) {
                if let budget {
                    do throws(DecoderBudgetError) {
                        try await budget.preload(item.source, into: item.player, whenFull: .fail)
                    } catch {
                        throw .budget(error)
                    }
                } else {
                    do throws(PlayerError) {
                        try await item.player.preload(item.source)
                    } catch {
                        throw .player(error)
                    }
                }
                self?.loadEnded(item, generation: generation, loaded: true)
            } catch {
                self?.loadEnded(item, generation: generation, loaded: false)
            }
        }
        state.withLock { $0.items[item.id]?.loadTask = task }
    }

    /// Hands a load's end to the queue.
    private func loadEnded(_ item: Item, generation: Int, loaded: Bool) {
        finishedLoading(item, generation: generation, loaded: loaded)
    }

    /// A load ended (on the queue). Ignored when the item was released or loaded again since.
    private func finishedLoading(_ item: Item, generation: Int, loaded: Bool) {
        let plays = state.withLock { state -> Bool in
            guard state.items[item.id]?.loadGeneration == generation else { return false }
            state.items[item.id]?.loadTask = nil
            state.items[item.id]?.loaded = loaded
            // An item that could not load (its player shut down during the settle delay, its
            // source failed) is not playing: the next decision may choose again.
            if !loaded, state.playing == item.id { state.playing = nil }
            return loaded && state.playing == item.id
        }
        if plays { play(item.player) }
    }

    private func release(_ item: Item) {
        let task = state.withLock { state -> Task<Void, Never>? in
            defer {
                state.items[item.id]?.loadTask = nil
                state.items[item.id]?.loaded = false
                state.items[item.id]?.loadGeneration += 1
                if state.playing == item.id { state.playing = nil }
            }
            return state.items[item.id]?.loadTask
        }
        task?.cancel()
        if let budget, budget.snapshot.holders.contains(item.player.id) {
            try? budget.release(item.player)
        } else {
            item.player.releaseMedia()  // also cancels a load in progress
        }
    }

    private func report(_ id: String, _ action: Decision.Action, _ reason: String) {
        let decision = Decision(item: id, action: action, reason: reason, time: Date())
        // Published once, on the item's player: every channel of that player hears it.
        state.withLock { $0.items[id]?.player }?.publish(AutoplayEvent.decision(decision))
    }

    private static func format(_ value: Double) -> String { String(format: "%.2f", value) }
}

/// Why a feed item's preparation failed (kept to the coordinator: it only needs to know it did).
private enum AutoplayLoadError: Error {
    case budget(DecoderBudgetError)
    case player(PlayerError)
}
