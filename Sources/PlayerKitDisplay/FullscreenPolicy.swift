import PlayerKitCore
import PlayerKitSupport

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
///   non-owner's ``/PlayerKitCore/PlayerCommand/setFullscreen(_:)`` (or `send(.setFullscreen(true))`) throws
///   ``/PlayerKitCore/PlayerError/fullscreenRefused(_:reason:)`` naming the owner, and nothing changes.
/// * Paths nobody can refuse beforehand (a key in mpv's own window, the window manager,
///   ``/PlayerKitCore/Player/setProperty(_:to:)``, ``/PlayerKitCore/Player/command(_:)``) reach the
///   policy as the member's ``/PlayerKitCore/PlayerEvent/fullscreenStateChanged(_:)``: a non-owner that
///   went fullscreen is taken out again (``FullscreenEvent/fullscreenUndone(owner:)``).
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
/// * `orientationControlsFullscreen`: a landscape ``setOrientation(_:)`` enters fullscreen, a
///   portrait one leaves it.
/// * `fullscreenControlsOrientation`: entering fullscreen in portrait asks the app to turn to
///   landscape, with ``FullscreenEvent/orientationRequested(_:)`` on the owner; the app decides how.
///
/// Entering fullscreen calls ``/PlayerKitCore/PlayerCommand/setFullscreen(_:)`` on the owner, so a player with a
/// window really goes fullscreen; a headless player keeps the setting.
///
/// **Events.** The policy reports through its players' own pipelines, keyed by player ID, as
/// ``FullscreenEvent``s: to each player's delegate, bus subscribers of its ID, async sequences and
/// NotificationCenter. To hear the whole policy, subscribe to its members' IDs (or to every
/// player) for the one kind of every ``FullscreenEvent``, `.fullscreenPolicy`. Events are
/// published in the order the policy decided them. An owner that shuts down frees the policy
/// with no event of its own: its ``/PlayerKitCore/PlayerEvent/shutDown`` is its last.
///
/// Written, as every PlayerKit feature, against the core's public API only.
///
/// **Threading.** Every method may be called from any thread, concurrently. The policy's state
/// is behind one lock, taken for single steps that decide (who owns the policy, what to announce,
/// who must leave fullscreen); what a step decides (a player entering or leaving fullscreen, an
/// event) is done after the lock is released, so no lock is held while mpv is waited for.
/// Ownership changes are atomic: of any number of racing claims, exactly one wins. A race
/// between a call and a path nobody can refuse is settled by the policy's rule when it hears the
/// member's fullscreen change: a non-owner in fullscreen is taken out again.
/// * The methods that change fullscreen (``enterFullscreen(_:)``, ``exitFullscreen(_:)``,
///   ``release(_:)``, ``transfer(from:to:)``, ``setOrientation(_:)``, and ``claim(_:)`` or
///   ``remove(_:)`` when they take a member out of fullscreen) are async: they return once the
///   players' changes are made, as ``/PlayerKitCore/PlayerCommand/setFullscreen(_:)`` does, and no
///   thread waits meanwhile. ``add(_:)`` never waits: it sends the change it makes.
/// * The policy hears its members' fullscreen changes and shutdowns in `.immediate` bus
///   handlers, on the thread that delivers the event (a player's event pump), and answers them
///   without waiting (``/PlayerKitCore/MediaPlayer/send(_:)``).
/// * Its answer as a member's arbiter (``refusal(ofFullscreen:for:)``) reads its state under the
///   lock and never waits.
public final class FullscreenPolicy: FullscreenArbiter, Sendable {
    /// A governed player and the subscription that tells the policy about it.
    fileprivate struct Member: Sendable {
        var reference: WeakReference<any MediaPlayer>
        var watch: PlayerSubscription
    }

    /// An event the policy decided, waiting to be published in order.
    fileprivate struct Outgoing: Sendable {
        let player: any MediaPlayer
        let event: FullscreenEvent
    }

