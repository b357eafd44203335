import Foundation
import PlayerKitCore
import PlayerKitSync

extension SyncGroup {
    /// Finds where each member's recording is against the first member's, by their sound (or
    /// their pictures), and puts every member there in one call (``apply(_:)``): offsets and
    /// clock drifts, kept in the group's `settings` so a saved group comes back aligned. For
    /// several recordings of one event (two cameras of a concert, a lecture's camera and its
    /// screen capture) loaded in the group:
    ///
    /// ```swift
    /// try await group.load(["camera-a.mp4", "camera-b.mp4"])
    /// let found = try await group.alignRecordings()   // found[b.id]?.offset: B runs that much later
    /// try await group.seek(to: 0)                      // both at the same moment of the event
    /// ```
    ///
    /// Each member's current source (its `snapshot.source`: a path or a URL FFmpeg opens) is
    /// aligned to the first member's with ``RecordingAlignment``, one after the other, on a
    /// thread of their own; the group plays on meanwhile. Shown and adjusted by hand afterwards
    /// through the group's `settings` (`mediaOffsets`, `clockDrifts`), `setMediaOffset(_:for:)`
    /// and `setClockDrift(_:for:)`. A member that left the group meanwhile is skipped.
    /// - Returns: each other member's ``RecordingOffset`` against the first, by ID.
    /// - Throws: ``AnalysisError/nothingLoaded(player:)`` for a member that plays nothing; the
    ///   alignment's errors (``AnalysisError/noCommonContent(reference:other:confidence:)``,
    ///   ``AnalysisError/noAudio(path:)``, ...), naming the file; ``AnalysisError/cancelled``.
    ///   Nothing is applied when any member cannot be aligned.
    @discardableResult
    public func alignRecordings(by method: RecordingAlignment.Method = .sound,
                                searchRange: Duration = .seconds(600)) async throws(AnalysisError) -> [PlayerID: RecordingOffset] {
        let players = members
        var sources: [(PlayerID, URL)] = []
        for player in players {
            guard let source = player.snapshot.source else { throw .nothingLoaded(player: player.id.rawValue) }
            sources.append((player.id, Self.location(of: source)))
        }
        guard let reference = sources.first else { return [:] }
        var found: [PlayerID: RecordingOffset] = [:]
        for (id, url) in sources.dropFirst() {
            found[id] = try await RecordingAlignment(reference: reference.1, other: url, method: method, searchRange: searchRange).run()
        }
        await apply(found)
        return found
    }

    /// Puts each listed member where its ``RecordingOffset`` says, in one call: its offset on the
    /// group's timeline (a member found 2 s later is played 2 s further into its file) and its
    /// clock drift (played at the group's speed times `1 + drift × 1e-6`, so a recording of an
    /// hour stays aligned to its end). Offsets are against the group's timeline, the first
    /// member's; members not listed keep theirs. Each offset is given as it is, a media offset
    /// (1.x negated it). Takes effect as `setMediaOffset(_:for:)` and `setClockDrift(_:for:)` do,
    /// after the group's earlier calls: at the next seek, or at once while playing. A player that is
    /// not a member is skipped.
    public func apply(_ offsets: [PlayerID: RecordingOffset]) async {
        let ids = Set(members.map(\.id))
        for (id, found) in offsets where ids.contains(id) {
            // A recording offset is a media offset: how much later the member's media has a moment.
            try? await setMediaOffset(found.offset, for: id)
            try? await setClockDrift(found.drift, for: id)
        }
    }

    /// A source as the app gave it, as FFmpeg opens it: a URL with a scheme, else a path.
    static func location(of source: String) -> URL {
        if source.contains("://"), let url = URL(string: source) { return url }
        if source.hasPrefix("file:"), let url = URL(string: source) { return url }
        return URL(fileURLWithPath: source)
    }
}
