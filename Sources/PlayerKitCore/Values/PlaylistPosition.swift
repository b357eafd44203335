/// Where a player is in its playlist: the current item's place and how many items there are
/// (mpv's `playlist-pos` and `playlist-count`). ``PlayerSnapshot/playlist`` reads it;
/// ``PlayerEvent/playlistChanged(_:)`` reports each change.
///
/// A player's playlist is the item it loaded plus what ``Player/append(_:)`` added (and the
/// entries a playlist file expanded into).
public struct PlaylistPosition: Sendable, Hashable, Codable, CustomStringConvertible {
    /// The current item's place, from 0; nil when no item is current (nothing loaded, or the
    /// playlist played to its end).
    public var index: Int?
    /// How many items the playlist holds, the current one included.
    public var count: Int

    /// Creates a position (players make them; apps read them from ``PlayerSnapshot/playlist``).
    init(index: Int?, count: Int) {
        self.index = index
        self.count = count
    }

    /// Whether an item follows the current one (``PlayerCommand/next`` would play it).
    public var hasNext: Bool { index.map { $0 < count && $0 + 1 < count } ?? false }
    /// Whether an item comes before the current one (``PlayerCommand/previous`` would play it).
    public var hasPrevious: Bool { index.map { $0 > 0 && $0 < count } ?? false }

    /// "2 of 5" (1-based, as people count), or "none of 5".
    public var description: String {
        // 1-based as an Int64 past Int.max where it must be (a position an app made, not mpv).
        "\(index.map { $0 == .max ? "9223372036854775808" : String($0 + 1) } ?? "none") of \(count)"
    }
}
