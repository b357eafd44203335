import Dispatch
import Foundation
import PlayerKitSupport

/// PlayerKit's measuring filters in a player's chain, each under a label of its own, so the
/// app's filters, the mirroring and each other stay where they are.
enum MeasuringFilter: Sendable, CaseIterable {
    case freeze, black, silence, loudness

    /// The filter for an alarm kind.
    init(_ kind: AlarmKind) {
        switch kind {
        case .freeze: self = .freeze
        case .black: self = .black
        case .silence: self = .silence
        }
    }

    /// mpv's chain: `vf` for the picture, `af` for the sound.
    var chain: String {
        switch self {
        case .freeze, .black: "vf"
        case .silence, .loudness: "af"
        }
    }

    /// The label in the chain (`@label`), also the name its metadata is read under
    /// (`vf-metadata/<label>`).
    var label: String {
        switch self {
        case .freeze: "playerkit-freeze"
        case .black: "playerkit-black"
        case .silence: "playerkit-silence"
        case .loudness: "playerkit-loudness"
        }
    }

    /// The property holding the metadata the filter's frames carried.
    var metadataProperty: String { "\(chain)-metadata/\(label)" }

    /// The libavfilter graph for an alarm kind's threshold and levels.
    static func graph(for kind: AlarmKind, threshold: Duration, levels: AlarmThresholds) -> String {
        let seconds = String(threshold.inSeconds)
        switch kind {
        case .freeze: return "freezedetect=n=\(levels.freezeNoise)dB:d=\(seconds)"
        case .black: return "blackdetect=d=\(seconds):pic_th=\(levels.blackShare):pix_th=\(levels.blackPixelLevel)"
        case .silence: return "silencedetect=n=\(levels.silenceLevel)dB:d=\(seconds)"
        }
    }

    /// The loudness meter: 100 ms frames carrying momentary, short-term, integrated loudness
    /// and the true peak.
    static let loudnessGraph = "ebur128=metadata=1:peak=true"
}

/// Who watches a player's alarms and who observes its loudness: the thresholds of each watch
/// (the latest one's apply), each observation's interval, and the one timer that samples the
/// loudness at the shortest of them. Kept by ``PlayerCore``.
struct AlarmWatchers: Sendable {
    var watches: [(token: UInt64, thresholds: AlarmThresholds)] = []
    /// The thresholds the filters in the chain were made for.
    var applied: AlarmThresholds?
    var loudness: [UInt64: Duration] = [:]
    var next: UInt64 = 1
    var timer: RepeatingTimer?
    var timerInterval: Duration?
    var sampling = false
}

// Alarms and loudness: libavfilter's detectors and meter in the player's own chain, on the
// frames and samples it decodes anyway, their metadata observed (alarms) or read at the app's
// rate (loudness), turned into events on the player's ID.
extension PlayerCore {
    /// Starts a watch with `thresholds`: puts the detectors in the chain for them (the latest
    /// watch's thresholds apply to all), observes their metadata and every position shown.
    /// Returns once mpv took the filters; the token ends the watch (``endAlarmWatch(_:)``).
    /// - Throws: ``PlayerError/playerShutDown(_:)``, or mpv's refusal of a filter
    ///   (``PlayerError/commandFailed(command:_:)`` naming it); the watch is not started then.
    func watchAlarms(_ thresholds: AlarmThresholds) async throws(PlayerError) -> UInt64 {
        guard !isShutDown else { throw .playerShutDown(id) }
        let (token, first) = alarmWatchers.withLock { watchers -> (UInt64, Bool) in
            let token = watchers.next
            watchers.next += 1
            watchers.watches.append((token, thresholds))
            return (token, watchers.watches.count == 1)
        }
        if first { startAlarmObservations(true) }
        do throws(PlayerError) {
            try await applyAlarmFilters()
        } catch {
            endAlarmWatch(token)
            throw error
        }
        return token
    }

    /// Ends a watch from ``watchAlarms(_:)``: the one before it applies again, or, after the
    /// last, the detectors leave the chain and each alarm raised is cleared at the last
    /// position. Idempotent; never waits.
    func endAlarmWatch(_ token: UInt64) {
        let last = alarmWatchers.withLock { watchers -> Bool? in
            guard let index = watchers.watches.firstIndex(where: { $0.token == token }) else { return nil }
            watchers.watches.remove(at: index)
            return watchers.watches.isEmpty
        }
        guard let last else { return }
        for change in alarmFilterChanges() { try? send(change) }
        if last { startAlarmObservations(false) }
    }

