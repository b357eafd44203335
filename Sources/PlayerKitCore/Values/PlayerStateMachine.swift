/// How a player's ``PlayerState`` follows from what its engine reports: where the item is in its
/// life (``phase``), whether playback is paused, and whether it waits for the network. The one
/// derivation: ``Player`` derives its state with it, and so does a test's `FakePlayer`, so a fake
/// cannot differ from a real player on what a sequence of reports means. An app's own
/// ``MediaPlayer`` (over another engine) uses it the same way.
///
/// A pure value with no clock and no lock. Set the inputs as the engine reports them, then call
/// ``refresh()`` once for the batch: it derives the state and returns the
/// ``PlayerEvent/stateChanged(from:to:)`` to publish when the state changed.
///
/// ```swift
/// var machine = PlayerStateMachine()
/// machine.phase = .loaded          // the item is open, paused: ready
/// machine.isPaused = true
/// machine.refresh()                // stateChanged(from: .idle, to: .ready)
/// machine.isPaused = false
/// machine.refresh()                // stateChanged(from: .ready, to: .playing)
/// ```
///
/// **The rules.** `idle`, `loading`, `ended` and `failed` are the phase itself. A loaded item is
/// `buffering` while it waits for the network, else `playing` when not paused, else `paused`
/// once it has played since it was loaded, and `ready` before that. Entering ``Phase/loading``
/// starts a new item: it has not played yet.
package struct PlayerStateMachine: Sendable, Hashable {
    /// Where the player is in an item's life, before pause and buffering are taken into account.
    package enum Phase: Sendable, Hashable {
        /// No item: before the first load, after a stop.
        case idle
        /// An item is being opened.
        case loading
        /// An item is open.
        case loaded
        /// The item played to its end.
        case ended
        /// The item could not be opened or failed while it played.
        case failed
    }

    /// The item's phase. Setting ``Phase/loading`` starts a new item.
    package var phase: Phase = .idle {
        didSet { if phase == .loading { hasPlayedSinceLoad = false } }
    }
    /// Whether playback is paused (mpv's `pause`).
    package var isPaused = false
    /// Whether playback waits for the network cache (mpv's `paused-for-cache`).
    package var isWaitingForCache = false
    /// The state derived by the last ``refresh()``.
    package private(set) var state: PlayerState = .idle
    private var hasPlayedSinceLoad = false

    /// A machine in ``PlayerState/idle``, with no item.
    package init() {}

    /// Derives the state from the inputs as they are now. Returns the event to publish when the
    /// state changed (``PlayerEvent/stateChanged(from:to:)``), nil when it did not.
    @discardableResult
    package mutating func refresh() -> PlayerEvent? {
        let derived: PlayerState
        switch phase {
        case .idle: derived = .idle
        case .loading: derived = .loading
        case .ended: derived = .ended
        case .failed: derived = .failed
        case .loaded:
            if !isPaused { hasPlayedSinceLoad = true }
            if isWaitingForCache {
                derived = .buffering
            } else if isPaused {
                derived = hasPlayedSinceLoad ? .paused : .ready
            } else {
                derived = .playing
            }
        }
        guard derived != state else { return nil }
        defer { state = derived }
        return .stateChanged(from: state, to: derived)
    }
}
