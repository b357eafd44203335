import PlayerKitCore

/// Why a call to ``MPRISService`` failed. What the desktop asks and is refused is not one of
/// these: it is answered with a D-Bus error (``MPRISRefusal``) and reported to the app as an
/// ``MPRISEvent``.
///
/// **Can grow.** `@nonexhaustive`: a `switch` over it outside PlayerKit needs `@unknown default`.
@nonexhaustive
public enum MPRISError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The app name is not one D-Bus name element (1 to 100 ASCII letters, digits and `_`, not starting with a digit).
    case invalidAppName(String, reason: String)
    /// The player's MPRIS name would be longer than D-Bus allows (255 bytes): give the player a
    /// shorter ID.
    case busNameTooLong(PlayerID, busName: String)
    /// A player with this ID is published already (IDs are unique among live players; a
    /// shut-down player's ID is free again once the service heard its shutdown).
    case alreadyPublished(PlayerID)
    /// No player with this ID is published.
    case notPublished(PlayerID)
    /// The player was shut down: there is nothing to publish.
    case playerShutDown(PlayerID)
    /// An option is outside its domain.
    case invalidArgument(name: String, value: String, reason: String)
    /// The bus could not be reached: ``MPRISService/init(configuration:clock:)`` could not make
    /// the descriptor its thread waits on; `reason` is the failure, as the system reported it.
    case busUnavailable(address: String, reason: String)
    /// The service was shut down.
    case serviceShutDown

    /// What went wrong, naming the value.
    public var description: String {
        switch self {
        case .invalidAppName(let name, let reason): return "invalid MPRIS app name '\(name)': \(reason)"
        case .busNameTooLong(let id, let name):
            return "player '\(id)': its MPRIS name would be \(name.utf8.count) bytes (D-Bus allows \(MPRISBusName.maximumLength)): \(name)"
        case .alreadyPublished(let id): return "player '\(id)' is published already"
        case .notPublished(let id): return "no player '\(id)' is published"
        case .playerShutDown(let id): return "player '\(id)' is shut down"
        case .invalidArgument(let name, let value, let reason): return "invalid \(name) \(value): \(reason)"
        case .busUnavailable(let address, let reason): return "the D-Bus session bus at \(address) is unavailable: \(reason)"
        case .serviceShutDown: return "the MPRIS service is shut down"
        }
    }
}
