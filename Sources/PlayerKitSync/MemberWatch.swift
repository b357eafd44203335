import PlayerKitCore

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
