/// Receives one player's events.
///
/// **Threading and order.** Every method is called on the player's
/// ``PlayerConfiguration/delegateQueue`` (by default a serial queue of the player's own,
/// labelled `PlayerKit.delegate.<id>`), one call at a time, in the order the events
/// happened for that player. Calls are never made while PlayerKit holds an internal lock,
/// so a method may call back into the same player (even `shutdown()`) without deadlock.
///
/// For each event, ``player(_:didEmit:)`` is called first, then the specific method.
///
/// **Features' events.** Events that features publish (``PlayerEvent/feature(_:)-swift.enum.case``) reach
/// ``player(_:didEmit:)`` like every other. A feature may also offer typed methods: its event
/// type conforms to ``PlayerDelegateEvent`` and calls the methods of a delegate protocol of its
/// own (for example `FullscreenEventDelegate`), which the app's delegate adopts next to this one.
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
    /// Every event, before the specific method below. Default: nothing.
    func player(_ player: any MediaPlayer, didEmit record: PlayerEventRecord)
    /// ``PlayerEvent/stateChanged(from:to:)``. Default: nothing.
    func player(_ player: any MediaPlayer, didChangeStateFrom oldState: PlayerState, to newState: PlayerState)
    /// ``PlayerEvent/positionChanged(_:)``. Default: nothing.
    func player(_ player: any MediaPlayer, didUpdatePosition position: Double)
    /// ``PlayerEvent/durationKnown(_:)``. Default: nothing.
    func player(_ player: any MediaPlayer, didLearnDuration duration: Double)
    /// ``PlayerEvent/mediaLoaded(_:)``. Default: nothing.
    func player(_ player: any MediaPlayer, didLoad media: MediaInfo)
    /// ``PlayerEvent/firstFrame``. Default: nothing.
    func playerDidShowFirstFrame(_ player: any MediaPlayer)
    /// ``PlayerEvent/seekCompleted(position:)``. Default: nothing.
    func player(_ player: any MediaPlayer, didCompleteSeekAt position: Double?)
    /// ``PlayerEvent/bufferingProgress(percent:)``. Default: nothing.
    func player(_ player: any MediaPlayer, didUpdateBuffering percent: Double)
    /// ``PlayerEvent/volumeChanged(_:)``. Default: nothing.
    func player(_ player: any MediaPlayer, didChangeVolume volume: Double)
    /// ``PlayerEvent/muteChanged(_:)``. Default: nothing.
    func player(_ player: any MediaPlayer, didChangeMute isMuted: Bool)
    /// ``PlayerEvent/speedChanged(_:)``. Default: nothing.
    func player(_ player: any MediaPlayer, didChangeSpeed speed: Double)
    /// ``PlayerEvent/tracksChanged(_:)``. Default: nothing.
    func player(_ player: any MediaPlayer, didChangeTracks tracks: [Track])
    /// ``PlayerEvent/videoDecoderChanged(_:)``. Default: nothing.
    func player(_ player: any MediaPlayer, didChangeVideoDecoder decoder: VideoDecoder?)
    /// ``PlayerEvent/fullscreenStateChanged(_:)``: mpv's `fullscreen` property changed, by any
    /// path. Default: nothing.
    func player(_ player: any MediaPlayer, didChangeFullscreenState isFullscreen: Bool)
    /// ``PlayerEvent/loopModeChanged(_:)``. Default: nothing.
    func player(_ player: any MediaPlayer, didChangeLoopMode mode: LoopMode)
    /// ``PlayerEvent/playlistChanged(_:)``. Default: nothing.
    func player(_ player: any MediaPlayer, didChangePlaylist playlist: PlaylistPosition)
    /// ``PlayerEvent/itemEnded(_:)``. Default: nothing.
    func player(_ player: any MediaPlayer, didEndItem reason: ItemEndReason)
    /// ``PlayerEvent/error(_:)``. Default: nothing.
    func player(_ player: any MediaPlayer, didFail error: PlayerError)
    /// ``PlayerEvent/eventsLost(_:)``: mpv's event queue overflowed, some events were lost, and
    /// the player's state was rebuilt to `snapshot`. Default: nothing.
    func player(_ player: any MediaPlayer, didLoseEventsRecoveringTo snapshot: PlayerSnapshot)
    /// ``PlayerEvent/created``: only reaches a delegate given to ``Player/init(id:configuration:delegate:)``.
    /// Default: nothing.
    func playerWasCreated(_ player: any MediaPlayer)
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
    public func player(_ player: any MediaPlayer, didUpdatePosition position: Double) {}
    /// Does nothing.
    public func player(_ player: any MediaPlayer, didLearnDuration duration: Double) {}
    /// Does nothing.
    public func player(_ player: any MediaPlayer, didLoad media: MediaInfo) {}
    /// Does nothing.
    public func playerDidShowFirstFrame(_ player: any MediaPlayer) {}
    /// Does nothing.
    public func player(_ player: any MediaPlayer, didCompleteSeekAt position: Double?) {}
    /// Does nothing.
    public func player(_ player: any MediaPlayer, didUpdateBuffering percent: Double) {}
    /// Does nothing.
    public func player(_ player: any MediaPlayer, didChangeVolume volume: Double) {}
    /// Does nothing.
    public func player(_ player: any MediaPlayer, didChangeMute isMuted: Bool) {}
    /// Does nothing.
    public func player(_ player: any MediaPlayer, didChangeSpeed speed: Double) {}
    /// Does nothing.
    public func player(_ player: any MediaPlayer, didChangeTracks tracks: [Track]) {}
    /// Does nothing.
    public func player(_ player: any MediaPlayer, didChangeVideoDecoder decoder: VideoDecoder?) {}
    /// Does nothing.
    public func player(_ player: any MediaPlayer, didChangeFullscreenState isFullscreen: Bool) {}
    /// Does nothing.
    public func player(_ player: any MediaPlayer, didChangeLoopMode mode: LoopMode) {}
    /// Does nothing.
    public func player(_ player: any MediaPlayer, didChangePlaylist playlist: PlaylistPosition) {}
    /// Does nothing.
    public func player(_ player: any MediaPlayer, didEndItem reason: ItemEndReason) {}
    /// Does nothing.
    public func player(_ player: any MediaPlayer, didFail error: PlayerError) {}
    /// Does nothing.
    public func player(_ player: any MediaPlayer, didLoseEventsRecoveringTo snapshot: PlayerSnapshot) {}
    /// Does nothing.
    public func playerWasCreated(_ player: any MediaPlayer) {}
    /// Does nothing.
    public func playerDidShutDown(_ player: any MediaPlayer) {}
}

