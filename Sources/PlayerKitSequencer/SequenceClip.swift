import Foundation
import PlayerKitCore

/// One entry of a ``ClipSequencer``'s timeline: a video clip or a still image, with its own
/// speed, direction and mirroring.
public struct SequenceClip: Sendable, Hashable, Identifiable, CustomStringConvertible {
    /// What the clip shows.
    enum Content: Sendable, Hashable {
        /// A video, played from start to end (or end to start) at the clip's speed.
        case video(MediaSource)
        /// A still image (PNG, JPEG, ...) shown for `duration`.
        case still(MediaSource, duration: Duration)
    }

    /// The clip's identity in the timeline: stays with it when clips are inserted, removed or
    /// swapped. Unique within a sequencer.
    public let id: String
    /// The media.
    var content: Content
    /// Playback speed, within ``/PlayerKitCore/PlayerCommand/speedRange`` (0.25...4); ignored for stills.
    var speed: Double
    /// Forward or backward (a reversed clip starts at its end); ignored for stills.
    var direction: PlaybackDirection
    /// Horizontal and/or vertical mirroring.
    var flip: VideoFlip

    /// A video clip.
    public static func video(
        _ source: MediaSource, id: String? = nil, speed: Double = 1, direction: PlaybackDirection = .forward, flip: VideoFlip = []
    ) -> SequenceClip {
        SequenceClip(id: id ?? UUID().uuidString, content: .video(source), speed: speed, direction: direction, flip: flip)
    }

    /// A still image shown for `duration`.
    public static func still(_ source: MediaSource, duration: Duration, id: String? = nil, flip: VideoFlip = []) -> SequenceClip {
        SequenceClip(id: id ?? UUID().uuidString, content: .still(source, duration: duration), speed: 1, direction: .forward, flip: flip)
    }

    /// A clip from its parts.
    init(id: String, content: Content, speed: Double = 1, direction: PlaybackDirection = .forward, flip: VideoFlip = []) {
        self.id = id
        self.content = content
        self.speed = speed
        self.direction = direction
        self.flip = flip
    }

    /// The media source.
    public var source: MediaSource {
        switch content {
        case .video(let source), .still(let source, _): return source
        }
    }

    /// Whether the clip is a still image.
    var isStill: Bool {
        if case .still = content { return true }
        return false
    }

    /// Checks speed and duration.
    /// - Throws: ``/PlayerKitCore/PlayerError/invalidArgument(name:value:reason:)`` naming the value.
    func validate() throws(PlayerError) {
        switch content {
        case .video:
            try PlayerCommand.setSpeed(speed).validate()
        case .still(_, let duration):
            guard duration > .zero, duration <= .seconds(24 * 3600) else {
                throw .invalidArgument(name: "still duration", value: "\(duration)", reason: "must be above 0 and at most a day")
            }
        }
        guard !id.isEmpty else { throw .invalidArgument(name: "clip id", value: "\"\"", reason: "must not be empty") }
    }

    /// "clip-2 (video sequence-2.mp4, 2x, backward, flipped horizontal)".
    public var description: String {
        var parts: [String] = []
        switch content {
        case .video(let source): parts.append("video \(URL(fileURLWithPath: source.description).lastPathComponent)")
        case .still(let source, let duration): parts.append("still \(URL(fileURLWithPath: source.description).lastPathComponent) for \(duration)")
        }
        if !isStill, speed != 1 { parts.append("\(speed)x") }
        if !isStill, direction == .backward { parts.append("backward") }
        if !flip.isEmpty { parts.append("flipped \(flip)") }
        return "\(id) (\(parts.joined(separator: ", ")))"
    }
}

/// One frame of a sequencer's output, as the app's display clock pulled it.
public struct SequencedFrame: Sendable {
    /// The clip it comes from.
    public let clipID: String
    /// The clip's index in the timeline when the frame was pulled.
    let clipIndex: Int
    /// The frame's position in the clip's media, in seconds. mpv gives no position for a clip's
    /// last frame: that frame's time is the one before plus the clip's frame step (the median
    /// of its recent steps; negative when reversed). Nil when no position is known.
    public let sourceTime: Double?
    /// Output time: since ``ClipSequencer/start(at:)``, on the app's display clock.
    public let outputTime: Duration
    /// The mirroring applied.
    let flip: VideoFlip
    /// Whether the previous pull returned the same picture (the same frame, or mpv's redraw of
    /// it): the display ticks faster than the clip's frames change, or a still is holding. A
    /// redraw of a picture no pull has shown yet is not a repeat.
    public let isRepeat: Bool
    /// The pixels.
    public let frame: VideoFrame
}

/// What happened at one boundary between two clips of the output.
public struct SequenceBoundary: Sendable, Hashable {
    /// The clip that ended and the one that followed.
    public let fromClip: String, toClip: String
    /// Output time at which the outgoing clip's last new frame was first shown (for a still:
    /// the last pull that showed it).
    let lastFrameOfOutgoing: Duration
    /// Output time at which the incoming clip's first frame was shown.
    public let firstFrameOfIncoming: Duration
    /// How long the outgoing clip's last frame was meant to stay on screen beyond one display
    /// tick (non-zero only for clips slower than the display: at 0.25x a frame legitimately
    /// stays for several ticks). Subtracted from the gap.
    let intendedHold: Duration
    /// The gap: from the outgoing clip's last new frame (for a still: the last pull that showed
    /// it) to the incoming clip's first, minus how long that last frame was meant to stay on
    /// screen beyond one display tick (non-zero only for clips slower than the display: at 0.25x
    /// a frame legitimately stays for several ticks). One display tick (33.3 ms at 30 fps) is a
    /// seamless boundary.
    public var gap: Duration { firstFrameOfIncoming - lastFrameOfOutgoing - intendedHold }
}

/// A still's time on screen, measured on the output.
public struct StillHold: Sendable, Hashable {
    /// The still clip.
    public let clipID: String
    /// The duration it was given.
    public let intended: Duration
    /// From its first pull to the first pull of the next clip.
    public let shown: Duration
}
