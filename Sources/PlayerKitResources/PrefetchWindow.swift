import PlayerKitCore
import PlayerKitSupport

/// Keeps the current item of a sequence and `radius` neighbours on each side prepared (each
/// on a player of its own, paused on its first frame) and releases the rest, as the current
/// index moves: the video-sequencer pattern, where the next and previous clips start at once
/// and clips far away hold no decoder.
///
/// ```swift
/// let window = try PrefetchWindow(items: clips, radius: 1) { slot async throws(PlayerError) in
///     try await Player.create(id: PlayerID(stringLiteral: "sequencer-\(slot)"), configuration: headless)
/// }
/// let player = try await window.move(to: 0)   // prepared: 0 and 1
/// try await player.play()
/// let next = try await window.move(to: 1)     // prepared: 0, 1, 2 (0 and 1 were ready already)
/// ```
///
/// The window owns `2 × radius + 1` players, made on first use by the factory and reused:
/// a player whose item leaves the window is released (its media unloaded, as
/// ``DecoderBudget/release(_:)`` does, with ``/PlayerKitCore/Player/releaseMedia()``) and takes the next item
/// that enters. Each item may carry
/// its own speed and direction (``Item``), applied when it is prepared.
///
/// Written, as every PlayerKit feature, against the core's public API only.
///
/// **Threading.** Calls to ``move(to:)`` are serialized (a second call waits for the first) and
/// suspend while players are made and prepared; the current item is prepared first, then its
/// neighbours at the same time. The window's bookkeeping is one lock, changed in single steps.
public final class PrefetchWindow: Sendable {
    /// One entry of the sequence: a source with its own speed and direction, set through
    /// ``init(_:speed:direction:)``.
    public struct Item: Sendable, Hashable {
        /// The media.
        let source: MediaSource
        /// Playback speed, within ``/PlayerKitCore/PlayerCommand/speedRange``.
        let speed: Double
        /// Forward or backward.
        let direction: PlaybackDirection

        /// An item playing `source` at `speed` (within ``/PlayerKitCore/PlayerCommand/speedRange``,
        /// checked by ``PrefetchWindow/init(items:radius:makePlayer:)``) in `direction`; normal
        /// speed, forwards by default.
        public init(_ source: MediaSource, speed: Double = 1, direction: PlaybackDirection = .forward) {
            self.source = source
            self.speed = speed
            self.direction = direction
        }
    }

    /// The sequence.
    let items: [Item]
    /// How many neighbours on each side stay prepared.
    let radius: Int
    private let makePlayer: @Sendable (Int) async throws(PlayerError) -> any MediaPlayer

    private struct State: Sendable {
        /// Every player made so far, by slot.
        var players: [any MediaPlayer] = []
        /// Which item each slot holds (nil: released).
        var assignment: [Int?] = []
        var current: Int?
        /// Players being made for the window now.
        var creating = 0
    }

    /// The window's state, changed in single steps under its lock.
    private let state = Locked(State())
    /// Serializes `move(to:)`.
    private let moves = AsyncSerialGate()

    /// A window over `items`.
    /// - Parameters:
    ///   - items: the window's items, in order; the window starts at the first.
    ///   - radius: neighbours kept prepared on each side (0 keeps only the current item).
    ///   - makePlayer: makes the player for a slot (0, 1, ...), called at most `2 × radius + 1` times
    ///     when every call succeeds, from ``move(to:)``'s task (neighbours' players from its child tasks,
    ///     at the same time). Make it with ``/PlayerKitCore/Player/create(id:configuration:delegate:)``,
    ///     which creates the core off Swift's cooperative pool.
    /// - Throws: ``/PlayerKitCore/PlayerError/invalidArgument(name:value:reason:)`` for a negative radius, an
    ///   empty sequence, or an item's speed outside ``/PlayerKitCore/PlayerCommand/speedRange``.
    public init(items: [Item], radius: Int,
                makePlayer: @escaping @Sendable (Int) async throws(PlayerError) -> any MediaPlayer) throws(PlayerError) {
        guard radius >= 0 else {
            throw .invalidArgument(name: "prefetch radius", value: "\(radius)", reason: "must be 0 or more")
        }
        guard !items.isEmpty else {
            throw .invalidArgument(name: "prefetch items", value: "[]", reason: "needs at least one item")
        }
        for item in items { try PlayerCommand.setSpeed(item.speed).validate() }
        self.items = items
        self.radius = radius
        self.makePlayer = makePlayer
    }

