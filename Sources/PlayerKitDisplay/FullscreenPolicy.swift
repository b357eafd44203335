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
    /// A player the policy governs entered fullscreen by a path the policy could not refuse
    /// beforehand (mpv's own window, the window manager, ``/PlayerKitCore/Player/setProperty(_:to:)``
    /// or ``/PlayerKitCore/Player/command(_:)``) while `owner` owns the policy, and the policy took
    /// it out of fullscreen again.
    case fullscreenUndone(player: PlayerID, owner: PlayerID)
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
        case .fullscreenUndone(let player, let owner): return "fullscreenUndone(\(player), owner \(owner))"
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
/// sends them all fullscreen, and two players are never fullscreen at once.
///
/// **Members.** A policy governs the players it is given: with ``add(_:)``, and every player
/// that asks it for anything (``claim(_:)``, ``enterFullscreen(_:)``, the new owner of
/// ``transfer(from:to:)``, even when the request is refused). Give it every player that shares
/// the screen. A player is governed by one policy at most (``/PlayerKitCore/Player/fullscreenArbiter``);
/// ``remove(_:)`` lets it go. A member that shuts down (or is dropped) leaves at once.
///
/// **Ownership.** At most one member owns the policy. ``claim(_:)`` succeeds when the policy is
/// free or already held by the same player; any other player's claim fails with
/// ``FullscreenPolicyError/ownedByAnotherPlayer(owner:requester:)`` and changes nothing. The owner
/// can ``release(_:)`` it or ``transfer(from:to:)`` it. When the owner shuts down (or is dropped),
/// the policy frees itself.
///
/// **The rule: only the owner is ever fullscreen, whatever path fullscreen takes.** Requests are
/// refused, never taken over: the owner keeps fullscreen until the app (or the owner) gives it up.
/// * Through the policy: ``enterFullscreen(_:)`` by a non-owner throws
///   ``FullscreenPolicyError/ownedByAnotherPlayer(owner:requester:)``.
/// * Through the player: the policy is each member's ``/PlayerKitCore/FullscreenArbiter``, so a
///   non-owner's ``/PlayerKitCore/Player/setFullscreen(_:)`` (or `send(.setFullscreen(true))`) throws
///   ``/PlayerKitCore/PlayerError/fullscreenRefused(_:reason:)`` naming the owner, and nothing changes.
/// * Paths nobody can refuse beforehand (a key in mpv's own window, the window manager,
///   ``/PlayerKitCore/Player/setProperty(_:to:)``, ``/PlayerKitCore/Player/command(_:)``) reach the
///   policy as the member's ``/PlayerKitCore/PlayerEvent/fullscreenStateChanged(_:)``: a non-owner that
///   went fullscreen is taken out again (``FullscreenPolicyEvent/fullscreenUndone(player:owner:)``).
///   The two players are both fullscreen only until the policy has heard the change and set
///   the property back: until mpv reports the change (a command's change at mpv's next core
///   iteration), then one event delivery and one mpv property write. Measured from the call:
///   about 1 ms after ``/PlayerKitCore/Player/setProperty(_:to:)``, 0.1 to 0.16 s after a
///   `set` or `cycle` command.
/// * The owner may enter and leave fullscreen by any path; the policy follows it (its events
///   say so) and ``isFullscreen`` is the owner's own state.
/// * While the policy is free, a member that goes fullscreen by any path becomes the owner, as
///   ``enterFullscreen(_:)`` would make it (from mpv's side: once the policy heard it, as above).
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
/// it returns; the policy's own event handlers (members' fullscreen changes and shutdowns) run
/// there too, never on a player's event pump. It is safe to call back into the policy from its
/// delegate or from a player's event handler. Its answer as a member's arbiter
/// (``refusal(ofFullscreen:for:)``) reads its state under a lock and never waits.
public final class FullscreenPolicy: FullscreenArbiter, Sendable {
    /// A policy for apps with one screen.
    public static let shared = FullscreenPolicy()

    /// A governed player and the subscription that tells the policy about it.
    private struct Member: Sendable {
        var reference: WeakReference<any MediaPlayer>
        var watch: PlayerSubscription
    }

