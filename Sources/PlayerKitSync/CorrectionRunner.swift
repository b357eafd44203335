import PlayerKitCore

/// What every owner of a correction machine (``SyncGroup``, ``ClockFollower``, ``MultiView``)
/// does with it, written once: a step of the machine under the owner's lock, then its actions
/// carried out after the lock is released (Documentation/Architecture.md, "State machines are
/// pure").
///
/// Threading: ``machineStep(_:)`` takes the owner's lock and returns at once; ``runActions(_:players:)``
/// runs outside every lock, on the caller's thread, and never waits (commands are sent).
protocol CorrectionMachineOwner: AnyObject, Sendable {
    /// The clock the machine's wake-ups are scheduled on.
    var correctionClock: any MonotonicClock { get }
    /// Runs `body` on the owner's machine under the owner's lock and returns its actions with
    /// the members they may name; nothing once the owner is invalidated.
    func machineStep(_ body: (inout SyncMachine) -> [SyncMachine.Action]) -> (actions: [SyncMachine.Action], players: [PlayerID: any MediaPlayer])
    /// The machine gave up on a member (a live edge's judgement); owners without one ignore it.
    func machineDropped(_ id: PlayerID, reason: SyncEvent.DropReason?)
}

extension CorrectionMachineOwner {
    /// One step of the correction machine under the lock; its actions after it.
    func step(_ body: (inout SyncMachine) -> [SyncMachine.Action]) {
        let (actions, players) = machineStep(body)
        runActions(actions, players: players)
    }

    /// One step of the correction machine under the lock, its commands performed and awaited:
    /// each member's in the order decided, the members at the same time; the step's other
    /// actions (events, drops, wake-ups) run as ``runActions(_:players:)`` runs them, before.
    /// Returns once every member answered (each within ``/PlayerKitCore/MediaPlayer/perform(_:timeout:)``'s
    /// bound).
    /// - Throws: the first refusal, in the order the step named the members, of a member that
    ///   is still in the group (`isMember`); a member that left meanwhile is not a failure.
    func perform(_ body: (inout SyncMachine) -> [SyncMachine.Action],
                 isMember: @escaping @Sendable (PlayerID) -> Bool) async throws(PlayerError) {
        let (actions, players) = machineStep(body)
        var order: [PlayerID] = []
        var commands: [PlayerID: [PlayerCommand]] = [:]
        var others: [SyncMachine.Action] = []
        for action in actions {
            guard case .send(let id, let command) = action else { others.append(action); continue }
            if commands[id] == nil { order.append(id) }
            commands[id, default: []].append(command)
        }
        runActions(others, players: players)
        let failures = await withTaskGroup(of: (PlayerID, PlayerError?).self) { group in
            for id in order {
                guard let player = players[id], let list = commands[id] else { continue }
                group.addTask {
                    do throws(PlayerError) {
                        for command in list { try await player.perform(command) }
                        return (id, nil)
                    } catch {
                        return (id, error)
                    }
                }
            }
            var failures: [PlayerID: PlayerError] = [:]
            for await (id, error) in group { if let error { failures[id] = error } }
            return failures
        }
        for id in order {
            if let error = failures[id], isMember(id) { throw error }
        }
    }

    /// Carries out what the machine decided: commands sent (never waiting), events published on
    /// the member's ID, drops handed to the owner, wake-ups on the owner's clock.
    func runActions(_ actions: [SyncMachine.Action], players: [PlayerID: any MediaPlayer]) {
        for action in actions {
            switch action {
            case .send(let id, let command):
                try? players[id]?.send(command)
            case .publish(let id, let event):
                players[id]?.publish(event)
            case .drop(let id, let reason):
                machineDropped(id, reason: reason)
            case .wake(let instant):
                let clock = correctionClock
                clock.runOnce(at: instant) { [weak self] in
                    guard let self else { return }
                    let now = clock.now
                    self.step { $0.wake(at: now) }
                }
            }
        }
    }
}

/// What a group holds on one member to follow it: a per-frame observation (frame changes are
/// what the correction measures), a buffer observation (a member is seeked only within what it
/// has), and a subscription to the member's events, delivered immediately on the player's
/// pump. Cancelled as one.
struct MemberWatch: Sendable {
    private let frames: PropertyObservation
    private let buffer: PropertyObservation
    private let subscription: PlayerSubscription

    /// Starts following `player`: `handler` gets its events of `kinds`.
    init(_ player: any MediaPlayer, kinds: Set<PlayerEventKind>, handler: @escaping @Sendable (PlayerEventRecord) -> Void) {
        frames = player.observeEveryFrame()
        buffer = player.observeBufferedMedia()
        subscription = player.eventBus.subscribe(to: player.id, kinds: kinds, delivery: .immediate, handler: handler)
    }

    /// Stops following. Idempotent.
    func cancel() {
        subscription.cancel()
        frames.cancel()
        buffer.cancel()
    }
}
