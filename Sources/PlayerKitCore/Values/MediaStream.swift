/// Bytes an app or a feature serves to mpv itself, under a URL scheme of its own: a cache, an
/// encrypted store, memory, a transfer in progress. Register a ``MediaStreamProvider`` in
/// ``PlayerConfiguration/streamProviders``, then load `scheme://anything`; mpv reads through
/// the provider and never opens the URL itself. (libmpv's `mpv_stream_cb_add_ro`.)
///
/// **Threading.** mpv calls ``MediaStreamProvider/open(_:player:)`` and a stream's ``read(into:)``,
/// ``seek(to:)`` and ``size`` on its demuxer thread, and ``cancel()`` from another thread.
/// They must not call the player (or mpv): a read that waits for the core deadlocks it.
public protocol MediaByteStream: AnyObject, Sendable {
    /// Reads up to `buffer.count` bytes into `buffer` and returns how many; blocks, like
    /// read(2), until at least one byte is available; 0 at the end of the stream. Short reads
    /// are fine. After ``cancel()`` it should return promptly (an error or 0).
    func read(into buffer: UnsafeMutableRawBufferPointer) throws(MediaStreamError) -> Int
    /// Moves to byte `offset` and returns the new offset. mpv seeks to 0 right after opening to
    /// learn whether the stream can seek; throw ``MediaStreamError/seekUnsupported`` if not.
    func seek(to offset: Int64) throws(MediaStreamError) -> Int64
    /// The total size in bytes, nil when unknown.
    var size: Int64? { get }
    /// Makes a read or seek in progress, and every later one, return promptly (mpv calls it
    /// when the player stops, loads something else or shuts down). Must not block.
    func cancel()
    /// mpv is done with the stream; release what it holds.
    func close()
}

/// Opens ``MediaByteStream``s for one URL scheme (see ``MediaByteStream``).
public protocol MediaStreamProvider: Sendable {
    /// The scheme it serves, such as "mycache": lowercase letters, digits, "+", "-" and "."
    /// starting with a letter, and not one mpv has already (http, file, edl, ...).
    var scheme: String { get }
    /// Opens the stream for `url` (the whole URL, with its scheme) for the player `player`
    /// (a provider registered on several players learns which one reads, to count and report
    /// per player). Runs on mpv's demuxer thread; may block (to start a transfer, say), must
    /// not call the player.
    func open(_ url: String, player: PlayerID) throws(MediaStreamError) -> any MediaByteStream
}

/// Why a ``MediaStreamProvider`` could not serve a URL. mpv reports a failed open as a load
/// failure of the item (``PlayerError/loadFailed(source:_:)``); the provider's own error is
/// logged with the player's ID. `@nonexhaustive`: new cases may come.
@nonexhaustive
public enum MediaStreamError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Nothing is known under this URL.
    case notFound(url: String)
    /// The bytes cannot be read (a transfer failed, a file went away).
    case unreadable(url: String, reason: String)
    /// The stream cannot seek.
    case seekUnsupported
    /// The stream was cancelled.
    case cancelled
    /// No byte came at the reader's position within `after` (a stalled or trickling source).
    case timedOut(url: String, after: Duration)

    /// A sentence naming the URL.
    public var description: String {
        switch self {
        case .notFound(let url): return "nothing is served under \(url)"
        case .unreadable(let url, let reason): return "\(url) cannot be read: \(reason)"
        case .seekUnsupported: return "the stream cannot seek"
        case .cancelled: return "the stream was cancelled"
        case .timedOut(let url, let after): return "\(url) sent no byte at the reader's position for \(after)"
        }
    }
}
