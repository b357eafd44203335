import PlayerKitSupport

/// A subscription to a ``PlayerEventBus``. Keep the token: the subscription ends when it is
/// cancelled or deallocated.
public final class PlayerSubscription: Sendable {
    /// Held weakly: a bus keeps its NotificationCenter bridge's subscription, and a subscription
    /// must not keep its bus alive in turn (a dropped custom bus would never be freed).
    private weak let bus: PlayerEventBus?
    private let subscriber: HandlerSubscriber
    private let ended = Locked(false)

    init(bus: PlayerEventBus, subscriber: HandlerSubscriber) {
        self.bus = bus
        self.subscriber = subscriber
    }

    deinit {
        cancel()
    }

    /// Ends the subscription. Once `cancel()` has returned, the handler is not called again.
    /// If the handler is running on another thread, `cancel()` waits for it to return; a
    /// handler may cancel its own subscription. Safe to call more than once, from any thread.
    public func cancel() {
        subscriber.cancel()
        let first = ended.withLock { ended -> Bool in
            defer { ended = true }
            return !ended
        }
        if first { bus?.remove(subscriber) }
    }

    /// Whether ``cancel()`` was called.
    public var isCancelled: Bool { ended.withLock { $0 } }
}