extension PlayerEvent {
    /// Calls the delegate method that matches this event (not ``PlayerDelegate/player(_:didEmit:)``).
    func dispatch(to delegate: any PlayerDelegate, from player: any MediaPlayer) {
        switch self {
        case .stateChanged(let from, let to): delegate.player(player, didChangeStateFrom: from, to: to)
        case .positionChanged(let position): delegate.player(player, didUpdatePosition: position)
        case .durationKnown(let duration): delegate.player(player, didLearnDuration: duration)
        case .mediaLoaded(let info): delegate.player(player, didLoad: info)
        case .firstFrame: delegate.playerDidShowFirstFrame(player)
        case .seekCompleted(let position): delegate.player(player, didCompleteSeekAt: position)
        case .bufferingProgress(let percent): delegate.player(player, didUpdateBuffering: percent)
        case .volumeChanged(let volume): delegate.player(player, didChangeVolume: volume)
        case .muteChanged(let muted): delegate.player(player, didChangeMute: muted)
        case .speedChanged(let speed): delegate.player(player, didChangeSpeed: speed)
        case .tracksChanged(let tracks): delegate.player(player, didChangeTracks: tracks)
        case .videoDecoderChanged(let decoder): delegate.player(player, didChangeVideoDecoder: decoder)
        case .fullscreenStateChanged(let fullscreen): delegate.player(player, didChangeFullscreenState: fullscreen)
        case .loopModeChanged(let mode): delegate.player(player, didChangeLoopMode: mode)
        case .playlistChanged(let playlist): delegate.player(player, didChangePlaylist: playlist)
        case .itemEnded(let reason): delegate.player(player, didEndItem: reason)
        case .error(let error): delegate.player(player, didFail: error)
        case .eventsLost(let snapshot): delegate.player(player, didLoseEventsRecoveringTo: snapshot)
        case .feature(let event): (event as? any PlayerDelegateEvent)?.dispatch(to: delegate, from: player)
        case .created: delegate.playerWasCreated(player)
        case .shutDown: delegate.playerDidShutDown(player)
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
