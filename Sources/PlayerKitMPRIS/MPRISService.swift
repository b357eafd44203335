import Dispatch
import Foundation
import Logging
import PlayerKitCore
import PlayerKitSupport

/// Puts players on the desktop: each published player is an MPRIS media player on the D-Bus
/// session bus, named by its ID, so media keys, GNOME's and KDE's media controls, lock screens,
/// KDE Connect and `playerctl` see it and control it.
///
/// ```swift
/// let mpris = try MPRISService(configuration: MPRISConfiguration(appName: "compare", identity: "PlayerKit Compare"))
/// try mpris.publish(left)                     // org.mpris.MediaPlayer2.compare.instance_left
/// try mpris.publish(right, options: MPRISPlayerOptions(controls: [.playback]))
/// try mpris.setMediaKeysPlayer(left.id)      // also org.mpris.MediaPlayer2.compare
/// ```
///
/// **Names.** A player is published as `org.mpris.MediaPlayer2.<app>.instance_<ID>`, its ID
/// escaped to D-Bus's rules (the player's ``MPRISEvent/published(busName:)`` says which), so two players of one app are two MPRIS players
/// that desktops list and control apart: `playerctl --player=compare.instance_left play-pause`
/// pauses that one and no other. ``setOptions(_:for:)`` with ``MPRISPlayerOptions/isVisible`` takes a player off the bus and back.
///
/// **Media keys.** Desktops send media keys to a player of their choosing (the one playing, or
/// the one most recently active). An app with several players says which one is its own with
/// ``setMediaKeysPlayer(_:)``: that player is also published under the app's name,
/// `org.mpris.MediaPlayer2.<app>`, which follows the mark as it moves, and announces itself
/// then, so clients that track the most recent player (`playerctld`, which window managers bind
/// media keys to) turn to it. An app that wants one entry on the desktop for all its players
/// hides the players' own names and moves the mark.
///
/// **What the desktop sees** comes from the player's events on its bus, never from polling:
/// `PlaybackStatus`, `Metadata` (`mpris:trackid`, `xesam:title`, `mpris:length`, `xesam:url`,
/// and `mpris:artUrl` from ``MPRISPlayerOptions/artworkURL``), `Position` (the last reported position,
/// moved on at the rate while playing), `Rate`, `Volume`, `LoopStatus`, `CanGoNext`,
/// `CanGoPrevious`, `CanSeek` and the rest, with `PropertiesChanged` for each change and
/// `Seeked` after each seek or jump.
///
/// **What the desktop may do** is the player's ``MPRISPlayerOptions/controls``: `Play`,
/// `Pause`, `PlayPause`, `Stop`, `Seek`, `SetPosition` (checking the track ID), `Next`,
/// `Previous`, `Volume`, `Rate`, `LoopStatus`, `Fullscreen` (through the player's fullscreen
/// arbiter), and `Raise` and `Quit` for the app to carry out. Each request reaches the app as an
/// ``MPRISEvent/requested(_:from:outcome:)`` on the player's bus, naming the client that sent it
/// and what came of it. What is not allowed, out of range, NaN, for another track or for a
/// shut-down player is answered with a D-Bus error named for it (``MPRISRefusal``), and the
/// player is not touched.
///
/// **The bus.** The service connects on a thread of its own and never blocks the caller:
/// ``publish(_:options:)`` returns at once, and ``MPRISEvent/published(busName:)`` follows on
/// the player's bus once the name is the player's. When the bus goes away, the players are
/// told (``MPRISUnpublishReason/busLost``), and the service reconnects with a growing delay
/// (``MPRISConfiguration/initialReconnectDelay`` up to ``MPRISConfiguration/maximumReconnectDelay``)
/// and publishes them again. ``serviceEvents(bufferLimit:)->EventStream<MPRISServiceEvent>`` reports the connection.
///
/// **Threading.** Every method may be called from any thread or task and returns without
/// waiting on the bus or a player (``shutdown()`` waits, bounded). The service follows
/// PlayerKit's feature model: one lock around its state, held for single steps; players are
/// driven with `send`, never a waiting call. Clients' calls are
/// answered on the service's bus thread; players' events are taken on their pumps
/// (`.immediate`), in one step each.
public final class MPRISService: Sendable {
    /// The configuration it was made with.
    let configuration: MPRISConfiguration
    /// The bus address it connects to (the configuration's `busAddress`, or the session bus's).
    let busAddress: String

