import Foundation
import Glibc
import PlayerKit
import PlayerKitSupport
import Testing

/// playerkit-multiview under Xvfb on live-origin.py's angles: the frame number burned into each
/// angle (a barcode in its bottom strip) is read from screenshots of the real window, and every
/// tile must show the same moment.
@Suite("playerkit-multiview (GTK 4 under Xvfb, live angles)", .serialized, .timeLimit(.minutes(3)), .tags(.timingPass))
struct MultiViewAppTests {
    /// The origin's picture: 320x180, a barcode of 16 blocks in the bottom strip (180 / 8 rows).
    static let video = (width: 320.0, height: 180.0, strip: 22.0, bits: 16)

    /// The frame number a tile shows in `image`: the tile at `x`, `y` (screen pixels), of
    /// `width` × `height`, the picture letterboxed in it as mpv fits it. Nil when a block is
    /// neither black nor white (not a barcode: no picture yet, or a label over it).
    static func frameNumber(in image: XWDImage, x: Int, y: Int, width: Int, height: Int) -> Int? {
        let aspect = video.width / video.height
        var (pictureWidth, pictureHeight) = (Double(width), Double(width) / aspect)
        if pictureHeight > Double(height) { (pictureWidth, pictureHeight) = (Double(height) * aspect, Double(height)) }
        let left = Double(x) + (Double(width) - pictureWidth) / 2
        let top = Double(y) + (Double(height) - pictureHeight) / 2
        let row = Int(top + pictureHeight * (1 - video.strip / 2 / video.height))
        var number = 0
        for bit in 0..<video.bits {
            let column = Int(left + pictureWidth * (Double(bit) + 0.5) / Double(video.bits))
            let pixel = image.averageColor(x: column - 1, y: row - 1, width: 3, height: 3)
            let level = (pixel.red + pixel.green + pixel.blue) / 3
            if level > 170 { number |= 1 << bit } else if level > 85 { return nil }
        }
        return number
    }

    @Test("four live angles in one window: the frame numbers read from screenshots of the tiles agree within a frame, shot after shot, and move on; the JSON lines give each angle's skew in milliseconds")
    func tilesShowTheSameMoment() async throws {
        let origin = try await LiveOrigin.start(MultiViewTests.originArguments)
        defer { origin.stop() }
        let display = try await VirtualDisplay.start(size: "1280x800")
        defer { display.stop() }
        var environment = display.environment
        environment["GDK_BACKEND"] = "x11"
        environment["NO_AT_BRIDGE"] = "1"
        environment["GTK_A11Y"] = "none"
        let child = try ChildProcess.startInteractive(
            ChildProcess.example("playerkit-multiview"),
            ["--json", "--seconds", "40", "--size", "960x540"] + origin.angles, environment: environment)
        defer { if child.process.isRunning { kill(child.process.processIdentifier, SIGKILL) } }
        let reader = JSONLineReader(child.output)
        var tiles: [(id: String, x: Int, y: Int, width: Int, height: Int)] = []
        var aligned = Set<String>()
        var skewLines: [[String: Any]] = []
        // Until every angle is aligned and the tiles are placed (bounded by the app's --seconds).
        while let line = await reader.next() {
            switch line["type"] as? String {
            case "tiles":
                tiles = (line["tiles"] as? [[String: Any]] ?? []).compactMap { tile in
                    guard let id = tile["id"] as? String, let x = tile["x"] as? Int, let y = tile["y"] as? Int,
                          let width = tile["width"] as? Int, let height = tile["height"] as? Int else { return nil }
                    return (id, x, y, width, height)
                }
            case "event":
                if let event = line["event"] as? String, event.contains("aligned after"), let player = line["player"] as? String { aligned.insert(player) }
            case "skews":
                skewLines.append(line)
            case "failed", "quit":
                Issue.record("the app ended early: \(line)")
                return
            default:
                break
            }
            if aligned.count == 4, tiles.count == 4 { break }
        }
        #expect(aligned.count == 4, "aligned: \(aligned.sorted())")
        try #require(tiles.count == 4)
        // Where the window is on the screen.
        let tree = try await display.runAsync("xwininfo", ["-root", "-tree"])
        let windowLine = try #require(tree.split(separator: "\n").first { $0.contains("\"PlayerKit multi-view\"") })
        let corner = try #require(windowLine.split(separator: " ").last)
        let offsets = corner.split(separator: "+").compactMap { Int($0) }
        try #require(offsets.count == 2)
        try await Task.sleep(for: .seconds(1))
        var shots: [[Int]] = []
        for _ in 0..<4 {
            let file = FileManager.default.temporaryDirectory.appendingPathComponent("multiview-\(UUID().uuidString).xwd")
            defer { try? FileManager.default.removeItem(at: file) }
            try await display.runAsync("xwd", ["-root", "-silent", "-out", file.path])
            let image = try await XWDImage.read(file)
            let numbers = tiles.compactMap { tile in
                Self.frameNumber(in: image, x: offsets[0] + tile.x, y: offsets[1] + tile.y, width: tile.width, height: tile.height)
            }
            #expect(numbers.count == 4, "a tile without a readable barcode: \(numbers)")
            if numbers.count == 4 { shots.append(numbers) }
            try await Task.sleep(for: .milliseconds(600))
        }
        try #require(shots.count >= 3, "\(shots)")
        for numbers in shots {
            // The same moment: within one frame (a frame changes between two tiles' draws now and then).
            #expect(numbers.max()! - numbers.min()! <= 1, "frame numbers on the tiles: \(numbers)")
            // A real frame of the 60 s scene.
            #expect(numbers.allSatisfy { (1..<1800).contains($0) }, "\(numbers)")
        }
        // Playing: the numbers moved on between the first and the last shot (2 s: about 60 frames).
        #expect(shots.last!.min()! - shots.first!.max()! > 20, "\(shots.first!) then \(shots.last!)")
        // The JSON skews line: every angle, in milliseconds, under keys that say so.
        while skewLines.count < 2, let line = await reader.next() {
            if line["type"] as? String == "skews" { skewLines.append(line) }
        }
        let members = try #require(skewLines.last?["members"] as? [[String: Any]])
        #expect(members.count == 4)
        for member in members {
            for key in ["skew_ms", "skew_p50_ms", "skew_p95_ms", "skew_p99_ms"] {
                #expect(member[key] is Double, "\(key) in \(member)")
            }
        }
        kill(child.process.processIdentifier, SIGTERM)
        var quit: [String: Any]?
        while let line = await reader.next() { if line["type"] as? String == "quit" { quit = line } }
        child.process.waitUntilExit()
        #expect(child.process.terminationStatus == 0)
        #expect((quit?["live_players"] as? [String])?.isEmpty == true)
    }

