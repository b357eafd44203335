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

    /// Returns once what the bus handed this subscription so far has been delivered (see
    /// ``HandlerSubscriber/waitUntilDelivered()``): for tests.
    func waitUntilDelivered() {
        subscriber.waitUntilDelivered()
    }

    /// Whether `cancel()` was called (or the subscription released): its handler is called no
    /// more. Safe from any thread, the handler included. For tests.
    var isCancelled: Bool { ended.withLock { $0 } }

    /// Ends the subscription. Once `cancel()` has returned, no call of the handler starts.
    ///
    /// Called from an app's ordinary code, `cancel()` also waits for a call of the handler in
    /// progress on another thread to return, so once it returns the handler is not running.
    /// Called from inside code that PlayerKit runs for the app (any subscription's handler, a
    /// delegate method, or a `deinit` that releasing something there triggered), it never
    /// waits: a call in progress on another thread may still finish after it returns. So
    /// handlers may cancel their own subscription and each other's, on any delivery, without
    /// deadlock. No PlayerKit lock is held while a handler runs.
    ///
    /// Safe to call more than once, from any thread.
    public func cancel() {
        subscriber.cancel()
        let first = ended.withLock { ended -> Bool in
            defer { ended = true }
            return !ended
        }
        if first { bus?.remove(subscriber) }
    }
}
