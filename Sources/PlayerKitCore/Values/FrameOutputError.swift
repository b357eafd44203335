/// Every error of the frame paths: ``FrameOutput`` (software frames) and ``OpenGLRenderer``.
/// Each case names the offending value or the player.
///
/// After any of these errors the player stays usable and other players are unaffected.
/// `@nonexhaustive` (SE-0487), like ``PlayerError``: a `switch` outside PlayerKit needs
/// `@unknown default`.
@nonexhaustive
public enum FrameOutputError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A frame size outside 1...8192 in either dimension.
    case invalidSize(width: Int, height: Int)
    /// A pixel format mpv's software renderer does not write (see ``PixelFormat``).
    case unsupportedPixelFormat(String)
    /// The player already has a frame output or OpenGL renderer (mpv allows one per core).
    /// Close the first one before making another.
    case alreadyAttached(playerID: PlayerID)
    /// The player was not created with ``PlayerConfiguration/VideoOutput/frames``: its video
    /// goes elsewhere.
    case notConfiguredForFrames(playerID: PlayerID, videoOutput: PlayerConfiguration.VideoOutput)
    /// The player was shut down; its renderer went with it.
    case playerShutDown(PlayerID)
    /// The output or renderer was closed by the app.
    case outputClosed(PlayerID)
    /// The call does not fit how the output delivers frames (for example pulling from an
    /// output that renders on its own thread).
    case wrongDelivery(expected: FrameDelivery, actual: FrameDelivery)
    /// A destination the app gave cannot hold the frame: a null pointer, a stride smaller
    /// than a row of pixels, or one not a multiple of the pixel size.
    case invalidDestination(stride: Int, reason: String)
    /// mpv could not create the renderer (for OpenGL: no usable context current, or a GL
    /// version mpv cannot use).
    case rendererUnavailable(playerID: PlayerID, MPVError)
    /// mpv failed to render a frame.
    case renderFailed(playerID: PlayerID, MPVError)

    /// A sentence naming the problem and the offending value.
    public var description: String {
        switch self {
        case .invalidSize(let width, let height):
            return "frame size \(width)x\(height) is outside \(FrameFormat.sizeRange.lowerBound)...\(FrameFormat.sizeRange.upperBound) in each dimension"
        case .unsupportedPixelFormat(let name):
            return "pixel format \"\(name)\" is not supported (use one of \(PixelFormat.all.map(\.name).joined(separator: ", ")))"
        case .alreadyAttached(let id):
            return "player \(id) already has a frame output or OpenGL renderer; close it first"
        case .notConfiguredForFrames(let id, let output):
            return "player \(id) was created with video output \(output), not .frames"
        case .playerShutDown(let id):
            return "player \(id) was shut down; its renderer is gone"
        case .outputClosed(let id):
            return "the frame output of player \(id) was closed"
        case .wrongDelivery(let expected, let actual):
            return "this call needs a \(expected) output, but the output delivers by \(actual)"
        case .invalidDestination(let stride, let reason):
            return "invalid frame destination (stride \(stride)): \(reason)"
        case .rendererUnavailable(let id, let error):
            return "mpv could not create a renderer for player \(id): \(error)"
        case .renderFailed(let id, let error):
            return "mpv failed to render a frame of player \(id): \(error)"
        }
    }
}
