import Dispatch
import PlayerKitCore
import PlayerKitSupport

/// Something that happened to a ``FullscreenPolicy``, for its ``FullscreenPolicyDelegate``.
/// (Each player concerned also hears its part as a ``FullscreenEvent``.)
///
/// `@nonexhaustive`: a `switch` over it outside PlayerKit needs `@unknown default`.
@nonexhaustive
public enum FullscreenPolicyEvent: Sendable, Hashable, CustomStringConvertible {
    /// The owner changed (nil: nobody).
    case ownershipChanged(from: PlayerID?, to: PlayerID?)
    /// A player entered or left fullscreen.
    case fullscreenChanged(player: PlayerID, isFullscreen: Bool)
    /// The screen orientation the app reported changed.
    case orientationChanged(Orientation)
    /// With ``FullscreenPolicy/fullscreenControlsOrientation`` on, the owner entered fullscreen
    /// in portrait: the app should turn the screen (or its window) to this orientation.
    /// PlayerKit does not rotate the video itself. `player` is the owner that entered fullscreen.
    case orientationRequested(Orientation, player: PlayerID)

    /// A short description, e.g. "fullscreenChanged(main, true)".
    public var description: String {
        switch self {
        case .ownershipChanged(let from, let to): return "ownershipChanged(\(from?.rawValue ?? "none") -> \(to?.rawValue ?? "none"))"
        case .fullscreenChanged(let player, let isFullscreen): return "fullscreenChanged(\(player), \(isFullscreen))"
        case .orientationChanged(let orientation): return "orientationChanged(\(orientation))"
        case .orientationRequested(let orientation, let player): return "orientationRequested(\(orientation), by \(player))"
        }
    }
}

/// Receives a policy's events, one at a time, in order, on the policy's delegate queue (a
/// serial queue of its own by default). Held weakly. The method has a no-op default.
public protocol FullscreenPolicyDelegate: AnyObject, Sendable {
    /// Called for every event. Default: nothing.
    func fullscreenPolicy(_ policy: FullscreenPolicy, didEmit event: FullscreenPolicyEvent)
}

extension FullscreenPolicyDelegate {
    /// Does nothing.
    public func fullscreenPolicy(_ policy: FullscreenPolicy, didEmit event: FullscreenPolicyEvent) {}
}

/// Decides which one player may go fullscreen, so that turning a screen full of players never
/// sends them all fullscreen.
///
/// At most one player owns a policy. ``claim(_:)`` succeeds when the policy is free or already
/// held by the same player; any other player's claim fails with
/// ``FullscreenPolicyError/ownedByAnotherPlayer(owner:requester:)`` and changes nothing. The owner
/// can ``release(_:)`` it or ``transfer(from:to:)`` it. When the owner shuts down (or is dropped),
/// the policy frees itself.
///
/// Two switches, in the spirit of Flowplayer's flags, act on the owner only:
/// * ``orientationControlsFullscreen``: a landscape ``setOrientation(_:)`` enters fullscreen, a
///   portrait one leaves it.
/// * ``fullscreenControlsOrientation``: entering fullscreen in portrait asks the app to turn to
///   landscape, with ``FullscreenPolicyEvent/orientationRequested(_:player:)``; the app decides how.
///
/// Entering fullscreen calls ``/PlayerKitCore/Player/setFullscreen(_:)`` on the owner, so a player with a
/// window really goes fullscreen; a headless player keeps the setting.
///
/// Events go to the ``delegate`` and, keyed by player ID, through each player's own pipeline
/// to its delegate and bus, as ``FullscreenEvent``s.
///
/// Written, as every PlayerKit feature, against the core's public API only.
///
/// **Threading.** Every method may be called from any thread. The policy runs on a serial queue
/// of its own: each call runs there, one at a time, and its effects and events are complete when
/// it returns; the policy's own event handler (the owner's shutdown) runs there too, never on a
/// player's event pump. It is safe to call back into the policy from its delegate or from a
/// player's event handler.
public final class FullscreenPolicy: Sendable {
    /// A policy for apps with one screen.
    public static let shared = FullscreenPolicy()

    private struct State: Sendable {
        /// Held weakly: owning the policy must not keep a dropped player alive.
        var ownerReference = WeakReference<Player>(nil)
        var owner: Player? { ownerReference.object }
        var ownerID: PlayerID?
        var ownerWatch: PlayerSubscription?
        var isFullscreen = false
        var orientation = Orientation.landscapeLeft
        var orientationControlsFullscreen: Bool
        var fullscreenControlsOrientation: Bool
        var delegate: WeakReference<any FullscreenPolicyDelegate>
    }

    /// Where every operation and handler runs, one at a time.
    private let queue = SerialQueue(label: "PlayerKit.fullscreen-policy")
    /// Changed only on `queue`; locked so the read-outs can be read from anywhere.
    private let state: Locked<State>
    private let delegateQueue: DispatchQueue

