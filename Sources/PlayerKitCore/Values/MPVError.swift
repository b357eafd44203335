/// An error reported by libmpv: its numeric code (one of the `MPV_ERROR_*` constants of
/// `mpv/client.h`, always negative), mpv's own message for that code, and, for an item that
/// failed to load or play, the error lines mpv logged about it (which say why).
public struct MPVError: Error, Sendable, Hashable, CustomStringConvertible {
    /// mpv's error code, e.g. -13 for `MPV_ERROR_LOADING_FAILED`.
    public let code: Int32
    /// mpv's description of the code (`mpv_error_string`).
    public let message: String
    /// The error lines mpv logged about the failed item, oldest first, without mpv's module
    /// prefix: for example `["Refusing to load potentially unsafe URL from a playlist.", ...]`
    /// or `["Cannot open file 'a.mp4': No such file or directory", "Failed to open a.mp4."]`.
    /// Only the item's own lines: a line that names another item's source, or that mpv logged
    /// about an earlier item after that item ended, is never given to this one. For an item
    /// mpv could not recognize, mpv's "Failed to recognize file format." (which mpv logs only
    /// after the item's end) is included. When mpv logged nothing about a failed item, the one
    /// line says so ("mpv logged no reason for this failure; its error code says: ...").
    /// Empty for errors that are not about an item (a refused property, a failed command).
    /// Collected whatever ``PlayerConfiguration/mpvLogLevel`` says (at most 8 lines).
    public let logMessages: [String]

    /// Creates an error value from a code, its message and mpv's log lines about it.
    public init(code: Int32, message: String, logMessages: [String] = []) {
        self.code = code
        self.message = message
        self.logMessages = logMessages
    }

    /// The first line mpv logged about the failure, which usually names its cause. For a failed
    /// item, never nil nor empty (see ``logMessages``); nil for errors that are not about an item.
    public var reason: String? { logMessages.first }

    /// "mpv error -13 (loading failed)", followed by ": " and ``reason`` when there is one.
    public var description: String {
        let base = "mpv error \(code) (\(message))"
        guard let reason else { return base }
        return "\(base): \(reason)"
    }
}
