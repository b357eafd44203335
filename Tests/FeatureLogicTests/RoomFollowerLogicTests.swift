import PlayerKitCore
@testable import PlayerKitRooms
import PlayerKitSupport
import PlayerKitSync
import PlayerKitTesting
import Testing

/// A room with no server: the test says what the room does (``emit(_:)``), and reads what the
/// follower asked of it. Written the 1.0 way (it implements the `AsyncStream` form of
/// `events(bufferLimit:)`), so every follower test here also runs 1.1's bridge to `EventStream`.
final class FakeRoom: RoomSession {
    enum Call: Equatable {
        case began(position: Double, paused: Bool, seeking: Bool)
        case sent(position: Double, paused: Bool, seeking: Bool)
        case paused(at: Double)
        case seeked(to: Double, paused: Bool)
    }

    private struct State {
        var streams: [EventStream<RoomEvent>.Continuation] = []
        var calls: [Call] = []
        var connected = true
        var localState: (@Sendable () -> (position: Double, paused: Bool)?)?
    }

    private let state = Locked(State())

    var calls: [Call] { state.withLock { $0.calls } }
    var connected: Bool {
        get { state.withLock { $0.connected } }
        set { state.withLock { $0.connected = newValue } }
    }
    /// What the follower answers when the server asks for its state.
    var localState: (position: Double, paused: Bool)? { state.withLock { $0.localState }?() }

    /// Hands `event` to every reader of ``events(bufferLimit:)``.
    func emit(_ event: RoomEvent) {
        for stream in state.withLock({ $0.streams }) { _ = stream.yield(event) }
    }

    func events(bufferLimit: Int) -> EventStream<RoomEvent> {
        let (stream, continuation) = EventStream<RoomEvent>.makeStream(bufferLimit: bufferLimit)
        state.withLock { $0.streams.append(continuation) }
        return stream
    }

    func reportLocalState(_ provider: @escaping @Sendable () -> (position: Double, paused: Bool)?) {
        state.withLock { $0.localState = provider }
    }

    func roundTrip(waitingUpTo limit: Duration) async -> Double? { 0.02 }

    func beginChange(position: Double, paused: Bool, seeking: Bool) -> PendingRoomChange {
        let connected = state.withLock { state -> Bool in
            state.calls.append(.began(position: position, paused: paused, seeking: seeking))
            return state.connected
        }
        return PendingRoomChange { [state] () async throws(RoomError) in
            guard connected else { throw .closed }
            state.withLock { $0.calls.append(.sent(position: position, paused: paused, seeking: seeking)) }
        }
    }

    func pause(at position: Double) async throws(RoomError) {
        try record(.paused(at: position))
    }

    func seek(to position: Double, paused: Bool) async throws(RoomError) {
        try record(.seeked(to: position, paused: paused))
    }

    private func record(_ call: Call) throws(RoomError) {
        let connected = state.withLock { state -> Bool in
            if state.connected { state.calls.append(call) }
            return state.connected
        }
        guard connected else { throw .closed }
    }
}

@Suite("RoomFollower's decisions, on a fake room, fake players and a manual clock", .timeLimit(.minutes(1)))
struct RoomFollowerLogicTests {
    let bus = PlayerEventBus(label: "room-logic")
    let clock = ManualClock()
    let room = FakeRoom()

    /// Two fakes, loaded and paused on their first frame, and a started follower of `room`.
    func followed(_ count: Int = 2) async throws -> ([FakePlayer], RoomFollower, EventLog) {
        let players = try (0..<count).map { _ in try FakePlayer(clock: clock, bus: bus, defaultMedia: .init(duration: 60)) }
        for player in players { _ = try await player.preload("clip.mp4") }
        let log = EventLog(bus: bus, players: players.map(\.id))
        let follower = try RoomFollower(room: room, players: players, clock: clock)
        follower.start()
        return (players, follower, log)
    }

    /// Hands the room's `events` to the follower, then a marker, and waits until the players
    /// heard the marker: the follower takes the room's events in order, so every earlier one was
    /// taken too.
    func deliver(_ events: RoomEvent..., to log: EventLog, of player: FakePlayer) async {
        let marker = "marker-\(UInt32.random(in: 0...UInt32.max))"
        for event in events { room.emit(event) }
        room.emit(.memberJoined(marker))
        let heard = await eventually {
            log.features(RoomPlayerEvent.self, of: player.id).contains(.room(.memberJoined(marker)))
        }
        #expect(heard, "the follower never took \(events)")
    }

