/// Every error a ``Player`` throws or reports. Each case names the offending value.
///
/// After any of these errors the player stays usable (except, of course, after
/// ``playerShutDown(_:)``), and other players are never affected. Features have error types of
/// their own (`FullscreenPolicyError`, `DecoderBudgetError`, ...); the generic cases here
/// (``invalidArgument(name:value:reason:)``, ``timedOut(operation:after:)``) are public so that
/// features, PlayerKit's and an app's, report bad input the same way.
///
/// **Can grow.** The enum is `@nonexhaustive` (SE-0487): outside PlayerKit a `switch` over it
/// needs an `@unknown default` case, so an error added in a later release does not break the
/// app's build. Matching single cases (`catch PlayerError.fileNotFound(let path)`) needs nothing.
@nonexhaustive
public enum PlayerError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The ID is empty, all whitespace, or contains control characters.
    case invalidID(String)
    /// A live player already has this ID. The ID becomes free once that player shuts down.
    case duplicateID(PlayerID)
    /// The player was shut down (or is shutting down); no call reaches its mpv core any more.
    case playerShutDown(PlayerID)
    /// libmpv could not create or initialize a core.
    case creationFailed(reason: String)
    /// mpv rejected an option given in ``PlayerConfiguration/extraOptions``.
    case invalidOption(name: String, value: String, MPVError)
    /// A local media path does not exist.
    case fileNotFound(path: String)
    /// A local media path exists but is not a regular file (for example a directory).
    case notAFile(path: String)
    /// A local media file is empty.
    case emptyFile(path: String)
    /// A local media path is longer than the system accepts: the whole path beyond `PATH_MAX`
    /// (4096 bytes on Linux) or one of its components beyond `NAME_MAX` (255 bytes).
    /// Whether or not the file exists, nothing can open it by this path.
    case pathTooLong(path: String)
    /// A local media file exists but this process may not read it (or search a folder on
    /// its path).
    case permissionDenied(path: String)
    /// The URL's scheme is not one mpv can open (see mpv's `protocol-list`).
    case unsupportedScheme(scheme: String, source: String)
    /// The media source string is empty or otherwise unusable.
    case invalidSource(String)
    /// mpv could not open or play the item (unrecognized format, broken file, network error).
    case loadFailed(source: String, MPVError)
    /// The load was superseded (another load, `stop()`, or shutdown) before the item loaded,
    /// or the task awaiting it was cancelled.
    case loadCancelled(source: String)
    /// The operation needs loaded media and there is none.
    case noMediaLoaded(operation: String)
    /// mpv has no property with this name.
    case propertyNotFound(name: String)
    /// The property exists but has no value right now (e.g. `duration` with nothing loaded).
    case propertyUnavailable(name: String)
    /// mpv rejected the value for the property (wrong type or out of range).
    case invalidPropertyValue(name: String, value: String, MPVError)
    /// mpv has no command with this name.
    case unknownCommand(name: String)
    /// mpv refused or failed the command; the arguments are as they were given.
    case commandFailed(command: [String], MPVError)
    /// A typed API call got an argument outside its domain (NaN position, negative speed, ...).
    case invalidArgument(name: String, value: String, reason: String)
    /// Playback of a loaded item failed part-way (e.g. a decoder error).
    case playbackFailed(source: String?, MPVError)
    /// The player waited for the network longer than
    /// ``PlayerConfiguration/bufferingTimeout`` while buffering, and gave up on the item at
    /// `position` (seconds, when known).
    case bufferingTimedOut(source: String, position: Double?, after: Duration)
    /// A live source was lost (its server went away, refused, answered an error or stopped
    /// answering, and FFmpeg gave it up), and opening it again did not bring it back: the player
    /// tried for `after`, within ``PlayerConfiguration/networkTimeout`` (or
    /// ``PlayerConfiguration/bufferingTimeout`` when that is shorter). `cause` is why, as FFmpeg
    /// reported it for this player's own connection. Also the error of a lost live item that is
    /// not the last of its playlist (mpv goes on to the next; `after` is zero).
    case networkFailed(source: String, cause: NetworkFailure, after: Duration)
    /// mpv refused a request made without waiting (``Player/send(_:)``, a load) because the
    /// player's event queue is full: its events are not read as fast as they come (a handler
    /// blocking the event pump, or a flood of sent commands). Nothing was done; the player stays
    /// usable and takes requests again once its events are read.
    case eventQueueFull(PlayerID, operation: String)
    /// Something PlayerKit waited for did not happen in time; `operation` says what.
    case timedOut(operation: String, after: Duration)
    /// mpv's event queue overflowed before its answer to `operation`, made with
    /// ``Player/perform(_:timeout:)``, was read: whether mpv carried it out is not known. The
    /// player re-read its state (``PlayerEvent/eventsLost(_:)``), so its read-outs say where it is.
    case replyLost(PlayerID, operation: String)
    /// The loaded item has no track of `kind` with this ID; `available` lists the IDs it has.
    case unknownTrack(kind: Track.Kind, id: Int, available: [Int])
    /// No audio output device has this name; `available` lists the names there are
    /// (``AudioDevice/name``).
    case unknownAudioDevice(name: String, available: [String])
    /// mpv could not read the subtitle file (not a subtitle format it knows, or broken); its
    /// reason is in the ``MPVError``.
    case subtitlesFailed(path: String, MPVError)
    /// The player's ``FullscreenArbiter`` (a fullscreen policy) refused to let it enter or
    /// leave fullscreen; nothing changed. The reason names the rule, e.g. the player that owns
    /// fullscreen.
    case fullscreenRefused(PlayerID, reason: String)

    /// A one-line, human-readable description that quotes the offending value.
    public var description: String {
        switch self {
        case .invalidID(let raw):
            return "invalid player ID \(raw.debugDescription): an ID must not be empty, all whitespace or contain control characters"
        case .duplicateID(let id):
            return "a live player already has the ID \"\(id)\""
        case .playerShutDown(let id):
            return "player \"\(id)\" has been shut down"
        case .creationFailed(let reason):
            return "could not create an mpv core: \(reason)"
        case .invalidOption(let name, let value, let error):
            return "mpv rejected option \(name)=\(value.debugDescription): \(error)"
        case .fileNotFound(let path):
            return "no such file: \(path)"
        case .notAFile(let path):
            return "not a regular file: \(path)"
        case .emptyFile(let path):
            return "empty file: \(path)"
        case .pathTooLong(let path):
            let longest = path.split(separator: "/").map(\.utf8.count).max() ?? 0
            return "path too long (\(path.utf8.count) bytes, longest component \(longest); the limits are 4095 and 255): \(path.prefix(120))..."
        case .permissionDenied(let path):
            return "permission denied: \(path)"
        case .unsupportedScheme(let scheme, let source):
            return "unsupported URL scheme \"\(scheme)\" in \(source)"
        case .invalidSource(let source):
            return "invalid media source \(source.debugDescription)"
        case .loadFailed(let source, let error):
            return "could not load \(source): \(error)"
        case .loadCancelled(let source):
            return "loading \(source) was cancelled before it finished"
        case .noMediaLoaded(let operation):
            return "\(operation) needs loaded media, and nothing is loaded"
        case .propertyNotFound(let name):
            return "mpv has no property \"\(name)\""
        case .propertyUnavailable(let name):
            return "property \"\(name)\" has no value right now"
        case .invalidPropertyValue(let name, let value, let error):
            return "invalid value \(value.debugDescription) for property \"\(name)\": \(error)"
        case .unknownCommand(let name):
            return "mpv has no command \"\(name)\""
        case .commandFailed(let command, let error):
            return "mpv command \(command) failed: \(error)"
        case .invalidArgument(let name, let value, let reason):
            return "invalid \(name) \(value): \(reason)"
        case .playbackFailed(let source, let error):
            return "playback of \(source ?? "the current item") failed: \(error)"
        case .bufferingTimedOut(let source, let position, let after):
            let at = position.map { " at \(String(format: "%.2f", $0)) s" } ?? ""
            return "gave up on \(source)\(at): buffering for longer than \(after) (the network stopped delivering)"
        case .networkFailed(let source, let cause, let after):
            let seconds = Double(after.components.seconds) + Double(after.components.attoseconds) / 1e18
            let tried = after > .zero ? String(format: ", and did not come back in %.1f s", seconds) : ""
            return "lost the live source \(source): \(cause)\(tried)"
        case .eventQueueFull(let id, let operation):
            return "player \"\(id)\" refused \(operation): its mpv event queue is full (events are not read as fast as they come)"
        case .timedOut(let operation, let after):
            return "\(operation) timed out after \(after)"
        case .replyLost(let id, let operation):
            return "player \"\(id)\" lost mpv's answer to \(operation) when its event queue overflowed (whether it was carried out is not known)"
        case .unknownTrack(let kind, let id, let available):
            let have = available.isEmpty ? "it has none" : "it has \(available.map(String.init).joined(separator: ", "))"
            return "no \(kind.rawValue) track \(id) in the loaded item (\(have))"
        case .unknownAudioDevice(let name, let available):
            return "no audio device \"\(name)\" (there are: \(available.joined(separator: ", ")))"
        case .subtitlesFailed(let path, let error):
            return "could not add subtitles from \"\(path)\": \(error)"
        case .fullscreenRefused(let id, let reason):
            return "player \"\(id)\" may not change fullscreen: \(reason)"
        }
    }
}
