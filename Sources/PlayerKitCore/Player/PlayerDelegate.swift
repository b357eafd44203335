/// Receives one player's events.
///
/// **Threading and order.** Every method is called on the player's
/// ``PlayerConfiguration/delegateQueue`` (by default a serial queue of the player's own,
/// labelled `PlayerKit.delegate.<id>`), one call at a time, in the order the events
/// happened for that player. Calls are never made while PlayerKit holds an internal lock,
/// so a method may call back into the same player (even `shutdown()`) without deadlock.
///
/// For each event, ``player(_:didEmit:)`` is called first; then, for the four events an app
/// most often handles alone (a state change, an item's end, an error, the shutdown), its typed
/// method. Every other event (a load, a seek, a volume, the tracks, ...)
/// is heard in ``player(_:didEmit:)``.
///
/// **Features' events.** Events that features publish (``PlayerEvent/feature(_:)-swift.enum.case``) reach
/// ``player(_:didEmit:)`` like every other (`record.event.feature(FullscreenEvent.self)`). An
/// app's own feature may also offer typed methods: its event type conforms to
/// ``PlayerDelegateEvent`` and calls the methods of a delegate protocol of its own, which the
/// app's delegate adopts next to this one.
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
    /// Every event, before the typed method below if the event has one: the one method that
    /// hears everything (switch over `record.event`). Default: nothing.
    func player(_ player: any MediaPlayer, didEmit record: PlayerEventRecord)
    /// ``PlayerEvent/stateChanged(from:to:)``. Default: nothing.
    func player(_ player: any MediaPlayer, didChangeStateFrom oldState: PlayerState, to newState: PlayerState)
    /// ``PlayerEvent/itemEnded(_:)``. Default: nothing.
    func player(_ player: any MediaPlayer, didEndItem reason: ItemEndReason)
    /// ``PlayerEvent/error(_:)``. Default: nothing.
    func player(_ player: any MediaPlayer, didFail error: PlayerError)
    /// ``PlayerEvent/shutDown``: the core is destroyed; the last call this delegate gets from
    /// the player. Not called for a player that was dropped (there is no player to pass).
    /// Default: nothing.
    func playerDidShutDown(_ player: any MediaPlayer)
}

extension PlayerDelegate {
    /// Does nothing.
    public func player(_ player: any MediaPlayer, didEmit record: PlayerEventRecord) {}
    /// Does nothing.
    public func player(_ player: any MediaPlayer, didChangeStateFrom oldState: PlayerState, to newState: PlayerState) {}
    /// Does nothing.
    public func player(_ player: any MediaPlayer, didEndItem reason: ItemEndReason) {}
    /// Does nothing.
    public func player(_ player: any MediaPlayer, didFail error: PlayerError) {}
    /// Does nothing.
    public func playerDidShutDown(_ player: any MediaPlayer) {}
}

extension PlayerEvent {
    /// Calls the delegate method that matches this event (not ``PlayerDelegate/player(_:didEmit:)``).
    func dispatch(to delegate: any PlayerDelegate, from player: any MediaPlayer) {
        switch self {
        case .stateChanged(let from, let to): delegate.player(player, didChangeStateFrom: from, to: to)
        case .itemEnded(let reason): delegate.player(player, didEndItem: reason)
        case .error(let error): delegate.player(player, didFail: error)
        case .feature(let event): (event as? any PlayerDelegateEvent)?.dispatch(to: delegate, from: player)
        case .shutDown: delegate.playerDidShutDown(player)
        default: break
        }
    }
}

/// A feature event that, besides ``PlayerDelegate/player(_:didEmit:)``, calls a typed method of
/// the player's delegate: how a feature offers delegate methods of its own without adding any
/// to ``PlayerDelegate``.
///
/// ```swift
/// public protocol ExclusivePlaybackDelegate: PlayerDelegate {
///     func player(_ player: any MediaPlayer, wasPausedBecauseOf other: PlayerID)
/// }
/// extension ExclusivePlaybackEvent: PlayerDelegateEvent {
///     public func dispatch(to delegate: any PlayerDelegate, from player: any MediaPlayer) {
///         guard let delegate = delegate as? any ExclusivePlaybackDelegate else { return }
///         if case .pausedBecauseOf(let other) = self { delegate.player(player, wasPausedBecauseOf: other) }
///     }
/// }
/// ```
public protocol PlayerDelegateEvent: PlayerFeatureEvent {
    /// Calls the method of `delegate` that matches this event, if `delegate` adopts the
    /// feature's delegate protocol. Called on the player's delegate queue, in the player's event
    /// order, right after ``PlayerDelegate/player(_:didEmit:)``.
    func dispatch(to delegate: any PlayerDelegate, from player: any MediaPlayer)
}
