/// Why a comparison could not be made. Every case names the file (or player) it is about. Cases may be added
/// in later versions.
@nonexhaustive
public enum AnalysisError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The file could not be opened or read as media (`reason` is FFmpeg's).
    case cannotOpen(path: String, reason: String)
    /// The file has no video stream.
    case noVideo(path: String)
    /// The file has no audio stream.
    case noAudio(path: String)
    /// The two recordings share no sound (or picture) that could align them (one is silent or
    /// still, or they are of different events): the correlation's best peak stood only
    /// `confidence` times above the rest (3 is needed).
    case noCommonContent(reference: String, other: String, confidence: Double)
    /// A frame of the file could not be decoded or converted (`reason` is FFmpeg's).
    case decodeFailed(path: String, reason: String)
    /// The comparison's task was cancelled.
    case cancelled
    /// A sync group's member plays nothing, so there is no recording of it to align
    /// (`SyncGroup`'s `alignRecordings(by:searchRange:)`): `player` is its ID.
    case nothingLoaded(player: String)

    /// One line naming the file.
    public var description: String {
        switch self {
        case .cannotOpen(let path, let reason): return "cannot open \(path) as media: \(reason)"
        case .noVideo(let path): return "\(path) has no video stream"
        case .noAudio(let path): return "\(path) has no audio stream"
        case .noCommonContent(let reference, let other, let confidence):
            return "\(other) shares nothing with \(reference) that aligns them (confidence \(String(format: "%.2f", confidence)))"
        case .decodeFailed(let path, let reason): return "a frame of \(path) could not be decoded: \(reason)"
        case .cancelled: return "the comparison was cancelled"
        case .nothingLoaded(let player): return "player \(player) plays nothing to align"
        }
    }
}
