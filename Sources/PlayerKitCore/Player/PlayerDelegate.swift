/// Receives one player's events.
///
/// **Threading and order.** Every method is called on the player's
/// ``PlayerConfiguration/delegateQueue`` (by default a serial queue of the player's own,
/// labelled `PlayerKit.delegate.<id>`), one call at a time, in the order the events
/// happened for that player. Calls are never made while PlayerKit holds an internal lock,
/// so a method may call back into the same player (even `shutdown()`) without deadlock.
///
/// For each event, ``player(_:didEmit:)`` is called; for a state change,
/// ``player(_:didChangeStateFrom:to:)`` right after it. Every event (a load, a seek, an item's
/// end, an error, the shutdown, ...) is heard in ``player(_:didEmit:)``: switch over
/// `record.event` (`case .itemEnded(let reason)`, `case .error(let error)`, `case .shutDown`).
///
/// **Features' events.** Events that features publish (``PlayerEvent/feature(_:)-swift.enum.case``) reach
/// ``player(_:didEmit:)`` like every other (`record.event.feature(FullscreenEvent.self)`).
///
/// **Which player.** Each method gets the player as `any MediaPlayer`: a ``Player``, or a fake
/// (`FakePlayer` has a delegate too), or an app's own conformer. Its ID, read-outs and commands
/// are all there; cast to ``Player`` only for what a real core alone offers (frames, OpenGL).
/// A delegate is a bus subscription to the player's ID (``PlayerEventBus/subscribe(_:to:queue:)``),
/// as every listener is.
///
/// **Defaults.** Every method has a default implementation that does nothing; implement only
/// what you need. The player holds its delegate weakly.
///
/// The protocol requires `Sendable` because the delegate is called from the delegate queue,
/// not the thread that set it.
public protocol PlayerDelegate: AnyObject, Sendable {
    /// Every event, before ``player(_:didChangeStateFrom:to:)`` for a state change: the one
    /// method that hears everything (switch over `record.event`). The player's
    /// ``PlayerEvent/shutDown`` (the core is destroyed) is the last call this delegate gets from
    /// the player; not made for a player that was dropped (there is no player to pass).
    /// Default: nothing.
    func player(_ player: any MediaPlayer, didEmit record: PlayerEventRecord)
    /// ``PlayerEvent/stateChanged(from:to:)``. Default: nothing.
    func player(_ player: any MediaPlayer, didChangeStateFrom oldState: PlayerState, to newState: PlayerState)
}

extension PlayerDelegate {
    /// Does nothing.
    public func player(_ player: any MediaPlayer, didEmit record: PlayerEventRecord) {}
    /// Does nothing.
    public func player(_ player: any MediaPlayer, didChangeStateFrom oldState: PlayerState, to newState: PlayerState) {}
}

extension PlayerEvent {
    /// Calls the typed delegate method that matches this event, if it has one (a state change's;
    /// not ``PlayerDelegate/player(_:didEmit:)``).
    func dispatch(to delegate: any PlayerDelegate, from player: any MediaPlayer) {
        if case .stateChanged(let from, let to) = self {
            delegate.player(player, didChangeStateFrom: from, to: to)
        }
    }
}
