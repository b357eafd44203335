import PlayerKitSupport

/// A request for per-frame positions from ``Player/observeEveryFrame()``: while it lives, the
/// player reports ``PlayerEvent/positionChanged(_:)`` with every frame. Keep it as long as you
/// need them; ``cancel()`` (or releasing it) ends the request.
///
/// **Threading.** Safe from any thread; ``cancel()`` is idempotent.
public final class PositionObservation: Sendable {
    private let core: PlayerCore
    private let active = Locked(true)

    init(core: PlayerCore) {
        self.core = core
        core.observeEveryPosition(true)
    }

    deinit { cancel() }

    /// Ends this request. The player goes back to its interval once no other observation is active.
    public func cancel() {
        let wasActive = active.withLock { active -> Bool in
            defer { active = false }
            return active
        }
        if wasActive { core.observeEveryPosition(false) }
    }

    /// Whether the observation is still active.
    public var isActive: Bool { active.withLock { $0 } }
}