    /// What a step decided and the caller carries out with no lock held.
    fileprivate enum Action: Sendable {
        /// Put the player in fullscreen or take it out, then settle its state.
        case setFullscreen(any MediaPlayer, Bool)
        /// Take a non-owner out of fullscreen and tell it who owns the policy.
        case undo(any MediaPlayer, owner: PlayerID)
    }

    fileprivate struct State: Sendable {
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
        /// Events decided and not yet published, in order; `publishing` while a thread
        /// publishes them.
        var outbox: [Outgoing] = []
        var publishing = false
        /// Members being taken out of fullscreen, with the owner to name: their
        /// `fullscreenUndone` is published when the policy sees them out (mpv applied it).
        var undoing: [PlayerID: PlayerID] = [:]
    }

    private let state: Locked<State>

    /// Creates a policy, for example one per screen or window group.
    /// - Parameters:
    ///   - orientationControlsFullscreen: landscape enters fullscreen, portrait leaves it (owner only).
    ///   - fullscreenControlsOrientation: entering fullscreen in portrait requests landscape.
    public init(orientationControlsFullscreen: Bool = false, fullscreenControlsOrientation: Bool = false) {
        state = Locked(State(
            orientationControlsFullscreen: orientationControlsFullscreen,
            fullscreenControlsOrientation: fullscreenControlsOrientation))
    }

    // MARK: Read-out and switches

