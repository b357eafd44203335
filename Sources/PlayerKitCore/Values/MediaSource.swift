import Foundation

/// Something a player can load: a local file, or a URL mpv can open (http, https, `av://`
/// for libavformat/lavfi inputs, and every other protocol in mpv's `protocol-list`).
///
/// A source is handed to mpv as one argument of the `loadfile` command, never spliced into a
/// command string, so no file name can inject a command.
public struct MediaSource: Sendable, Hashable, CustomStringConvertible, ExpressibleByStringLiteral {
    /// What the source is.
    public enum Location: Sendable, Hashable {
        /// A local file path (relative paths are taken from the current directory).
        case file(path: String)
        /// A URL string, kept as given (mpv URLs such as `av://lavfi:testsrc` are not
        /// always valid Foundation URLs).
        case url(String)
    }

    /// Where the media is.
    public let location: Location

    /// A local file.
    public static func file(_ path: String) -> MediaSource { MediaSource(location: .file(path: path)) }

    /// A URL; a `file://` URL becomes a local file.
    public static func url(_ url: URL) -> MediaSource {
        url.isFileURL ? .file(url.path) : MediaSource(location: .url(url.absoluteString))
    }

    /// Creates a source from a location.
    init(location: Location) {
        self.location = location
    }

    /// Interprets a string: `scheme://...` is a URL (`file://` becomes a path), anything else
    /// is a local file path.
    public init(_ string: String) {
        if let scheme = Self.scheme(of: string) {
            if scheme == "file", let url = URL(string: string), url.isFileURL {
                self.location = .file(path: url.path)
            } else {
                self.location = .url(string)
            }
        } else {
            self.location = .file(path: string)
        }
    }

    /// Same as ``init(_:)``.
    public init(stringLiteral value: String) {
        self.init(value)
    }

    /// The path or URL as given.
    public var description: String {
        switch location {
        case .file(let path): return path
        case .url(let url): return url
        }
    }

    /// The lowercased URL scheme, or nil for files.
    var scheme: String? {
        if case .url(let url) = location { return Self.scheme(of: url) }
        return nil
    }

    /// The string handed to mpv: an absolute path or the URL.
    var mpvArgument: String {
        switch location {
        case .file(let path):
            if path.hasPrefix("/") { return path }
            return FileManager.default.currentDirectoryPath + "/" + path
        case .url(let url):
            return url
        }
    }

    /// The scheme of `scheme://rest`, lowercased; nil when the string has none.
    static func scheme(of string: String) -> String? {
        guard let range = string.range(of: "://") else { return nil }
        let scheme = string[..<range.lowerBound]
        guard let first = scheme.first, first.isASCII, first.isLetter,
              scheme.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "+-.".contains($0)) })
        else { return nil }
        return scheme.lowercased()
    }
}