    private struct Published {
        let player: any MediaPlayer
        let busName: String
        var options: MPRISPlayerOptions
        var model: MPRISPlayerModel
        var subscription: PlayerSubscription?
    }

    private struct State {
        var players: [PlayerID: Published] = [:]
        /// Players that left, and why, for their entries' departure (held weakly: a player the app
        /// dropped is not kept for it).
        var departed: [PlayerID: (player: WeakReference<any MediaPlayer>, reason: MPRISUnpublishReason)] = [:]
        var mediaKeysPlayer: PlayerID?
        var isShutDown = false
        var isConnected = false
        var lastFailure: String?
        var connectionWaiters: [Int: CheckedContinuation<Bool, Never>] = [:]
        var nextID = 0
    }

    private let state = Locked(State())
    /// The service's connection events, to every sequence asked for (called on the bus thread,
    /// one at a time, so in order).
    private let broadcast = EventBroadcast<MPRISServiceEvent>()
    private let clock: any MonotonicClock
    private let logger = Logger(label: "PlayerKit.mpris")
    private let loop: BusLoop

    /// The `org.mpris.MediaPlayer2.Player` properties announced when the app's entry changes
    /// player (all but `Position`, which MPRIS announces with `Seeked`, and the constants).
    static let announcedPlayerProperties: Set<String> = [
        "PlaybackStatus", "LoopStatus", "Rate", "Metadata", "Volume", "MinimumRate", "MaximumRate",
        "CanGoNext", "CanGoPrevious", "CanPlay", "CanPause", "CanSeek",
    ]
    /// The `org.mpris.MediaPlayer2` properties announced then.
    static let announcedRootProperties: Set<String> = ["CanQuit", "CanRaise", "Fullscreen", "CanSetFullscreen", "Identity"]

    /// A service for the app `configuration` describes. It starts connecting to the bus at once,
    /// on a thread of its own; a bus that is not there yet is tried again with a growing delay.
    ///
    /// - Parameters:
    ///   - configuration: the app's name, identity and bus.
    ///   - clock: the clock for positions between reports (a `ManualClock` in tests).
    /// - Throws: ``MPRISError/invalidAppName(_:reason:)``, ``MPRISError/invalidArgument(name:value:reason:)``
    ///   for a configuration outside its domain; ``MPRISError/busUnavailable(address:reason:)``
    ///   when the process cannot make the descriptor the service's thread waits on.
    public init(configuration: MPRISConfiguration, clock: any MonotonicClock = ContinuousClock()) throws(MPRISError) {
        try configuration.validate()
        self.configuration = configuration
        self.clock = clock
        busAddress = configuration.busAddress ?? MPRISConfiguration.sessionBusAddress
        loop = try BusLoop(address: busAddress, configuration: configuration, logger: logger)
        loop.start(owner: self)
    }

    /// A service dropped without ``shutdown()`` closes its connections soon after (their names
    /// leave the bus); its players are not told.
    deinit {
        loop.stopSoon()
    }

    // MARK: Publishing

    /// Publishes `player` on the bus as `org.mpris.MediaPlayer2.<app>.instance_<ID>`.
    ///
    /// Returns at once; ``MPRISEvent/published(busName:)`` follows on the player's bus once the
    /// name is the player's. The player stays published until ``unpublish(_:)``, its shutdown
    /// (its name then leaves the bus), or the service's ``shutdown()``; the service holds it
    /// until then.
    /// - Throws: ``MPRISError/alreadyPublished(_:)``, ``MPRISError/playerShutDown(_:)``,
    ///   ``MPRISError/busNameTooLong(_:busName:)``, ``MPRISError/serviceShutDown``.
    public func publish(_ player: any MediaPlayer, options: MPRISPlayerOptions = MPRISPlayerOptions()) throws(MPRISError) {
        let id = player.id
        guard !state.withLock({ $0.isShutDown }) else { throw .serviceShutDown }
        let busName = try MPRISBusName.forPlayer(id, app: configuration.appName)
        guard !player.isShutDown else { throw .playerShutDown(id) }
        let added: Bool = try state.withLock { (state: inout State) throws(MPRISError) -> Bool in
            guard !state.isShutDown else { throw .serviceShutDown }
            guard state.players[id] == nil else { throw .alreadyPublished(id) }
            var model = MPRISPlayerModel(player: player, now: clock.now)
            model.artworkURL = options.artworkURL
            state.players[id] = Published(player: player, busName: busName, options: options, model: model)
            state.departed[id] = nil
            return true
        }
        guard added else { return }
        // Subscribed after the model was seeded from the read-outs: events from now on refine it.
        let subscription = player.eventBus.subscribe(to: id, kinds: Self.followedKinds, delivery: .immediate) { [weak self] record in
            self?.playerEvent(record)
        }
        let kept = state.withLock { state -> Bool in
            guard state.players[id] != nil, !state.isShutDown else { return false }
            state.players[id]?.subscription = subscription
            return true
        }
        if !kept { subscription.cancel() }
        // A player that shut down while it was being published is taken off again.
        if player.isShutDown { removePlayer(id, reason: .playerShutDown) }
        loop.reconcile()
    }

