import Dispatch
import PlayerKitSupport

extension PlayerEventBus {
    /// Subscribes a delegate to a player's events: the adapter every delegate is, over the one
    /// primitive (a subscription to the player's ID on this bus).
    ///
    /// For each of the player's events, in the player's order, one at a time, on a serial queue
    /// that targets `queue`, the delegate's ``PlayerDelegate/player(_:didEmit:)`` is called, then
    /// for a state change ``PlayerDelegate/player(_:didChangeStateFrom:to:)``. The subscription
    /// ends by itself after the player's ``PlayerEvent/shutDown``, so a later player with the
    /// same ID is not heard. ``Player/delegate`` is built on this; it gives any `MediaPlayer` a
    /// delegate too, a test's fake or an app's own conformer (keep the subscription).
    ///
    /// - Parameters:
    ///   - delegate: held weakly: once it is gone, calls stop.
    ///   - player: held weakly, and passed to every call. Its ``MediaPlayer/eventBus`` should be
    ///     this bus.
    ///   - queue: the queue the calls run on (as the target of the subscription's own serial
    ///     queue); `nil`: a global queue.
    /// - Returns: the subscription; ``PlayerSubscription/cancel()`` stops the calls.
    public func subscribe(
        _ delegate: any PlayerDelegate, to player: any MediaPlayer, queue: DispatchQueue? = nil
    ) -> PlayerSubscription {
        let delegateBox = WeakReference<any PlayerDelegate>(delegate)
        let playerBox = WeakReference<any MediaPlayer>(player)
        // The subscription, held weakly by its own handler, which cancels it after `shutDown`.
        let own = Locked(WeakReference<PlayerSubscription>(nil))
        // Set after `shutDown`: a later player with the same ID is never heard.
        let ended = Locked(false)
        let subscription = subscribe(to: player.id, delivery: .queue(queue)) { record in
            guard !ended.withLock({ $0 }), let delegate = delegateBox.object, let player = playerBox.object else { return }
            delegate.player(player, didEmit: record)
            record.event.dispatch(to: delegate, from: player)
            if record.event == .shutDown {
                ended.withLock { $0 = true }
                own.withLock { $0.object }?.cancel()
            }
        }
        own.withLock { $0.object = subscription }
        return subscription
    }
}

/// ``Player/delegate``: the player's delegate subscription (``PlayerEventBus/subscribe(_:to:queue:)``),
/// replaced when the app sets another, cancelled when the player goes away.
final class DelegateAdapter: Sendable {
    private struct State {
        var delegate = WeakReference<any PlayerDelegate>(nil)
        var subscription: PlayerSubscription?
        /// The player went away: nothing more is delivered.
        var ended = false
    }

    private let queue: DispatchQueue
    private let state = Locked(State())
    private let playerBox = Locked(WeakReference<Player>(nil))

    init(queue: DispatchQueue) {
        self.queue = queue
    }

    /// The player whose events the delegate hears (held weakly: a dropped player gets no calls).
    func attach(_ player: Player) {
        playerBox.withLock { $0.object = player }
    }

    /// The delegate (held weakly). Setting one subscribes it from now on; the one before stops
    /// hearing events (its subscription is cancelled with no lock held).
    var delegate: (any PlayerDelegate)? {
        get { state.withLock { $0.delegate.object } }
        set {
            let player = playerBox.withLock { $0.object }
            let subscription = newValue.flatMap { delegate in player.map { $0.eventBus.subscribe(delegate, to: $0, queue: queue) } }
            let (old, unused) = state.withLock { state -> (PlayerSubscription?, PlayerSubscription?) in
                guard !state.ended else { return (nil, subscription) }
                defer {
                    state.delegate = WeakReference(newValue)
                    state.subscription = subscription
                }
                return (state.subscription, nil)
            }
            old?.cancel()
            unused?.cancel()
        }
    }

    /// Ends the adapter (the player went away): no more calls.
    func detach() {
        let subscription = state.withLock { state -> PlayerSubscription? in
            state.ended = true
            defer { state.subscription = nil }
            return state.subscription
        }
        subscription?.cancel()
    }
}