    /// The owning player's ID, or nil. An owner that shut down (or was dropped) no longer owns
    /// the policy from the moment its shutdown began, even before the policy heard its last event.
    public var owner: PlayerID? {
        livingOwner?.id
    }
    /// Whether the owner is fullscreen: the owner's own state (``/PlayerKitCore/PlayerSnapshot/isFullscreen``),
    /// so it agrees with the player whatever path changed it. False when nobody owns the policy.
    public var isFullscreen: Bool { livingOwner?.snapshot.isFullscreen == true }
    /// The IDs of the players the policy governs, sorted.
    var members: [PlayerID] {
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

    /// Landscape enters fullscreen and portrait leaves it, for the owner only. Takes effect
    /// from the next ``setOrientation(_:)``.
    var orientationControlsFullscreen: Bool {
        get { state.withLock { $0.orientationControlsFullscreen } }
        set { state.withLock { $0.orientationControlsFullscreen = newValue } }
    }

    /// Entering fullscreen in portrait requests landscape from the app.
    var fullscreenControlsOrientation: Bool {
        get { state.withLock { $0.fullscreenControlsOrientation } }
        set { state.withLock { $0.fullscreenControlsOrientation = newValue } }
    }

    // MARK: Members

    /// Puts `player` under the policy: from now on only the owner may be fullscreen among the
    /// members, whatever path fullscreen takes. A player already fullscreen while another member
    /// owns the policy is taken out of fullscreen; while the policy is free, it becomes the owner.
    /// Adding a member again does nothing. Never waits: a player taken out of fullscreen is
    /// sent the change (``/PlayerKitCore/MediaPlayer/send(_:)``), and its
    /// ``/PlayerKitCore/PlayerEvent/fullscreenStateChanged(_:)`` follows once mpv made it.
    /// - Throws: ``FullscreenPolicyError/governedByAnotherPolicy(_:)`` or
    ///   ``FullscreenPolicyError/playerShutDown(_:)``; nothing changes.
    public func add(_ player: any MediaPlayer) throws(FullscreenPolicyError) {
        send(try admit(player, settling: true))
    }

    /// Lets `player` go: the policy no longer governs it. The owner leaves fullscreen and the
    /// policy becomes free first (as ``release(_:)``). Removing a player that is no member does
    /// nothing.
    public func remove(_ player: any MediaPlayer) async {
        if state.withLock({ $0.ownerID == player.id && $0.owner === player }) {
            await leave(player)
            await step { state in
                guard state.ownerID == player.id, state.owner === player else { return [] }
                state.setOwner(nil)
                return []
            }
        }
        let watch = state.withLock { state -> PlayerSubscription? in
            guard let member = state.members[player.id], member.reference.object === player else { return nil }
            state.members[player.id] = nil
            state.undoing[player.id] = nil
            return member.watch
        }
        watch?.cancel()
        player.setFullscreenArbiter(nil, replacing: self)
        publishOutbox()
    }

    // MARK: Ownership

    /// Makes `player` the owner. Succeeds when the policy is free or `player` already owns it.
    /// `player` becomes a member either way.
    /// - Throws: ``FullscreenPolicyError/ownedByAnotherPlayer(owner:requester:)`` (nothing
    ///   changes), ``FullscreenPolicyError/governedByAnotherPolicy(_:)`` or
    ///   ``FullscreenPolicyError/playerShutDown(_:)``.
    public func claim(_ player: any MediaPlayer) async throws(FullscreenPolicyError) {
        guard !player.isShutDown else { throw .playerShutDown(player.id) }
        _ = try admit(player, settling: false)
        let decided = state.withLock { state -> Result<[Action], FullscreenPolicyError> in
            state.reapGoneOwner()
            if let current = state.ownerID {
                guard current == player.id else { return .failure(.ownedByAnotherPlayer(owner: current, requester: player.id)) }
                return .success([])
            }
            state.setOwner(player)
            return .success(state.settle(player))
        }
        publishOutbox()
        await carryOut(try decided.get())
    }

    /// Frees the policy; the owner leaves fullscreen first. It stays a member.
    /// - Throws: ``FullscreenPolicyError/notOwner(_:owner:)`` when `player` is not the owner.
    public func release(_ player: any MediaPlayer) async throws(FullscreenPolicyError) {
        try requireOwner(player)
        await leave(player)
        await step { state in
            guard state.ownerID == player.id, state.owner === player else { return [] }
            state.setOwner(nil)
            // Back in fullscreen meanwhile (mpv's window, the window manager): the free policy's
            // rule makes it the owner again.
            return state.settle(player)
        }
    }

    /// Hands the policy from its owner to another player (which becomes a member). If the owner
    /// was fullscreen it leaves fullscreen, and the new owner enters it when the switches say so
    /// (orientation controls fullscreen and the screen is in landscape).
    /// - Throws: ``FullscreenPolicyError/notOwner(_:owner:)`` when `owner` does not own the
    ///   policy (also when another call took it meanwhile), ``FullscreenPolicyError/playerShutDown(_:)``
    ///   when `newOwner` is shut down, ``FullscreenPolicyError/governedByAnotherPolicy(_:)``.
    public func transfer(from owner: any MediaPlayer, to newOwner: any MediaPlayer) async throws(FullscreenPolicyError) {
        try requireOwner(owner)
        guard !newOwner.isShutDown else { throw .playerShutDown(newOwner.id) }
        if owner === newOwner { return }
        _ = try admit(newOwner, settling: false)
        await leave(owner)
        let decided = state.withLock { state -> Result<[Action], FullscreenPolicyError> in
            state.reapGoneOwner()
            guard state.ownerID == owner.id, state.owner === owner else {
                return .failure(.notOwner(owner.id, owner: state.ownerID))
            }
            state.setOwner(newOwner)
            // The old owner back in fullscreen meanwhile is taken out again.
            var actions = state.settle(owner)
            if state.orientationControlsFullscreen, state.orientation.isLandscape, newOwner.snapshot.isFullscreen != true {
                actions.append(.setFullscreen(newOwner, true))
            } else {
                actions += state.settle(newOwner)
            }
            return .success(actions)
        }
        publishOutbox()
        await carryOut(try decided.get())
    }

    // MARK: Fullscreen

    /// Puts `player` in fullscreen. When nobody owns the policy, `player` claims it first.
    /// - Throws: ``FullscreenPolicyError/ownedByAnotherPlayer(owner:requester:)`` when another
    ///   player owns the policy (nothing changes; also when another call took the policy while
    ///   `player` was entering), ``FullscreenPolicyError/governedByAnotherPolicy(_:)``
    ///   or ``FullscreenPolicyError/playerShutDown(_:)``.
    public func enterFullscreen(_ player: any MediaPlayer) async throws(FullscreenPolicyError) {
        try await claim(player)
        if player.snapshot.isFullscreen != true {
            do {
                // The player is the owner, so the policy (its arbiter) lets the request through,
                // unless another call took the policy meanwhile.
                try await player.perform(.setFullscreen(true))
            } catch {
                if player.isShutDown { throw .playerShutDown(player.id) }
                if let current = owner, current != player.id {
                    throw .ownedByAnotherPlayer(owner: current, requester: player.id)
                }
                return
            }
        }
        await step { $0.settle(player) }
    }

    /// Takes `player` out of fullscreen.
    /// - Throws: ``FullscreenPolicyError/notOwner(_:owner:)`` when `player` is not the owner.
    public func exitFullscreen(_ player: any MediaPlayer) async throws(FullscreenPolicyError) {
        try requireOwner(player)
        await leave(player)
    }

    // MARK: Arbitration

    /// The policy's answer as a member's ``/PlayerKitCore/FullscreenArbiter``: a player that is not the
    /// owner may not enter fullscreen while another player owns the policy (the reason names
    /// the owner); leaving fullscreen is always allowed, and so is entering it while the policy
    /// is free (the player then becomes the owner once the policy hears the change). Reads the
    /// policy's state under its lock; never waits.
    public func refusal(ofFullscreen fullscreen: Bool, for player: any MediaPlayer) -> String? {
        guard fullscreen, let owner = livingOwner, owner !== player else { return nil }
        return "player \"\(owner.id)\" owns the fullscreen policy"
    }

    // MARK: Orientation

    /// Reports the screen's orientation. With `orientationControlsFullscreen` on, the owner
    /// enters fullscreen in landscape and leaves it in portrait (returning once it has); nobody
    /// else changes.
    public func setOrientation(_ orientation: Orientation) async {
        await carryOut(orientationStep(orientation))
    }

    /// Follows an orientation source until it ends, is unavailable, or the returned task is
    /// cancelled; the caller owns the task. The task's error is the source's (for example
    /// ``FullscreenPolicyError/orientationSourceUnavailable(_:)``). Each orientation is applied as
    /// ``setOrientation(_:)`` applies it.
    @discardableResult
    public func follow<Source: OrientationSource>(_ source: Source) -> Task<Void, any Error> {
        Task {
            for try await orientation in source {
                try Task.checkCancellation()
                await setOrientation(orientation)
            }
        }
    }

    // MARK: Steps and actions

    /// Records the orientation and decides what it changes for the owner.
    private func orientationStep(_ orientation: Orientation) -> [Action] {
        defer { publishOutbox() }
        return state.withLock { state -> [Action] in
            state.reapGoneOwner()
            guard state.orientation != orientation else { return [] }
            state.orientation = orientation
            guard let owner = state.owner else { return [] }
            state.outbox.append(Outgoing(player: owner, event: .orientationChanged(orientation)))
            guard state.orientationControlsFullscreen else { return [] }
            let fullscreen = owner.snapshot.isFullscreen == true
            if orientation.isLandscape, !fullscreen { return [.setFullscreen(owner, true)] }
            if !orientation.isLandscape, fullscreen { return [.setFullscreen(owner, false)] }
            return []
        }
    }

    /// Runs one step under the lock, publishes what it decided, then carries out its actions,
    /// awaiting each (the public methods: they return once their changes are made).
    private func step(_ body: (inout State) -> [Action]) async {
        let actions = state.withLock(body)
        publishOutbox()
        await carryOut(actions)
    }

    /// ``step(_:)`` for the policy's event handlers, which run on a player's event pump: the
    /// actions are sent (``/PlayerKitCore/MediaPlayer/send(_:)``), never awaited.
    private func stepSending(_ body: (inout State) -> [Action]) {
        let actions = state.withLock(body)
        publishOutbox()
        send(actions)
    }

    /// Carries out what a step decided by sending each change, with no lock held.
    private func send(_ actions: [Action]) {
        for action in actions {
            switch action {
            case .setFullscreen(let player, let fullscreen):
                do { try player.send(.setFullscreen(fullscreen)) } catch { continue }  // refused or shut down meanwhile
                stepSending { $0.settle(player) }
            case .undo(let player, _):
                // Its change event settles it once mpv applied it.
                do { try player.send(.setFullscreen(false)) } catch {
                    state.withLock { _ = $0.undoing.removeValue(forKey: player.id) }  // shut down meanwhile
                }
            }
        }
    }

    /// Carries out what a step decided, in order, with no lock held, awaiting each change.
    private func carryOut(_ actions: [Action]) async {
        for action in actions {
            switch action {
            case .setFullscreen(let player, let fullscreen):
                do { try await player.perform(.setFullscreen(fullscreen)) } catch { continue }  // refused or shut down meanwhile
                await step { $0.settle(player) }
            case .undo(let player, _):
                do {
                    try await player.perform(.setFullscreen(false))
                } catch {
                    state.withLock { _ = $0.undoing.removeValue(forKey: player.id) }  // shut down meanwhile
                    continue
                }
                await step { $0.settle(player) }  // the read-out shows it out now
            }
        }
    }

    /// Takes `player` out of fullscreen (if it is in) and announces it while it owns the policy.
    private func leave(_ player: any MediaPlayer) async {
        if player.snapshot.isFullscreen == true { try? await player.perform(.setFullscreen(false)) }
        await step { $0.settle(player) }
    }

    private func requireOwner(_ player: any MediaPlayer) throws(FullscreenPolicyError) {
        let current = state.withLock { state -> PlayerID? in
            state.reapGoneOwner()
            return state.ownerID
        }
        guard current == player.id else { throw .notOwner(player.id, owner: current) }
    }

    /// Makes `player` a member: the policy becomes its fullscreen arbiter and hears its
    /// fullscreen changes and its shutdown. `settling`: apply the rule to its state now.
    /// Returns what settling decided, for the caller to carry out.
    private func admit(_ player: any MediaPlayer, settling: Bool) throws(FullscreenPolicyError) -> [Action] {
        guard !player.isShutDown else { throw .playerShutDown(player.id) }
        if state.withLock({ $0.isMember(player) }) { return [] }
        guard player.setFullscreenArbiter(self, replacing: nil) || player.fullscreenArbiter === self else {
            throw .governedByAnotherPolicy(player.id)
        }
        let id = player.id
        let watch = player.eventBus.subscribe(
            to: id, kinds: [.fullscreenStateChanged, .shutDown], delivery: .immediate
        ) { [weak self, weak player] record in
            guard let self else { return }
            if record.event == .shutDown {
                memberGone(id)
            } else if let player {
                stepSending { $0.settle(player) }
            }
        }
        let (unused, actions) = state.withLock { state -> (PlayerSubscription?, [Action]) in
            // Another call added it meanwhile: keep that subscription.
            if state.isMember(player) { return (watch, []) }
            let replaced = state.members[id]?.watch
            state.members[id] = Member(reference: WeakReference(player), watch: watch)
            return (replaced, settling ? state.settle(player) : [])
        }
        unused?.cancel()
        publishOutbox()
        // Its shutdown may have begun before the subscription: then no event will say so.
        if player.isShutDown {
            memberGone(id)
            return []
        }
        return actions
    }

    /// A member's last event arrived: it leaves the policy (and frees it if it owned it).
    private func memberGone(_ id: PlayerID) {
        let watch = state.withLock { state -> PlayerSubscription? in
            state.reapGoneOwner()
            guard let member = state.members[id], member.reference.object.map({ $0.isShutDown }) ?? true else { return nil }
            state.members[id] = nil
            state.undoing[id] = nil
            return member.watch
        }
        watch?.cancel()
    }

    /// Publishes the decided events in order. One thread at a time publishes; a thread that
    /// finds another publishing leaves its events to it (so a subscriber that calls back into the
    /// policy never waits for itself).
    private func publishOutbox() {
        let starts = state.withLock { state -> Bool in
            guard !state.publishing, !state.outbox.isEmpty else { return false }
            state.publishing = true
            return true
        }
        guard starts else { return }
        while true {
            let batch = state.withLock { state -> [Outgoing] in
                defer { state.outbox.removeAll() }
                if state.outbox.isEmpty { state.publishing = false }
                return state.outbox
            }
            if batch.isEmpty { return }
            for outgoing in batch { outgoing.player.publish(outgoing.event) }
        }
    }
}

extension FullscreenPolicy.State {
    func isMember(_ player: any MediaPlayer) -> Bool {
        members[player.id]?.reference.object === player
    }

