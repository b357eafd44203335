/// What the desktop may do to a published player: its ``MPRISPlayerOptions/controls``.
///
/// A request outside them is answered with the D-Bus error `org.playerkit.MPRIS.NotAllowed`,
/// reported to the app as ``MPRISOutcome/refused(_:)`` (``MPRISRefusal/notAllowed(_:)``), and
/// the player is not touched. The `Can…` properties the desktop reads follow them: a player
/// without ``seeking`` says `CanSeek` false, and desktops hide their seek bar.
public struct MPRISControls: OptionSet, Sendable, Hashable, CustomStringConvertible {
    /// The bits.
    public let rawValue: Int
    /// Controls from bits.
    public init(rawValue: Int) { self.rawValue = rawValue }

    /// `Play`, `Pause`, `PlayPause`, `Stop`.
    public static let playback = MPRISControls(rawValue: 1 << 0)
    /// `Seek`, `SetPosition`.
    public static let seeking = MPRISControls(rawValue: 1 << 1)
    /// `Next`, `Previous` (in the player's playlist).
    public static let playlist = MPRISControls(rawValue: 1 << 2)
    /// Setting `Volume`.
    public static let volume = MPRISControls(rawValue: 1 << 3)
    /// Setting `Rate` (playback speed).
    public static let rate = MPRISControls(rawValue: 1 << 4)
    /// Setting `LoopStatus`.
    public static let loop = MPRISControls(rawValue: 1 << 5)
    /// Setting `Fullscreen` (through the player's fullscreen arbiter, so a fullscreen policy
    /// still decides).
    public static let fullscreen = MPRISControls(rawValue: 1 << 6)
    /// `Raise`: the app brings the player's window forward. PlayerKit draws no window, so it
    /// only tells the app (``MPRISOutcome/forwardedToApp(_:)``); the app acts on the event.
    public static let raise = MPRISControls(rawValue: 1 << 7)
    /// `Quit`: the app ends the player (or itself), as it decides. Like ``raise``, told to the
    /// app only.
    public static let quit = MPRISControls(rawValue: 1 << 8)

    /// What a media player's controls usually offer: ``playback``, ``seeking``, ``playlist``,
    /// ``volume``, ``rate`` and ``loop`` (not ``fullscreen``, ``raise`` and ``quit``, which an
    /// app opts into because it must act on them).
    public static let standard: MPRISControls = [.playback, .seeking, .playlist, .volume, .rate, .loop]
    /// Every control.
    public static let all: MPRISControls = [.standard, .fullscreen, .raise, .quit]

    /// "Playback+Seeking+…" or "none".
    public var description: String {
        let names: [(MPRISControls, String)] = [
            (.playback, "Playback"), (.seeking, "Seeking"), (.playlist, "Playlist"), (.volume, "Volume"),
            (.rate, "Rate"), (.loop, "Loop"), (.fullscreen, "Fullscreen"), (.raise, "Raise"), (.quit, "Quit"),
        ]
        let parts = names.filter { contains($0.0) }.map(\.1)
        return parts.isEmpty ? "none" : parts.joined(separator: "+")
    }
}