    /// Creates a policy, for example one per screen or window group.
    /// - Parameters:
    ///   - orientationControlsFullscreen: landscape enters fullscreen, portrait leaves it (owner only).
    ///   - fullscreenControlsOrientation: entering fullscreen in portrait requests landscape.
    ///   - delegateQueue: where the delegate is called (wrapped in a serial queue); nil for a new one.
    public init(orientationControlsFullscreen: Bool = false, fullscreenControlsOrientation: Bool = false,
                delegateQueue: DispatchQueue? = nil) {
        state = Locked(State(
            orientationControlsFullscreen: orientationControlsFullscreen,
            fullscreenControlsOrientation: fullscreenControlsOrientation, delegate: WeakReference(nil)))
        self.delegateQueue = DispatchQueue(label: "PlayerKit.fullscreen-policy.delegate", target: delegateQueue)
    }

    // MARK: Read-out and switches

    /// The owning player's ID, or nil. An owner that shut down (or was dropped) no longer owns
    /// the policy from the moment its shutdown began, even before the policy heard its last event.
    public var owner: PlayerID? {
        let (id, player) = state.withLock { ($0.ownerID, $0.owner) }
        guard let id, let player, !player.isShutDown else { return nil }
        return id
    }
    /// Whether the owner is fullscreen.
    public var isFullscreen: Bool { owner != nil && state.withLock { $0.isFullscreen } }
    /// The last orientation reported (landscape left until one is).
    public var orientation: Orientation { state.withLock { $0.orientation } }

    /// Landscape enters fullscreen and portrait leaves it, for the owner only.
    public var orientationControlsFullscreen: Bool {
        get { state.withLock { $0.orientationControlsFullscreen } }
        set { queue.sync { state.withLock { $0.orientationControlsFullscreen = newValue } } }
    }

    /// Entering fullscreen in portrait requests landscape from the app.
    public var fullscreenControlsOrientation: Bool {
        get { state.withLock { $0.fullscreenControlsOrientation } }
        set { queue.sync { state.withLock { $0.fullscreenControlsOrientation = newValue } } }
    }

    /// The delegate, held weakly.
    public var delegate: (any FullscreenPolicyDelegate)? {
        get { state.withLock { $0.delegate.object } }
        set { queue.sync { state.withLock { $0.delegate.object = newValue } } }
    }

    // MARK: Ownership

    /// Makes `player` the owner. Succeeds when the policy is free or `player` already owns it.
    /// - Throws: ``FullscreenPolicyError/ownedByAnotherPlayer(owner:requester:)`` (nothing
    ///   changes) or ``FullscreenPolicyError/playerShutDown(_:)``.
    public func claim(_ player: Player) throws(FullscreenPolicyError) {
        try queue.sync { () throws(FullscreenPolicyError) in try claimOnQueue(player) }
    }

    /// Frees the policy; the owner leaves fullscreen first.
    /// - Throws: ``FullscreenPolicyError/notOwner(_:owner:)`` when `player` is not the owner.
    public func release(_ player: Player) throws(FullscreenPolicyError) {
        try queue.sync { () throws(FullscreenPolicyError) in
            try requireOwner(player)
            if isFullscreen { setFullscreen(false, on: player) }
            setOwner(nil)
        }
    }

    /// Hands the policy from its owner to another player. If the owner was fullscreen it
    /// leaves fullscreen, and the new owner enters it when the switches say so (orientation
    /// controls fullscreen and the screen is in landscape).
    /// - Throws: ``FullscreenPolicyError/notOwner(_:owner:)`` when `owner` does not own the
    ///   policy, ``FullscreenPolicyError/playerShutDown(_:)`` when `newOwner` is shut down.
    public func transfer(from owner: Player, to newOwner: Player) throws(FullscreenPolicyError) {
        try queue.sync { () throws(FullscreenPolicyError) in
            try requireOwner(owner)
            guard !newOwner.isShutDown else { throw .playerShutDown(newOwner.id) }
            if owner === newOwner { return }
            if isFullscreen { setFullscreen(false, on: owner) }
            setOwner(newOwner)
            let (follows, landscape) = state.withLock { ($0.orientationControlsFullscreen, $0.orientation.isLandscape) }
            if follows, landscape { enter(newOwner) }
        }
    }

    // MARK: Fullscreen

    /// Puts `player` in fullscreen. When nobody owns the policy, `player` claims it first.
    /// - Throws: ``FullscreenPolicyError/ownedByAnotherPlayer(owner:requester:)`` when another
    ///   player owns the policy (nothing changes), or ``FullscreenPolicyError/playerShutDown(_:)``.
    public func enterFullscreen(_ player: Player) throws(FullscreenPolicyError) {
        try queue.sync { () throws(FullscreenPolicyError) in
            try claimOnQueue(player)
            enter(player)
        }
    }

    /// Takes `player` out of fullscreen.
    /// - Throws: ``FullscreenPolicyError/notOwner(_:owner:)`` when `player` is not the owner.
    public func exitFullscreen(_ player: Player) throws(FullscreenPolicyError) {
        try queue.sync { () throws(FullscreenPolicyError) in
            try requireOwner(player)
            if isFullscreen { setFullscreen(false, on: player) }
        }
    }

    // MARK: Orientation

