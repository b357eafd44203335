import Dispatch
import Foundation
#if canImport(Glibc)
import Glibc
#endif
import PlayerKitSupport
import Synchronization

/// Fans every player's events out to subscribers, keyed by player ID.
///
/// Each ``Player`` publishes to one bus: ``shared`` unless its
/// ``PlayerConfiguration/eventBus`` names another (an app or a test can make its own).
/// Subscribers choose which players they hear (``PlayerSelection``: one ID, several, or all),
/// optionally which kinds of event, and how they receive them:
///
/// * ``subscribe(to:kinds:delivery:handler:)-(PlayerSelection,_,_,_)``: a handler called on a
///   dispatch queue, or immediately;
/// * ``events(for:kinds:bufferLimit:)-(PlayerSelection,_,_)``: an `AsyncSequence` (``EventStream``);
/// * ``startPostingNotifications(to:)``: Foundation `Notification`s (off by default).
///
/// **Order.** For one player, the delegate and every subscriber receive the same events in
/// the same order (by ``PlayerEventRecord/sequenceNumber``). Events of different players are
/// not ordered with respect to each other.
///
/// **Isolation.** Publishing only enqueues: a slow handler delays its own subscription, never
/// the event pump, other subscribers or other players. Queue subscribers queue without limit;
/// stream subscribers have a bounded buffer that drops the oldest events and says how many.
/// The one exception is opt-in: ``SubscriptionDelivery/immediate`` handlers run on the
/// delivering thread itself, for the lowest latency, and must return quickly.
///
/// **IDs before players.** A subscription names IDs, not player objects: it may exist before
/// any player has the ID, and it keeps hearing the ID when the app replaces the player with a
/// new one with the same ID.
public final class PlayerEventBus: Sendable {
    /// The bus players publish to unless configured otherwise.
    public static let shared = PlayerEventBus(label: "shared")

    /// A name for logs and queue labels.
    let label: String

    private struct Registry: Sendable {
        var byID: [PlayerID: [any BusSubscriber]] = [:]
        var everyone: [any BusSubscriber] = []
        var notificationBridge: PlayerSubscription?
    }

    private let registry = Locked(Registry())

    /// Creates a bus of its own, e.g. one per window or one per test.
    public init(label: String = "custom") {
        self.label = label
    }

    // MARK: Subscribing

    /// Calls `handler` for each event of the selected players.
    ///
    /// - Parameters:
    ///   - selection: which players: `.players(["left", "right"])`, or `.all` (the default). For
    ///     one ID, the overload taking a ``PlayerID``: `bus.subscribe(to: "main") { ... }`.
    ///   - kinds: only these kinds of event; nil (the default) for every kind.
    ///   - delivery: where `handler` runs: on a serial queue (the default, see
    ///     ``SubscriptionDelivery/queue(_:)``) or ``SubscriptionDelivery/immediate``.
    ///   - handler: called once per event, in each player's order, with no PlayerKit lock
    ///     held. With queue delivery calls never overlap; with immediate delivery calls for one
    ///     player never overlap, but calls for different players may run at the same time, each
    ///     on its player's delivering thread.
    /// - Returns: the subscription. It lasts until ``PlayerSubscription/cancel()`` or until the
    ///   token is deallocated: keep it.
    public func subscribe(
        to selection: PlayerSelection = .all,
        kinds: Set<PlayerEventKind>? = nil,
        delivery: SubscriptionDelivery = .queue(nil),
        handler: @escaping @Sendable (PlayerEventRecord) -> Void
    ) -> PlayerSubscription {
        let queue: DispatchQueue?
        switch delivery {
        case .queue(let target): queue = DispatchQueue(label: "PlayerKit.subscription.\(label)", target: target)
        case .immediate: queue = nil
        }
        let subscriber = HandlerSubscriber(selection: selection, kinds: kinds, queue: queue, handler: handler)
        add(subscriber)
        return PlayerSubscription(bus: self, subscriber: subscriber)
    }

    /// Same as ``subscribe(to:kinds:delivery:handler:)-(PlayerSelection,_,_,_)`` for one player ID:
    /// `bus.subscribe(to: "main") { record in ... }`.
    public func subscribe(
        to id: PlayerID,
        kinds: Set<PlayerEventKind>? = nil,
        delivery: SubscriptionDelivery = .queue(nil),
        handler: @escaping @Sendable (PlayerEventRecord) -> Void
    ) -> PlayerSubscription {
        subscribe(to: .player(id), kinds: kinds, delivery: delivery, handler: handler)
    }