    /// Applies the rule to a member's fullscreen state as it is now (its read-out: the newest
    /// value mpv reported or a setter set). The owner's changes are followed and announced; a
    /// non-owner in fullscreen becomes the owner of a free policy, or must be taken out.
    mutating func settle(_ player: any MediaPlayer) -> [FullscreenPolicy.Action] {
        guard !player.isShutDown, isMember(player) else { return [] }
        reapGoneOwner()
        let fullscreen = player.snapshot.isFullscreen == true
        if owner === player {
            undoing[player.id] = nil
            if announcedFullscreen != fullscreen { announce(fullscreen, on: player) }
        } else if fullscreen {
            if let ownerID {
                // Asked again on every change heard while it stays in: setting it out is idempotent.
                undoing[player.id] = ownerID
                return [.undo(player, owner: ownerID)]
            }
            undoing[player.id] = nil
            setOwner(player)
            announce(true, on: player)
        } else if let owner = undoing.removeValue(forKey: player.id) {
            // Out again, as the policy asked: say so now that it is true.
            outbox.append(.init(player: player, event: .fullscreenUndone(owner: owner)))
        }
        return []
    }

    /// Records and queues the owner's entering or leaving fullscreen; entering in portrait asks
    /// the app for landscape when ``FullscreenPolicy/fullscreenControlsOrientation`` is on.
    mutating func announce(_ fullscreen: Bool, on player: any MediaPlayer) {
        announcedFullscreen = fullscreen
        outbox.append(.init(player: player, event: .fullscreenChanged(fullscreen)))
        if fullscreen, fullscreenControlsOrientation, !orientation.isLandscape {
            outbox.append(.init(player: player, event: .orientationRequested(.landscapeLeft)))
        }
    }

    /// Changes the owner and queues the news for the old and the new one (an old owner that
    /// was announced in fullscreen is announced out of it first: it is no longer the owner).
    mutating func setOwner(_ player: (any MediaPlayer)?) {
        let old = owner
        if let old, announcedFullscreen { outbox.append(.init(player: old, event: .fullscreenChanged(false))) }
        ownerReference = WeakReference(player)
        ownerID = player?.id
        announcedFullscreen = false
        if let old { outbox.append(.init(player: old, event: .ownershipChanged(owner: player?.id))) }
        if let player { outbox.append(.init(player: player, event: .ownershipChanged(owner: player.id))) }
    }

    /// Frees the policy at once when its owner shut down or was dropped, without waiting for the
    /// owner's last event to reach the policy's handler (which then finds nothing to do). A
    /// shut-down player hears no more events, so nothing is queued.
    mutating func reapGoneOwner() {
        guard ownerID != nil, owner.map({ $0.isShutDown }) ?? true else { return }
        ownerReference = WeakReference(nil)
        ownerID = nil
        announcedFullscreen = false
    }
}