    /// Observes (or stops observing) the detectors' metadata; the positions follow the tracker
    /// (``syncAlarmPositions()``).
    private func startAlarmObservations(_ enabled: Bool) {
        for (index, kind) in AlarmKind.allCases.enumerated() {
            observe(MeasuringFilter(kind).metadataProperty, id: MPVRequestIDs.alarmObservation + UInt64(index),
                    users: alarmMetadataUsers[index], enabled: enabled)
        }
        syncAlarmPositions()
    }

    /// Makes the alarms' use of the per-frame `time-pos` observation match the tracker
    /// (``AlarmTracker/needsPositions``): observed while a fault is under way, not between
    /// faults. Called after each change of the tracker, from any thread; the tracker is read
    /// and the observation changed under one lock, so two calls cannot leave it out of step.
    /// `mpv_observe_property` does not wait for the core.
    func syncAlarmPositions() {
        alarmPositionsObserved.withLock { observed in
            let wanted = !isShutDown && state.withLock { $0.alarms.needsPositions }
            guard wanted != observed else { return }
            observed = wanted
            observe("time-pos", id: MPVRequestIDs.statisticsFrameObservation, users: statisticsFrameUsers, enabled: wanted)
        }
    }

    /// The changes of the chain that make it match the latest watch's thresholds (none: every
    /// detector out), noted as applied; the tracker follows at once (a kind no longer watched
    /// has its alarm cleared).
    private func alarmFilterChanges() -> [EngineOperation] {
        let (wanted, before) = alarmWatchers.withLock { watchers -> (AlarmThresholds?, AlarmThresholds?) in
            let wanted = watchers.watches.last?.thresholds
            defer { watchers.applied = wanted }
            return (wanted, watchers.applied)
        }
        var seconds: [AlarmKind: Double] = [:]
        for kind in AlarmKind.allCases {
            if let threshold = wanted?.threshold(for: kind) { seconds[kind] = threshold.inSeconds }
        }
        update { state in state.alarms.watch(seconds).map(Self.alarmEvent) }
        syncAlarmPositions()
        func graphOf(_ kind: AlarmKind, _ levels: AlarmThresholds?) -> String? {
            levels.flatMap { levels in levels.threshold(for: kind).map { MeasuringFilter.graph(for: kind, threshold: $0, levels: levels) } }
        }
        return AlarmKind.allCases.compactMap { kind in
            let graph = graphOf(kind, wanted)
            return graph == graphOf(kind, before) ? nil : .setMeasuringFilter(MeasuringFilter(kind), graph: graph)
        }
    }

    /// ``alarmFilterChanges()`` handed to mpv and awaited, in order; the first refusal is thrown.
    private func applyAlarmFilters() async throws(PlayerError) {
        var failure: PlayerError?
        for change in alarmFilterChanges() {
            do throws(PlayerError) {
                try await request(change, timeout: .seconds(5))
            } catch {
                if failure == nil { failure = error }
            }
        }
        if let failure { throw failure }
    }

    /// A tracker's output as the event it publishes.
    static func alarmEvent(_ output: AlarmTracker.Output) -> PlaybackModel.Output {
        switch output {
        case .raised(let alarm): .event(.alarmRaised(alarm))
        case .cleared(let alarm): .event(.alarmCleared(alarm))
        }
    }

    /// A detector's metadata, as the pump read a change of it: the tracker's alarms published.
    func noteAlarmMetadata(index: Int, value: MPVValue, at signalled: ContinuousClock.Instant?) {
        guard AlarmKind.allCases.indices.contains(index) else { return }
        let kind = AlarmKind.allCases[index]
        let metadata = Self.metadata(from: value)
        update(at: signalled) { state in state.alarms.note(kind, metadata: metadata).map(Self.alarmEvent) }
        syncAlarmPositions()
    }