    /// The events of the selected players as an `AsyncSequence`:
    /// `for await record in bus.events(for: "main") { ... }`.
    ///
    /// The subscription starts at once (events published before iteration begins are
    /// buffered) and ends when the sequence and its iterator are released, when the iterating
    /// task is cancelled, or on ``EventStream/cancel()``.
    ///
    /// - Parameters:
    ///   - selection: which players; `.all` by default.
    ///   - kinds: only these kinds; nil for all.
    ///   - bufferLimit: how many events wait for the consumer at most (at least 1). When the
    ///     buffer is full the *oldest* waiting event is dropped, so a slow consumer catches
    ///     up with recent events; each record says in ``PlayerEventRecord/droppedBefore`` how
    ///     many were dropped just before it.
    public func events(
        for selection: PlayerSelection = .all,
        kinds: Set<PlayerEventKind>? = nil,
        bufferLimit: Int = EventStream<PlayerEventRecord>.defaultBufferLimit
    ) -> EventStream<PlayerEventRecord> {
        let subscriber = StreamSubscriber(selection: selection, kinds: kinds, limit: bufferLimit, bus: self)
        add(subscriber)
        return EventStream(channel: subscriber.channel)
    }

    /// One player's own events, ending after its ``PlayerEvent/shutDown`` (what
    /// ``MediaPlayer/events(kinds:bufferLimit:)`` gives).
    func playerEvents(for id: PlayerID, kinds: Set<PlayerEventKind>?, bufferLimit: Int) -> EventStream<PlayerEventRecord> {
        let subscriber = StreamSubscriber(selection: .player(id), kinds: kinds, limit: bufferLimit, bus: self, endsAtShutDown: true)
        add(subscriber)
        return EventStream(channel: subscriber.channel)
    }

    /// Same as ``events(for:kinds:bufferLimit:)`` for one player ID.
    public func events(
        for id: PlayerID, kinds: Set<PlayerEventKind>? = nil, bufferLimit: Int = EventStream<PlayerEventRecord>.defaultBufferLimit
    ) -> EventStream<PlayerEventRecord> {
        events(for: .player(id), kinds: kinds, bufferLimit: bufferLimit)
    }

    // MARK: NotificationCenter bridge

    /// Starts posting every event of every player on this bus to `center`, a feature's too,
    /// under the name of its kind (``PlayerNotification/name(for:)``), with the record under
    /// ``PlayerNotification/recordKey``.
    ///
    /// Off by default: `NotificationCenter` calls observers synchronously on the posting thread
    /// and a process that does not observe should not pay for it. Notifications are posted on
    /// a serial queue of the bridge's own, in each player's order. Calling this again replaces
    /// the previous bridge.
    public func startPostingNotifications(to center: NotificationCenter = .default) {
        let bridge = subscribe(to: PlayerSelection.all) { record in
            PlayerNotification.post(record, to: center)
        }
        let previous = registry.withLock { registry -> PlayerSubscription? in
            defer { registry.notificationBridge = bridge }
            return registry.notificationBridge
        }
        previous?.cancel()
    }

    /// Stops posting notifications. Once this returns, none is posted.
    public func stopPostingNotifications() {
        let bridge = registry.withLock { registry -> PlayerSubscription? in
            defer { registry.notificationBridge = nil }
            return registry.notificationBridge
        }
        bridge?.cancel()
    }

    /// Whether ``startPostingNotifications(to:)`` is in effect.
    var isPostingNotifications: Bool { registry.withLock { $0.notificationBridge != nil } }

    /// The NotificationCenter bridge's subscription while it is in effect (for tests, which
    /// wait on its queue before they check that nothing was posted).
    var notificationBridge: PlayerSubscription? { registry.withLock { $0.notificationBridge } }

    // MARK: Publishing

    /// Hands one player's batch of events to every subscriber that selected the player.
    /// All records belong to the same player and are in sequence order. The engine calls this
    /// from one thread at a time per player, in order, with no lock held; it enqueues for
    /// queue and stream subscribers and calls immediate subscribers directly.
    func publish(_ records: [PlayerEventRecord], phase: DeliveryPhase = .all) {
        guard let id = records.first?.playerID else { return }
        let targets = registry.withLock { registry -> [any BusSubscriber] in
            guard let selected = registry.byID[id] else { return registry.everyone }
            return registry.everyone.isEmpty ? selected : selected + registry.everyone
        }
        for target in targets where phase.reaches(target) { target.receive(records) }
    }

