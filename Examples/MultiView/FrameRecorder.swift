import ExampleSupport
import Foundation
import PlayerKit

/// `--frame-log`: every frame change of every angle, recorded apart from the group (an
/// observation and a bus subscription of its own), as benchmarks measure the spread of the
/// moments angles show the same frame. Any thread.
final class FrameRecorder: Sendable {
    private struct Frame: Sendable {
        let player: String
        /// Media time of the new frame.
        let media: Double
        /// When it changed, in seconds since the app started (monotonic).
        let time: Double
    }

    private let frames = Guarded<[Frame]>([])
    private let subscriptions = Guarded<[PlayerSubscription]>([])
    private let observations = Guarded<[PropertyObservation]>([])

    /// Records `players`' frame changes from now on.
    func follow(_ players: [Player], since start: ContinuousClock.Instant) {
        for player in players {
            let id = player.id.rawValue
            observations.withLock { $0.append(player.observeEveryFrame()) }
            let subscription = player.eventBus.subscribe(to: player.id, kinds: [.positionChanged], delivery: .immediate) { [frames] record in
                guard case .positionChanged(let media) = record.event else { return }
                let frame = Frame(player: id, media: media, time: record.time.seconds(since: start))
                frames.withLock { $0.append(frame) }
            }
            subscriptions.withLock { $0.append(subscription) }
        }
    }

    func stop() {
        subscriptions.withLock { $0 }.forEach { $0.cancel() }
        observations.withLock { $0 }.forEach { $0.cancel() }
    }

    /// Writes one JSON line per frame (`{"player":..., "media":..., "t":...}`), then one line
    /// `{"dropped": {player: count}}`.
    func write(to path: String, dropped: [String: Int]) throws {
        var text = ""
        for frame in frames.withLock({ $0 }) {
            text += "{\"player\":\"\(frame.player)\",\"media\":\(frame.media),\"t\":\(frame.time)}\n"
        }
        let drops = try JSONSerialization.data(withJSONObject: ["dropped": dropped], options: [.sortedKeys])
        text += String(decoding: drops, as: UTF8.self) + "\n"
        try text.write(toFile: path, atomically: true, encoding: .utf8)
    }
}
