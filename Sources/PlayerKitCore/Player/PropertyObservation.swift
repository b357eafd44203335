import PlayerKitSupport

/// A request to hear a property's changes, as events, for as long as it lives: from
/// ``MediaPlayer/observeEveryFrame()`` (``PlayerEvent/positionChanged(_:)`` with every frame)
/// or ``Player/observeProperty(_:)`` (``PlayerEvent/propertyChanged(name:value:)`` for any mpv
/// property). Keep it as long as you need them; ``cancel()`` (or releasing it) ends the request.
///
/// **Threading.** Safe from any thread; ``cancel()`` is idempotent.
public final class PropertyObservation: Sendable {
    private let onCancel: @Sendable () -> Void
    private let active = Locked(true)

    /// Creates an active observation that calls `onCancel` once, when it is cancelled or
    /// released: for players other than ``Player`` (a test's `FakePlayer`), which count their
    /// observations themselves.
    public init(onCancel: @escaping @Sendable () -> Void) {
        self.onCancel = onCancel
    }

    convenience init(core: PlayerCore) {
        core.observeEveryPosition(true)
        self.init { core.observeEveryPosition(false) }
    }

    deinit { cancel() }

    /// Ends this request: no change it asked for is reported after the events already under
    /// way. For ``MediaPlayer/observeEveryFrame()``, the player goes back to its interval once no
    /// other observation of every frame is active.
    public func cancel() {
        let wasActive = active.withLock { active -> Bool in
            defer { active = false }
            return active
        }
        if wasActive { onCancel() }
    }

    /// Whether the observation is still active.
    var isActive: Bool { active.withLock { $0 } }
}
