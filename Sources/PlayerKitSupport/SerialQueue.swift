import Dispatch

/// A serial dispatch queue that knows when it is the current one: what every PlayerKit feature
/// type runs on (its public calls, its event handlers and its timers), so that they never run
/// at the same time and never on a player's event pump.
///
/// ``sync(_:)`` from code already running on the queue (a handler, a timer, or a queue that
/// targets this one, such as a bus subscription delivering here) runs the body inline instead of
/// deadlocking.
///
/// ```swift
/// let queue = SerialQueue(label: "my-feature")
/// let subscription = bus.subscribe(to: "main", delivery: .queue(queue.dispatchQueue)) { record in
///     // runs on `queue`
/// }
/// let value = queue.sync { state }   // from any other thread
/// ```
///
/// **Threading.** Safe from any thread. Blocks in ``sync(_:)`` run one at a time, in order of
/// arrival, together with the blocks of ``async(_:)`` and ``async(after:_:)``.
public final class SerialQueue: Sendable {
    /// The queue's label, for debuggers and logs.
    public let label: String
    /// The underlying queue: give it to APIs that take a `DispatchQueue` (for example a bus
    /// subscription's ``dispatchQueue`` delivery), so their work runs on this queue too.
    public let dispatchQueue: DispatchQueue
    private let marker: QueueMarker

    /// A new serial queue.
    public init(label: String, qos: DispatchQoS = .default) {
        self.label = label
        dispatchQueue = DispatchQueue(label: label, qos: qos)
        marker = QueueMarker()
        dispatchQueue.setSpecific(key: marker.key, value: marker.token)
    }

    /// Whether the calling code runs on this queue (directly or on a queue that targets it).
    public var isCurrent: Bool { DispatchQueue.getSpecific(key: marker.key) == marker.token }

    /// Runs `body` on the queue and returns its result: inline when already on the queue,
    /// otherwise after the blocks queued before it.
    public func sync<Result, Failure: Error>(_ body: () throws(Failure) -> Result) throws(Failure) -> Result {
        if isCurrent { return try body() }
        let outcome: Swift.Result<Result, Failure> = dispatchQueue.sync {
            do throws(Failure) { return .success(try body()) } catch { return .failure(error) }
        }
        return try outcome.get()
    }

    /// Queues `body` and returns at once.
    public func async(_ body: @escaping @Sendable () -> Void) {
        dispatchQueue.async(execute: body)
    }

    /// Queues `body` to run after `delay`, measured on the monotonic clock (`DispatchTime`).
    public func async(after delay: Duration, _ body: @escaping @Sendable () -> Void) {
        dispatchQueue.asyncAfter(deadline: .now() + delay.dispatchInterval, execute: body)
    }
}

/// The queue-specific key and value that mark a ``SerialQueue``.
private final class QueueMarker: Sendable {
    let key = DispatchSpecificKey<ObjectIdentifier>()
    var token: ObjectIdentifier { ObjectIdentifier(self) }
}
