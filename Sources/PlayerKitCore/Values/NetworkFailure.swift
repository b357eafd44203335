/// Why a network source stopped delivering, as FFmpeg reported it for the player that reads it:
/// the cause in ``PlayerError/networkFailed(source:cause:after:)``.
///
/// `@nonexhaustive`: a `switch` over it outside PlayerKit needs `@unknown default`, so a cause
/// told apart in a later release does not break the app's build.
@nonexhaustive
public enum NetworkFailure: Sendable, Hashable, CustomStringConvertible {
    /// Nothing listens at the server's address (`host:port`): the server is down, or
    /// restarting.
    case connectionRefused(server: String)
    /// The server answered with an HTTP error: `status` (404, 503, ...) and its reason phrase
    /// as the server gave it.
    case httpStatus(Int, reason: String)
    /// The server accepted the connection but did not answer within
    /// ``PlayerConfiguration/networkTimeout``.
    case timedOut
    /// The server reset the connection.
    case connectionReset
    /// The server closed the connection before it answered.
    case connectionClosed
    /// The host name could not be resolved.
    case hostNotFound(host: String)
    /// No route to the server (the network is down or unreachable).
    case unreachable
    /// Another failure; FFmpeg's words for it.
    case other(String)

    /// E.g. "connection refused by 127.0.0.1:8000", "HTTP 404 Not Found", "timed out".
    public var description: String {
        switch self {
        case .connectionRefused(let server): "connection refused by \(server)"
        case .httpStatus(let status, let reason): reason.isEmpty ? "HTTP \(status)" : "HTTP \(status) \(reason)"
        case .timedOut: "timed out"
        case .connectionReset: "connection reset by the server"
        case .connectionClosed: "connection closed by the server"
        case .hostNotFound(let host): "host not found: \(host)"
        case .unreachable: "network unreachable"
        case .other(let text): text
        }
    }
}
