/// The sync machine's own constants (``SyncMachine``): what the correction is built on, not
/// what an app sets. Never saved with ``SyncSettings`` (its JSON has only the settings), never
/// public; documented in Documentation/Sync.md. Tests change them to drive a case.
struct SyncTuning: Sendable, Hashable {
    /// How far ahead of the clock a member that is behind is seeked, to be held there while
    /// the clock catches up; doubled (up to 4 s) when a seek landed too late. 0.25 s: a seek
    /// within what a player has lands in 10 to 20 ms (measured on live angles), and with 0.5 s
    /// a member back from a stall was held half a second longer than it needed.
    var seekLead: Duration = .milliseconds(250)
    /// How strongly a skew is trimmed: relative speed change per second of skew. 1 (a 10 ms
    /// skew plays at 1% off until it closes).
    var trimGain: Double = 1
    /// Skews within this are not trimmed. 0.3 ms (a frame change is timed within about 0.3 ms;
    /// with 1 ms four live angles kept up to a millisecond apart for seconds).
    var deadBand: Duration = .microseconds(300)
    /// How long before the clock reaches a held member's frame it is told to play: the time
    /// mpv takes to start, at first. 3 ms; the group then learns it from each release (on this
    /// machine mpv starts in about half a millisecond).
    var startLatency: Duration = .milliseconds(3)
    /// A forward jump of a member's media beyond the time that passed, by more than this, is a
    /// missing segment. 0.25 s.
    var jumpThreshold: Duration = .milliseconds(250)
}
