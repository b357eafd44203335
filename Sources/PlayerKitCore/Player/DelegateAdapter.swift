import Dispatch
import PlayerKitSupport

/// A player's delegate, as what every other listener is: a subscription to the player's ID on
/// its bus (the one primitive), delivered on the player's delegate queue. The adapter's whole job
/// is to call the delegate's two methods for each record (``PlayerDelegate/player(_:didEmit:)``
/// and the typed method of a ``PlayerDelegateEvent``) with the player, and to end at the player's
/// ``PlayerEvent/shutDown``, so a later player with the same ID is not heard.
final class DelegateAdapter: Sendable {
    private struct State {
        var delegate = WeakReference<any PlayerDelegate>(nil)
        var subscription: PlayerSubscription?
        /// The player's last event was heard: nothing more is delivered.
        var ended = false
    }

    private let bus: PlayerEventBus
    private let id: PlayerID
    private let queue: DispatchQueue
    private let state = Locked(State())
    private let playerBox = Locked(WeakReference<Player>(nil))

    init(bus: PlayerEventBus, id: PlayerID, queue: DispatchQueue) {
        self.bus = bus
        self.id = id
        self.queue = queue
    }

    /// The player passed to the delegate's methods (held weakly: a dropped player gets no calls).
    func attach(_ player: Player) {
        playerBox.withLock { $0.object = player }
    }

    /// The delegate (held weakly). Setting one subscribes it from now on; the one before stops
    /// hearing events (its subscription is cancelled with no lock held).
    var delegate: (any PlayerDelegate)? {
        get { state.withLock { $0.delegate.object } }
        set {
            let subscription = newValue.map { _ in subscribe() }
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

    private func subscribe() -> PlayerSubscription {
        bus.subscribe(to: id, delivery: .queue(queue)) { [weak self] record in
            self?.deliver(record)
        }
    }

    /// On the delegate queue, one record at a time, in the player's order (the bus's handler,
    /// with no PlayerKit lock held).
    private func deliver(_ record: PlayerEventRecord) {
        guard let delegate = state.withLock({ $0.ended ? nil : $0.delegate.object }),
              let player = playerBox.withLock({ $0.object }) else { return }
        delegate.player(player, didEmit: record)
        record.event.dispatch(to: delegate, from: player)
        if record.event == .shutDown { detach() }
    }
}
