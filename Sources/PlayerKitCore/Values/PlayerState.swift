/// The playback state of a ``Player``.
///
/// PlayerKit derives the state from mpv's events and observed properties (client API 2.0 has
/// no pause events), in the event pump, so every change is reported once, in order, as
/// ``PlayerEvent/stateChanged(from:to:)``.
///
/// Transitions:
///
/// | from | to | when |
/// |---|---|---|
/// | any | `loading` | mpv starts opening an item (`MPV_EVENT_START_FILE`) |
/// | `loading` | `ready` | the item loaded and the player is paused (loaded with `startPaused`) |
/// | `loading` | `playing` | the item loaded and the player is not paused |
/// | `ready`, `paused` | `playing` | `play()` (mpv's `pause` property went to no) |
/// | `playing` | `paused` | `pause()` (mpv's `pause` property went to yes) |
/// | `playing`, `paused`, `ready` | `buffering` | mpv paused for the cache (`paused-for-cache`) |
/// | `buffering` | the state it came from | the cache refilled |
/// | `loading`, `ready`, `playing`, `paused`, `buffering` | `ended` | the item played to its end and nothing follows |
/// | any but `idle` | `idle` | `stop()`, or the playlist was cleared while stopped |
/// | `loading`, `playing`, ... | `failed` | mpv could not open or play the item (an ``PlayerEvent/error(_:)`` precedes it) |
/// | `ended`, `failed`, `idle` | `loading` | a new item is loaded |
///
/// A new ``Player`` starts `idle`.
///
/// **Can grow.** The enum is `@nonexhaustive`: outside PlayerKit a `switch` over it needs an
/// `@unknown default` case.
@nonexhaustive
public enum PlayerState: String, Sendable, Hashable, Codable, CaseIterable, CustomStringConvertible {
    /// Nothing is loaded.
    case idle
    /// An item is being opened.
    case loading
    /// An item is loaded and paused on its first frame, not yet played.
    case ready
    /// Playback is running.
    case playing
    /// Playback was started and then paused.
    case paused
    /// Playback waits for the network cache to refill.
    case buffering
    /// The item played to its end (and no loop or next item followed).
    case ended
    /// The last item could not be opened or played.
    case failed

    /// The state's name, e.g. "playing".
    public var description: String { rawValue }

    /// Whether an item is loaded in this state (ready, playing, paused or buffering).
    public var hasMedia: Bool {
        switch self {
        case .ready, .playing, .paused, .buffering: return true
        default: return false
        }
    }
}
