import Foundation

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
    /// Its data ended well before its stated duration: a network stream cut short (a connection
    /// reset or closed early) or a truncated file. `position` is where playback got to, in
    /// seconds, and `duration` what the media said it would be. mpv reports such an end as an
    /// ordinary end of file; PlayerKit tells them apart by position: an item that reaches its
    /// end-of-file more than a second (and more than 5 %) short of its duration, plus the
    /// position interval, without a seek in flight, while playing forwards.
    case truncated(position: Double, duration: Double)

    /// "finished", "stopped", "replaced", "error" or "truncated at 1.00 of 4.00 s".
    public var description: String {
        switch self {
        case .finished: return "finished"
        case .stopped: return "stopped"
        case .replaced: return "replaced"
        case .error: return "error"
        case .truncated(let position, let duration):
            return "truncated at \(String(format: "%.2f", position)) of \(String(format: "%.2f", duration)) s"
        }
    }
}
