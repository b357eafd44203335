extension Track {
    /// Parses mpv's `track-list` value; entries without an ID are skipped.
    static func list(from value: MPVValue) -> [Track] {
        (value.arrayValue ?? []).compactMap { entry in
            guard let id = entry["id"]?.intValue else { return nil }
            var size: VideoSize?
            if let width = entry["demux-w"]?.intValue, let height = entry["demux-h"]?.intValue {
                size = VideoSize(width: Int(width), height: Int(height))
            }
            return Track(
                id: Int(id),
                kind: Kind(rawValue: entry["type"]?.stringValue ?? "") ?? .unknown,
                title: entry["title"]?.stringValue,
                language: entry["lang"]?.stringValue,
                codec: entry["codec"]?.stringValue,
                isSelected: entry["selected"]?.boolValue ?? false,
                videoSize: size,
                externalFile: (entry["external"]?.boolValue ?? false) ? entry["external-filename"]?.stringValue : nil,
                frameRate: entry["demux-fps"]?.doubleValue.flatMap { $0 > 0 && $0.isFinite ? $0 : nil })
        }
    }
}
