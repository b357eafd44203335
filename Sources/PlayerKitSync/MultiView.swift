import Dispatch
import PlayerKitCore
import PlayerKitSupport

/// Camera angles of one event, live or on demand, shown in lockstep: each member plays its own
/// source, and the group keeps them showing the same moment within a few milliseconds, measures
/// how far each one is (``skews``), and brings back a member that falls out of step.
///
/// ```swift
/// let view = try MultiView(players: [main, onboard, pit, aerial])
/// try await view.load(angleURLs.map { MediaSource($0) })   // all load, then start together
/// try await AudioPolicy(mode: .solo, players: view.members).focus(main)   // one angle heard
/// for await record in main.events(kinds: [.sync]) { print(record.event) }
/// ```
///
/// **One clock.** Members are aligned on their sources' own timestamps: angles encoded from one
/// clock (one encoder, or encoders fed the same timecode) carry the same presentation timestamp
/// for the same moment. A member is switched to those timestamps
/// (``/PlayerKitCore/PlayerCommand/setTimestampOrigin(_:)`` with
/// ``/PlayerKitCore/TimestampOrigin/source``) when the group loads it; two local files each start at 0. The group's
/// clock follows its leader (``Leader``): by default the member furthest ahead when it joined,
/// the one nearest a live edge; while it cannot (the leader stalls), the clock runs on by itself
/// and the leader is brought back like any other member.
///
/// **Skew, measured on frame changes.** The group holds a per-frame observation on every member
/// (``/PlayerKitCore/MediaPlayer/observeEveryFrame()``): each new frame is compared with the
/// clock at the moment it changed. That is the moment the member shows a frame against the
/// moment the group shows it, not a polled position (which moves in whole frames).
///
/// **Correction.** A member ahead of the clock (beyond ``SyncSettings/holdThreshold``: it joined
/// late, or jumped over a missing segment) or behind it (beyond ``SyncSettings/realignThreshold``: it
/// stalled) is paused and seeked exactly to where the clock will be once the seek landed, and
/// held there until the clock reaches its frame. Closer, its speed is trimmed (at most
/// ``SyncSettings/maximumSpeedTrim``, pitch kept). Each step is published on the
/// member's ID as a ``SyncEvent``: joined, aligned, fell behind (with its reason), realigned
/// (with the time it took), dropped; and its drift about once a second
/// (``SyncSettings/driftReportInterval``), as a ``SyncGroup``'s members report theirs.
///
/// **Sound.** Who is heard is the app's choice, made as for any players: muted and volume, or
/// PlayerKitFeed's `AudioPolicy` (one angle heard: `.solo`). The group follows it: the member
/// heard loudest (alone, or above every other) keeps its video on its audio, for lip sync; every
/// other member's video runs on its own clock (``/PlayerKitCore/VideoClock/independent``), so the
/// group's speed trims do not move its frames.
///
/// **Faults.** A member whose source ends or fails (a 404, a stream that went away) is dropped
/// with a typed reason and the others play on.
///
/// Written, as every PlayerKit feature, against the core's public API only.
///
/// **Threading.** Methods may be called from any thread or task. The group's state is one lock
/// around a pure machine (`SyncMachine`); the members' events are handled in `.immediate` bus
/// handlers, one step under the lock each, and the commands a step decides are sent after the
/// lock is released, with ``/PlayerKitCore/MediaPlayer/send(_:)``, which never waits.
/// ``invalidate()`` (or releasing the group) cancels its subscriptions and observations.
public final class MultiView: Sendable {
    /// Which member the group clock follows.
    public enum Leader: Sendable, Hashable, Codable {
        /// The member furthest ahead when it joined: a member that joins more than
        /// ``SyncSettings/realignThreshold`` ahead of the clock takes the lead, and the others are
        /// brought there. For live angles, the lowest latency.
        case furthestAhead
        /// This member, wherever it is: the others follow it.
        case member(PlayerID)
        /// No member: the clock keeps `latency` behind the live edge (the newest media the
        /// members' sources have published, as their players' caches show it), and every member
        /// is brought there. What a viewer of a live event expects of several screens: the same
        /// delay behind the live action, whichever angles join. A member seeks only within what
        /// its player downloaded, so a latency below about two segments leaves members waiting
        /// for their data.
        case liveEdge(latency: Duration)
    }

