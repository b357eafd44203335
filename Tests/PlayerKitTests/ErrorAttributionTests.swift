@testable import PlayerKitCore
import Testing

/// `PlaybackModel`'s error attribution on its own (`ErrorAttribution`): which of mpv's error
/// lines an item's error gives as its reasons, whatever order mpv hands lines and events out in.
@Suite("Error attribution: mpv's lines go to the item they are about", .timeLimit(.minutes(1)))
struct ErrorAttributionTests {
    let sources: [Int64: String] = [1: "/media/first.mp4", 2: "/media/second.mp4"]

    @Test("an entry's error takes the lines read for it; a load drops lines read before the entry started")
    func entryLines() {
        var errors = ErrorAttribution()
        errors.read(level: .error, prefix: "cplayer", line: "from before", unrecognizedEndHeld: false)
        errors.entryStarted()
        errors.read(level: .error, prefix: "vo", line: "could not open the video output", unrecognizedEndHeld: false)
        errors.read(level: .warn, prefix: "vo", line: "a warning is no reason", unrecognizedEndHeld: false)
        errors.entryLoaded()
        #expect(errors.pendingLines == ["could not open the video output"])
        #expect(errors.takeForError(entry: 1, code: -13, sources: sources) == ["could not open the video output"])
        #expect(errors.pendingLines.isEmpty)
    }

    @Test("the load-fail hook takes the lines for its entry; the entry's error gets them, a later entry does not")
    func hookLines() {
        var errors = ErrorAttribution()
        errors.entryStarted()
        errors.read(level: .error, prefix: "ffmpeg", line: "invalid data found", unrecognizedEndHeld: false)
        errors.takeForHook(entry: 1)
        #expect(errors.hasHookLines(for: 1) && !errors.hasHookLines(for: 2))
        // A line read after the hook, before the entry's end, is no longer the first entry's.
        errors.read(level: .error, prefix: "demux", line: "a later line", unrecognizedEndHeld: false)
        #expect(errors.takeForError(entry: 1, code: -13, sources: sources) == ["invalid data found"])
        #expect(!errors.hasHookLines(for: 1))
        errors.entryStarted()
        errors.read(level: .error, prefix: "demux", line: "second's own line", unrecognizedEndHeld: false)
        #expect(errors.takeForError(entry: 2, code: -13, sources: sources) == ["second's own line"])
    }

    @Test("a line that names another entry's source is not this entry's reason")
    func otherSources() {
        var errors = ErrorAttribution()
        errors.read(level: .error, prefix: "demux", line: "cannot open /media/first.mp4", unrecognizedEndHeld: false)
        errors.read(level: .error, prefix: "demux", line: "cannot open /media/second.mp4", unrecognizedEndHeld: false)
        #expect(errors.takeForError(entry: 2, code: -13, sources: sources) == ["cannot open /media/second.mp4"])
    }

    @Test("an unrecognized format gets mpv's line, which mpv logs after the end, and that late line is no one else's")
    func unknownFormat() {
        var errors = ErrorAttribution()
        #expect(errors.takeForError(entry: 1, code: -17, sources: sources) == [ErrorAttribution.unknownFormatLine])
        errors.entryStarted()
        errors.read(level: .error, prefix: "cplayer", line: ErrorAttribution.unknownFormatLine, unrecognizedEndHeld: false)
        #expect(errors.pendingLines.isEmpty)
        // With no line at all, the reason says mpv gave none, in the error code's words.
        #expect(errors.takeForError(entry: 2, code: -13, sources: sources) == [ErrorAttribution.noReasonLine(code: -13)])
    }

    @Test("FFmpeg's hardware-device probes are never a reason; only the latest 8 lines are kept")
    func probesAndBound() {
        var errors = ErrorAttribution()
        errors.read(level: .error, prefix: "ffmpeg", line: "AVHWDeviceContext: Cannot load libcuda.so.1", unrecognizedEndHeld: false)
        #expect(errors.pendingLines.isEmpty)
        for number in 1...10 { errors.read(level: .error, prefix: "x", line: "line \(number)", unrecognizedEndHeld: false) }
        #expect(errors.pendingLines == (3...10).map { "line \($0)" })
    }
}
