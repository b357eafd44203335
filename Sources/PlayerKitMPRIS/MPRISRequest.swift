import PlayerKitCore

/// What a desktop client (media keys, a panel, `playerctl`) asked of a published player, in
/// PlayerKit's units: seconds, not MPRIS's microseconds; the volume as MPRIS gives it (1 is
/// full).
///
/// **Can grow.** `@nonexhaustive`: a `switch` over it outside PlayerKit needs `@unknown default`.
@nonexhaustive
public enum MPRISRequest: Sendable, Hashable, CustomStringConvertible {
    /// `Play`.
    case play
    /// `Pause`.
    case pause
    /// `PlayPause`.
    case playPause
    /// `Stop`.
    case stop
    /// `Next`.
    case next
    /// `Previous`.
    case previous
    /// `Seek`: move by this many seconds (negative: back).
    case seek(by: Double)
    /// `SetPosition`: go to this position in seconds, in the track with this ID.
    case setPosition(Double, trackID: String)
    /// `Volume` set: 0 is silent, 1 full (the player's volume 100); more amplifies, up to the
    /// player's maximum.
    case setVolume(Double)
    /// `Rate` set: the playback speed (0 pauses, as MPRIS says).
    case setRate(Double)
    /// `LoopStatus` set: `None`, `Track` or `Playlist`, as sent.
    case setLoopStatus(String)
    /// `Fullscreen` set.
    case setFullscreen(Bool)
    /// `OpenUri`.
    case openURI(String)
    /// `Raise`.
    case raise
    /// `Quit`.
    case quit

    /// The control the request needs (``MPRISPlayerOptions/controls``); nil for `OpenUri`,
    /// which no control allows (PlayerKit's players announce no URI schemes).
    var control: MPRISControls? {
        switch self {
        case .play, .pause, .playPause, .stop: return .playback
        case .next, .previous: return .playlist
        case .seek, .setPosition: return .seeking
        case .setVolume: return .volume
        case .setRate: return .rate
        case .setLoopStatus: return .loop
        case .setFullscreen: return .fullscreen
        case .raise: return .raise
        case .quit: return .quit
        case .openURI: return nil
        }
    }

    /// The request as MPRIS names it, e.g. "Seek(-5.0 s)" or "Volume = 0.5".
    public var description: String {
        switch self {
        case .play: return "Play"
        case .pause: return "Pause"
        case .playPause: return "PlayPause"
        case .stop: return "Stop"
        case .next: return "Next"
        case .previous: return "Previous"
        case .seek(let seconds): return "Seek(\(seconds) s)"
        case .setPosition(let seconds, let track): return "SetPosition(\(track), \(seconds) s)"
        case .setVolume(let volume): return "Volume = \(volume)"
        case .setRate(let rate): return "Rate = \(rate)"
        case .setLoopStatus(let status): return "LoopStatus = \(status)"
        case .setFullscreen(let fullscreen): return "Fullscreen = \(fullscreen)"
        case .openURI(let uri): return "OpenUri(\(uri))"
        case .raise: return "Raise"
        case .quit: return "Quit"
        }
    }
}

/// Who sent a request: the client's connection on the bus, and the process behind it when the
/// bus would say.
public struct MPRISClient: Sendable, Hashable, CustomStringConvertible {
    /// The client's unique bus name, e.g. ":1.42".
    public var busName: String
    /// The client's process ID, when the bus told it.
    public var processID: Int32?
    /// The client's process name (`/proc/<pid>/comm`, e.g. "playerctl"), when known.
    public var processName: String?
    /// The MPRIS name the request was sent to: the player's own, or the app's
    /// (``MPRISService/setMediaKeysPlayer(_:)``).
    var sentTo: String

    /// A client; see each property.
    init(busName: String, processID: Int32?, processName: String?, sentTo: String) {
        self.busName = busName
        self.processID = processID
        self.processName = processName
        self.sentTo = sentTo
    }

    /// "playerctl (pid 4242, :1.42)".
    public var description: String {
        var text = processName ?? "a client"
        text += " (" + (processID.map { "pid \($0), " } ?? "") + busName + ")"
        return text
    }
}

