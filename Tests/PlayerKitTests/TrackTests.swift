import Foundation
import PlayerKit
import Testing

/// Choosing tracks, adding subtitle files, and the decoder in use, on the shipped
/// `two-languages.mp4` (video, English and French audio, an embedded subtitle track) and its
/// `subtitles-en.srt`.
@Suite("Tracks and decoders", .timeLimit(.minutes(4)))
struct TrackTests {
    static var clip: String { Fixtures.media("two-languages.mp4") }
    static var subtitles: String { Fixtures.media("subtitles-en.srt") }

    @Test("the clip's tracks are listed with kinds, languages and the selection mpv made")
    func listed() async throws {
        let (player, _) = try await Fixtures.player()
        let info = try await player.load(.file(Self.clip), startPaused: true)
        let audio = info.tracks.filter { $0.kind == .audio }
        #expect(audio.map(\.id) == [1, 2])
        #expect(audio.map(\.language) == ["eng", "fra"])
        #expect(audio.filter(\.isSelected).map(\.id) == [1])
        #expect(info.tracks.filter { $0.kind == .video }.count == 1)
        #expect(info.tracks.filter { $0.kind == .subtitle }.map(\.externalFile) == [nil])
        #expect(player.tracks == info.tracks)
        await player.shutdown()
    }

    @Test("selecting a track: the read-out shows it when the call returns, an event says so, and mpv plays it")
    func selectAudio() async throws {
        let (player, recorder) = try await Fixtures.player()
        _ = try await player.load(.file(Self.clip), startPaused: true)
        let mark = recorder.records.last?.sequenceNumber ?? 0

        try await player.perform(.selectTrack(.audio, id: 2))
        #expect(player.tracks.filter { $0.kind == .audio && $0.isSelected }.map(\.id) == [2])
        let changed = await recorder.waitFor(timeout: .seconds(10), after: mark) {
            if case .tracksChanged = $0.event { return true } else { return false }
        }
        guard case .tracksChanged(let tracks)? = changed?.event else {
            Issue.record("no tracksChanged event")
            return
        }
        #expect(tracks.filter { $0.kind == .audio && $0.isSelected }.map(\.language) == ["fra"])
        await #expect(try player.property("current-tracks/audio/lang") == .string("fra"))

        // No audio at all, then back to the first track through `send`, as a feature would.
        try await player.perform(.selectTrack(.audio, id: nil))
        #expect(player.tracks.filter { $0.kind == .audio && $0.isSelected }.isEmpty)
        try player.send(.selectTrack(.audio, id: 1))
        let back = await recorder.waitFor(timeout: .seconds(10), after: mark) {
            if case .tracksChanged(let tracks) = $0.event {
                return tracks.contains { $0.kind == .audio && $0.id == 1 && $0.isSelected }
            }
            return false
        }
        #expect(back != nil)
        await #expect(try player.property("current-tracks/audio/lang") == .string("eng"))
        // The read-out settles on what mpv has: once the confirmations are in, still track 1.
        try await player.perform(.selectTrack(.audio, id: 1))
        #expect(player.tracks.filter { $0.kind == .audio && $0.isSelected }.map(\.id) == [1])
        await player.shutdown()
    }

    @Test("an external subtitle file is added, selected and listed with its path")
    func externalSubtitles() async throws {
        let (player, recorder) = try await Fixtures.player()
        _ = try await player.load(.file(Self.clip), startPaused: true)
        let mark = recorder.records.last?.sequenceNumber ?? 0
        let track = try await player.addSubtitles(path: Self.subtitles, title: "From a file", language: "eng")
        #expect(track.kind == .subtitle)
        #expect(track.externalFile?.hasSuffix("subtitles-en.srt") == true)
        #expect(track.title == "From a file")
        #expect(track.isSelected)
        #expect(player.tracks.filter { $0.kind == .subtitle }.count == 2)
        #expect(player.tracks.filter { $0.kind == .subtitle && $0.isSelected }.map(\.id) == [track.id])
        await #expect(try player.property("sid") == .int(Int64(track.id)))
        let event = await recorder.waitFor(timeout: .seconds(10), after: mark) {
            if case .tracksChanged(let tracks) = $0.event { return tracks.contains { $0.id == track.id && $0.kind == .subtitle } }
            return false
        }
        #expect(event != nil)

        // Added without selecting: listed, the selection unchanged.
        let second = try await player.addSubtitles(path: Self.subtitles, select: false)
        #expect(!second.isSelected && second.id != track.id)
        #expect(player.tracks.filter { $0.kind == .subtitle && $0.isSelected }.map(\.id) == [track.id])
        // Subtitles off.
        try await player.perform(.selectTrack(.subtitle, id: nil))
        #expect(player.tracks.filter { $0.kind == .subtitle && $0.isSelected }.isEmpty)
        await player.shutdown()
    }