    /// Two 25 s angles of one testsrc2 scene as local MP4 files, made once with ffmpeg (kept
    /// under .build/multiview-files).
    static func localAngles() throws -> [String] {
        let folder = Fixtures.repository.appendingPathComponent(".build/multiview-files")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        return try (1...2).map { index in
            let file = folder.appendingPathComponent("angle-\(index).mp4")
            if !FileManager.default.fileExists(atPath: file.path) {
                let partial = folder.appendingPathComponent("angle-\(index).partial.mp4")
                let (status, _) = try ChildProcess.run(URL(fileURLWithPath: "/usr/bin/ffmpeg"), [
                    "-hide_banner", "-loglevel", "error", "-y", "-f", "lavfi", "-i", "testsrc2=size=320x180:rate=30:duration=25",
                    "-f", "lavfi", "-i", "sine=frequency=\(400 * index):duration=25", "-c:v", "libx264", "-preset", "ultrafast",
                    "-g", "30", "-pix_fmt", "yuv420p", "-c:a", "aac", "-shortest", partial.path])
                try #require(status == 0, "ffmpeg failed making \(file.path)")
                try FileManager.default.moveItem(at: partial, to: file)
            }
            return file.path
        }
    }
}

/// playerkit-multiview headless on two local files: light (two players of 320x180, no window), so
/// it runs in make test's live pass; its bound (10 ms) holds there.
@Suite("playerkit-multiview on local files (headless)", .timeLimit(.minutes(2)), .tags(.livePass))
struct MultiViewAppLocalFilesTests {
    @Test("two local files are an on-demand group: headless, --json --seconds 13, each angle is aligned and its skew, measured on frame changes, stays within milliseconds")
    func localFilesOnDemand() async throws {
        let files = try MultiViewAppTests.localAngles()
        let (status, output, errors) = try await ChildProcess.runToEnd(
            // 13 s: the last line's figures span the last 10 s (SyncSettings.skewWindow), so
            // they leave out the join (at 7 s, a join slowed by a loaded machine made its p99).
            ChildProcess.example("playerkit-multiview"), ["--headless", "--json", "--seconds", "13"] + files)
        #expect(status == 0, "\(errors.suffix(400))")
        let lines = output.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        let aligned = Set(lines.filter { ($0["event"] as? String)?.contains("aligned after") == true }.compactMap { $0["player"] as? String })
        #expect(aligned == ["angle-1", "angle-2"])
        let last = try #require(lines.last { $0["type"] as? String == "skews" })
        let members = try #require(last["members"] as? [[String: Any]])
        #expect(members.count == 2)
        for member in members {
            let p99 = try #require(member["skew_p99_ms"] as? Double, "\(member)")
            // make bench-multiview measures it alone (the issue asks for 2 ms); this bound holds on
            // a loaded machine.
            #expect(p99 < 10, "\(member)")
            #expect((member["samples"] as? Int ?? 0) > 100, "\(member)")
        }
        // The statistics once a second (issue 68): every angle's frames shown and its decoder.
        let figures = try #require(lines.last { $0["type"] as? String == "statistics" }?["statistics"] as? [String: [String: Any]])
        #expect(Set(figures.keys) == ["angle-1", "angle-2"])
        for (angle, statistics) in figures {
            #expect((statistics["framesRendered"] as? Int ?? 0) > 100, "\(angle): \(statistics)")
            #expect(statistics["videoDecoder"] != nil, "\(angle): \(statistics)")
        }
        #expect(lines.last?["type"] as? String == "quit")
    }
}