    /// The members, their watches, their sound and the correction machine.
    private let engine: SyncEngine

    /// A group of `players` (none yet, or several, no player twice; more join with ``load(_:on:)``),
    /// following `leader`, on `clock` (a test may give a `ManualClock`).
    /// - Throws: ``/PlayerKitCore/PlayerError/invalidArgument(name:value:reason:)`` for the same
    ///   player twice, a leader that is not a member, or a setting that makes no sense
    ///   (`validate()`).
    public init(players: [any MediaPlayer], leader: Leader = .furthestAhead, settings: SyncSettings = SyncSettings(),
                clock: any MonotonicClock = ContinuousClock()) throws(PlayerError) {
        try settings.validate()
        if case .liveEdge(let latency) = leader, latency < .zero {
            throw .invalidArgument(name: "multi-view leader latency", value: "\(latency)", reason: "must be zero or more")
        }
        let ids = players.map(\.id)
        guard Set(ids).count == ids.count else {
            throw .invalidArgument(name: "multi-view", value: ids.map(\.rawValue).joined(separator: ", "), reason: "lists a player twice")
        }
        if case .member(let id) = leader, !ids.contains(id) {
            throw .invalidArgument(name: "multi-view leader", value: id.rawValue, reason: "is not a member")
        }
        engine = SyncEngine(machine: SyncMachine(settings: settings, clock: SyncClock(leader)),
                            rules: SyncEngine.Rules(frames: .onceShowing, videoClocks: .followLoudest,
                                                    frontKinds: [.itemEnded, .shuttingDown, .shutDown]),
                            clock: clock)
        engine.setFrontHandler { [weak self] record, id in self?.memberEvent(record, from: id) }
        for player in players { add(player) }
    }

    deinit {
        invalidate()
    }

    // MARK: Members

    /// The members, in order (dropped ones are gone).
    public var members: [any MediaPlayer] { engine.members }

    /// The member whose frames the clock follows now.
    public var leader: PlayerID? { engine.read(\.leaderID) }

    /// Adds a player to the group: it joins with its next frame, already playing or once it
    /// loads. Adding a member twice does nothing. An app's late join is ``load(_:on:)``, which
    /// calls this.
    func add(_ player: any MediaPlayer) {
        engine.add(player)
    }

    /// Loads one source per member, in member order, and starts them together: every member
    /// loads at the same time and waits paused on its first frame
    /// (``/PlayerKitCore/MediaPlayer/preload(_:timeout:)``) until every load has ended; then all
    /// play at once, and the group's clock starts on the first frame any of them shows. So the
    /// group starts in about the time of its slowest member, and its members start within
    /// a fraction of a millisecond of each other rather than each as its own load ends. A
    /// member whose load fails is dropped (``SyncEvent/dropped(_:)`` with
    /// ``SyncEvent/DropReason/failed(_:)``) and the others start without it. A group playing
    /// other sources forgets where they were: the new ones start from their start (or, live,
    /// where each player starts them). A group paused (``pause()``) stays paused, on the new
    /// sources' first frames, until ``resume(from:)``. Returns once every member has started
    /// (or been dropped).
    /// - Throws: ``/PlayerKitCore/PlayerError/invalidArgument(name:value:reason:)`` when the counts differ.
    public func load(_ sources: [MediaSource]) async throws(PlayerError) {
        let players = members
        guard sources.count == players.count else {
            throw .invalidArgument(name: "multi-view sources", value: "\(sources.count)", reason: "needs one source per member (\(players.count))")
        }
        let wasPaused = isPaused
        let start = engine.clock.now
        engine.step { $0.startAgain(at: start) }
        await withTaskGroup(of: Void.self) { group in
            for (player, source) in zip(players, sources) {
                group.addTask { [weak self] in
                    try? await self?.load(source, on: player, startPaused: true)
                }
            }
        }
        guard !wasPaused else { return }
        let now = engine.clock.now
        engine.step { $0.resume(from: .wherePaused, at: now) }
    }

