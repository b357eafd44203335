/// Why a room could not be joined or followed. Each case names the offending value.
/// `@nonexhaustive`: new cases may come without breaking apps.
@nonexhaustive
public enum RoomError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A bad argument (an empty room or user name, a port out of range, ...).
    case invalidArgument(name: String, value: String, reason: String)
    /// The server could not be reached (connection refused, no route, name not resolved).
    case connectionFailed(server: String, reason: String)
    /// The server asked for a password and none was given, or refused the one given.
    case passwordRejected(server: String, message: String)
    /// The server sent a line that is not a Syncplay message, or a message with a field
    /// missing or of the wrong type. The room is left; the players keep playing locally.
    case malformedMessage(line: String, reason: String)
    /// The server sent an `Error` message and closed the connection (its text).
    case serverError(message: String)
    /// A wait for `server` took longer than its bound, `after` (a ``RoomClient/Configuration``
    /// timeout): `operation` says which wait. While joined, the client reconnects after it, as
    /// after any other ending.
    case timedOut(operation: Operation, server: String, after: Duration)
    /// The room client was closed.
    case closed
    /// The server does not offer TLS, which the configuration requires (the default,
    /// ``RoomClient/Configuration/Security/tlsRequired``). Nothing was sent but the request for
    /// TLS. To join such a server anyway, set ``RoomClient/Configuration/security`` to
    /// ``RoomClient/Configuration/Security/plain`` (or ``RoomClient/Configuration/Security/tlsIfOffered``).
    case tlsNotOffered(server: String)

    public var description: String {
        switch self {
        case .invalidArgument(let name, let value, let reason): return "invalid \(name) \"\(value)\": \(reason)"
        case .connectionFailed(let server, let reason): return "cannot reach the Syncplay server \(server): \(reason)"
        case .passwordRejected(let server, let message): return "the Syncplay server \(server) refused the password: \(message)"
        case .malformedMessage(let line, let reason): return "malformed message from the server (\(reason)): \(line.prefix(200))"
        case .serverError(let message): return "the Syncplay server reported an error: \(message)"
        case .timedOut(let operation, let server, let after): return "the Syncplay server \(server): \(operation) timed out after \(after)"
        case .closed: return "the room client is closed"
        case .tlsNotOffered(let server):
            return "the Syncplay server \(server) does not offer TLS, which the configuration requires; to join it without encryption, set RoomClient.Configuration.security to .plain (or .tlsIfOffered)"
        }
    }

    /// What the room client was waiting for when it timed out
    /// (``RoomError/timedOut(operation:server:after:)``).
    ///
    /// `@nonexhaustive`: new cases may come; a `switch` over it outside PlayerKit needs
    /// `@unknown default`.
    @nonexhaustive
    public enum Operation: Sendable, Hashable, CustomStringConvertible {
        /// The TCP connection (name resolution included): ``RoomClient/Configuration/connectTimeout``.
        case connecting
        /// The server's answer to the request for TLS (Syncplay's STARTTLS):
        /// ``RoomClient/Configuration/tlsTimeout``.
        case askingForTLS
        /// The TLS handshake: ``RoomClient/Configuration/tlsTimeout``.
        case tlsHandshake
        /// The server's answer to the greeting (the room joined, or refused):
        /// ``RoomClient/Configuration/joinTimeout``.
        case joining
        /// The server's next message once joined (Syncplay servers send their state about once
        /// a second): ``RoomClient/Configuration/idleTimeout``.
        case receiving
        /// A message handed to the connection (the server not reading): the bound of the phase
        /// it was sent in, ``RoomClient/Configuration/idleTimeout`` once joined.
        case sending

        public var description: String {
            switch self {
            case .connecting: "connecting"
            case .askingForTLS: "asking for TLS"
            case .tlsHandshake: "the TLS handshake"
            case .joining: "joining the room"
            case .receiving: "waiting for the server's next message"
            case .sending: "sending a message"
            }
        }
    }
}