    /// The current index, nil before the first ``move(to:)``.
    var currentIndex: Int? { state.withLock { $0.current } }

    /// The indexes of the items prepared now, ascending.
    var preparedIndexes: [Int] { state.withLock { $0.assignment.compactMap { $0 }.sorted() } }

    /// The player holding item `index`, if it is prepared.
    public func player(for index: Int) -> (any MediaPlayer)? {
        state.withLock { state in state.assignment.firstIndex(of: index).map { state.players[$0] } }
    }

    /// Every player the window has made.
    var players: [any MediaPlayer] { state.withLock { $0.players } }

    /// Makes `index` current: releases the players whose items left the window, prepares the
    /// items that entered it (the current one first), and returns the current item's player,
    /// paused on its first frame (or as it was, if it was current already). Start it with
    /// ``/PlayerKitCore/MediaPlayer/play()``.
    /// - Throws: ``/PlayerKitCore/PlayerError/invalidArgument(name:value:reason:)`` for an index outside the
    ///   sequence; the errors of ``/PlayerKitCore/Player/preload(_:timeout:)`` for the current item (a
    ///   neighbour that fails is left unprepared and reported by its player's error event).
    @discardableResult
    public func move(to index: Int) async throws(PlayerError) -> any MediaPlayer {
        guard items.indices.contains(index) else {
            throw .invalidArgument(name: "sequence index", value: "\(index)", reason: "must be in 0..<\(items.count)")
        }
        await moves.enter()
        defer { moves.leave() }
        let wanted = Set(max(0, index - radius)...min(items.count - 1, index + radius))
        // Release what left the window.
        let released = change { state -> [any MediaPlayer] in
            var released: [any MediaPlayer] = []
            for slot in state.assignment.indices {
                if let item = state.assignment[slot], !wanted.contains(item) {
                    state.assignment[slot] = nil
                    released.append(state.players[slot])
                }
            }
            state.current = index
            return released
        }
        for player in released { player.releaseMedia() }
        // Prepare what entered, the current item first.
        let missing = wanted.filter { item in state.withLock { !$0.assignment.contains(item) } }
            .sorted { abs($0 - index) < abs($1 - index) }
        var current: (any MediaPlayer)?
        if missing.first == index {
            let player = try await slot(for: index)
            try await prepare(index, on: player)
            current = player
        }
        // The neighbours at the same time, once the current item is ready: a window of radius r
        // prepares in about two load times, not 2r + 1. A neighbour that fails stays unprepared.
        let neighbours = missing.filter { $0 != index }
        await withTaskGroup(of: Void.self) { group in
            for item in neighbours {
                group.addTask {
                    guard let player = try? await self.slot(for: item) else { return }
                    try? await self.prepare(item, on: player)
                }
            }
        }
        guard let player = current ?? self.player(for: index) else {
            throw .noMediaLoaded(operation: "prefetch window move to \(index)")
        }
        return player
    }

    /// A free slot's player for `item` (made when none is free), recorded as holding it.
    private func slot(for item: Int) async throws(PlayerError) -> any MediaPlayer {
        let free = change { state -> (any MediaPlayer)? in
            guard let slot = state.assignment.firstIndex(where: { $0 == nil }) else { return nil }
            state.assignment[slot] = item
            return state.players[slot]
        }
        if let free { return free }
        // The slot number is taken in the same step that reserves it, so neighbours made at the
        // same time get different numbers.
        let slotNumber = change { state -> Int in
            defer { state.creating += 1 }
            return state.players.count + state.creating
        }
        let made: any MediaPlayer
        do throws(PlayerError) {
            made = try await makePlayer(slotNumber)
        } catch {
            change { $0.creating -= 1 }
            throw error
        }
        change { state in
            state.creating -= 1
            state.players.append(made)
            state.assignment.append(item)
        }
        return made
    }

    private func prepare(_ item: Int, on player: any MediaPlayer) async throws(PlayerError) {
        do throws(PlayerError) {
            try await player.perform(.setSpeed(items[item].speed))
            try await player.perform(.setPlaybackDirection(items[item].direction))
            try await player.preload(items[item].source)
        } catch {
            change { state in
                if let slot = state.assignment.firstIndex(of: item) { state.assignment[slot] = nil }
            }
            throw error
        }
    }

    /// Changes the state on the window's queue.
    /// One step of the window's state, under its lock.
    private func change<Result>(_ body: (inout State) -> Result) -> Result {
        state.withLock(body)
    }
}
