import Foundation
import PlayerKitCore

/// What MPRIS says about one player, kept from the player's events: the properties desktops
/// read, which of them an event changed, and the decision on each request. Pure logic (no bus,
/// no lock): the service holds one per published player under its lock, and the tests drive it
/// with events and a clock of their own.
struct MPRISPlayerModel: Sendable {
    /// The MPRIS track ID of "no track".
    static let noTrack = "/org/mpris/MediaPlayer2/TrackList/NoTrack"
    /// A reported position further than this from where playback should be is a jump
    /// (`Seeked`), not playback.
    static let jumpTolerance = 1.0

    private(set) var state: PlayerState = .idle
    private(set) var isPaused = true
    private var anchorPosition = 0.0
    private var anchorTime: ContinuousClock.Instant
    private(set) var rate = 1.0
    private(set) var volume: Double?
    private(set) var loopMode: LoopMode?
    private(set) var duration: Double?
    private(set) var title: String?
    private(set) var source: String?
    private(set) var playlist: PlaylistPosition?
    private(set) var isFullscreen = false
    /// Counts the items loaded since the player was published: the track ID's number.
    private(set) var trackNumber = 0
    var artworkURL: URL?

    /// A model seeded from the player's read-outs at `now`.
    init(player: any MediaPlayer, now: ContinuousClock.Instant) {
        anchorTime = now
        state = player.state
        isPaused = player.isPaused
        anchorPosition = player.position ?? 0
        rate = player.snapshot.speed ?? 1
        volume = player.snapshot.volume
        loopMode = player.snapshot.loopMode
        duration = player.snapshot.duration
        playlist = player.snapshot.playlist
        isFullscreen = player.snapshot.isFullscreen ?? false
        if hasMedia, let info = player.snapshot.mediaInfo {
            trackNumber = 1
            title = info.title
            source = info.source
            duration = info.duration ?? duration
        }
    }

    /// What one event changed: the names of the properties of each interface that have new
    /// values (for `PropertiesChanged`), and the position of a jump (for `Seeked`).
    struct Change: Equatable, Sendable {
        var player: Set<String> = []
        var root: Set<String> = []
        var seeked: Double?
        var isEmpty: Bool { player.isEmpty && root.isEmpty && seeked == nil }
    }

    /// Whether an item is loaded (playing, paused, buffering or ready).
    var hasMedia: Bool {
        switch state {
        case .ready, .playing, .paused, .buffering: return true
        default: return false
        }
    }

    private var isAdvancing: Bool { state == .playing }

    /// The position at `now`: the last reported one, moved on by the time since at the rate
    /// while playing, within the item. Always finite and from 0: a position or rate that is not
    /// finite (as a malformed file can make a player report) gives the end of the item, or 0.
    func position(at now: ContinuousClock.Instant) -> Double {
        guard hasMedia else { return 0 }
        var position = anchorPosition
        if isAdvancing {
            let elapsed = now - anchorTime
            position += (Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18) * rate
        }
        let end = duration.flatMap { $0.isFinite ? max($0, 0) : nil }
        if let end { position = min(position, end) }
        guard position.isFinite else { return position == .infinity ? end ?? 0 : 0 }
        return max(position, 0)
    }

    private mutating func anchor(at position: Double?, now: ContinuousClock.Instant) {
        anchorPosition = position ?? self.position(at: now)
        anchorTime = now
    }