/// playerkit-multiview's alarms and figures (issue 68): positions, not timing, so in the parallel
/// pass; beside the live pass's skew tests it loaded the machine they measure.
@Suite("playerkit-multiview's alarms and figures (local files)", .timeLimit(.minutes(2)))
struct MultiViewAppAlarmTests {
    @Test("on screen, under Xvfb: while the black stretch lasts, the tile's label has a line per alarm (black and still) under its ID and skew, and the s key adds the figures under them")
    func alarmsOnScreen() async throws {
        let faults = Fixtures.fixture("faults.mp4")
        let display = try await VirtualDisplay.start(size: "1024x600")
        defer { display.stop() }
        var environment = display.environment
        environment["GDK_BACKEND"] = "x11"
        environment["NO_AT_BRIDGE"] = "1"
        environment["GTK_A11Y"] = "none"
        let child = try ChildProcess.startInteractive(
            ChildProcess.example("playerkit-multiview"),
            ["--json", "--alarms", "--alarm-after", "0.5", "--seconds", "60", "--size", "800x450", faults, faults], environment: environment)
        defer { if child.process.isRunning { kill(child.process.processIdentifier, SIGKILL) } }
        let reader = JSONLineReader(child.output)
        var tile: (x: Int, y: Int, width: Int, height: Int)?
        var black = false
        // The tiles' places, then angle-1's black alarm (raised at 4.5 s; the stretch ends at 5.52 s).
        while let line = await reader.next() {
            if line["type"] as? String == "tiles", let first = (line["tiles"] as? [[String: Any]])?.first(where: { $0["id"] as? String == "angle-1" }),
               let x = first["x"] as? Int, let y = first["y"] as? Int, let width = first["width"] as? Int, let height = first["height"] as? Int {
                tile = (x, y, width, height)
            }
            if line["type"] as? String == "alarm", line["event"] as? String == "alarmRaised", line["player"] as? String == "angle-1",
               (line["alarm"] as? [String: Any])?["kind"] as? String == "black" {
                black = true
                break
            }
            if ["failed", "quit"].contains(line["type"] as? String ?? "") { break }
        }
        try #require(black, "no black alarm")
        let place = try #require(tile)
        // A real key press (space pauses the group), pointer over the window: paused on the
        // black picture, the alarms stay raised for the screenshots whatever the machine's load.
        _ = try await display.runAsync("xdotool", ["mousemove", "400", "225", "key", "space"])
        let offsets = try await Self.windowCorner(display)
        func lines(_ image: XWDImage) -> [Int] {
            Self.textLines(in: image, x: offsets.x + place.x, y: offsets.y + place.y, width: place.width, height: place.height)
        }
        // The ID, the skew against the group, "⚠ freeze since 4.0 s" and "⚠ black since 4.0 s"
        // (a black picture is still too).
        let alarmed = try await Self.screenshot(display) { lines($0).count >= 4 }
        #expect(lines(alarmed).count == 4, "text lines on the black tile: \(lines(alarmed))")
        _ = try await display.runAsync("xdotool", ["key", "s"])
        let figures = try await Self.screenshot(display) { lines($0).count > 4 }
        #expect(lines(figures).count > 4, "with the figures: \(lines(figures))")
        kill(child.process.processIdentifier, SIGTERM)
        while await reader.next() != nil {}
        child.process.waitUntilExit()
        #expect(child.process.terminationStatus == 0)
    }