    func state(_ position: Double, paused: Bool, ago: Duration = .zero) -> RoomEvent {
        .state(RoomState(position: position, paused: paused, setBy: "other", time: clock.now.advanced(by: .zero - ago)))
    }

    /// How many seeks `player` was sent (the room's, the correction's, the test's own).
    func seeks(_ player: FakePlayer) -> Int {
        player.commands.filter { if case .seek = $0 { true } else { false } }.count
    }

    /// Advances the clock `seconds` one frame (1/30 s) at a time, so the fakes report often.
    func play(_ seconds: Double) {
        for _ in 0..<Int(seconds * 30) { clock.advance(by: .seconds(1.0 / 30)) }
    }

    @Test("bad input is refused by name: a player twice, a threshold of 0 or less, a NaN speed trim, a NaN or negative seek; nothing reaches the room")
    func badInput() async throws {
        let player = try FakePlayer(clock: clock, bus: bus)
        // Any number of players makes a follower (2.0's one rule), none included.
        try RoomFollower(room: room, players: [], clock: clock).invalidate()
        #expect(throws: RoomError.invalidArgument(name: "players", value: "\(player.id.rawValue), \(player.id.rawValue)", reason: "lists a player twice")) {
            try RoomFollower(room: room, players: [player, player], clock: clock)
        }
        for threshold in [Duration.zero, .milliseconds(-1)] {
            #expect(throws: RoomError.self) { try RoomFollower(room: room, players: [player], resynchronizationThreshold: threshold, clock: clock) }
        }
        // The alignment is PlayerKit's one sync settings type, validated as every group's.
        var nan = SyncSettings.onDemand
        nan.maximumSpeedTrim = .nan
        #expect(throws: RoomError.invalidArgument(name: "settings sync setting maximumSpeedTrim", value: "nan", reason: "must be a fraction from 0 to 0.5 (0.05 trims the speed by at most 5%)")) {
            try RoomFollower(room: room, players: [player], settings: nan, clock: clock)
        }
        #expect(SyncSettings.onDemand.realignThreshold == .milliseconds(250))   // 1.0's seekThreshold
        let follower = try RoomFollower(room: room, players: [player], clock: clock)
        for position in [Double.nan, -1] {
            await #expect(throws: RoomError.invalidArgument(name: "position", value: "\(position)", reason: "is not a position")) {
                try await follower.seek(to: position)
            }
        }
        // Nothing loaded and no word from the room: there is no position to start from.
        await #expect(throws: RoomError.invalidArgument(name: "position", value: "none", reason: "nothing is loaded and the room has not said where it is")) {
            try await follower.play()
        }
        #expect(room.calls.isEmpty && player.commands == [.setPositionTiming(.whenDue)])
        follower.invalidate()
        await player.shutdown()
    }

    @Test("a member that joins a playing room catches up: every player seeks exactly to the room's position, plays, and keeps to it")
    func lateJoinerCatchesUp() async throws {
        let (p, follower, log) = try await followed()
        await deliver(state(12, paused: false), to: log, of: p[0])
        for player in p {
            #expect(player.commands.suffix(2) == [.seek(to: 12, precision: .exact), .play])
            #expect(player.state == .playing)
        }
        let seeksBefore = p.map(seeks)
        play(2)
        #expect(abs((follower.clock?.position(at: clock.now) ?? 0) - 14) < 1e-9)
        for player in p { #expect(abs((player.position ?? 0) - 14) < 0.05) }
        #expect(p.map(seeks) == seeksBefore)   // no corrective seek
        // The follower answers the server's requests for our state with its clock.
        let answer = try #require(room.localState)
        #expect(abs(answer.position - 14) < 1e-9 && !answer.paused)
        // Each player's skew from the room's clock, measured on its frame changes (MemberSkew).
        for player in p {
            let skew = try #require(follower.skews[player.id], "\(player.id)")
            #expect(skew.samples > 10 && skew.p99 < 0.05, "\(skew)")
        }
        #expect(follower.skews.count == p.count)
        follower.invalidate()
        for player in p { await player.shutdown() }
    }

    @Test("play() registers the change with the room before it sets its clock, starts the players where they are (no seek), then sends the change")
    func playFromHere() async throws {
        let (p, follower, _) = try await followed()
        try await p[0].seek(to: 5, precision: .exact)
        try await p[1].seek(to: 5, precision: .exact)
        let before = p.map(\.commands.count)
        try await follower.play()
        #expect(room.calls == [.began(position: 5, paused: false, seeking: false), .sent(position: 5, paused: false, seeking: false)])
        for (index, player) in p.enumerated() {
            #expect(Array(player.commands.dropFirst(before[index])) == [.play])
        }
        #expect(follower.clock?.paused == false && follower.clock?.position == 5)
        // Pause lands every player on the clock's frame (a seek, then the pause).
        clock.advance(by: .seconds(1))
        try await follower.pause()
        #expect(room.calls.suffix(2) == [.began(position: 6, paused: true, seeking: false), .sent(position: 6, paused: true, seeking: false)])
        for player in p {
            #expect(player.commands.suffix(2) == [.seek(to: 6, precision: .exact), .pause])
            #expect(player.isPaused)
        }
        follower.invalidate()
        for player in p { await player.shutdown() }
    }

    @Test("a room state sent before the app's own start, taken after it, does not undo the start")
    func staleStateAfterLocalStart() async throws {
        let (p, follower, log) = try await followed()
        let stale = state(0, paused: true)              // stamped now, before the start below
        clock.advance(by: .milliseconds(10))
        try await follower.play()
        let before = p[0].commands.count
        await deliver(stale, to: log, of: p[0])
        #expect(p[0].commands.count == before)
        #expect(follower.clock?.paused == false && p.allSatisfy { $0.state == .playing })
        follower.invalidate()
        for player in p { await player.shutdown() }
    }

    @Test("periodic states: within the threshold nothing changes; one off by more is ignored, two in a row set the clock; a paused room's state lands the players on its frame")
    func periodicStates() async throws {
        let (p, follower, log) = try await followed()
        await deliver(state(10, paused: false), to: log, of: p[0])
        play(1)
        let settled = p[0].commands.count
        await deliver(state(11.3, paused: false), to: log, of: p[0])         // 0.3 s off: within 0.5 s
        await deliver(state(12, paused: false), to: log, of: p[0])           // 1 s off, once
        #expect(p[0].commands.count == settled)
        #expect(abs((follower.clock?.position(at: clock.now) ?? 0) - 11) < 1e-9)
        await deliver(state(12, paused: false), to: log, of: p[0])           // and again: adopted
        #expect(p[0].commands.suffix(2) == [.seek(to: 12, precision: .exact), .play])
        #expect(abs((follower.clock?.position(at: clock.now) ?? 0) - 12) < 1e-9)
        // The room paused elsewhere at 12.5: every player lands on that frame, paused.
        await deliver(.paused(position: 12.5, by: "other"), state(12.5, paused: true), to: log, of: p[0])
        for player in p {
            #expect(player.commands.suffix(2) == [.seek(to: 12.5, precision: .exact), .pause])
            #expect(player.isPaused && player.position == 12.5)
        }
        // Each player heard the pause through its own event path; the periodic states are not published.
        for player in p {
            let heard = log.features(RoomPlayerEvent.self, of: player.id)
            #expect(heard.contains(.room(.paused(position: 12.5, by: "other"))))
            #expect(!heard.contains { if case .room(.state) = $0 { true } else { false } })
        }
        follower.invalidate()
        for player in p { await player.shutdown() }
    }

    @Test("a seek by someone else: the next state moves the clock and seeks the players even within the threshold")
    func seekBySomeoneElse() async throws {
        let (p, follower, log) = try await followed()
        await deliver(state(20, paused: false), to: log, of: p[0])
        play(1)
        await deliver(.seeked(position: 21.2, by: "other"), state(21.2, paused: false), to: log, of: p[0])
        #expect(p[0].commands.suffix(2) == [.seek(to: 21.2, precision: .exact), .play])
        #expect(abs((follower.clock?.position(at: clock.now) ?? 0) - 21.2) < 1e-9)
        follower.invalidate()
        for player in p { await player.shutdown() }
    }

    @Test("after a reconnection the follower tells the room where it is, and does not take the new room's states until they agree")
    func rejoinTellsTheRoom() async throws {
        let (p, follower, log) = try await followed()
        await deliver(state(30, paused: false), to: log, of: p[0])
        play(2)
        // The server restarted: a new room, paused at 0.
        await deliver(.disconnected(nil), .joined(room: "r", name: "me"), to: log, of: p[0])
        let told = await eventually {
            room.calls.contains { if case .seeked(let position, false) = $0 { abs(position - 32) < 1e-6 } else { false } }
        }
        #expect(told, "\(room.calls)")
        let settled = p[0].commands.count
        await deliver(state(0, paused: true), to: log, of: p[0])             // the new room's first word
        #expect(p[0].commands.count == settled)
        #expect(p[0].state == .playing && abs((follower.clock?.position(at: clock.now) ?? 0) - 32) < 1e-9)
        // The room now says what we told it: the clock stays, nothing is seeked.
        await deliver(state(32, paused: false), to: log, of: p[0])
        #expect(p[0].commands.count == settled)
        follower.invalidate()
        for player in p { await player.shutdown() }
    }

    @Test("a player 20 ms ahead of the room is slowed down, not seeked, and reports its drift; one 3 s off is seeked to the clock (the correction of every group)")
    func driftCorrection() async throws {
        let (p, follower, log) = try await followed()
        await deliver(state(0, paused: false), to: log, of: p[0])
        play(1)
        try await p[1].seek(to: (p[1].position ?? 0) + 0.02, precision: .exact)  // a jump the room did not make
        let seeksBefore = p.map(seeks)
        play(2)
        // Trimmed by a speed correction (no speedChanged for the app); the group's speed is 1.
        let speeds = p[1].commands.compactMap { command -> Double? in
            if case .setSpeedCorrection(let factor) = command { return factor } else { return nil }
        }
        #expect(speeds.contains { $0 < 1 && $0 >= 0.95 }, "\(speeds)")
        #expect(p.map(seeks) == seeksBefore)   // trimmed, not seeked
        #expect(!log.features(SyncEvent.self, of: p[1].id).isEmpty)
        #expect(follower.skews[p[1].id]?.drift != nil)
        try await p[0].seek(to: (p[0].position ?? 0) - 3, precision: .exact)
        let seeksAfterJump = seeks(p[0])
        play(1)
        #expect(seeks(p[0]) > seeksAfterJump)   // a corrective seek
        #expect(abs((p[0].position ?? 0) - (follower.clock?.position(at: clock.now) ?? 0)) < 0.05)
        #expect(log.features(SyncEvent.self, of: p[0].id).contains { if case .realigned(_, .drift) = $0 { true } else { false } })
        follower.invalidate()
        for player in p { await player.shutdown() }
    }

    @Test("the follower is the one writer of its players' speeds (2.0): a room's start gives no speed to a player already at 1, gives 1 back to one the app set to 1.5, and takes a trim left on a player away with a speed correction of 1, never a speed change the app would hear")
    func oneWriterOfSpeed() async throws {
        let (p, follower, log) = try await followed()
        try await p[1].perform(.setSpeed(1.5))            // the app's own change, which the room does not know
        await deliver(state(0, paused: false), to: log, of: p[0])
        #expect(!p[0].commands.contains { if case .setSpeed = $0 { true } else { false } }, "\(p[0].commands)")
        #expect(p[1].commands.last { if case .setSpeed = $0 { true } else { false } } == .setSpeed(1))
        #expect(p[1].snapshot.speed == 1)
        play(1)
        try await p[1].seek(to: (p[1].position ?? 0) + 0.02, precision: .exact)  // a jump: trimmed back
        play(1)
        #expect(p[1].commands.contains { if case .setSpeedCorrection(let factor) = $0 { factor < 1 } else { false } })
        let before = p[1].commands.count
        await deliver(state(4, paused: true), to: log, of: p[0])     // the room pauses: the trim goes
        let after = Array(p[1].commands.dropFirst(before))
        #expect(after.contains(.setSpeedCorrection(1)) && !after.contains { if case .setSpeed = $0 { true } else { false } }, "\(after)")
        follower.invalidate()
        for player in p { await player.shutdown() }
    }

    @Test("a change made while the room is not connected throws closed; the local players still follow it")
    func changeWhileDisconnected() async throws {
        let (p, follower, _) = try await followed()
        room.connected = false
        await #expect(throws: RoomError.closed) { try await follower.play() }
        #expect(p.allSatisfy { $0.state == .playing })
        #expect(room.calls == [.began(position: 0, paused: false, seeking: false)])
        follower.invalidate()
        for player in p { await player.shutdown() }
    }

    @Test("after invalidate() the room's events and the players' frames change nothing; the players stay usable")
    func invalidateStops() async throws {
        let (p, follower, log) = try await followed()
        await deliver(state(5, paused: false), to: log, of: p[0])
        follower.invalidate()
        let before = p.map(\.commands.count)
        room.emit(state(40, paused: true))
        room.emit(.paused(position: 40, by: "other"))
        try await p[0].seek(to: (p[0].position ?? 0) + 2, precision: .exact)    // drift nobody corrects now
        play(1)
        #expect(p[0].commands.count == before[0] + 1 && p[1].commands.count == before[1])
        #expect(p.allSatisfy { $0.state == .playing })
        try await p[1].pause()
        #expect(p[1].isPaused)
        for player in p { await player.shutdown() }
    }
}