    /// Applies one of the player's events at `now`; returns what changed.
    mutating func apply(_ event: PlayerEvent, at now: ContinuousClock.Instant) -> Change {
        var change = Change()
        switch event {
        case .stateChanged(_, let new):
            let hadMedia = hasMedia
            anchor(at: nil, now: now)
            state = new
            switch new {
            case .playing: isPaused = false
            case .paused, .ready: isPaused = true
            default: break
            }
            change.player = ["PlaybackStatus"]
            if hadMedia != hasMedia {
                change.player.formUnion(["CanPlay", "CanPause", "CanSeek", "Metadata"])
                if !hasMedia { anchorPosition = 0; duration = nil }
            }
        case .positionChanged(let position):
            let expected = self.position(at: now)
            anchor(at: position, now: now)
            if hasMedia, abs(position - expected) > Self.jumpTolerance { change.seeked = position }
        case .seekCompleted(let position):
            anchor(at: position, now: now)
            change.seeked = position ?? anchorPosition
        case .durationKnown(let seconds):
            duration = seconds
            change.player = ["Metadata", "CanSeek"]
        case .mediaLoaded(let info):
            trackNumber += 1
            title = info.title
            source = info.source
            duration = info.duration
            anchor(at: 0, now: now)
            change.player = ["Metadata", "CanSeek", "CanPlay", "CanPause"]
        case .volumeChanged(let value):
            volume = value
            change.player = ["Volume"]
        case .speedChanged(let speed):
            anchor(at: nil, now: now)
            rate = speed
            change.player = ["Rate"]
        case .loopModeChanged(let mode):
            loopMode = mode
            change.player = ["LoopStatus"]
        case .playlistChanged(let position):
            playlist = position
            change.player = ["CanGoNext", "CanGoPrevious"]
        case .fullscreenStateChanged(let fullscreen):
            isFullscreen = fullscreen
            change.root = ["Fullscreen"]
        case .eventsLost(let snapshot):
            let hadMedia = hasMedia
            state = snapshot.state
            isPaused = snapshot.isPaused
            duration = snapshot.duration
            volume = snapshot.volume ?? volume
            rate = snapshot.speed ?? rate
            anchor(at: snapshot.position ?? 0, now: now)
            if hasMedia, !hadMedia { trackNumber += 1 }
            change.player = ["PlaybackStatus", "Metadata", "Volume", "Rate", "CanPlay", "CanPause", "CanSeek"]
            change.seeked = snapshot.position
        default:
            break
        }
        return change
    }

    // MARK: What desktops read

    /// MPRIS's `PlaybackStatus`: "Playing", "Paused" or "Stopped".
    var playbackStatus: String {
        switch state {
        case .playing: return "Playing"
        case .buffering: return isPaused ? "Paused" : "Playing"
        case .paused, .ready: return "Paused"
        default: return "Stopped"
        }
    }

    /// MPRIS's `LoopStatus`: "None" or "Track" (a player repeats its item, not its playlist).
    var loopStatus: String {
        switch loopMode {
        case .forever?, .playCount(2...)?: return "Track"
        default: return "None"
        }
    }

    /// The current track's ID (an object path), or MPRIS's "no track".
    var trackID: String { hasMedia && trackNumber > 0 ? "/org/playerkit/track/\(trackNumber)" : Self.noTrack }

    /// The source as a URL: a file path as a `file://` URL, anything else as given.
    var sourceURL: String? {
        guard let source else { return nil }
        if source.hasPrefix("/") { return URL(fileURLWithPath: source).absoluteString }
        return source
    }

    /// MPRIS's `Metadata`: `mpris:trackid`, and with an item `xesam:title`, `mpris:length`
    /// (microseconds), `xesam:url`, `mpris:artUrl`.
    var metadata: [(String, BusValue)] {
        var entries: [(String, BusValue)] = [("mpris:trackid", .objectPath(trackID))]
        guard hasMedia else { return entries }
        if let title { entries.append(("xesam:title", .string(title))) }
        if let duration, duration.isFinite { entries.append(("mpris:length", .int64(Self.microseconds(duration)))) }
        if let sourceURL { entries.append(("xesam:url", .string(sourceURL))) }
        if let artworkURL { entries.append(("mpris:artUrl", .string(artworkURL.absoluteString))) }
        return entries
    }

