import Foundation
import PlayerKit
@testable import PlayerKitHLS
import PlayerKitSupport
import Testing

/// PlaylistClock (PlayerKitHLS) against live-origin.py's playlists and segments: the
/// timestamps it reads are ffprobe's, its offsets are the angles' true offsets, and every bad
/// input is a typed error.
@Suite("Live playlists' clocks (PlayerKitHLS, real HTTP on loopback)", .timeLimit(.minutes(3)), .tags(.livePass))
struct PlaylistClockTests {
    /// A TS angle, an fMP4 angle and a TS angle whose encoder's timestamps run 7 s ahead.
    static let mixed = ["--angles", "3", "--size", "160x90", "--fps", "30", "--seconds", "30", "--segment", "1",
                        "--formats", "ts,fmp4,ts", "--pts-offsets", "0,0,7"]

    /// ffprobe's first video timestamp of segment `sequence` of `angle` (an fMP4 segment after
    /// its init section, as a player reads it).
    static func ffprobeTime(_ origin: LiveOrigin, angle: Int, sequence: Int) throws -> Double {
        let folder = origin.directory.appendingPathComponent("angle-\(angle)")
        var file = folder.appendingPathComponent(String(format: "seg_%05d.ts", sequence))
        if !FileManager.default.fileExists(atPath: file.path) {
            let joined = FileManager.default.temporaryDirectory.appendingPathComponent("playerkit-\(UUID().uuidString).mp4")
            let data = try Data(contentsOf: folder.appendingPathComponent("init.mp4"))
                + Data(contentsOf: folder.appendingPathComponent(String(format: "seg_%05d.m4s", sequence)))
            try data.write(to: joined)
            file = joined
        }
        defer { if file.pathExtension == "mp4" { try? FileManager.default.removeItem(at: file) } }
        let (status, output) = try ChildProcess.run(URL(fileURLWithPath: "/usr/bin/ffprobe"), [
            "-v", "error", "-select_streams", "v:0", "-show_entries", "packet=pts_time", "-of", "csv=p=0", file.path])
        #expect(status == 0)
        let times = output.split(whereSeparator: \.isNewline).compactMap { line in
            // "1.423222" or, on a packet with side data, "1.423222,".
            line.split(separator: ",").first.flatMap { Double($0.trimmingCharacters(in: .whitespaces)) }
        }
        return try #require(times.min())
    }

    @Test("the newest segment's first video timestamp is ffprobe's, for MPEG-TS and fMP4 angles, and its PROGRAM-DATE-TIME is read")
    func readsTimestampsAsFFprobe() async throws {
        let origin = try await LiveOrigin.start(Self.mixed)
        defer { origin.stop() }
        for angle in 0..<3 {
            let clock = try await PlaylistClock.read(URL(string: origin.angles[angle])!)
            let truth = try Self.ffprobeTime(origin, angle: angle, sequence: clock.mediaSequence)
            #expect(abs(clock.presentationTime - truth) < 0.001, "angle \(angle): \(clock.presentationTime) against ffprobe's \(truth)")
            let date = try #require(clock.programDateTime)
            // The origin dates its segments from when it started: within the last minute.
            #expect(abs(date.timeIntervalSinceNow) < 60)
        }
    }

