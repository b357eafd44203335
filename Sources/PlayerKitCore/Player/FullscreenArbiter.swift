/// Decides whether a player's own fullscreen requests may go ahead: the hook for a feature that
/// keeps a rule about fullscreen across several players (PlayerKitDisplay's `FullscreenPolicy`:
/// one owner, nobody else fullscreen).
///
/// A player has at most one arbiter (``Player/fullscreenArbiter``, held weakly). It is asked
/// by ``PlayerCommand/setFullscreen(_:)`` and by ``Player/send(_:)`` with
/// ``PlayerCommand/setFullscreen(_:)``, before mpv is, and a refusal is thrown as
/// ``PlayerError/fullscreenRefused(_:reason:)``: nothing changes. Changes that do not go
/// through these calls cannot be asked about beforehand (mpv's own window, the window manager,
/// the escape hatches ``Player/setProperty(_:to:)`` and ``Player/command(_:)``); every change
/// of mpv's `fullscreen` property, whatever its path, is reported afterwards as
/// ``PlayerEvent/fullscreenStateChanged(_:)``, so an arbiter that subscribes to it can restore
/// its rule.
public protocol FullscreenArbiter: AnyObject, Sendable {
    /// Whether `player` may put its video in fullscreen (`fullscreen` true) or take it out:
    /// nil to let the request go ahead, or the reason it may not (thrown to the caller as
    /// ``PlayerError/fullscreenRefused(_:reason:)``).
    ///
    /// Called on the caller's thread, possibly the player's event pump (``Player/send(_:)`` is
    /// allowed there): return at once, without waiting for anything.
    func refusal(ofFullscreen fullscreen: Bool, for player: any MediaPlayer) -> String?
}