    /// Where the app's window is on the screen (Xvfb has no window manager to move it).
    static func windowCorner(_ display: VirtualDisplay) async throws -> (x: Int, y: Int) {
        for _ in 0..<25 {
            let tree = try await display.runAsync("xwininfo", ["-root", "-tree"])
            if let line = tree.split(separator: "\n").first(where: { $0.contains("\"PlayerKit multi-view\"") }), let corner = line.split(separator: " ").last {
                let offsets = corner.split(separator: "+").compactMap { Int($0) }
                if offsets.count == 2 { return (offsets[0], offsets[1]) }
            }
            try await Task.sleep(for: .milliseconds(200))
        }
        throw CompareAppError.notReady
    }

    /// Screenshots until `accept` takes one (at most 25, 0.2 s apart: GTK draws at its next
    /// frame); returns the last.
    static func screenshot(_ display: VirtualDisplay, until accept: (XWDImage) -> Bool) async throws -> XWDImage {
        var image: XWDImage?
        for _ in 0..<25 {
            let file = FileManager.default.temporaryDirectory.appendingPathComponent("multiview-\(UUID().uuidString).xwd")
            defer { try? FileManager.default.removeItem(at: file) }
            try await display.runAsync("xwd", ["-root", "-silent", "-out", file.path])
            image = try await XWDImage.read(file)
            if accept(image!) { break }
            try await Task.sleep(for: .milliseconds(200))
        }
        return image!
    }

    /// The lines of light text in a tile's top-left part, over a black picture: each band of
    /// rows with light pixels, as its height, top to bottom.
    static func textLines(in image: XWDImage, x: Int, y: Int, width: Int, height: Int) -> [Int] {
        var bands: [Int] = []
        var current = 0
        for row in y..<min(y + height * 8 / 10, image.height) {
            var light = false
            for column in stride(from: x + 2, to: min(x + width * 9 / 10, image.width), by: 1) {
                let pixel = image.color(x: column, y: row)
                if (pixel.red + pixel.green + pixel.blue) / 3 > 150 { light = true; break }
            }
            if light { current += 1 } else if current > 0 { bands.append(current); current = 0 }
        }
        if current > 0 { bands.append(current) }
        // A band of a row or two is a glyph's stray part, not a line.
        return bands.filter { $0 >= 4 }
    }

    @Test("--alarms on a file with faults written into it: every angle's frozen and black stretches raise and clear alarms at their positions; silence only on the angle whose sound is decoded")
    func alarms() async throws {
        let faults = Fixtures.fixture("faults.mp4")
        let (status, output, errors) = try await ChildProcess.runToEnd(
            ChildProcess.example("playerkit-multiview"),
            ["--headless", "--json", "--alarms", "--alarm-after", "0.5", "--seconds", "9", faults, faults])
        #expect(status == 0, "\(errors.suffix(400))")
        let lines = output.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        let cleared = lines.filter { $0["type"] as? String == "alarm" && $0["event"] as? String == "alarmCleared" }
        func alarms(of angle: String) -> [(kind: String, start: Double, end: Double)] {
            cleared.filter { $0["player"] as? String == angle }.compactMap { line in
                guard let alarm = line["alarm"] as? [String: Any], let kind = alarm["kind"] as? String,
                      let start = alarm["start"] as? Double, let end = alarm["end"] as? Double else { return nil }
                return (kind, start, end)
            }
        }
        func near(_ a: Double, _ b: Double) -> Bool { abs(a - b) <= 0.05 }
        for angle in ["angle-1", "angle-2"] {
            let found = alarms(of: angle)
            #expect(found.contains { $0.kind == "freeze" && near($0.start, 0.96) && near($0.end, 3) }, "\(angle): \(found)")
            #expect(found.contains { $0.kind == "black" && near($0.start, 4) && near($0.end, 5.52) }, "\(angle): \(found)")
        }
        // Only the focused angle decodes its sound (AudioPolicy, decodesUnheardAudio: false).
        #expect(alarms(of: "angle-1").contains { $0.kind == "silence" && near($0.start, 6) && near($0.end, 7) }, "\(alarms(of: "angle-1"))")
        #expect(!alarms(of: "angle-2").contains { $0.kind == "silence" }, "\(alarms(of: "angle-2"))")
        #expect(lines.last?["type"] as? String == "quit")
    }
}

