/// Which player an FFmpeg log line belongs to: one of ``FFmpegLog``'s parts, pure, with one job.
///
/// FFmpeg logs through one callback for the whole process, with no word of which player's
/// demuxer or decoder wrote the line (libmpv hands every line to the first core of the process).
/// What does tell is the thread: mpv opens and reads each item on threads of that item's own
/// (`mpv/opener`, `mpv/demux`), and FFmpeg names, on those threads, the URLs it opens
/// ("Opening 'http://.../seg_00012.ts' for reading", "HLS request for url '...'", "keepalive
/// request failed for '...'"). So a thread is claimed by the player whose media such a URL is,
/// and the thread's later lines (the ones naming no URL: "HTTP error 404 Not Found", "Failed to
/// reload playlist 0") are that player's:
///
/// - a URL is a player's when it is one of the player's sources, or lies in a source's folder
///   (the playlist's segments and variants); a URL that is several players' claims nothing;
/// - a claimed thread stays claimed (its threads end with the item), unless it names a URL that
///   is one other player's;
/// - a thread that named no URL yet (an opener connecting to the server before its first line
///   with a URL) is claimed by a line that names the server ("Connection to tcp://host:port
///   failed", "Starting connection attempt to host port N") when exactly one player is opening
///   something from that server;
/// - a line on any other thread (a decoder's, on the core's own thread; FFmpeg's hardware
///   probes) is nobody's.
///
/// A line is never credited to a player it might not be: when two players could have written it,
/// it is nobody's.
struct FFmpegLineAttribution: Sendable {
    /// A registered player's token (never 0: a thread that holds 0 is unclaimed).
    typealias Token = UInt

    /// What the attribution knows of one player.
    struct Player: Sendable {
        /// The sources it loaded lately, newest last (at most ``sourcesKept``).
        var sources: [String] = []
        /// The server (`host:port`) of the load it is opening now, if it is opening one.
        var opening: String?
    }

    /// How many sources a player keeps: the current item's, a reconnection's and a few of the
    /// items before it (their threads may still log while they end).
    static let sourcesKept = 8

    private(set) var players: [Token: Player] = [:]
    private var nextToken: Token = 1

    /// A new player; its token.
    mutating func register() -> Token {
        let token = nextToken
        nextToken += 1
        players[token] = Player()
        return token
    }

    /// The player is gone: its threads' lines are nobody's from now on.
    mutating func unregister(_ token: Token) {
        players[token] = nil
    }

    /// The player loads (or appends) `source`.
    mutating func noteSource(_ source: String, for token: Token) {
        guard players[token] != nil else { return }
        players[token]?.sources.removeAll { $0 == source }
        players[token]?.sources.append(source)
        if let count = players[token]?.sources.count, count > Self.sourcesKept {
            players[token]?.sources.removeFirst(count - Self.sourcesKept)
        }
    }

    /// The player starts opening `source` (nil: its open ended, loaded or failed).
    mutating func noteOpening(_ source: String?, for token: Token) {
        guard players[token] != nil else { return }
        players[token]?.opening = source.flatMap(Self.server(of:))
    }

    /// The player a line `text` written on a thread claimed by `current` (nil: unclaimed) belongs
    /// to: the thread's claim from now on, and the line's player. Nil: nobody's.
    func claim(current: Token?, text: String) -> Token? {
        let current = current.flatMap { players[$0] != nil ? $0 : nil }
        for url in Self.urls(in: text) {
            let exact = players.filter { $0.value.sources.contains(url) }.map(\.key)
            if exact.count == 1 { return exact[0] }
            if let current, exact.contains(current) { return current }
            guard exact.isEmpty else { continue }
            let inFolder = players.filter { player in
                player.value.sources.contains { source in Self.folder(of: source).map { url.hasPrefix($0) } ?? false }
            }.map(\.key)
            if inFolder.count == 1 { return inFolder[0] }
            if let current, inFolder.contains(current) { return current }
        }
        if let current { return current }
        guard let server = Self.serverMentioned(in: text) else { return nil }
        let opening = players.filter { $0.value.opening == server }.map(\.key)
        return opening.count == 1 ? opening[0] : nil
    }