/// Why a request was not carried out. Each has its D-Bus error name, under
/// `org.playerkit.MPRIS.`, which the client receives with ``description`` as the message.
///
/// **Can grow.** `@nonexhaustive`: a `switch` over it outside PlayerKit needs `@unknown default`.
@nonexhaustive
public enum MPRISRefusal: Error, Sendable, Hashable, CustomStringConvertible {
    /// The app does not allow this control on this player (`org.playerkit.MPRIS.NotAllowed`).
    case notAllowed(MPRISControls)
    /// A value outside its domain: a NaN or infinite number, a position before the start or
    /// after the end, a rate outside the player's range, an unknown loop status
    /// (`org.playerkit.MPRIS.InvalidArgument`).
    case invalidArgument(name: String, value: String, reason: String)
    /// `SetPosition` named a track that is not the current one: a stale request, made before the
    /// item changed (`org.playerkit.MPRIS.UnknownTrack`).
    case unknownTrack(given: String, current: String)
    /// Nothing is loaded to play, pause or seek (`org.playerkit.MPRIS.NoMediaLoaded`).
    case noMediaLoaded
    /// MPRIS allows it but PlayerKit's players cannot do it: a `Playlist` loop, `OpenUri`
    /// (`org.playerkit.MPRIS.NotSupported`).
    case notSupported(String)
    /// The player is shut down (`org.playerkit.MPRIS.PlayerShutDown`).
    case playerShutDown
    /// The app's entry has no player: no player was chosen with ``MPRISService/setMediaKeysPlayer(_:)``
    /// (`org.playerkit.MPRIS.NoPlayer`).
    case noPlayer
    /// The player refused the command (`org.playerkit.MPRIS.Failed`): its error, e.g. a volume
    /// above its maximum, or a fullscreen its policy gave to another player.
    case failed(PlayerError)

    /// The D-Bus error name the client receives.
    var dbusName: String {
        switch self {
        case .notAllowed: return "org.playerkit.MPRIS.NotAllowed"
        case .invalidArgument: return "org.playerkit.MPRIS.InvalidArgument"
        case .unknownTrack: return "org.playerkit.MPRIS.UnknownTrack"
        case .noMediaLoaded: return "org.playerkit.MPRIS.NoMediaLoaded"
        case .notSupported: return "org.playerkit.MPRIS.NotSupported"
        case .playerShutDown: return "org.playerkit.MPRIS.PlayerShutDown"
        case .noPlayer: return "org.playerkit.MPRIS.NoPlayer"
        case .failed: return "org.playerkit.MPRIS.Failed"
        }
    }

    /// The message the client receives, naming the value.
    public var description: String {
        switch self {
        case .notAllowed(let control): return "the app does not allow \(control) on this player"
        case .invalidArgument(let name, let value, let reason): return "invalid \(name) \(value): \(reason)"
        case .unknownTrack(let given, let current): return "track \(given) is not the current track (\(current))"
        case .noMediaLoaded: return "nothing is loaded"
        case .notSupported(let what): return "not supported: \(what)"
        case .playerShutDown: return "the player is shut down"
        case .noPlayer: return "the app has no player for media keys at the moment"
        case .failed(let error): return "the player refused: \(error)"
        }
    }
}

/// What came of a request.
///
/// **Can grow.** `@nonexhaustive`: a `switch` over it outside PlayerKit needs `@unknown default`.
@nonexhaustive
public enum MPRISOutcome: Sendable, Hashable, CustomStringConvertible {
    /// Handed to the player as this command (sent without waiting: the player's own events tell
    /// when it took effect, and a refusal by mpv arrives as the player's `error` event).
    case applied(PlayerCommand)
    /// Allowed, and nothing to do (a `Seek` past the end of the last item, a `Play` while
    /// playing).
    case ignored(reason: String)
    /// Allowed, and for the app to carry out: `Raise` and `Quit` (PlayerKit has no window and
    /// does not end the app; `command` nil), and the controls the app handles itself
    /// (`MPRISPlayerOptions(appHandles:)`), with the command PlayerKit would have given the
    /// player (a relative `Seek` already made absolute, a `Rate` of 0 made a pause).
    case forwardedToApp(PlayerCommand?)
    /// Refused; the client got the D-Bus error.
    case refused(MPRISRefusal)

    /// "applied seek(to: 5.0, exact)", "refused: …".
    public var description: String {
        switch self {
        case .applied(let command): return "applied \(command)"
        case .ignored(let reason): return "ignored (\(reason))"
        case .forwardedToApp(let command): return "forwarded to the app" + (command.map { " (\($0))" } ?? "")
        case .refused(let refusal): return "refused: \(refusal)"
        }
    }
}
