import Foundation
import PlayerKitCore
import PlayerKitSync

extension MultiView {
    /// Reads the live HLS playlists of members (``PlaylistClock/read(_:timeout:)``, all at
    /// once) and gives each member the media offset that puts its timestamps on one timeline
    /// (``PlaylistClock/mediaOffsets(_:)``: by PROGRAM-DATE-TIME when every playlist carries it,
    /// else checked to share their timestamps). The member first in `MultiView.members` order is the
    /// reference (offset zero). Call it before `MultiView.load(_:)`, or at any time: the offsets apply at
    /// once (`MultiView.setMediaOffset(_:for:)`) and are kept in `MultiView.settings`. Members with an offset are not
    /// judged by their live edges (their timestamps were checked here). Documentation/Sync.md
    /// shows it in use.
    ///
    /// - Returns: the media offsets set, by member.
    /// - Throws: ``PlaylistClockError``: a playlist or segment that could not be read within
    ///   `timeout`, or angles that cannot be put on one timeline (unrelated timestamps and no
    ///   PROGRAM-DATE-TIME). Then no offset is set.
    @discardableResult
    public func alignTimestamps(ofPlaylists playlists: [PlayerID: URL], timeout: Duration = .seconds(5)) async throws(PlaylistClockError) -> [PlayerID: Duration] {
        let order = members.map(\.id)
        let ids = playlists.keys.sorted { (order.firstIndex(of: $0) ?? .max, $0) < (order.firstIndex(of: $1) ?? .max, $1) }
        let read = await withTaskGroup(of: (PlayerID, Result<PlaylistClock, PlaylistClockError>).self) { group in
            for id in ids {
                guard let url = playlists[id] else { continue }
                group.addTask {
                    do throws(PlaylistClockError) {
                        return (id, .success(try await PlaylistClock.read(url, timeout: timeout)))
                    } catch {
                        return (id, .failure(error))
                    }
                }
            }
            var results: [PlayerID: Result<PlaylistClock, PlaylistClockError>] = [:]
            for await (id, result) in group { results[id] = result }
            return results
        }
        var clocks: [PlaylistClock] = []
        for id in ids {
            guard let result = read[id] else { continue }
            clocks.append(try result.get())
        }
        let offsets = try PlaylistClock.mediaOffsets(clocks)
        let result = Dictionary(uniqueKeysWithValues: zip(ids, offsets))
        // A member's refusal (one shutting down) does not undo the timeline: the offsets are
        // kept in the settings all the same.
        for (id, offset) in result { try? await setMediaOffset(offset, for: id) }
        return result
    }
}
