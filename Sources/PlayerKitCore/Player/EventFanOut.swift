import Dispatch
import PlayerKitSupport

/// Hands one player's numbered event batches to its delegate and its bus.
///
/// ``deliver(_:)`` is the engine's sink: one thread at a time per player calls it, in sequence
/// order, with no lock held. It enqueues one block on the delegate queue (when there is a
/// delegate) and hands the batch to the bus, so the delegate and every subscriber see the
/// same order.
final class EventFanOut: Sendable {
    let bus: PlayerEventBus
    let delegateQueue: DispatchQueue
    private let delegateBox: Locked<WeakReference<any PlayerDelegate>>
    private let playerBox = Locked(WeakReference<Player>(nil))

    init(bus: PlayerEventBus, delegateQueue: DispatchQueue, delegate: (any PlayerDelegate)?) {
        self.bus = bus
        self.delegateQueue = delegateQueue
        self.delegateBox = Locked(WeakReference(delegate))
    }

    /// The player passed to delegate methods (held weakly: a dropped player gets no calls).
    func attach(_ player: Player) {
        playerBox.withLock { $0.object = player }
    }

    var delegate: (any PlayerDelegate)? {
        get { delegateBox.withLock { $0.object } }
        set { delegateBox.withLock { $0.object = newValue } }
    }

    func deliver(_ records: [PlayerEventRecord]) {
        // No delegate now: skip the hop. A delegate set later hears later events.
        if delegateBox.withLock({ $0.object != nil }) {
            delegateQueue.async { [self] in
                // Read again: no lock is held while the delegate runs.
                guard let delegate, let player = playerBox.withLock({ $0.object }) else { return }
                AppCodeMark.calling {
                    for record in records {
                        delegate.player(player, didEmit: record)
                        record.event.dispatch(to: delegate, from: player)
                    }
                }
            }
        }
        bus.publish(records)
    }
}
