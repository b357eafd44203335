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
    /// The server did not answer the greeting, or went silent, within `after`.
    case timedOut(operation: String, after: Duration)
    /// The room client was closed.
    case closed

    public var description: String {
        switch self {
        case .invalidArgument(let name, let value, let reason): return "invalid \(name) \"\(value)\": \(reason)"
        case .connectionFailed(let server, let reason): return "cannot reach the Syncplay server \(server): \(reason)"
        case .passwordRejected(let server, let message): return "the Syncplay server \(server) refused the password: \(message)"
        case .malformedMessage(let line, let reason): return "malformed message from the server (\(reason)): \(line.prefix(200))"
        case .serverError(let message): return "the Syncplay server reported an error: \(message)"
        case .timedOut(let operation, let after): return "\(operation) timed out after \(after)"
        case .closed: return "the room client is closed"
        }
    }
}
