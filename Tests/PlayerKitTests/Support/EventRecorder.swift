import Foundation
import PlayerKit
import Testing
import PlayerKitSupport

/// A delegate that records every delivery and lets a test wait for an event with a timeout.
final class EventRecorder: PlayerDelegate {
    struct Delivery: Sendable {
        let record: PlayerEventRecord
        /// The ID of the `Player` object the delegate method received.
        let receiverID: PlayerID
        let onDelegateQueue: Bool
    }

    private struct Waiter {
        let id: Int
        let predicate: @Sendable (PlayerEventRecord) -> Bool
        let continuation: CheckedContinuation<PlayerEventRecord?, Never>
    }

    private struct Storage {
        var deliveries: [Delivery] = []
        var waiters: [Waiter] = []
        var nextWaiterID = 0
        var specificCalls = 0
    }

    private let storage = Locked(Storage())
    /// Called for each record, on the delegate queue, after it is stored.
    let onEvent: (@Sendable (any MediaPlayer, PlayerEventRecord) -> Void)?

    init(onEvent: (@Sendable (any MediaPlayer, PlayerEventRecord) -> Void)? = nil) {
        self.onEvent = onEvent
    }

    var deliveries: [Delivery] { storage.withLock { $0.deliveries } }
    var records: [PlayerEventRecord] { deliveries.map(\.record) }
    var events: [PlayerEvent] { records.map(\.event) }
    var specificCalls: Int { storage.withLock { $0.specificCalls } }
    /// The sequence number of the latest delivery (0 before any): pass it as `after:` to wait
    /// only for what happens next.
    var mark: UInt64 { storage.withLock { $0.deliveries.last?.record.sequenceNumber ?? 0 } }

    /// The states entered, in order.
    var states: [PlayerState] {
        events.compactMap { if case .stateChanged(_, let to) = $0 { return to } else { return nil } }
    }

    func player(_ player: any MediaPlayer, didEmit record: PlayerEventRecord) {
        let onQueue = DispatchQueue.getSpecific(key: Fixtures.delegateQueueKey) == "tests.delegates"
        let delivery = Delivery(record: record, receiverID: player.id, onDelegateQueue: onQueue)
        let ready = storage.withLock { storage -> [CheckedContinuation<PlayerEventRecord?, Never>] in
            storage.deliveries.append(delivery)
            let matched = storage.waiters.filter { $0.predicate(record) }
            storage.waiters.removeAll { $0.predicate(record) }
            return matched.map(\.continuation)
        }
        ready.forEach { $0.resume(returning: record) }
        onEvent?(player, record)
    }

    func player(_ player: any MediaPlayer, didChangeStateFrom oldState: PlayerState, to newState: PlayerState) {
        storage.withLock { $0.specificCalls += 1 }
    }

    /// Waits for the first record (already seen or future) matching `predicate`.
    /// Returns nil after `timeout`.
    @discardableResult
    func waitFor(
        timeout: Duration = .seconds(15), after mark: UInt64 = 0,
        _ condition: @escaping @Sendable (PlayerEventRecord) -> Bool
    ) async -> PlayerEventRecord? {
        let predicate: @Sendable (PlayerEventRecord) -> Bool = { $0.sequenceNumber > mark && condition($0) }
        let waiterID = storage.withLock { storage -> Int in
            storage.nextWaiterID += 1
            return storage.nextWaiterID
        }
        return await withTaskGroup(of: PlayerEventRecord?.self) { group in
            group.addTask {
                await withCheckedContinuation { continuation in
                    let past = self.storage.withLock { storage -> PlayerEventRecord? in
                        if let hit = storage.deliveries.first(where: { predicate($0.record) }) {
                            return hit.record
                        }
                        storage.waiters.append(Waiter(id: waiterID, predicate: predicate, continuation: continuation))
                        return nil
                    }
                    if let past { continuation.resume(returning: past) }
                }
            }
            group.addTask {
                try? await Task.sleep(for: timeout)
                let waiter = self.storage.withLock { storage -> Waiter? in
                    guard let index = storage.waiters.firstIndex(where: { $0.id == waiterID }) else { return nil }
                    return storage.waiters.remove(at: index)
                }
                waiter?.continuation.resume(returning: nil)
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            // Let the other child finish (the sleeper returns promptly once cancelled).
            for await _ in group {}
            return first
        }
    }

    /// Waits until the player enters `state`.
    @discardableResult
    func waitForState(_ state: PlayerState, timeout: Duration = .seconds(15), after mark: UInt64 = 0) async -> Bool {
        await waitFor(timeout: timeout, after: mark) {
            if case .stateChanged(_, let to) = $0.event { return to == state }
            return false
        } != nil
    }
}