    /// Seconds as MPRIS's microseconds: 0 for NaN and the infinities, the largest or smallest
    /// Int64 beyond them (a malformed file can make a player report a duration of 10^13 s).
    static func microseconds(_ seconds: Double) -> Int64 {
        guard seconds.isFinite else { return 0 }
        let value = (seconds * 1_000_000).rounded()
        // 2^63 is the first Double past Int64.max.
        if value >= 9_223_372_036_854_775_808.0 { return .max }
        if value <= -9_223_372_036_854_775_808.0 { return .min }
        return Int64(value)
    }

    /// The value of the `org.mpris.MediaPlayer2.Player` property `name` at `now`, for a player
    /// with `controls`; nil for a name MPRIS does not define.
    func playerProperty(_ name: String, controls: MPRISControls, now: ContinuousClock.Instant) -> BusValue? {
        switch name {
        case "PlaybackStatus": return .string(playbackStatus)
        case "LoopStatus": return .string(loopStatus)
        case "Rate": return .double(rate)
        case "Metadata": return .dictionary(metadata)
        case "Volume": return .double((volume ?? 100) / 100)
        case "Position": return .int64(Self.microseconds(position(at: now)))
        case "MinimumRate": return .double(PlayerCommand.speedRange.lowerBound)
        case "MaximumRate": return .double(PlayerCommand.speedRange.upperBound)
        case "CanGoNext": return .bool(controls.contains(.playlist) && playlist?.hasNext == true)
        case "CanGoPrevious": return .bool(controls.contains(.playlist) && playlist?.hasPrevious == true)
        case "CanPlay", "CanPause": return .bool(controls.contains(.playback) && hasMedia)
        case "CanSeek": return .bool(controls.contains(.seeking) && hasMedia && duration != nil)
        case "CanControl": return .bool(!controls.isEmpty)
        default: return nil
        }
    }

    // MARK: Requests

    /// What to do about a request.
    enum Decision: Equatable, Sendable {
        case command(PlayerCommand)
        case ignore(String)
        case forward(PlayerCommand?)
        case refuse(MPRISRefusal)
    }

    /// The decision on `request` for a player with `controls` at `now`. Checks, in order: the
    /// control, the player being up, the arguments, then what the player's state allows; a
    /// command for a control in `appHandles` goes to the app instead of the player.
    func decide(_ request: MPRISRequest, controls: MPRISControls, appHandles: MPRISControls = [],
                isShutDown: Bool, now: ContinuousClock.Instant) -> Decision {
        let decision = decideForPlayer(request, controls: controls, isShutDown: isShutDown, now: now)
        if case .command(let command) = decision, let control = request.control, appHandles.contains(control) {
            return .forward(command)
        }
        return decision
    }