    /// How many subscriptions are active (for diagnostics and tests).
    var subscriptionCount: Int {
        registry.withLock { registry in
            registry.everyone.count + Set(registry.byID.values.flatMap { $0.map { ObjectIdentifier($0) } }).count
        }
    }

    private func add(_ subscriber: any BusSubscriber) {
        registry.withLock { registry in
            switch subscriber.selection {
            case .all:
                registry.everyone.append(subscriber)
            case .players(let ids):
                for id in ids { registry.byID[id, default: []].append(subscriber) }
            }
        }
    }

    func remove(_ subscriber: any BusSubscriber) {
        registry.withLock { registry in
            switch subscriber.selection {
            case .all:
                registry.everyone.removeAll { $0 === subscriber }
            case .players(let ids):
                for id in ids {
                    registry.byID[id]?.removeAll { $0 === subscriber }
                    if registry.byID[id]?.isEmpty == true { registry.byID[id] = nil }
                }
            }
        }
    }
}

/// Something the bus delivers to. `receive` is called in each player's order, by one thread
/// at a time per player, with no PlayerKit lock held.
protocol BusSubscriber: AnyObject, Sendable {
    var selection: PlayerSelection { get }
    /// Whether `receive` runs the app's code on the calling thread (immediate delivery); a
    /// queued subscriber or a stream only hands the records on.
    var runsAppCode: Bool { get }
    func receive(_ records: [PlayerEventRecord])
}

/// Which subscribers a ``PlayerEventBus/publish(_:phase:)`` reaches. A player delivers the
/// read-outs of a command it sends in two phases around handing the command to mpv: first to
/// the subscribers that only hand records on (queued handlers, streams), so their threads are
/// woken before mpv's; then, once the command is mpv's, to the immediate handlers, which run on
/// the sending thread and may send commands of their own.
enum DeliveryPhase: Sendable {
    case all
    case handingOn
    case runningAppCode

    func reaches(_ subscriber: any BusSubscriber) -> Bool {
        switch self {
        case .all: true
        case .handingOn: !subscriber.runsAppCode
        case .runningAppCode: subscriber.runsAppCode
        }
    }
}

/// A handler called on a serial queue, or directly (immediate delivery) when `queue` is nil.
///
/// Queue delivery coalesces: records wait in a mailbox, and at most one block is scheduled on
/// the queue at a time; it takes everything waiting, batch after batch. A subscriber that keeps
/// up costs one dispatch per published batch; one that falls behind costs one per catch-up.
final class HandlerSubscriber: BusSubscriber {
    private struct Mailbox {
        var records: [PlayerEventRecord] = []
        var scheduled = false
    }

    let selection: PlayerSelection
    private let kinds: Set<PlayerEventKind>?
    private let queue: DispatchQueue?
    private let mailbox = Locked(Mailbox())
    /// Guards `handler`, `running` and `waiters`. Never held while the handler runs.
    private let control = MonotonicCondition()
    /// The app's handler; nil once cancelled. Dropped on `cancel()`, so a handler that holds
    /// its own subscription (to cancel it, say) does not keep a reference cycle alive:
    /// subscription -> subscriber -> handler -> subscription. Under `control`.
    nonisolated(unsafe) private var handler: (@Sendable (PlayerEventRecord) -> Void)?
    /// The threads calling the handler now: one at most with queue delivery; with immediate
    /// delivery, one per player whose events are being delivered. Under `control`.
    nonisolated(unsafe) private var running: [pthread_t] = []
    /// How many `cancel()` calls wait for `running` to clear. Under `control`.
    nonisolated(unsafe) private var waiters = 0
    /// Set once with `handler = nil`, under `control`; atomic so the hot path reads it without
    /// a lock.
    private let cancelled = Atomic<Bool>(false)

    var runsAppCode: Bool { queue == nil }

    init(selection: PlayerSelection, kinds: Set<PlayerEventKind>?, queue: DispatchQueue?,
         handler: @escaping @Sendable (PlayerEventRecord) -> Void) {
        self.selection = selection
        self.kinds = kinds
        self.queue = queue
        self.handler = handler
    }