    /// The error `body` throws, nil when it throws none.
    private func thrown(_ body: () async throws -> Void) async -> PlayerError? {
        do { try await body() } catch { return error as? PlayerError }
        return nil
    }

    @Test("bad track requests get typed errors naming the value; the player plays on")
    func badRequests() async throws {
        let (player, recorder) = try await Fixtures.player()
        #expect(await thrown { try await player.perform(.selectTrack(.audio, id: 1)) } == .noMediaLoaded(operation: "select a track"))
        #expect(await thrown { _ = try await player.addSubtitles(path: Self.subtitles) } == .noMediaLoaded(operation: "add subtitles"))
        _ = try await player.load(.file(Self.clip), startPaused: true)

        #expect(await thrown { try await player.perform(.selectTrack(.audio, id: 9)) } == .unknownTrack(kind: .audio, id: 9, available: [1, 2]))
        #expect(await thrown { try player.send(.selectTrack(.audio, id: 3)) } == .unknownTrack(kind: .audio, id: 3, available: [1, 2]))
        let zero = await thrown { try await player.perform(.selectTrack(.video, id: 0)) }
        #expect(zero.map { "\($0)" }?.contains("track ID") == true, "\(String(describing: zero))")
        if case .invalidArgument(let name, let value, _)? = zero {
            #expect(name == "track ID" && value == "0")
        } else {
            Issue.record("track 0: \(String(describing: zero))")
        }
        if case .invalidArgument(let name, _, _)? = await thrown({ try await player.perform(.selectTrack(.unknown, id: 1)) }) {
            #expect(name == "track kind")
        } else {
            Issue.record("an unknown kind was accepted")
        }
        let missing = "/nonexistent/playerkit/\(UUID().uuidString).srt"
        #expect(await thrown { _ = try await player.addSubtitles(path: missing) } == .fileNotFound(path: missing))
        let notSubtitles = Fixtures.fixture("random-bytes.mp4")
        let refused = await thrown { _ = try await player.addSubtitles(path: notSubtitles) }
        if case .subtitlesFailed(let path, _)? = refused {
            #expect(path == notSubtitles)
        } else {
            Issue.record("random bytes as subtitles: \(String(describing: refused))")
        }
        #expect(player.tracks.filter { $0.kind == .subtitle }.count == 1)
        #expect(player.tracks.filter { $0.kind == .audio && $0.isSelected }.map(\.id) == [1])

        // Still usable: it plays to the end.
        let mark = recorder.records.last?.sequenceNumber ?? 0
        try await player.play()
        let end = await recorder.waitFor(timeout: .seconds(20), after: mark) {
            if case .itemEnded = $0.event { return true } else { return false }
        }
        #expect(end?.event == .itemEnded(.finished))
        await player.shutdown()
    }

    @Test("the decoder in use is reported: the codec, and software decoding when hardware decoding is off")
    func decoderInUse() async throws {
        let (player, recorder) = try await Fixtures.player()
        #expect(player.videoDecoder == nil)
        // Looping, so the item is still there however slowly a loaded machine gets to the checks.
        try await player.perform(.setLoop(.forever))
        _ = try await player.load(.file(Self.clip))
        let event = await recorder.waitFor(timeout: .seconds(10)) {
            if case .videoDecoderChanged(let decoder?) = $0.event { return decoder.codec.contains("H.264") }
            return false
        }
        guard case .videoDecoderChanged(let decoder?)? = event?.event else {
            Issue.record("no videoDecoderChanged event: \(recorder.events.map(\.description))")
            return
        }
        #expect(decoder.hardwareAPI == nil)
        #expect(player.videoDecoder == decoder)
        #expect(decoder.description.hasSuffix("(software)"))
        // An audio-only item has no video decoder.
        let mark = recorder.records.last?.sequenceNumber ?? 0
        try await player.perform(.selectTrack(.video, id: nil))
        let none = await recorder.waitFor(timeout: .seconds(10), after: mark) { $0.event == .videoDecoderChanged(nil) }
        #expect(none != nil)
        #expect(player.videoDecoder == nil)
        await player.shutdown()
    }
}