/// playerkit-multiview's `--rendered-log` on two live angles (headless): every angle renders its
/// frames, and the number burned into each is read from its pixels. In the timing pass: it bounds
/// how far apart two angles render a frame, and beside the live pass's tests it disturbed their
/// spreads (an on-demand group's skew p99 read 27-34 ms against its 10 ms bound, 2026-12-02).
@Suite("playerkit-multiview's rendered frames (headless, live angles)", .timeLimit(.minutes(2)), .tags(.timingPass))
struct MultiViewAppRenderedFramesTests {
    @Test("--rendered-log: every angle's frames are rendered and read, their numbers move on a frame at a time, and two aligned angles render the same number within a frame of each other; --rendered-log without --headless is refused by name")
    func renderedFrames() async throws {
        // The multi-view tests' origin (its media encoded next to make test's build); two of its angles.
        let origin = try await LiveOrigin.start(MultiViewTests.originArguments)
        defer { origin.stop() }
        let angles = Array(origin.angles.prefix(2))
        let log = FileManager.default.temporaryDirectory.appendingPathComponent("rendered-\(UUID().uuidString).log")
        defer { try? FileManager.default.removeItem(at: log) }
        let (status, _, errors) = try await ChildProcess.runToEnd(
            ChildProcess.example("playerkit-multiview"), ["--headless", "--json", "--seconds", "8", "--rendered-log", log.path] + angles)
        #expect(status == 0, "\(errors.suffix(400))")
        var rendered: [String: [(number: Int, t: Double)]] = [:]
        var unreadable: [String: Int]?
        for line in try String(contentsOf: log, encoding: .utf8).split(separator: "\n") {
            let item = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "\(line)")
            if let counts = item["unreadable"] as? [String: Int] {
                unreadable = counts
            } else if let player = item["player"] as? String, let number = item["frame"] as? Int, let t = item["t"] as? Double {
                rendered[player, default: []].append((number, t))
            }
        }
        #expect(Set(rendered.keys) == ["angle-1", "angle-2"], "\(rendered.keys)")
        // Every frame carries its number (a frame of no picture yet, at most, has none).
        let unread = unreadable.map { $0.values.reduce(0, +) }
        #expect(unread != nil && unread! <= 4, "frames without a readable number: \(String(describing: unreadable))")
        for (player, frames) in rendered {
            // Several seconds of 30 fps, nearly every step one frame on (a frame of the 60 s scene).
            #expect(frames.count > 90, "\(player): \(frames.count) frames")
            #expect(frames.allSatisfy { (0..<1800).contains($0.number) }, "\(player)")
            let steps = zip(frames, frames.dropFirst()).map { $1.number - $0.number }
            #expect(steps.filter { $0 == 1 }.count * 10 >= steps.count * 8, "\(player)'s steps: \(steps)")
        }
        // Over the last 2 s (aligned by then): the moments both angles rendered the same number.
        let first = Dictionary((rendered["angle-1"] ?? []).map { ($0.number, $0.t) }, uniquingKeysWith: { earlier, _ in earlier })
        let end = (rendered["angle-1"]?.last?.t ?? 0)
        let apart = (rendered["angle-2"] ?? []).filter { $0.t > end - 2 }.compactMap { frame in first[frame.number].map { abs($0 - frame.t) } }.sorted()
        #expect(apart.count > 30, "\(apart.count) frames rendered by both in the last 2 s")
        if !apart.isEmpty { #expect(apart[apart.count / 2] < 1.0 / 30, "median moment apart: \(apart[apart.count / 2]) s") }

        let (refused, _, message) = try await ChildProcess.runToEnd(
            ChildProcess.example("playerkit-multiview"), ["--rendered-log", log.path] + angles)
        #expect(refused != 0 && message.contains("--rendered-log"), "\(message.suffix(300))")
    }
}