    /// Takes player `id` off the bus (its names leave it, and it hears
    /// ``MPRISEvent/unpublished(busName:reason:)`` with ``MPRISUnpublishReason/removed``).
    /// - Throws: ``MPRISError/notPublished(_:)``.
    public func unpublish(_ id: PlayerID) throws(MPRISError) {
        guard removePlayer(id, reason: .removed) else { throw .notPublished(id) }
    }

    /// Replaces player `id`'s options from now on (what ``publish(_:options:)`` was given): its
    /// name on the bus shows or hides with ``MPRISPlayerOptions/isVisible`` (a hidden player
    /// stays published: it can still be the media-keys player), its `Can…` properties follow
    /// ``MPRISPlayerOptions/controls``, and ``MPRISPlayerOptions/artworkURL`` and
    /// the options' `identity` are announced anew when they change. Keep the options you
    /// published with and change the field you mean:
    /// `options.artworkURL = poster; try mpris.setOptions(options, for: player.id)`.
    /// - Throws: ``MPRISError/notPublished(_:)``, ``MPRISError/serviceShutDown``.
    public func setOptions(_ options: MPRISPlayerOptions, for id: PlayerID) throws(MPRISError) {
        var old = options
        try update(id) { published in
            old = published.options
            published.options = options
            published.model.artworkURL = options.artworkURL
        }
        if old.isVisible != options.isVisible { loop.reconcile() }
        var change = MPRISPlayerModel.Change()
        if old.controls != options.controls {
            change.player.formUnion(["CanGoNext", "CanGoPrevious", "CanPlay", "CanPause", "CanSeek"])
            change.root.formUnion(["CanQuit", "CanRaise", "CanSetFullscreen"])
        }
        if old.artworkURL != options.artworkURL { change.player.insert("Metadata") }
        if old.identity != options.identity { change.root.insert("Identity") }
        if !change.player.isEmpty || !change.root.isEmpty { loop.announce(change, of: id) }
    }

    /// The player media keys control: also published under the app's own name,
    /// `org.mpris.MediaPlayer2.<app>` (see the type's "Media keys"). nil: none.
    var mediaKeysPlayer: PlayerID? { state.withLock { $0.mediaKeysPlayer } }

    /// Marks player `id` as the one media keys control, or none with nil. The app's name moves
    /// to it; the player that had it hears ``MPRISEvent/unpublished(busName:reason:)``
    /// (``MPRISUnpublishReason/hidden``) for that name, and `id` hears
    /// ``MPRISEvent/published(busName:)``.
    /// - Throws: ``MPRISError/notPublished(_:)``.
    public func setMediaKeysPlayer(_ id: PlayerID?) throws(MPRISError) {
        try state.withLock { (state: inout State) throws(MPRISError) in
            if let id, state.players[id] == nil { throw .notPublished(id) }
            state.mediaKeysPlayer = id
        }
        loop.reconcile()
        loop.retargetApp()
    }

    /// The IDs of the published players, sorted.
    var publishedPlayers: [PlayerID] { state.withLock { $0.players.keys.sorted() } }

    /// The MPRIS name of published player `id`, nil when it is not published.
    func busName(of id: PlayerID) -> String? { state.withLock { $0.players[id]?.busName } }

    /// The app's own MPRIS name, `org.mpris.MediaPlayer2.<app>`, where the media-keys player is
    /// published.
    var appBusName: String { MPRISBusName.prefix + configuration.appName }

    // MARK: The connection

    /// Whether the service is connected to the bus now.
    var isConnected: Bool { state.withLock { $0.isConnected } }