    func receive(_ records: [PlayerEventRecord]) {
        let wanted = kinds.map { kinds in records.filter { kinds.contains($0.event.kind) } } ?? records
        guard !wanted.isEmpty, !cancelled.load(ordering: .acquiring) else { return }
        guard let queue else {
            call(wanted)
            return
        }
        let schedule = mailbox.withLock { mailbox -> Bool in
            mailbox.records.append(contentsOf: wanted)
            defer { mailbox.scheduled = true }
            return !mailbox.scheduled
        }
        if schedule { queue.async { [self] in drainMailbox() } }
    }

    /// Returns once what was handed to this subscriber so far has been delivered (or dropped by
    /// a cancel): the queue's work is done. At once for immediate delivery. For tests that
    /// check nothing was delivered; never called on the subscription's own queue.
    func waitUntilDelivered() {
        queue?.sync {}
    }

    /// Runs on the subscription's queue: delivers what waits, until the mailbox stays empty.
    private func drainMailbox() {
        while true {
            let batch = mailbox.withLock { mailbox -> [PlayerEventRecord] in
                guard !mailbox.records.isEmpty else {
                    mailbox.scheduled = false
                    return []
                }
                defer { mailbox.records.removeAll(keepingCapacity: true) }
                return mailbox.records
            }
            if batch.isEmpty { return }
            call(batch)
        }
    }

    /// Calls the handler once per record, with no lock held. Each call is admitted under
    /// `control` (not once cancelled) and marks this thread as the running one, so an ordinary
    /// `cancel()` on another thread can wait for it to return.
    private func call(_ records: [PlayerEventRecord]) {
        for record in records {
            let admitted = AppCodeMark.calling { () -> Bool in
                // The handler is copied out under the lock and released inside the mark: what
                // it captured may run a deinit that cancels another subscription.
                guard let handler = admit() else { return false }
                handler(record)
                return true
            }
            leave()
            if !admitted { return }
        }
    }

    private func admit() -> (@Sendable (PlayerEventRecord) -> Void)? {
        control.withLock {
            guard let handler else { return nil }
            running.append(pthread_self())
            return handler
        }
    }

    private func leave() {
        control.withLock {
            let current = pthread_self()
            if let index = running.firstIndex(where: { pthread_equal($0, current) != 0 }) {
                running.remove(at: index)
            }
            if waiters > 0 { control.broadcast() }
        }
    }

    /// Stops delivery: no handler call starts after this returns. Called by an app's ordinary
    /// code, it also waits for a call in progress on another thread to return. Called from
    /// inside an app's code that PlayerKit runs (any subscription's handler, a delegate, a
    /// deinit that a handler's release triggered), it never waits: a call in progress on
    /// another thread may still be running when it returns, and none starts after it.
    func cancel() {
        let mayWait = !AppCodeMark.isRunningAppCode
        let self_ = pthread_self()
        // Released outside the lock: what the handler captured may run a deinit that cancels
        // another subscription.
        let released: (@Sendable (PlayerEventRecord) -> Void)? = control.withLock {
            cancelled.store(true, ordering: .releasing)
            defer { handler = nil }
            guard mayWait else { return handler }
            waiters += 1
            // The app's own handler: no bound of PlayerKit's (the handler must return quickly).
            while running.contains(where: { pthread_equal($0, self_) == 0 }) {
                control.wait(timeout: .seconds(1))
            }
            waiters -= 1
            return handler
        }
        _ = released
        mailbox.withLock { $0.records.removeAll() }
    }
}

/// Where a subscription's handler runs.
///
/// `@nonexhaustive`: a `switch` over it outside PlayerKit needs `@unknown default`.
@nonexhaustive
public enum SubscriptionDelivery: Sendable {
    /// On a serial queue of the subscription's own that targets the given queue (or a new
    /// serial queue when nil). Calls never overlap and keep each player's order; a slow handler
    /// only delays its own subscription. The default.
    case queue(DispatchQueue?)
    /// Directly on the thread that delivers the player's events (usually the player's event
    /// pump; sometimes a thread that called into the player), right after they are produced,
    /// with no PlayerKit lock held. One hop less than a queue: the lowest latency. A
    /// subscription to several players may be called for two of them at the same time, each on
    /// its own thread (one call at a time per player, in order). The handler
    /// must return quickly and never block: while it runs, that player's later events wait
    /// for every channel. It may read the player's read-outs and call ``Player/send(_:)`` (the
    /// handler is synchronous: the awaited commands are for async code).
    case immediate
}
