import PlayerKitCore
import PlayerKitSupport

/// Two players taking turns, for back-to-back clips without a gap or a flash: one plays while
/// the other prepares the next clip, paused on its first frame; at the switch the prepared one
/// starts and the other is released (its media unloaded) to prepare the clip after.
///
/// ```swift
/// let pair = try AlternatingPlayers(a, b)
/// try await pair.playBackToBack(["one.mp4", "two.mp4", "three.mp4"])
/// ```
///
/// Show the ``active`` player's video (for example by raising its window): it holds a
/// decoded frame before it is asked to play, so the switch never shows an empty window.
/// Each switch publishes ``ClipEvent/clipChanged(index:seam:)`` on the incoming player, with the
/// clip's index in the list given to ``playBackToBack(_:)`` (seam timing nil: the two clips are
/// on different players; the switch latency is measured by the benchmark suite).
///
/// Written, as every PlayerKit feature, against the core's public API only.
///
/// **Threading.** Methods may be called from any thread or task. The pair's bookkeeping is one
/// lock, changed in single steps (a switch is one); players are driven after it is released.
/// ``playBackToBack(_:)`` calls on one pair run one after another, and suspend (never block a
/// thread of Swift's pool) while the players load and start.
public final class AlternatingPlayers: Sendable {
    /// The two players.
    let players: (any MediaPlayer, any MediaPlayer)

    private struct State: Sendable {
        var activeIsFirst: Bool?
        var prepared = false
    }
    /// Changed only on `queue`; locked so the read-outs can be read from anywhere.
    private let state = Locked(State())
    private let runs = AsyncSerialGate()

    /// A pair of two different players.
    /// - Throws: ``/PlayerKitCore/PlayerError/invalidArgument(name:value:reason:)`` when both are the same player.
    public init(_ first: any MediaPlayer, _ second: any MediaPlayer) throws(PlayerError) {
        guard first !== second else {
            throw .invalidArgument(name: "alternating players", value: "\"\(first.id)\" twice", reason: "needs two different players")
        }
        players = (first, second)
    }

    /// The player playing (or last started), nil before the first switch.
    public var active: (any MediaPlayer)? {
        state.withLock { state in state.activeIsFirst.map { $0 ? players.0 : players.1 } }
    }

    /// The player that prepares the next clip.
    var standby: any MediaPlayer { state.withLock { $0.activeIsFirst == true } ? players.1 : players.0 }

    /// Prepares `source` on the standby player, paused on its first frame.
    /// - Throws: the errors of ``/PlayerKitCore/Player/preload(_:timeout:)``.
    @discardableResult
    public func prepare(_ source: MediaSource) async throws(PlayerError) -> MediaInfo {
        let info = try await standby.preload(source)
        state.withLock { $0.prepared = true }
        return info
    }

    /// Starts the prepared standby player, then releases the previously active one. Returns the
    /// new active player, once it plays.
    /// - Throws: ``/PlayerKitCore/PlayerError/noMediaLoaded(operation:)`` when nothing was prepared;
    ///   the errors of ``/PlayerKitCore/MediaPlayer/play()``.
    @discardableResult
    public func switchToPrepared() async throws(PlayerError) -> any MediaPlayer {
        let (incoming, outgoing) = try takePrepared()
        try await incoming.play()
        outgoing?.releaseMedia()
        return incoming
    }

    /// The switch, as one step under the lock: the prepared standby becomes active.
    private func takePrepared() throws(PlayerError) -> (incoming: any MediaPlayer, outgoing: (any MediaPlayer)?) {
        try state.withLock { state throws(PlayerError) -> (any MediaPlayer, (any MediaPlayer)?) in
            guard state.prepared else { throw .noMediaLoaded(operation: "switch to the prepared player") }
            let incomingIsFirst = state.activeIsFirst != true
            let outgoing = state.activeIsFirst.map { $0 ? players.0 : players.1 }
            state.activeIsFirst = incomingIsFirst
            state.prepared = false
            return (incomingIsFirst ? players.0 : players.1, outgoing)
        }
    }

    /// Plays `sources` one after another: the first starts at once, and while each plays the
    /// next is prepared on the other player; when a clip ends, the next starts. Returns when the
    /// last clip has ended. A clip that cannot be loaded is skipped (its error is on its
    /// player's events).
    ///
    /// Each clip is waited for as long as it plays (a clip the app pauses, or loops, holds the
    /// call); the wait also ends when the playing player shuts down (the call then throws), and
    /// when the calling task is cancelled (the call then returns without starting another clip).
    /// - Throws: ``/PlayerKitCore/PlayerError/invalidArgument(name:value:reason:)`` for an empty list,
    ///   ``/PlayerKitCore/PlayerError/playerShutDown(_:)`` when the playing player shuts down.
    public func playBackToBack(_ sources: [MediaSource]) async throws(PlayerError) {
        guard !sources.isEmpty else {
            throw .invalidArgument(name: "back-to-back sources", value: "[]", reason: "needs at least one source")
        }
        try await runs.run { () async throws(PlayerError) in
            var index = 0
            // Prepare the first playable clip.
            while index < sources.count {
                if (try? await prepare(sources[index])) != nil { break }
                index += 1
            }
            while index < sources.count, !Task.isCancelled {
                // Listen for the end before starting, so it cannot be missed; and for the
                // player's shutdown, after which no end would ever come.
                let incoming = standby
                let ends = incoming.events(kinds: [.itemEnded, .shutDown], bufferLimit: 4)
                defer { ends.cancel() }
                // Async code: the start suspends instead of blocking a thread of the pool.
                let (started, outgoing) = try takePrepared()
                try await started.perform(.play)
                outgoing?.releaseMedia()
                incoming.publish(ClipEvent.clipChanged(index: index, seam: nil))
                // Prepare the next playable clip while this one plays.
                var next = index + 1
                while next < sources.count {
                    if (try? await prepare(sources[next])) != nil { break }
                    next += 1
                }
                for await record in ends {
                    if case .itemEnded = record.event { break }
                    if record.event == .shutDown || incoming.isShutDown { throw .playerShutDown(incoming.id) }
                }
                index = next
            }
        }
    }
}