    private struct State: Sendable {
        /// Held weakly: owning the policy must not keep a dropped player alive.
        var ownerReference = WeakReference<any MediaPlayer>(nil)
        var owner: (any MediaPlayer)? { ownerReference.object }
        var ownerID: PlayerID?
        /// The owner's fullscreen state as the policy last announced it in its events.
        var announcedFullscreen = false
        var members: [PlayerID: Member] = [:]
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
        livingOwner?.id
    }
    /// Whether the owner is fullscreen: the owner's own state (``/PlayerKitCore/Player/isFullscreen``),
    /// so it agrees with the player whatever path changed it. False when nobody owns the policy.
    public var isFullscreen: Bool { livingOwner?.isFullscreen == true }
    /// The IDs of the players the policy governs, sorted.
    public var members: [PlayerID] {
        state.withLock { state in
            state.members.filter { $0.value.reference.object.map { !$0.isShutDown } ?? false }.keys.sorted()
        }
    }
    /// The last orientation reported (landscape left until one is).
    public var orientation: Orientation { state.withLock { $0.orientation } }

    private var livingOwner: (any MediaPlayer)? {
        let (id, player) = state.withLock { ($0.ownerID, $0.owner) }
        guard let id, let player, player.id == id, !player.isShutDown else { return nil }
        return player
    }

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

    // MARK: Members

    /// Puts `player` under the policy: from now on only the owner may be fullscreen among the
    /// members, whatever path fullscreen takes. A player already fullscreen while another member
    /// owns the policy is taken out of fullscreen; while the policy is free, it becomes the owner.
    /// Adding a member again does nothing.
    /// - Throws: ``FullscreenPolicyError/governedByAnotherPolicy(_:)`` or
    ///   ``FullscreenPolicyError/playerShutDown(_:)``; nothing changes.
    public func add(_ player: any MediaPlayer) throws(FullscreenPolicyError) {
        try queue.sync { () throws(FullscreenPolicyError) in try addOnQueue(player) }
    }

    /// Lets `player` go: the policy no longer governs it. The owner leaves fullscreen and the
    /// policy becomes free first (as ``release(_:)``). Removing a player that is no member does
    /// nothing.
    public func remove(_ player: any MediaPlayer) {
        queue.sync {
            reapGoneOwner()
            if state.withLock({ $0.ownerID == player.id && $0.owner === player }) {
                leave(player)
                setOwner(nil)
            }
            let member = state.withLock { state -> Member? in
                guard let member = state.members[player.id], member.reference.object === player else { return nil }
                state.members[player.id] = nil
                return member
            }
            member?.watch.cancel()
            player.setFullscreenArbiter(nil, replacing: self)
        }
    }

    // MARK: Ownership

    /// Makes `player` the owner. Succeeds when the policy is free or `player` already owns it.
    /// `player` becomes a member either way.
    /// - Throws: ``FullscreenPolicyError/ownedByAnotherPlayer(owner:requester:)`` (nothing
    ///   changes), ``FullscreenPolicyError/governedByAnotherPolicy(_:)`` or
    ///   ``FullscreenPolicyError/playerShutDown(_:)``.
    public func claim(_ player: any MediaPlayer) throws(FullscreenPolicyError) {
        try queue.sync { () throws(FullscreenPolicyError) in try claimOnQueue(player) }
    }

    /// Frees the policy; the owner leaves fullscreen first. It stays a member.
    /// - Throws: ``FullscreenPolicyError/notOwner(_:owner:)`` when `player` is not the owner.
    public func release(_ player: any MediaPlayer) throws(FullscreenPolicyError) {
        try queue.sync { () throws(FullscreenPolicyError) in
            try requireOwner(player)
            leave(player)
            setOwner(nil)
        }
    }

    /// Hands the policy from its owner to another player (which becomes a member). If the owner
    /// was fullscreen it leaves fullscreen, and the new owner enters it when the switches say so
    /// (orientation controls fullscreen and the screen is in landscape).
    /// - Throws: ``FullscreenPolicyError/notOwner(_:owner:)`` when `owner` does not own the
    ///   policy, ``FullscreenPolicyError/playerShutDown(_:)`` when `newOwner` is shut down,
    ///   ``FullscreenPolicyError/governedByAnotherPolicy(_:)``.
    public func transfer(from owner: any MediaPlayer, to newOwner: any MediaPlayer) throws(FullscreenPolicyError) {
        try queue.sync { () throws(FullscreenPolicyError) in
            try requireOwner(owner)
            guard !newOwner.isShutDown else { throw .playerShutDown(newOwner.id) }
            if owner === newOwner { return }
            try addOnQueue(newOwner, reconciling: false)
            leave(owner)
            setOwner(newOwner)
            let (follows, landscape) = state.withLock { ($0.orientationControlsFullscreen, $0.orientation.isLandscape) }
            if follows, landscape { enter(newOwner) } else { reconcile(newOwner) }
        }
    }

    // MARK: Fullscreen

