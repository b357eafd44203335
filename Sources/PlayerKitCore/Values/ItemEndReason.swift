/// Why an item stopped playing.
///
/// Can grow: it is `@nonexhaustive`, so a `switch` over it outside PlayerKit needs an
/// `@unknown default` case, and a new reason in a later release does not break it.
@nonexhaustive
public enum ItemEndReason: Sendable, Hashable, CustomStringConvertible {
    /// It played to its end.
    case finished
    /// `stop()` (or clearing the playlist) ended it.
    case stopped
    /// Another item replaced it (a new `load`, `next()` or `previous()`).
    case replaced
    /// It could not be opened or played.
    case error(PlayerError)

    /// "finished", "stopped", "replaced" or "error".
    public var description: String {
        switch self {
        case .finished: return "finished"
        case .stopped: return "stopped"
        case .replaced: return "replaced"
        case .error: return "error"
        }
    }
}