    /// Loads `source` on `player`, playing as soon as it can, and makes the player a member if
    /// it is not one (a late join): it joins the group with its first frame. The player is first
    /// switched to its source's own timestamps (``/PlayerKitCore/TimestampOrigin/source``), on
    /// which the group aligns, and to reporting a new frame when it is due rather than when it
    /// is queued (``/PlayerKitCore/PositionTiming/whenDue``), on which the group measures. Its
    /// video runs on its own clock unless it is the member heard
    /// (``/PlayerKitCore/VideoClock/independent``; see "Sound" above), and after waiting
    /// for the network it plays again once 0.2 s of media is in
    /// (``/PlayerKitCore/PlayerCommand/setBufferAfterStall(_:)``). Returns once the load ended.
    /// A load that fails drops the member (``SyncEvent/dropped(_:)`` with
    /// ``SyncEvent/DropReason/failed(_:)``) and is thrown.
    /// - Throws: what ``/PlayerKitCore/MediaPlayer/load(_:startPaused:)`` throws.
    public func load(_ source: MediaSource, on player: any MediaPlayer) async throws(PlayerError) {
        try await load(source, on: player, startPaused: false)
    }

    /// ``load(_:on:)``; `startPaused`: paused on its first frame, returning once it is shown
    /// (``/PlayerKitCore/MediaPlayer/preload(_:timeout:)``), for ``load(_:)`` to start every
    /// member at once.
    private func load(_ source: MediaSource, on player: any MediaPlayer, startPaused: Bool) async throws(PlayerError) {
        add(player)
        do throws(PlayerError) {
            // The sources' own timestamps, on which angles align.
            try await player.perform(.setTimestampOrigin(.source))
            // A player hands a frame to its video output up to 50 ms before the frame is due,
            // and reports the new position then: by half a frame early or not, at random. When
            // due, a frame change is timed within a fraction of a millisecond (Performance.md).
            try await player.perform(.setPositionTiming(.whenDue))
            // After waiting for the network, a player plays again once 200 ms of media is in
            // (mpv's default waits for a second: with 1 s segments, the segment after the
            // next). The group brings a member back itself, from as soon as it has frames again.
            try await player.perform(.setBufferAfterStall(.milliseconds(200)))
            // A member not heard has its video on its own clock, not its audio's: each speed trim
            // moves the audio, and a video that followed it moved by a few milliseconds
            // (Sync.md). The member heard keeps its video on its audio.
            try await player.perform(.setVideoClock(engine.videoClock(for: player.id)))
            if startPaused {
                _ = try await player.preload(source)
            } else {
                _ = try await player.load(source)
            }
        } catch {
            engine.drop(player.id, reason: .failed(error))
            throw error
        }
    }

    /// Takes a member out of the group; it plays on as it is, and no event is published.
    public func remove(_ id: PlayerID) {
        engine.drop(id, reason: nil)
    }

    // MARK: Timeline

    /// The group's settings now: those it was made with, and the media offsets set since
    /// (``setMediaOffset(_:for:)``). Save them to make the same group again.
    public var settings: SyncSettings { engine.settings }