    /// Puts `player` in fullscreen. When nobody owns the policy, `player` claims it first.
    /// - Throws: ``FullscreenPolicyError/ownedByAnotherPlayer(owner:requester:)`` when another
    ///   player owns the policy (nothing changes), ``FullscreenPolicyError/governedByAnotherPolicy(_:)``
    ///   or ``FullscreenPolicyError/playerShutDown(_:)``.
    public func enterFullscreen(_ player: any MediaPlayer) throws(FullscreenPolicyError) {
        try queue.sync { () throws(FullscreenPolicyError) in
            try claimOnQueue(player)
            enter(player)
        }
    }

    /// Takes `player` out of fullscreen.
    /// - Throws: ``FullscreenPolicyError/notOwner(_:owner:)`` when `player` is not the owner.
    public func exitFullscreen(_ player: any MediaPlayer) throws(FullscreenPolicyError) {
        try queue.sync { () throws(FullscreenPolicyError) in
            try requireOwner(player)
            leave(player)
        }
    }

    // MARK: Arbitration

    /// The policy's answer as a member's ``/PlayerKitCore/FullscreenArbiter``: a player that is not the
    /// owner may not enter fullscreen while another player owns the policy (the reason names
    /// the owner); leaving fullscreen is always allowed, and so is entering it while the policy
    /// is free (the player then becomes the owner once the policy hears the change). Reads the
    /// policy's state under a lock; never waits.
    public func refusal(ofFullscreen fullscreen: Bool, for player: any MediaPlayer) -> String? {
        guard fullscreen, let owner = livingOwner, owner !== player else { return nil }
        return "player \"\(owner.id)\" owns the fullscreen policy"
    }

    // MARK: Orientation

    /// Reports the screen's orientation. With ``orientationControlsFullscreen`` on, the owner
    /// enters fullscreen in landscape and leaves it in portrait; nobody else changes.
    public func setOrientation(_ orientation: Orientation) {
        queue.sync {
            reapGoneOwner()
            let (changed, owner, follows) = state.withLock { state in
                defer { state.orientation = orientation }
                return (state.orientation != orientation, state.owner, state.orientationControlsFullscreen)
            }
            guard changed else { return }
            notify(.orientationChanged(orientation))
            owner?.publish(FullscreenEvent.orientationChanged(orientation))
            guard follows, let owner else { return }
            let fullscreen = owner.isFullscreen == true
            if orientation.isLandscape, !fullscreen { enter(owner) }
            if !orientation.isLandscape, fullscreen { leave(owner) }
        }
    }

