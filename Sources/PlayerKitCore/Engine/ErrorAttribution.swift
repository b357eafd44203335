/// Which of mpv's error lines say why an item failed: one of `PlaybackModel`'s sub-machines, pure,
/// with one job. mpv logs why an entry failed in log lines that are not tied to the entry, and
/// hands them out on its own schedule (ahead of queued events, or after an entry's END_FILE), so
/// the lines are kept, numbered as they are read, and given to the right entry's error:
///
/// - lines read once an entry started are its own, and survive its load (``entryLoaded()``);
/// - the load-fail hook takes the lines read so far for its entry (``takeForHook(entry:)``);
/// - the entry's error takes its hook's lines, else the ones read since (``takeForError(entry:code:sources:)``),
///   without lines that name another entry's source;
/// - mpv's line for an unrecognized format comes only after the entry's END_FILE: it is added to
///   the entry's error and not taken for the next entry's reason.
struct ErrorAttribution: Sendable {
    /// mpv's line for an entry that ended with `MPV_ERROR_UNKNOWN_FORMAT`.
    static let unknownFormatLine = "Failed to recognize file format."

    /// The reason an item's error gives when mpv logged no line about it.
    static func noReasonLine(code: Int32) -> String {
        "mpv logged no reason for this failure; its error code says: \(MPVErrorMessages.message(for: code))"
    }

    /// Error lines not yet given to an error (the latest 8), numbered in the order they were read.
    /// Not cleared when an entry starts: a failing entry's lines can arrive before its START_FILE.
    private var lines: [(number: UInt64, line: String)] = []
    /// The number the next error line gets.
    private var nextNumber: UInt64 = 0
    /// The first line read once the current entry started: the entry's own.
    private var entryFirstNumber: UInt64 = 0
    /// The lines taken when mpv's load-fail hook ran for an entry, by entry (the latest 16).
    private var hookLines: [Int64: [String]] = [:]
    /// How many "Failed to recognize file format." lines are still on their way (mpv logs that
    /// line after the entry's END_FILE, when its error already has it).
    private var lateUnknownFormatLines = 0

    /// The lines not yet given to an error.
    var pendingLines: [String] { lines.map(\.line) }

    /// An entry started: lines from now on are its own.
    mutating func entryStarted() {
        entryFirstNumber = nextNumber
    }

    /// The current entry loaded: lines read before it started were not its, and go.
    mutating func entryLoaded() {
        lines.removeAll { $0.number < entryFirstNumber }
    }

    /// Whether the load-fail hook took lines for `entry` (its error has them: nothing to wait for).
    func hasHookLines(for entry: Int64) -> Bool { hookLines[entry] != nil }

    /// A log line. `unrecognizedEndHeld`: an entry's END_FILE for an unrecognized format is held,
    /// not yet applied (its line is counted ahead of its end, which counts it back).
    mutating func read(level: MPVEvent.LogLevel, prefix: String, line: String, unrecognizedEndHeld: Bool) {
        if PlaybackModel.isHardwareDeviceProbe(prefix: prefix, line: line) {
            // Never an item's reason (see ``PlaybackModel/isHardwareDeviceProbe(prefix:line:)``).
        } else if line == Self.unknownFormatLine, lateUnknownFormatLines > 0 {
            // An ended entry's own line, read after its end.
            lateUnknownFormatLines -= 1
        } else if line == Self.unknownFormatLine, unrecognizedEndHeld {
            lateUnknownFormatLines -= 1
        } else if level == .error || level == .fatal, !line.isEmpty {
            lines.append((nextNumber, line))
            nextNumber += 1
            if lines.count > 8 { lines.removeFirst() }
        }
    }

    /// mpv's load-fail hook runs for `entry`: it takes the lines read so far.
    mutating func takeForHook(entry: Int64) {
        hookLines[entry] = pendingLines
        lines = []
        if hookLines.count > 16 { hookLines.removeValue(forKey: hookLines.keys.min() ?? entry) }
    }

    /// The lines for `entry`'s error (its hook's, else the ones read since), taken.
    mutating func takeForError(entry: Int64, code: Int32, sources: [Int64: String]) -> [String] {
        let taken = hookLines.removeValue(forKey: entry) ?? pendingLines
        lines = []
        return reasons(entry: entry, code: code, taken, sources: sources)
    }

    /// The lines that say why `entry` failed with `code`, from `lines`: without the lines that
    /// name another entry's source and not this one's (an earlier item's lines read late), with
    /// mpv's line for an unrecognized format, and, when nothing is left, a line that says mpv gave
    /// no reason. Never empty for a failure (`code` < 0). Does not take the pending lines.
    mutating func reasons(entry: Int64, code: Int32, _ lines: [String], sources: [Int64: String]) -> [String] {
        let own = sources[entry]
        let others = sources.filter { $0.key != entry && $0.key >= entry - 16 }.map(\.value).filter { $0.count > 3 && $0 != own }
        var kept = lines.filter { line in
            guard let other = others.first(where: { line.contains($0) }) else { return true }
            // A line naming another source belongs to it, unless it names this one too (a
            // source that contains the other's name).
            return own.map { line.contains($0) && $0.count >= other.count } ?? false
        }
        if code == -17 {
            lateUnknownFormatLines += 1
            if !kept.contains(Self.unknownFormatLine) { kept.append(Self.unknownFormatLine) }
        }
        if kept.isEmpty, code < 0 { kept = [Self.noReasonLine(code: code)] }
        return kept
    }
}