    /// Returns once the service is connected to the bus, at most `timeout` (on the monotonic
    /// clock).
    /// - Throws: ``MPRISError/busUnavailable(address:reason:)`` with the last failure when the
    ///   time is up; ``MPRISError/serviceShutDown``.
    func waitUntilConnected(timeout: Duration = .seconds(5)) async throws(MPRISError) {
        let connected = await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            let waiter = state.withLock { state -> Int? in
                if state.isConnected || state.isShutDown { return nil }
                state.nextID += 1
                state.connectionWaiters[state.nextID] = continuation
                return state.nextID
            }
            guard let waiter else { return continuation.resume(returning: isConnected) }
            DispatchQueue.global().asyncAfter(deadline: .now() + timeout.dispatchInterval) { [state] in
                state.withLock { $0.connectionWaiters.removeValue(forKey: waiter) }?.resume(returning: false)
            }
        }
        if connected { return }
        let (down, failure) = state.withLock { ($0.isShutDown, $0.lastFailure) }
        if down { throw .serviceShutDown }
        throw .busUnavailable(address: busAddress, reason: failure ?? "no connection within \(timeout)")
    }

    /// The service's connection events from now on: ``MPRISServiceEvent/connected(address:)``
    /// and ``MPRISServiceEvent/disconnected(reason:retryAfter:)``. At most `bufferLimit` wait
    /// for the consumer (the oldest are dropped). The sequence ends at ``shutdown()``.
    public func serviceEvents(bufferLimit: Int = EventStream<MPRISServiceEvent>.defaultBufferLimit) -> EventStream<MPRISServiceEvent> {
        let (stream, continuation) = EventStream<MPRISServiceEvent>.makeStream(bufferLimit: bufferLimit)
        broadcast.add(yield: { continuation.yield($0) }, finish: { continuation.finish() }, isEnded: { continuation.isFinished })
        return stream
    }

    /// Takes every player off the bus (each hears ``MPRISUnpublishReason/serviceShutDown``),
    /// closes the connections and ends the thread; returns once it ended, at most 5 s.
    /// Calls after it throw ``MPRISError/serviceShutDown``.
    public func shutdown() async {
        let (subscriptions, waiters) = state.withLock { state in
            state.isShutDown = true
            defer { state.connectionWaiters = [:] }
            return (state.players.values.compactMap(\.subscription), Array(state.connectionWaiters.values))
        }
        for subscription in subscriptions { subscription.cancel() }
        for waiter in waiters { waiter.resume(returning: false) }
        await loop.stop(timeout: .seconds(5))
        state.withLock { state in
            state.players = [:]
            state.departed = [:]
        }
        broadcast.finish()
    }

    // MARK: Players' events (on their pumps)

    static let followedKinds: Set<PlayerEventKind> = [
        .stateChanged, .positionChanged, .seekCompleted, .durationKnown, .mediaLoaded, .volumeChanged, .speedChanged,
        .loopModeChanged, .playlistChanged, .fullscreenStateChanged, .eventsLost, .shutDown,
    ]

    private func playerEvent(_ record: PlayerEventRecord) {
        let id = record.playerID
        if record.event == .shutDown {
            removePlayer(id, reason: .playerShutDown)
            return
        }
        let change = state.withLock { state -> MPRISPlayerModel.Change? in
            guard state.players[id] != nil else { return nil }
            return state.players[id]?.model.apply(record.event, at: record.time)
        }
        if let change { loop.announce(change, of: id) }
    }

    @discardableResult
    private func removePlayer(_ id: PlayerID, reason: MPRISUnpublishReason) -> Bool {
        let removed = state.withLock { state -> Published? in
            guard let published = state.players.removeValue(forKey: id) else { return nil }
            if state.departed.count >= 256 { state.departed = [:] }
            state.departed[id] = (WeakReference(published.player), reason)
            if state.mediaKeysPlayer == id { state.mediaKeysPlayer = nil }
            return published
        }
        guard let removed else { return false }
        removed.subscription?.cancel()
        loop.reconcile()
        return true
    }

    private func update(_ id: PlayerID, _ change: (inout Published) -> Void) throws(MPRISError) {
        try state.withLock { (state: inout State) throws(MPRISError) in
            guard !state.isShutDown else { throw .serviceShutDown }
            guard state.players[id] != nil else { throw .notPublished(id) }
            change(&state.players[id]!)
        }
    }

    // MARK: For the bus thread

    /// The entries the service wants on the bus: each visible player's, and the app's when a
    /// media-keys player is set.
    func desiredEntries() -> [EntryKey: (busName: String, target: PlayerID?)] {
        state.withLock { state in
            guard !state.isShutDown else { return [:] }
            var desired: [EntryKey: (busName: String, target: PlayerID?)] = [:]
            for (id, published) in state.players where published.options.isVisible {
                desired[.player(id)] = (published.busName, id)
            }
            if let mark = state.mediaKeysPlayer, state.players[mark] != nil { desired[.app] = (appBusName, mark) }
            return desired
        }
    }

    /// Why an entry that showed `target` is no longer wanted.
    func departureReason(of key: EntryKey, target: PlayerID?) -> MPRISUnpublishReason {
        state.withLock { state in
            if state.isShutDown { return .serviceShutDown }
            guard let target, state.players[target] == nil else { return .hidden }
            return state.departed[target]?.reason ?? .removed
        }
    }

    /// Publishes `event` on player `id` (published, or departed).
    func report(_ event: MPRISEvent, to id: PlayerID) {
        let player = state.withLock { $0.players[id]?.player ?? $0.departed[id]?.player.object }
        player?.publish(event)
    }

    func busConnected(address: String) {
        let waiters = state.withLock { state in
            state.isConnected = true
            state.lastFailure = nil
            defer { state.connectionWaiters = [:] }
            return Array(state.connectionWaiters.values)
        }
        for waiter in waiters { waiter.resume(returning: true) }
        broadcast.yield(.connected(address: address))
    }

    func busDisconnected(reason: String, retryAfter: Duration) {
        state.withLock { state in
            state.isConnected = false
            state.lastFailure = reason
        }
        broadcast.yield(.disconnected(reason: reason, retryAfter: retryAfter))
    }

    /// The player an entry shows.
    private static func target(of key: EntryKey, in state: State) -> PlayerID? {
        switch key {
        case .player(let id): return id
        case .app: return state.mediaKeysPlayer
        }
    }

    /// Decides a client's request to the player behind `key`, hands the player what was decided
    /// (without waiting) and reports it on the player's bus; returns the refusal, if refused.
    func handle(_ request: MPRISRequest, on key: EntryKey, from client: MPRISClient) -> MPRISRefusal? {
        guard let player = state.withLock({ state in Self.target(of: key, in: state).flatMap { state.players[$0]?.player } }) else {
            return .noPlayer
        }
        let isShutDown = player.isShutDown
        let now = clock.now
        guard let decision = state.withLock({ state in
            state.players[player.id].map {
                $0.model.decide(request, controls: $0.options.controls, appHandles: $0.options.appHandles, isShutDown: isShutDown, now: now)
            }
        }) else { return .playerShutDown }
        let outcome: MPRISOutcome
        switch decision {
        case .command(let command):
            do {
                try player.send(command)
                outcome = .applied(command)
            } catch {
                switch error {
                case .playerShutDown: outcome = .refused(.playerShutDown)
                case .noMediaLoaded: outcome = .refused(.noMediaLoaded)
                case .invalidArgument(let name, let value, let reason): outcome = .refused(.invalidArgument(name: name, value: value, reason: reason))
                default: outcome = .refused(.failed(error))
                }
            }
        case .ignore(let reason): outcome = .ignored(reason: reason)
        case .forward(let command): outcome = .forwardedToApp(command)
        case .refuse(let refusal): outcome = .refused(refusal)
        }
        logger.debug("request", metadata: ["player": "\(player.id)", "request": "\(request)", "from": "\(client)", "outcome": "\(outcome)"])
        player.publish(MPRISEvent.requested(request, from: client, outcome: outcome))
        if case .refused(let refusal) = outcome { return refusal }
        return nil
    }

    /// The value of property `name` of `interface` for the entry `key`; nil when no player is
    /// behind it.
    func propertyValue(interface: String, name: String, entry key: EntryKey) -> BusValue? {
        let now = clock.now
        return state.withLock { state -> BusValue? in
            guard let id = Self.target(of: key, in: state), let published = state.players[id] else { return nil }
            let controls = published.options.controls
            guard interface == BusLoop.rootInterface else {
                return published.model.playerProperty(name, controls: controls, now: now)
            }
            switch name {
            case "CanQuit": return .bool(controls.contains(.quit))
            case "CanRaise": return .bool(controls.contains(.raise))
            case "Fullscreen": return .bool(published.model.isFullscreen)
            case "CanSetFullscreen": return .bool(controls.contains(.fullscreen))
            case "HasTrackList": return .bool(false)
            case "Identity":
                if key == .app { return .string(configuration.identity) }
                return .string(published.options.identity ?? "\(configuration.identity) (\(id))")
            case "DesktopEntry": return .string(configuration.desktopEntry ?? "")
            case "SupportedUriSchemes", "SupportedMimeTypes": return .strings([])
            default: return nil
            }
        }
    }
}
