/// Software frames a player renders for the app: what a feature that draws frames needs of an
/// output (a `ClipSequencer` pulls its clips' frames through it). ``FrameOutput`` conforms, and so
/// does the frame source of PlayerKitTesting's `FakePlayer`, so such a feature's logic can be
/// tested without mpv. Make one with ``MediaPlayer/makeFrameSource(_:)``.
///
/// **Threading.** Every member may be used from any thread. The frame handler runs on the
/// thread that renders (for ``FrameOutput``, its render thread; for a fake, the thread that moved
/// its clock), once per frame, in order.
public protocol VideoFrameSource: AnyObject, Sendable {
    /// The size and pixel layout of every frame.
    var format: FrameFormat { get }
    /// The newest frame rendered, or nil before the first.
    var latestFrame: VideoFrame? { get }
    /// Calls `handler` with every frame as it is rendered (nil removes it); see
    /// ``FrameOutput/setFrameHandler(_:)``.
    func setFrameHandler(_ handler: (@Sendable (VideoFrame) -> Void)?)
    /// Stops rendering and frees what the source holds; the player can make a new one after.
    func close()
}

extension FrameOutput: VideoFrameSource {}