    // MARK: Reading lines

    /// The URLs a line names (`scheme://...`, up to a quote, a space or the end), in order.
    static func urls(in text: String) -> [String] {
        var urls: [String] = []
        var rest = Substring(text)
        while let range = rest.range(of: "://") {
            // The scheme: the letters, digits and `+.-` right before "://".
            var start = range.lowerBound
            while start > rest.startIndex {
                let before = rest.index(before: start)
                let character = rest[before]
                guard character.isASCII, character.isLetter || character.isNumber || "+.-".contains(character) else { break }
                start = before
            }
            let end = rest[range.upperBound...].firstIndex { $0 == "'" || $0 == "\"" || $0 == " " || $0 == "\t" } ?? rest.endIndex
            if start < range.lowerBound, end > range.upperBound {
                var url = String(rest[start..<end])
                // A sentence's end is no part of it ("... for 'URL'." has its quote; a bare URL may not).
                while url.hasSuffix(".") || url.hasSuffix(",") || url.hasSuffix(")") { url.removeLast() }
                if url.lowercased().hasPrefix("tcp://") || url.lowercased().hasPrefix("udp://") {
                    // A connection's address names a server, not a player's media.
                } else {
                    urls.append(url)
                }
            }
            rest = rest[end...]
        }
        return urls
    }

    /// The folder of a URL (`scheme://host/path/`, without the last path component and the
    /// query), nil when it has no path.
    static func folder(of url: String) -> String? {
        let withoutQuery = url.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? url
        guard let scheme = withoutQuery.range(of: "://"),
              let lastSlash = withoutQuery[scheme.upperBound...].lastIndex(of: "/")
        else { return nil }
        return String(withoutQuery[..<withoutQuery.index(after: lastSlash)])
    }

    /// The server of a network URL, as `host:port` (the scheme's port when none is given), nil
    /// for a URL without a host (a file, a custom scheme's path).
    static func server(of url: String) -> String? {
        guard let schemeEnd = url.range(of: "://") else { return nil }
        let scheme = url[..<schemeEnd.lowerBound].lowercased()
        let authority = url[schemeEnd.upperBound...].prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        let hostPort = authority.split(separator: "@").last.map(String.init) ?? String(authority)
        guard !hostPort.isEmpty else { return nil }
        if hostPort.hasPrefix("[") {
            // [IPv6]:port
            guard let close = hostPort.firstIndex(of: "]") else { return nil }
            let host = String(hostPort[hostPort.index(after: hostPort.startIndex)..<close])
            let port = hostPort[hostPort.index(after: close)...].dropFirst()
            return "\(host):\(port.isEmpty ? defaultPort(scheme).map(String.init) ?? "" : String(port))"
        }
        let parts = hostPort.split(separator: ":", maxSplits: 1)
        let host = String(parts[0]).lowercased()
        if parts.count == 2 { return "\(host):\(parts[1])" }
        guard let port = defaultPort(scheme) else { return nil }
        return "\(host):\(port)"
    }

    /// The port a scheme connects to when its URL gives none.
    private static func defaultPort(_ scheme: String) -> Int? {
        switch scheme {
        case "http", "ws": 80
        case "https", "wss": 443
        case "rtsp": 554
        case "rtsps": 322
        case "rtmp": 1935
        case "rtmps": 443
        case "mms", "mmsh": 80
        case "mmst": 1755
        default: nil
        }
    }

    /// The server a connection line names, as `host:port`: FFmpeg's "Connection to
    /// tcp://host:port failed: ..." and "Starting connection attempt to host port N".
    static func serverMentioned(in text: String) -> String? {
        if let range = text.range(of: "tcp://") {
            let hostPort = text[range.upperBound...].prefix { !$0.isWhitespace && $0 != "/" && $0 != "?" && $0 != "'" }
            return hostPort.contains(":") ? hostPort.lowercased() : nil
        }
        if let range = text.range(of: "connection attempt to ") {
            let words = text[range.upperBound...].split(separator: " ")
            if words.count >= 3, words[1] == "port", Int(words[2]) != nil {
                return "\(words[0].lowercased()):\(words[2])"
            }
        }
        return nil
    }
}
