extension MediaSource {
    /// One seamless timeline of `clips`, in order, `times` times over: moving from one clip to
    /// the next, or from the last back to the first, reopens nothing, so no gap shows. What
    /// `ClipLoop` and a looping `SyncGroup` play; any app can load it too.
    ///
    /// Built as an mpv `edl://` timeline in which each path carries its byte length, so commas,
    /// semicolons and percent signs in file names are safe.
    /// - Parameters:
    ///   - clips: the clips; must not be empty.
    ///   - times: how often the list repeats; values below 1 count as 1.
    public static func joined(_ clips: [MediaSource], repeated times: Int = 1) -> MediaSource {
        let pass = clips.map { clip in
            let path = clip.mpvArgument
            return "%\(path.utf8.count)%\(path)"
        }.joined(separator: ";")
        return MediaSource("edl://" + Array(repeating: pass, count: max(1, times)).joined(separator: ";"))
    }
}