    private func decideForPlayer(_ request: MPRISRequest, controls: MPRISControls, isShutDown: Bool, now: ContinuousClock.Instant) -> Decision {
        guard let control = request.control else {
            return .refuse(.notSupported("OpenUri (PlayerKit's players announce no URI schemes; the app loads media)"))
        }
        guard controls.contains(control) else { return .refuse(.notAllowed(control)) }
        guard !isShutDown else { return .refuse(.playerShutDown) }
        switch request {
        case .play:
            guard hasMedia else { return .refuse(.noMediaLoaded) }
            return .command(.play)
        case .pause:
            guard hasMedia else { return .refuse(.noMediaLoaded) }
            return .command(.pause)
        case .playPause:
            guard hasMedia else { return .refuse(.noMediaLoaded) }
            return .command(playbackStatus == "Playing" ? .pause : .play)
        case .stop:
            guard hasMedia else { return .ignore("nothing is loaded") }
            return .command(.stop)
        case .next:
            guard playlist?.hasNext == true else { return .ignore("no next item") }
            return .command(.next)
        case .previous:
            guard playlist?.hasPrevious == true else { return .ignore("no previous item") }
            return .command(.previous)
        case .seek(let offset):
            guard offset.isFinite else {
                return .refuse(.invalidArgument(name: "seek offset", value: "\(offset)", reason: "must be a finite number"))
            }
            guard hasMedia else { return .refuse(.noMediaLoaded) }
            let target = position(at: now) + offset
            if let duration, target > duration {
                // MPRIS: a seek past the end acts as Next.
                return playlist?.hasNext == true ? .command(.next) : .ignore("past the end of the last item")
            }
            return .command(.seek(to: max(target, 0), precision: .exact))
        case .setPosition(let seconds, let track):
            guard hasMedia else { return .refuse(.noMediaLoaded) }
            guard track == trackID else { return .refuse(.unknownTrack(given: track, current: trackID)) }
            guard seconds.isFinite, seconds >= 0 else {
                return .refuse(.invalidArgument(name: "position", value: "\(seconds) s", reason: "must be 0 or more"))
            }
            if let duration, seconds > duration {
                return .refuse(.invalidArgument(name: "position", value: "\(seconds) s", reason: "is after the end of the track (\(duration) s)"))
            }
            return .command(.seek(to: seconds, precision: .exact))
        case .setVolume(let value):
            guard value.isFinite else {
                return .refuse(.invalidArgument(name: "volume", value: "\(value)", reason: "must be a finite number"))
            }
            // MPRIS: a negative volume means 0. The player's volume is a hundred times MPRIS's.
            let volume = max(value, 0) * 100
            guard volume.isFinite else {
                return .refuse(.invalidArgument(name: "volume", value: "\(value)", reason: "is larger than any volume"))
            }
            return .command(.setVolume(volume))
        case .setRate(let value):
            guard value.isFinite else {
                return .refuse(.invalidArgument(name: "rate", value: "\(value)", reason: "must be a finite number"))
            }
            // MPRIS: a rate of 0 is a pause.
            if value == 0 { return hasMedia ? .command(.pause) : .refuse(.noMediaLoaded) }
            guard PlayerCommand.speedRange.contains(value) else {
                return .refuse(.invalidArgument(
                    name: "rate", value: "\(value)",
                    reason: "must be between MinimumRate \(PlayerCommand.speedRange.lowerBound) and MaximumRate \(PlayerCommand.speedRange.upperBound)"))
            }
            return .command(.setSpeed(value))
        case .setLoopStatus(let status):
            switch status {
            case "None": return .command(.setLoop(.off))
            case "Track": return .command(.setLoop(.forever))
            case "Playlist": return .refuse(.notSupported("LoopStatus Playlist (a player repeats its item, not its playlist)"))
            default:
                return .refuse(.invalidArgument(name: "loop status", value: "\"\(status)\"", reason: "must be None, Track or Playlist"))
            }
        case .setFullscreen(let fullscreen):
            return .command(.setFullscreen(fullscreen))
        case .raise, .quit:
            return .forward(nil)
        case .openURI:
            return .refuse(.notSupported("OpenUri"))
        }
    }
}

/// A value of one of the D-Bus types MPRIS uses.
indirect enum BusValue: Sendable, Equatable {
    case string(String)
    case objectPath(String)
    case bool(Bool)
    case double(Double)
    case int64(Int64)
    case strings([String])
    case dictionary([(String, BusValue)])

    /// The D-Bus signature.
    var signature: String {
        switch self {
        case .string: return "s"
        case .objectPath: return "o"
        case .bool: return "b"
        case .double: return "d"
        case .int64: return "x"
        case .strings: return "as"
        case .dictionary: return "a{sv}"
        }
    }

    static func == (lhs: BusValue, rhs: BusValue) -> Bool {
        switch (lhs, rhs) {
        case (.string(let a), .string(let b)), (.objectPath(let a), .objectPath(let b)): return a == b
        case (.bool(let a), .bool(let b)): return a == b
        case (.double(let a), .double(let b)): return a == b
        case (.int64(let a), .int64(let b)): return a == b
        case (.strings(let a), .strings(let b)): return a == b
        case (.dictionary(let a), .dictionary(let b)): return a.map(\.0) == b.map(\.0) && zip(a, b).allSatisfy { $0.1 == $1.1 }
        default: return false
        }
    }
}