    /// Follows an orientation source until it ends, is unavailable, or the returned task is
    /// cancelled. The task's error is the source's (for example
    /// ``FullscreenPolicyError/orientationSourceUnavailable(_:)``). Each orientation is applied
    /// on the policy's own queue (entering fullscreen waits for mpv there), while the task
    /// suspends: no thread of Swift's cooperative pool waits for mpv.
    @discardableResult
    public func follow<Source: OrientationSource>(_ source: Source) -> Task<Void, any Error> {
        Task {
            try await BlockingCallCheck.enforcing { () async throws in
                for try await orientation in source {
                    try Task.checkCancellation()
                    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                        queue.dispatchQueue.async {
                            self.setOrientation(orientation)
                            continuation.resume()
                        }
                    }
                }
            }
        }
    }

    // MARK: Internals (on `queue`)

    private func isMember(_ player: any MediaPlayer) -> Bool {
        state.withLock { $0.members[player.id]?.reference.object === player }
    }

    /// Makes `player` a member: the policy becomes its fullscreen arbiter and hears its
    /// fullscreen changes and its shutdown. `reconciling`: apply the rule to its state now.
    private func addOnQueue(_ player: any MediaPlayer, reconciling: Bool = true) throws(FullscreenPolicyError) {
        guard !player.isShutDown else { throw .playerShutDown(player.id) }
        if isMember(player) { return }
        guard player.setFullscreenArbiter(self, replacing: nil) || player.fullscreenArbiter === self else {
            throw .governedByAnotherPolicy(player.id)
        }
        let id = player.id
        let watch = player.eventBus.subscribe(
            to: id, kinds: [.fullscreenStateChanged, .shutDown], delivery: .queue(queue.dispatchQueue)
        ) { [weak self, weak player] record in
            guard let self else { return }
            if record.event == .shutDown {
                memberGone(id)
            } else if let player {
                reconcile(player)
            }
        }
        let replaced = state.withLock { state -> Member? in
            defer { state.members[id] = Member(reference: WeakReference(player), watch: watch) }
            return state.members[id]
        }
        replaced?.watch.cancel()
        // Its shutdown may have begun before the subscription: then no event will say so.
        if player.isShutDown { memberGone(id) } else if reconciling { reconcile(player) }
    }

    private func claimOnQueue(_ player: any MediaPlayer) throws(FullscreenPolicyError) {
        guard !player.isShutDown else { throw .playerShutDown(player.id) }
        try addOnQueue(player, reconciling: false)
        reapGoneOwner()
        let current = state.withLock { $0.ownerID }
        if current == player.id { return }
        if let current { throw .ownedByAnotherPlayer(owner: current, requester: player.id) }
        setOwner(player)
        reconcile(player)
    }

    private func requireOwner(_ player: any MediaPlayer) throws(FullscreenPolicyError) {
        reapGoneOwner()
        let current = state.withLock { $0.ownerID }
        guard current == player.id else { throw .notOwner(player.id, owner: current) }
    }

    /// Applies the rule to a member's fullscreen state as it is now (its read-out, the newest
    /// value mpv reported or a setter set): the owner's changes are followed and announced; a
    /// non-owner in fullscreen becomes the owner of a free policy, or is taken out of fullscreen.
    private func reconcile(_ player: any MediaPlayer) {
        guard !player.isShutDown, isMember(player) else { return }
        reapGoneOwner()
        let fullscreen = player.isFullscreen == true
        let (ownerID, owner, announced) = state.withLock { ($0.ownerID, $0.owner, $0.announcedFullscreen) }
        if owner === player {
            if announced != fullscreen { announce(fullscreen, on: player) }
        } else if fullscreen {
            if let ownerID {
                do {
                    try player.setFullscreen(false)
                } catch {
                    return  // shut down meanwhile: nothing to undo
                }
                notify(.fullscreenUndone(player: player.id, owner: ownerID))
                player.publish(FullscreenEvent.fullscreenUndone(owner: ownerID))
            } else {
                setOwner(player)
                announce(true, on: player)
            }
        }
    }

    /// Puts the owner in fullscreen (if it is not) and announces it.
    private func enter(_ player: any MediaPlayer) {
        if player.isFullscreen != true {
            // Blocking, so the window's state is settled when the policy's call returns; this
            // runs on the policy's queue, never on a player's event pump. The player is the
            // owner, so the policy (its arbiter) lets the request through.
            do { try player.setFullscreen(true) } catch { return }
        }
        if !state.withLock({ $0.announcedFullscreen }) { announce(true, on: player) }
    }

    /// Takes the owner out of fullscreen (if it is in) and announces it.
    private func leave(_ player: any MediaPlayer) {
        if player.isFullscreen == true { try? player.setFullscreen(false) }
        if state.withLock({ $0.announcedFullscreen }) { announce(false, on: player) }
    }

    /// Tells the delegate and the owner that the owner entered or left fullscreen; entering in
    /// portrait asks the app for landscape when ``fullscreenControlsOrientation`` is on.
    private func announce(_ fullscreen: Bool, on player: any MediaPlayer) {
        let (portrait, asks) = state.withLock { state in
            state.announcedFullscreen = fullscreen
            return (!state.orientation.isLandscape, state.fullscreenControlsOrientation)
        }
        notify(.fullscreenChanged(player: player.id, isFullscreen: fullscreen))
        player.publish(FullscreenEvent.fullscreenChanged(fullscreen))
        if fullscreen, asks, portrait { notify(.orientationRequested(.landscapeLeft, player: player.id)) }
    }

    private func setOwner(_ player: (any MediaPlayer)?) {
        let old = state.withLock { state -> (any MediaPlayer)? in
            defer {
                state.ownerReference = WeakReference(player)
                state.ownerID = player?.id
                state.announcedFullscreen = false
            }
            return state.owner
        }
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

    /// A member's last event arrived: it leaves the policy (and frees it if it owned it).
    private func memberGone(_ id: PlayerID) {
        ownerShutDown(id)
        let member = state.withLock { state -> Member? in
            guard let member = state.members[id], member.reference.object.map({ $0.isShutDown }) ?? true else { return nil }
            state.members[id] = nil
            return member
        }
        member?.watch.cancel()
    }

    /// The owner's last event arrived (or the owner is found gone): the policy is free.
    private func ownerShutDown(_ id: PlayerID) {
        let (owned, wasFullscreen) = state.withLock { state -> (Bool, Bool) in
            guard state.ownerID == id, state.owner.map({ $0.isShutDown }) ?? true else { return (false, false) }
            defer {
                state.ownerReference = WeakReference(nil)
                state.ownerID = nil
                state.announcedFullscreen = false
            }
            return (true, state.announcedFullscreen)
        }
        guard owned else { return }
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