    /// Sets member `id`'s media offset: its media time minus the group's (nil: none, and its
    /// timestamps are judged again), the sign of ``SyncSettings/mediaOffsets``: an angle whose
    /// timestamps run 1.4 s ahead of the others' gets +1.4 s, and a
    /// ``SyncEvent/DropReason/unrelatedTimestamps(offset:)`` is given back as it is. At once:
    /// the member is brought to where the group is, as any member that fell out of step, and
    /// the call returns once the commands that does were answered. Kept in ``settings`` (also
    /// for a player that is not a member yet, and joins later). Use it for angles that share no
    /// clock: measured by eye once (the frame one angle shows against another's), or computed
    /// from the playlists.
    /// - Throws: the first refusal of a member's player (one shut down meanwhile is not a failure).
    public func setMediaOffset(_ offset: Duration?, for id: PlayerID) async throws(PlayerError) {
        let now = engine.clock.now
        try await engine.perform { $0.setOffset(offset, for: id, at: now) }
    }

    // MARK: Transport

    /// Where a paused group (``pause()``) resumes.
    public enum ResumePoint: Sendable, Hashable, Codable {
        /// Where it paused: each member plays on from the frame it showed, together, as a
        /// recorder's time shift does. A live origin must still have the media there: a member
        /// whose playlist has moved past it jumps to what the origin has, and is brought back
        /// in step as after a missing segment.
        case wherePaused
        /// Where the group would be had it not paused: as far behind the live edge as it was
        /// (on demand, as far into the media as the time it was paused). Each member is seeked
        /// there, held, and released in step.
        case liveEdge
    }

    /// Pauses every member where it is and stops the group's clock (``position`` stays put).
    /// Nothing is measured or corrected while paused; a member that joins meanwhile is paused
    /// at its first frame. Returns once every member answered its pause. Pausing a paused group
    /// does nothing.
    /// - Throws: the first refusal of a member's player (one shut down meanwhile is not a failure).
    public func pause() async throws(PlayerError) {
        let now = engine.clock.now
        try await engine.perform { $0.pause(at: now) }
    }

    /// Resumes a paused group from `point` (``ResumePoint/wherePaused`` by default): the clock
    /// runs on from there and the members play in step. Returns once every member answered the
    /// commands that does (a play, or a pause and an exact seek to be held and released in
    /// step: the release comes later); each member that is brought somewhere reports
    /// ``SyncEvent`` steps as usual. Resuming a group that is not paused does nothing.
    /// - Throws: the first refusal of a member's player (one shut down meanwhile is not a failure).
    public func resume(from point: ResumePoint = .wherePaused) async throws(PlayerError) {
        let now = engine.clock.now
        try await engine.perform { $0.resume(from: ResumeTarget(point), at: now) }
    }

    /// Whether the group is paused (``pause()``).
    public var isPaused: Bool { engine.read(\.isPaused) }

    // MARK: Figures

    /// How far each measured member is from the group: its latest skew, the percentiles over
    /// ``SyncSettings/skewWindow`` and its drift as the correction judges it. A member appears
    /// after its first measured frame.
    public var skews: [PlayerID: MemberSkew] { engine.skews }

    /// The group clock's media time now, once it runs.
    public var position: Double? {
        let now = engine.clock.now
        return engine.read { $0.clock(at: now) }
    }

    // MARK: Lifetime

    /// Stops following the members: cancels the group's subscriptions and observations. The
    /// members keep playing as they are. Called when the group is released. Idempotent.
    public func invalidate() {
        engine.invalidate()
    }

    // MARK: Following the members (on the thread that delivers their events)

    /// A member's source ended or failed, or the member shuts down: it leaves the group.
    private func memberEvent(_ record: PlayerEventRecord, from id: PlayerID) {
        switch record.event {
        case .itemEnded(.finished):
            engine.drop(id, reason: .ended)
        case .itemEnded(.error(let error)):
            engine.drop(id, reason: .failed(error))
        case .shuttingDown, .shutDown:
            // Dropped when it begins to shut down, so the member hears it before its shutDown.
            engine.drop(id, reason: .shutDown)
        default:
            break
        }
    }
}