    /// Reports the screen's orientation. With ``orientationControlsFullscreen`` on, the owner
    /// enters fullscreen in landscape and leaves it in portrait; nobody else changes.
    public func setOrientation(_ orientation: Orientation) {
        queue.sync {
            reapGoneOwner()
            let (changed, owner, follows, fullscreen) = state.withLock { state in
                defer { state.orientation = orientation }
                return (state.orientation != orientation, state.owner, state.orientationControlsFullscreen, state.isFullscreen)
            }
            guard changed else { return }
            notify(.orientationChanged(orientation))
            owner?.publish(FullscreenEvent.orientationChanged(orientation))
            guard follows, let owner else { return }
            if orientation.isLandscape, !fullscreen { enter(owner) }
            if !orientation.isLandscape, fullscreen { setFullscreen(false, on: owner) }
        }
    }

    /// Follows an orientation source until it ends, is unavailable, or the returned task is
    /// cancelled. The task's error is the source's (for example
    /// ``FullscreenPolicyError/orientationSourceUnavailable(_:)``).
    @discardableResult
    public func follow<Source: OrientationSource>(_ source: Source) -> Task<Void, any Error> {
        Task {
            for try await orientation in source {
                try Task.checkCancellation()
                setOrientation(orientation)
            }
        }
    }

    // MARK: Internals (on `queue`)

    private func claimOnQueue(_ player: Player) throws(FullscreenPolicyError) {
        guard !player.isShutDown else { throw .playerShutDown(player.id) }
        reapGoneOwner()
        let current = state.withLock { $0.ownerID }
        if current == player.id { return }
        if let current { throw .ownedByAnotherPlayer(owner: current, requester: player.id) }
        setOwner(player)
    }

    private func requireOwner(_ player: Player) throws(FullscreenPolicyError) {
        reapGoneOwner()
        let current = state.withLock { $0.ownerID }
        guard current == player.id else { throw .notOwner(player.id, owner: current) }
    }

    private func enter(_ player: Player) {
        let (wasFullscreen, portrait, asks) = state.withLock {
            ($0.isFullscreen, !$0.orientation.isLandscape, $0.fullscreenControlsOrientation)
        }
        if wasFullscreen { return }
        setFullscreen(true, on: player)
        if asks, portrait { notify(.orientationRequested(.landscapeLeft, player: player.id)) }
    }

    private func setFullscreen(_ fullscreen: Bool, on player: Player) {
        // A headless player has no window: mpv keeps the setting, the policy the logical state.
        // Blocking, so the window's state is settled when the policy's call returns; this runs
        // on the policy's queue, never on a player's event pump.
        try? player.setFullscreen(fullscreen)
        state.withLock { $0.isFullscreen = fullscreen }
        notify(.fullscreenChanged(player: player.id, isFullscreen: fullscreen))
        player.publish(FullscreenEvent.fullscreenChanged(fullscreen))
    }

    private func setOwner(_ player: Player?) {
        // Free the policy when the owner shuts down or is dropped (its last event), on the queue.
        let watch = player.map { owner in
            let id = owner.id
            return owner.eventBus.subscribe(to: id, kinds: [.shutDown], delivery: .queue(queue.dispatchQueue)) { [weak self] _ in
                self?.ownerShutDown(id)
            }
        }
        let (old, oldWatch) = state.withLock { state -> (Player?, PlayerSubscription?) in
            defer {
                state.ownerReference = WeakReference(player)
                state.ownerID = player?.id
                state.ownerWatch = watch
                if player == nil { state.isFullscreen = false }
            }
            return (state.owner, state.ownerWatch)
        }
        oldWatch?.cancel()
        notify(.ownershipChanged(from: old?.id, to: player?.id))
        old?.publish(FullscreenEvent.ownershipChanged(owner: player?.id))
        player?.publish(FullscreenEvent.ownershipChanged(owner: player?.id))
    }

    /// Frees the policy at once when its owner shut down or was dropped, without waiting for the
    /// owner's last event to reach the policy's handler (which then finds nothing to do).
    private func reapGoneOwner() {
        let (id, player) = state.withLock { ($0.ownerID, $0.owner) }
        guard let id, player.map({ $0.isShutDown }) ?? true else { return }
        ownerShutDown(id)
    }

    /// The owner's last event arrived (or the owner is found gone): the policy is free.
    private func ownerShutDown(_ id: PlayerID) {
        let (owned, wasFullscreen, watch) = state.withLock { state -> (Bool, Bool, PlayerSubscription?) in
            guard state.ownerID == id else { return (false, false, nil) }
            defer {
                state.ownerReference = WeakReference(nil)
                state.ownerID = nil
                state.ownerWatch = nil
                state.isFullscreen = false
            }
            return (true, state.isFullscreen, state.ownerWatch)
        }
        guard owned else { return }
        watch?.cancel()
        if wasFullscreen { notify(.fullscreenChanged(player: id, isFullscreen: false)) }
        notify(.ownershipChanged(from: id, to: nil))
    }

    private func notify(_ event: FullscreenPolicyEvent) {
        guard state.withLock({ $0.delegate.object != nil }) else { return }
        delegateQueue.async { [self] in
            delegate?.fullscreenPolicy(self, didEmit: event)
        }
    }
}
