/// Turns what libavfilter's detectors report into alarms, in step with what the player shows.
/// A pure value: the engine feeds it each detector's metadata as mpv reports a change
/// (``note(_:metadata:)``), every position the player shows (``note(position:)``), and each
/// break in the timeline (``reset()``); it answers with the alarms to publish.
///
/// **What the detectors say.** mpv keeps, per filter, the last value of every metadata key its
/// frames carried, and reports the whole set when one changes. Each detector writes a start key
/// when a fault begins and an end key when it ends, both in the item's seconds:
/// `freezedetect` its start once the picture has been still for its duration (the start then
/// lies that far back), `blackdetect` its start at the first black frame, whatever its
/// duration, `silencedetect` its start once the sound has been silent for its duration. A
/// changed value is news; a value seen before is not.
///
/// **When an alarm is raised.** The filters run ahead of what is shown (a few frames for the
/// picture, the audio buffer for the sound), so an alarm is raised once the player's position
/// reaches the fault's start plus the threshold, and cleared once it reaches the fault's end:
/// when the user sees or hears it. A fault that ends before its threshold raises nothing.
struct AlarmTracker: Sendable {
    enum Output: Sendable, Equatable {
        case raised(Alarm)
        case cleared(Alarm)
    }

    /// The metadata keys of a kind's start and end.
    static func keys(of kind: AlarmKind) -> (start: String, end: String) {
        switch kind {
        case .freeze: ("lavfi.freezedetect.freeze_start", "lavfi.freezedetect.freeze_end")
        case .black: ("lavfi.black_start", "lavfi.black_end")
        case .silence: ("lavfi.silence_start", "lavfi.silence_end")
        }
    }

    private struct Watch: Sendable {
        /// The threshold, in seconds.
        var threshold: Double
        /// The last start and end values the detector reported.
        var lastStart: Double?
        var lastEnd: Double?
        /// A fault begun and not yet an alarm: its start.
        var pending: Double?
        /// The alarm raised: its start.
        var raised: Double?
        /// The raised alarm's end, reported by the detector and not yet reached by the position.
        var ending: Double?
    }

    private var watches: [AlarmKind: Watch] = [:]
    /// The last position shown while a fault was under way (nil between faults: the engine
    /// stops observing positions then, and a position kept from before would be stale, say
    /// from before a loop).
    private(set) var position: Double?

    /// Whether anything is watched.
    var isWatching: Bool { !watches.isEmpty }

    /// Whether the tracker needs every position shown: while a fault is under way (begun and
    /// not yet an alarm, or an alarm not yet cleared). Between faults no position changes
    /// anything, so the engine does not observe them (a watch costs no per-frame traffic
    /// while the picture and sound are fine). A position it missed meanwhile is never ahead of
    /// the one shown, so no alarm is raised early for it.
    var needsPositions: Bool {
        watches.values.contains { $0.pending != nil || $0.raised != nil }
    }

    /// Watches the kinds with a threshold (in seconds); a kind no longer watched has its alarm
    /// cleared at the last position. A kind watched before keeps what it saw.
    mutating func watch(_ thresholds: [AlarmKind: Double]) -> [Output] {
        var outputs: [Output] = []
        for kind in AlarmKind.allCases {
            guard let threshold = thresholds[kind] else {
                if let watch = watches.removeValue(forKey: kind), let start = watch.raised {
                    outputs.append(.cleared(Alarm(kind: kind, start: start, end: max(start, position ?? start))))
                }
                continue
            }
            watches[kind, default: Watch(threshold: threshold)].threshold = threshold
        }
        return outputs + note(position: position)
    }

    /// A detector's metadata as mpv reports it: nil or an empty set when its filter starts
    /// (a new item), which forgets the values seen.
    mutating func note(_ kind: AlarmKind, metadata: [String: String]?) -> [Output] {
        guard var watch = watches[kind] else { return [] }
        guard let metadata, !metadata.isEmpty else {
            if metadata != nil {
                watch.lastStart = nil
                watch.lastEnd = nil
                watches[kind] = watch
            }
            return []
        }
        let keys = Self.keys(of: kind)
        let start = metadata[keys.start].flatMap(Double.init)
        let end = metadata[keys.end].flatMap(Double.init)
        let newStart = start != watch.lastStart ? start : nil
        let newEnd = end != watch.lastEnd ? end : nil
        watch.lastStart = start ?? watch.lastStart
        watch.lastEnd = end ?? watch.lastEnd
        var outputs: [Output] = []
        if let newStart, let newEnd, newEnd > newStart, watch.pending == nil, watch.raised == nil {
            // A whole fault in one report (mpv merged the changes while the pump was behind):
            // an alarm, late, if it lasted its threshold.
            if newEnd - newStart >= watch.threshold {
                outputs += [.raised(Alarm(kind: kind, start: newStart)), .cleared(Alarm(kind: kind, start: newStart, end: newEnd))]
            }
            watches[kind] = watch
            return outputs + note(position: position)
        }
        // An end after the fault under way ends it; a start after that end begins the next.
        if let newEnd {
            if let pending = watch.pending, newEnd >= pending { watch.pending = nil }
            if let raised = watch.raised, watch.ending == nil, newEnd >= raised { watch.ending = newEnd }
        }
        if let newStart, newStart > (newEnd ?? -.infinity), watch.pending == nil, watch.raised == nil || watch.ending != nil {
            watch.pending = newStart
        }
        watches[kind] = watch
        return note(position: position)
    }

    /// The position the player shows now: raises the faults that lasted their threshold by it,
    /// clears the alarms whose end it reached.
    mutating func note(position: Double?) -> [Output] {
        guard let position else { return [] }
        self.position = position
        var outputs: [Output] = []
        for kind in AlarmKind.allCases {
            guard var watch = watches[kind] else { continue }
            if let start = watch.raised, let end = watch.ending, position >= end {
                outputs.append(.cleared(Alarm(kind: kind, start: start, end: end)))
                watch.raised = nil
                watch.ending = nil
            }
            if watch.raised == nil, let start = watch.pending, position >= start + watch.threshold {
                outputs.append(.raised(Alarm(kind: kind, start: start)))
                watch.raised = start
                watch.pending = nil
            }
            watches[kind] = watch
        }
        if !needsPositions { self.position = nil }
        return outputs
    }

    /// A break in the timeline (a seek, the item's end, a stop): each alarm raised ends at the
    /// last position shown, faults under way are forgotten. The values the detectors reported
    /// are kept: mpv keeps them across a seek.
    mutating func reset() -> [Output] {
        var outputs: [Output] = []
        for kind in AlarmKind.allCases {
            guard var watch = watches[kind] else { continue }
            if let start = watch.raised {
                let end = watch.ending.map { min($0, position ?? $0) } ?? position ?? start
                outputs.append(.cleared(Alarm(kind: kind, start: start, end: max(start, end))))
            }
            watch.raised = nil
            watch.ending = nil
            watch.pending = nil
            watches[kind] = watch
        }
        position = nil
        return outputs
    }
}
