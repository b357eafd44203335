import CoreMetrics
import Dispatch
import PlayerKitCore
import PlayerKitSupport

/// Reports players' statistics and events through apple/swift-metrics, to whatever backend the
/// app bootstrapped (swift-prometheus, swift-otel, StatsD, ...) or the factory it gives.
///
/// ```swift
/// let metrics = PlayerMetrics(labels: [("app", "control-room")])
/// try metrics.attach(camera, labels: [("wall", "north")])   // statistics every second from now on
/// ```
///
/// Each attached player's metrics carry `player` (its ID) and the labels given, the
/// `PlayerMetrics`'s first, as dimensions. With the default prefix `playerkit`:
///
/// | metric | kind | from |
/// |---|---|---|
/// | `playerkit_frames_rendered_total` | counter | ``/PlayerKitCore/PlaybackStatistics/framesRendered`` |
/// | `playerkit_frames_dropped_total` (`by`: `decoder`, `output`) | counter | the two drop counts |
/// | `playerkit_stalls_total` | counter | each `buffering` after the item's first frame |
/// | `playerkit_events_total` (`kind`) | counter | every event, by ``/PlayerKitCore/PlayerEventKind`` |
/// | `playerkit_stall_duration_seconds` | timer | each stall, when it ends |
/// | `playerkit_time_to_first_frame_seconds` | timer | each item's load to its first frame |
/// | `playerkit_frames_per_second` | gauge (meter) | ``/PlayerKitCore/PlaybackStatistics/renderedFrameRate`` |
/// | `playerkit_buffer_ahead_seconds`, `_bytes` | gauge | ``/PlayerKitCore/PlaybackStatistics/bufferAhead``, ``/PlayerKitCore/PlaybackStatistics/bufferAheadBytes`` |
/// | `playerkit_declared_bitrate_bits_per_second`, `media_`, `arriving_` | gauge | the three bitrates |
/// | `playerkit_audio_video_offset_seconds` | gauge | ``/PlayerKitCore/PlaybackStatistics/audioVideoOffset`` |
/// | `playerkit_live_latency_seconds` | gauge | ``/PlayerKitCore/PlaybackStatistics/liveLatency`` |
/// | `playerkit_hardware_decoding` | gauge | 1 while the video decodes in hardware, else 0 |
/// | `playerkit_state` (`state`) | gauge | 1 for the state the player is in, 0 for the others |
///
/// A figure the player cannot tell leaves its gauge as it was. Counters count from the attach.
///
/// **Threading.** Safe from any thread. Each player's events are applied on a serial queue of
/// their own (the bus's queue delivery), so a slow backend never delays a player; no PlayerKit
/// lock is held while the backend runs. A player that shuts down is detached, and its metrics
/// are destroyed (its series end), after its last event.
public final class PlayerMetrics: Sendable {
    private struct Attachment: Sendable {
        let subscription: PlayerSubscription
        let observation: PropertyObservation
        let metrics: PlayerMetricSet
    }

    private let prefix: String
    private let labels: [(String, String)]
    private let factory: (any MetricsFactory)?
    private let attachments = Locked<[PlayerID: Attachment]>([:])

    /// Metrics named `prefix`_..., with `labels` on every player's metrics, made through
    /// `factory` (nil: the one `MetricsSystem.bootstrap(_:)` installed, read at each attach).
    public init(prefix: String = "playerkit", labels: [(String, String)] = [], factory: (any MetricsFactory)? = nil) {
        self.prefix = prefix
        self.labels = labels
        self.factory = factory
    }

    deinit {
        for attachment in attachments.withLock({ Array($0.values) }) { Self.end(attachment) }
    }

    /// Reports `player` from now on: asks for its statistics every `interval`
    /// (``/PlayerKitCore/MediaPlayer/observeStatistics(every:)``) and follows its events, with
    /// `("player", id)` and `labels` as dimensions. Attaching a player again replaces its
    /// labels and interval.
    /// - Throws: what ``/PlayerKitCore/MediaPlayer/observeStatistics(every:)`` throws: an interval outside
    ///   ``/PlayerKitCore/PlaybackStatistics/observableIntervals`` (``/PlayerKitCore/PlayerError/invalidArgument(name:value:reason:)``),
    ///   a player shut down.
    public func attach(_ player: any MediaPlayer, labels: [(String, String)] = [], every interval: Duration = .seconds(1)) throws(PlayerError) {
        let observation = try player.observeStatistics(every: interval)
        let id = player.id
        let metrics = PlayerMetricSet(prefix: prefix, dimensions: [("player", id.rawValue)] + self.labels + labels,
                                      factory: factory ?? MetricsSystem.factory)
        let snapshot = player.snapshot
        metrics.start(in: snapshot.state, firstFrameShown: snapshot.hasShownFirstFrame)
        let subscription = player.eventBus.subscribe(to: id) { [weak self] record in
            metrics.apply(record)
            if record.event == .shutDown { self?.detach(id, ifMetrics: metrics) }
        }
        let replaced = attachments.withLock { attachments in
            defer { attachments[id] = Attachment(subscription: subscription, observation: observation, metrics: metrics) }
            return attachments[id]
        }
        if let replaced { Self.end(replaced) }
    }

    /// Stops reporting the player with `id` and destroys its metrics. Does nothing for a player
    /// not attached.
    public func detach(_ id: PlayerID) {
        if let attachment = attachments.withLock({ $0.removeValue(forKey: id) }) { Self.end(attachment) }
    }

    /// Detaches `id` when its attachment is still the one with `metrics` (a shutdown seen late).
    private func detach(_ id: PlayerID, ifMetrics metrics: PlayerMetricSet) {
        let attachment = attachments.withLock { attachments -> Attachment? in
            guard attachments[id]?.metrics === metrics else { return nil }
            return attachments.removeValue(forKey: id)
        }
        if let attachment { Self.end(attachment) }
    }

    private static func end(_ attachment: Attachment) {
        attachment.subscription.cancel()
        attachment.observation.cancel()
        attachment.metrics.destroy()
    }
}
