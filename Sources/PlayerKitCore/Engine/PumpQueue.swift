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
                The pump never waits for mpv.
                """)
        }
        #endif
    }
}
