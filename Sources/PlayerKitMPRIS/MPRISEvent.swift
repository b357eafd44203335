import Foundation
import PlayerKitCore

extension PlayerEventKind {
    /// Every ``MPRISEvent``, whatever its case: what the ``MPRISService`` reports about a player.
    public static let mpris: PlayerEventKind = "mpris"
}

/// What the MPRIS service reports about one player, on the player's own bus, in the player's
/// order with its other events (a `PlayerFeatureEvent`): subscribe to the player's ID, or to
/// the kind ``PlayerKitCore/PlayerEventKind/mpris``.
///
/// A request from the desktop is reported after it was decided (and, when allowed, handed to the
/// player), so the app sees the request, who sent it and what came of it in one event; the
/// player's own events (`stateChanged`, `seekCompleted`) follow as the player carries it out.
///
/// **Can grow.** `@nonexhaustive`: a `switch` over it outside PlayerKit needs `@unknown default`.
@nonexhaustive
public enum MPRISEvent: PlayerFeatureEvent {
    /// The player is on the bus under this name (its own, or the app's for the media-keys
    /// player): desktop clients list it from now on.
    case published(busName: String)
    /// The player left the bus under this name, and why.
    case unpublished(busName: String, reason: MPRISUnpublishReason)
    /// A desktop client asked something of the player.
    case requested(MPRISRequest, from: MPRISClient, outcome: MPRISOutcome)

    /// ``PlayerKitCore/PlayerEventKind/mpris``: every event of ``MPRISEvent`` has this
    /// one kind (filter on it, then switch over the event).
    public var kind: PlayerEventKind { .mpris }

    /// E.g. "mprisRequest(Pause from playerctl (pid 42, :1.7): applied pause)".
    public var description: String {
        switch self {
        case .published(let name): return "mprisPublished(\(name))"
        case .unpublished(let name, let reason): return "mprisUnpublished(\(name), \(reason))"
        case .requested(let request, let client, let outcome): return "mprisRequest(\(request) from \(client): \(outcome))"
        }
    }
}

/// Why a player left the bus under a name.
///
/// **Can grow.** `@nonexhaustive`: a `switch` over it outside PlayerKit needs `@unknown default`.
@nonexhaustive
public enum MPRISUnpublishReason: Sendable, Hashable, CustomStringConvertible {
    /// The app hid it (``MPRISPlayerOptions/isVisible`` through ``MPRISService/setOptions(_:for:)``), or moved the media-keys mark away.
    case hidden
    /// The app stopped publishing it (``MPRISService/unpublish(_:)``).
    case removed
    /// The player shut down.
    case playerShutDown
    /// The bus went away; the service publishes the player again when the bus is back.
    case busLost
    /// Another connection owns the name (another process published a player with the same app
    /// name and ID); the service tries again when it reconnects.
    case nameTaken
    /// The service shut down.
    case serviceShutDown

    /// "hidden", "bus lost", ...
    public var description: String {
        switch self {
        case .hidden: return "hidden"
        case .removed: return "removed"
        case .playerShutDown: return "player shut down"
        case .busLost: return "bus lost"
        case .nameTaken: return "name taken"
        case .serviceShutDown: return "service shut down"
        }
    }
}

/// What the MPRIS service reports about its connection to the bus
/// (``MPRISService/serviceEvents(bufferLimit:)->EventStream<MPRISServiceEvent>``).
///
/// **Can grow.** `@nonexhaustive`: a `switch` over it outside PlayerKit needs `@unknown default`.
@nonexhaustive
public enum MPRISServiceEvent: Sendable, Hashable, CustomStringConvertible {
    /// Connected to the bus at this address (at the start, and after each reconnection).
    case connected(address: String)
    /// The connection was lost, or could not be made: why, as the system said. The service
    /// tries again after `retryAfter` (the wait doubles with each failure, up to
    /// ``MPRISConfiguration/maximumReconnectDelay``).
    case disconnected(reason: String, retryAfter: Duration)

    /// "connected to unix:path=…" or "disconnected (…), retrying in 0.5 s".
    public var description: String {
        switch self {
        case .connected(let address): return "connected to \(address)"
        case .disconnected(let reason, let delay):
            return "disconnected (\(reason)), retrying in \(Double(delay.components.seconds) + Double(delay.components.attoseconds) / 1e18) s"
        }
    }
}
