/// An error reported by libmpv: its numeric code (one of the `MPV_ERROR_*` constants of
/// `mpv/client.h`, always negative) and mpv's own message for that code.
public struct MPVError: Error, Sendable, Hashable, CustomStringConvertible {
    /// mpv's error code, e.g. -13 for `MPV_ERROR_LOADING_FAILED`.
    public let code: Int32
    /// mpv's description of the code (`mpv_error_string`).
    public let message: String

    /// Creates an error value from a code and message.
    public init(code: Int32, message: String) {
        self.code = code
        self.message = message
    }

    /// "mpv error -13 (loading failed)".
    public var description: String { "mpv error \(code) (\(message))" }
}
