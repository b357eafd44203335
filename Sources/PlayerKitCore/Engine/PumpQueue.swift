import Dispatch

/// The per-player event pump queues, marked so that the engine can tell when it runs on one.
///
/// **The pump rule.** Nothing that runs on a pump queue may wait for mpv: the pump drains with
/// `mpv_wait_event(handle, 0)` and asks for values with `mpv_get_property_async`, and so must
/// everything it calls, including `.immediate` bus handlers. In debug builds (`swift build`,
/// `make test`) every blocking mpv call checks this with ``assertNotOnPump(_:)`` and stops the
/// process with a message naming the call and the player, so the whole test suite checks the
/// rule. Release builds do not check.
enum PumpQueue {
    private static let key = DispatchSpecificKey<PlayerID>()

    /// A new serial pump queue for `id`, marked as a pump.
    static func make(for id: PlayerID) -> DispatchQueue {
        let queue = DispatchQueue(label: "PlayerKit.pump.\(id)")
        queue.setSpecific(key: key, value: id)
        return queue
    }

    /// The player whose pump the caller runs on, if any.
    static var current: PlayerID? { DispatchQueue.getSpecific(key: key) }

    /// Stops a debug build when called on a pump queue: `operation` is a blocking mpv call.
    @inline(__always)
    static func assertNotOnPump(_ operation: @autoclosure () -> String) {
        #if DEBUG
        if let pump = current {
            fatalError("""
                PlayerKit: blocking mpv call \(operation()) on the event pump of player "\(pump)". \
                The pump never waits for mpv: handlers that run on it (.immediate bus subscriptions) \
                must not call blocking Player methods; subscribe with .queue(...) or use Player.send(_:).
                """)
        }
        #endif
    }
}

/// The cooperative-pool rule: async code that waits for mpv suspends (`Player.perform`,
/// `Player.create`), and never blocks a thread of Swift's cooperative pool on a blocking mpv call.
///
/// Code runs under the rule inside `BlockingCallCheck.enforcing(_:)` (a task-local value, so
/// child tasks and tasks started inside inherit it). In debug builds every blocking mpv call
/// checks it with ``assertNotBlockingPool(_:)``: made by a task under the rule, it stops the
/// process with a message naming the call. PlayerKit's features run their async operations under
/// it, so the test suite checks them; release builds do not check.
enum PoolRule {
    @TaskLocal static var isEnforced = false

    /// Stops a debug build when a task under the rule makes the blocking mpv call `operation`.
    @inline(__always)
    static func assertNotBlockingPool(_ operation: @autoclosure () -> String) {
        #if DEBUG
        if isEnforced, withUnsafeCurrentTask(body: { $0 != nil }) {
            fatalError("""
                PlayerKit: blocking mpv call \(operation()) from a task on Swift's cooperative pool, \
                under BlockingCallCheck. Async code must suspend instead: use Player.perform(_:timeout:) \
                for commands and Player.create(...) to make players.
                """)
        }
        #endif
    }
}
