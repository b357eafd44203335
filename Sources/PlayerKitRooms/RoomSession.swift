import PlayerKitCore

/// What a ``RoomFollower`` needs of a room: its events, a way to answer the server with the
/// local state, the path's round trip, and changes of the room made here. ``RoomClient`` (a
/// Syncplay room on a real server) conforms; a test conforms a fake of its own, to drive a
/// follower's decisions with scripted room events on a `ManualClock`, no server needed.
///
/// Every method may be called from any thread; none waits on the caller's thread (the `async`
/// ones suspend).
public protocol RoomSession: AnyObject, Sendable {
    /// A new stream of the room's events, in the order they happened, holding at most
    /// `bufferLimit` events for a slow reader (the oldest are dropped first). Finishes when the
    /// session ends for good.
    func events(bufferLimit: Int) -> EventStream<RoomEvent>

    /// Sets what the session answers when the room asks for the local state: `provider` returns
    /// the position and whether it is paused, or nil to answer nothing. Called on the session's
    /// own thread, so it must not wait. Replaces an earlier provider.
    func reportLocalState(_ provider: @escaping @Sendable () -> (position: Double, paused: Bool)?)

    /// The round trip to the server in seconds, waiting up to `limit` until it was measured once;
    /// nil when it was not measured in time.
    func roundTrip(waitingUpTo limit: Duration) async -> Double?

    /// Registers a change of the room made here, before it is sent, and returns its sending: the
    /// room is paused or playing (`paused`) at `position`, seeked there when `seeking`. From now
    /// on, states the server sent before it knew of the change must not reach the room's events
    /// as newer than it. A follower registers its change before it sets its own clock, then
    /// sends it.
    func beginChange(position: Double, paused: Bool, seeking: Bool) -> PendingRoomChange

    /// Pauses the room at `position`.
    /// - Throws: ``RoomError`` when the change could not be sent (``RoomError/closed`` while
    ///   not connected).
    func pause(at position: Double) async throws(RoomError)

    /// Seeks the room to `position`, paused or playing as `paused` says.
    /// - Throws: ``RoomError`` as ``pause(at:)``, and
    ///   ``RoomError/invalidArgument(name:value:reason:)`` for a negative or infinite position.
    func seek(to position: Double, paused: Bool) async throws(RoomError)
}

/// A change of the room made here, registered by ``RoomSession/beginChange(position:paused:seeking:)``
/// and not sent yet.
public struct PendingRoomChange: Sendable {
    private let sending: @Sendable () async throws(RoomError) -> Void

    /// A change whose sending is `send` (a fake session records it; ``RoomClient`` writes it to
    /// the server).
    public init(send: @escaping @Sendable () async throws(RoomError) -> Void) {
        sending = send
    }

    /// Sends the change to the room.
    /// - Throws: ``RoomError/closed`` when it was registered while not connected, or what the
    ///   session's sending throws.
    public func send() async throws(RoomError) {
        try await sending()
    }
}

extension RoomClient: RoomSession {
    /// Registers a change of the room made here (``RoomSession/beginChange(position:paused:seeking:)``):
    /// until the server confirms it, the server's older states are not taken.
    public func beginChange(position: Double, paused: Bool, seeking: Bool) -> PendingRoomChange {
        let change = beginChange(SyncplayWire.PlayState(position: position, paused: paused, doSeek: seeking))
        return PendingRoomChange { () async throws(RoomError) in try await self.send(change) }
    }
}