    @Test("a byte-range playlist (ffmpeg's single_file HLS) is read range by range: the newest segment's timestamp is ffprobe's for its bytes, from a server that honours Range")
    func byteRangePlaylist() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("playerkit-byterange-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let (status, output) = try ChildProcess.run(URL(fileURLWithPath: "/usr/bin/ffmpeg"), [
            "-hide_banner", "-loglevel", "error", "-f", "lavfi", "-i", "testsrc2=size=96x64:rate=25:duration=4",
            "-c:v", "libx264", "-g", "25", "-pix_fmt", "yuv420p", "-output_ts_offset", "11", "-f", "hls", "-hls_time", "1",
            "-hls_list_size", "0", "-hls_flags", "single_file", folder.appendingPathComponent("index.m3u8").path])
        #expect(status == 0, "\(output)")
        let server = try LoopbackHTTPServer(root: folder)
        defer { server.stop() }
        let clock = try await PlaylistClock.read(URL(string: "http://127.0.0.1:\(server.port)/index.m3u8")!)
        // The newest segment's bytes, cut by hand from the playlist's last EXT-X-BYTERANGE.
        let playlist = try String(contentsOf: folder.appendingPathComponent("index.m3u8"), encoding: .utf8)
        let last = try #require(playlist.split(whereSeparator: \.isNewline).last { $0.hasPrefix("#EXT-X-BYTERANGE:") })
        let parts = last.dropFirst("#EXT-X-BYTERANGE:".count).split(separator: "@")
        let length = try #require(Int(parts[0])), offset = try #require(Int(parts[1]))
        let whole = try Data(contentsOf: folder.appendingPathComponent("index.ts"))
        let cut = folder.appendingPathComponent("newest.ts")
        try whole.subdata(in: offset..<(offset + length)).write(to: cut)
        func firstVideoTime(_ file: URL) throws -> Double {
            let (probed, times) = try ChildProcess.run(URL(fileURLWithPath: "/usr/bin/ffprobe"), [
                "-v", "error", "-select_streams", "v:0", "-show_entries", "packet=pts_time", "-of", "csv=p=0", file.path])
            #expect(probed == 0)
            return try #require(times.split(whereSeparator: \.isNewline).compactMap { Double($0.split(separator: ",").first ?? "") }.min())
        }
        let truth = try firstVideoTime(cut)
        #expect(abs(clock.presentationTime - truth) < 0.001, "read \(clock.presentationTime), ffprobe \(truth)")
        // Not the file's first timestamp (what reading the whole resource gave): segments later.
        #expect(clock.presentationTime > (try firstVideoTime(folder.appendingPathComponent("index.ts"))) + 2)
    }

    @Test("angles without a shared clock whose playlists carry PROGRAM-DATE-TIME get their true media offsets (TS beside fMP4, and an encoder 7 s ahead), to the millisecond, in the sign of every offset (the angle's timestamps minus the first's)")
    func offsetsFromProgramDateTime() async throws {
        let origin = try await LiveOrigin.start(Self.mixed)
        defer { origin.stop() }
        var clocks: [PlaylistClock] = []
        for url in origin.angles { clocks.append(try await PlaylistClock.read(URL(string: url)!)) }
        let offsets = try PlaylistClock.mediaOffsets(clocks)
        // The same PROGRAM-DATE-TIME for the same segment number: the true media offset of angle
        // i is its timestamp where that segment starts minus the first angle's.
        let sequence = 3
        let reference = try Self.ffprobeTime(origin, angle: 0, sequence: sequence)
        for angle in 1..<3 {
            let truth = (try Self.ffprobeTime(origin, angle: angle, sequence: sequence)) - reference
            #expect(abs(offsets[angle].inSeconds - truth) < 0.002, "angle \(angle): \(offsets[angle]) against \(truth) s")
        }
        #expect(offsets[0] == .zero)
        // About the 7 s the origin gave that encoder (its muxer starts a frame's worth apart).
        #expect(abs(offsets[2].inSeconds - 7) < 0.05)
    }

    @Test("without PROGRAM-DATE-TIME: a TS angle beside an fMP4 angle with unrelated timestamps is unrelatedTimestamps naming the fMP4 playlist and the offset; two angles of one clock get zero offsets")
    func unrelatedWithoutProgramDateTime() async throws {
        let origin = try await LiveOrigin.start(Self.mixed + ["--without-pdt"])
        defer { origin.stop() }
        var clocks: [PlaylistClock] = []
        for url in origin.angles { clocks.append(try await PlaylistClock.read(URL(string: url)!)) }
        #expect(clocks.allSatisfy { $0.programDateTime == nil })
        let error = #expect(throws: PlaylistClockError.self) { try PlaylistClock.mediaOffsets(clocks) }
        guard case .unrelatedTimestamps(let url, let offset) = error else {
            Issue.record("expected unrelatedTimestamps, got \(String(describing: error))")
            return
        }
        #expect(url == origin.angles[1])
        let truth = try Self.ffprobeTime(origin, angle: 1, sequence: 3) - Self.ffprobeTime(origin, angle: 0, sequence: 3)
        #expect(abs(offset.inSeconds - truth) < 0.002, "\(offset) against \(truth) s")
        #expect(error?.description.contains(origin.angles[1]) == true)
        // Two TS angles of the one encoder share their timestamps.
        let shared = try PlaylistClock.mediaOffsets([clocks[0], clocks[0]])
        #expect(shared == [.zero, .zero])
    }

    @Test("a playlist over 8 MB is refused by name, with the limit, before its body is read (its Content-Length says so)")
    func playlistOverTheLimit() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("playerkit-huge-playlist-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let line = "#EXTINF:1.0,\nsegment.ts\n"
        try Data(("#EXTM3U\n" + String(repeating: line, count: (8 << 20) / line.utf8.count + 1)).utf8)
            .write(to: folder.appendingPathComponent("huge.m3u8"))
        let server = try LoopbackHTTPServer(root: folder)
        defer { server.stop() }
        let url = "http://127.0.0.1:\(server.port)/huge.m3u8"
        await #expect(throws: PlaylistClockError.unreachable(url: url, reason: "larger than \(8 << 20) bytes")) {
            _ = try await PlaylistClock.read(URL(string: url)!)
        }
    }

    @Test("bad inputs are typed errors naming the URL: a 404, a segment given as a playlist, a closed port, and a segment that does not come within the timeout")
    func badInputs() async throws {
        let origin = try await LiveOrigin.start(Self.mixed)
        defer { origin.stop() }
        let missing = "http://127.0.0.1:\(origin.port)/angle-7/live.m3u8"
        await #expect(throws: PlaylistClockError.httpStatus(url: missing, status: 404)) {
            _ = try await PlaylistClock.read(URL(string: missing)!)
        }
        let clock = try await PlaylistClock.read(URL(string: origin.angles[0])!)
        let segment = "http://127.0.0.1:\(origin.port)/angle-0/" + String(format: "seg_%05d.ts", clock.mediaSequence)
        let notPlaylist = await #expect(throws: PlaylistClockError.self) { _ = try await PlaylistClock.read(URL(string: segment)!) }
        #expect(notPlaylist == .notAPlaylist(url: segment, reason: "it does not start with #EXTM3U"))
        // A port nothing listens on (the origin's, once it stopped, is not reused this fast).
        let closed = "http://127.0.0.1:1/live.m3u8"
        let refused = await #expect(throws: PlaylistClockError.self) { _ = try await PlaylistClock.read(URL(string: closed)!) }
        guard case .unreachable(let url, _) = refused else { Issue.record("\(String(describing: refused))"); return }
        #expect(url == closed)
        // The segment is held 5 s; the read gives up after its timeout.
        try await origin.control("delay", angle: 0, seconds: 5)
        let start = ContinuousClock.now
        let late = await #expect(throws: PlaylistClockError.self) {
            _ = try await PlaylistClock.read(URL(string: origin.angles[0])!, timeout: .milliseconds(500))
        }
        guard case .timedOut(_, .milliseconds(500)) = late else { Issue.record("\(String(describing: late))"); return }
        #expect(ContinuousClock.now - start < .seconds(3))
    }
}