    /// A filter's metadata as keys and values (nil: mpv has none, the filter is not running).
    static func metadata(from value: MPVValue) -> [String: String]? {
        guard case .map(let pairs) = value else { return nil }
        var metadata: [String: String] = [:]
        for pair in pairs {
            if let text = pair.value.stringValue { metadata[pair.key] = text }
        }
        return metadata
    }

    // MARK: Loudness

    /// Starts an observation of the loudness every `interval`: the first one puts the meter in
    /// the chain (awaited) and the sampling timer runs at the shortest interval observed.
    /// - Throws: ``PlayerError/playerShutDown(_:)``, or mpv's refusal of the meter.
    func observeLoudness(every interval: Duration) async throws(PlayerError) -> UInt64 {
        guard !isShutDown else { throw .playerShutDown(id) }
        let (token, first) = alarmWatchers.withLock { watchers -> (UInt64, Bool) in
            let token = watchers.next
            watchers.next += 1
            watchers.loudness[token] = interval
            return (token, watchers.loudness.count == 1)
        }
        if first {
            do throws(PlayerError) {
                try await request(.setMeasuringFilter(.loudness, graph: MeasuringFilter.loudnessGraph), timeout: .seconds(5))
            } catch {
                endLoudnessObservation(token)
                throw error
            }
        }
        retimeLoudness()
        return token
    }

    /// Ends an observation from ``observeLoudness(every:)``; after the last, the meter leaves
    /// the chain (sent, not awaited). Idempotent; never waits.
    func endLoudnessObservation(_ token: UInt64) {
        let last = alarmWatchers.withLock { watchers -> Bool? in
            guard watchers.loudness.removeValue(forKey: token) != nil else { return nil }
            return watchers.loudness.isEmpty
        }
        guard let last else { return }
        if last { try? send(.setMeasuringFilter(.loudness, graph: nil)) }
        retimeLoudness()
    }

    /// Runs the loudness timer at the shortest interval observed, or stops it when nobody
    /// observes (also at shutdown).
    func retimeLoudness() {
        alarmWatchers.withLock { watchers in
            let interval = isShutDown ? nil : watchers.loudness.values.min()
            guard interval != watchers.timerInterval else { return }
            watchers.timer?.cancel()
            watchers.timer = nil
            watchers.timerInterval = interval
            guard let interval else { return }
            let timer = RepeatingTimer(interval: interval, queue: pumpQueue)
            timer.start { [weak self] in self?.sampleLoudness(interval: interval) }
            watchers.timer = timer
        }
    }

    /// One tick of the loudness timer: reads the meter's metadata (unless the last read is
    /// still out) and publishes ``PlayerEvent/loudnessUpdated(_:)``, when the meter has measured.
    private func sampleLoudness(interval: Duration) {
        guard !isShutDown else { return retimeLoudness() }
        let start = alarmWatchers.withLock { watchers -> Bool in
            guard !watchers.sampling, !watchers.loudness.isEmpty else { return false }
            watchers.sampling = true
            return true
        }
        guard start else { return }
        readAll([MeasuringFilter.loudness.metadataProperty], timeout: max(interval, .seconds(1))) { [weak self] results in
            guard let self else { return }
            let observed = alarmWatchers.withLock { watchers -> Bool in
                watchers.sampling = false
                return !watchers.loudness.isEmpty
            }
            guard observed, let value = try? results.first?.get(), let metadata = Self.metadata(from: value),
                  let loudness = Self.loudness(from: metadata) else { return }
            update { _ in [.event(.loudnessUpdated(loudness))] }
        }
    }

    /// The loudness in the meter's metadata; nil before it measured anything. A level under
    /// -100 LUFS (the meter's floor for silence or a window not yet full) is no figure.
    static func loudness(from metadata: [String: String]) -> Loudness? {
        func level(_ key: String) -> Double? {
            guard let value = metadata["lavfi.r128.\(key)"].flatMap(Double.init), value.isFinite, value > -100 else { return nil }
            return value
        }
        guard metadata["lavfi.r128.M"] != nil else { return nil }
        let peak = metadata["lavfi.r128.true_peak"].flatMap(Double.init).flatMap { $0 > 0 ? 20 * log10($0) : nil }
        return Loudness(momentary: level("M"), shortTerm: level("S"), integrated: level("I"), truePeak: peak)
    }
}
