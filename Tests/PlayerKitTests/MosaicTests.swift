import Foundation
import Testing

/// The OpenGL path through the `mosaic` example: four players drawn by Mesa's OpenGL into one
/// SDL window under Xvfb (checked with a real X screenshot), and offscreen with EGL.
@Suite("OpenGL mosaic", .timeLimit(.minutes(4)))
struct MosaicTests {
    /// The colour each tile's clip mostly has, in quadrant order (tile-1 top left ... tile-4 bottom right).
    static let tileColors: [(red: Int, green: Int, blue: Int)] = [(255, 0, 0), (0, 255, 0), (0, 0, 255), (255, 255, 0)]

    static func matches(_ color: (red: Int, green: Int, blue: Int), _ expected: (red: Int, green: Int, blue: Int)) -> Bool {
        abs(color.red - expected.red) < 40 && abs(color.green - expected.green) < 40 && abs(color.blue - expected.blue) < 40
    }

    @Test("a screenshot of the mosaic window under Xvfb shows each player's own clip in its quadrant")
    func windowScreenshot() async throws {
        let display = try await VirtualDisplay.start(size: "1024x768")
        defer { display.stop() }
        let (process, output) = try ChildProcess.start(
            ChildProcess.example("playerkit-mosaic"), ["--json", "--seconds", "120", "--size", "640x480"], environment: display.environment)
        defer { if process.isRunning { kill(process.processIdentifier, SIGKILL) } }
        let reader = JSONLineReader(output)
        // Wait until each of the four players has shown its first frame and played on a little.
        var started: Set<String> = []
        var playedOn: Set<String> = []
        while playedOn.count < 4, let line = await reader.next() {
            guard let player = line["player"] as? String else { continue }
            if line["event"] as? String == "firstFrame" { started.insert(player) }
            if line["event"] as? String == "positionChanged", started.contains(player), (line["position"] as? Double ?? 0) >= 0.5 {
                playedOn.insert(player)
            }
        }
        #expect(playedOn == ["tile-1", "tile-2", "tile-3", "tile-4"])

        // A real screenshot of the X server's screen; the window sits at the top-left corner.
        // (Taken again, up to ten times, while the grid is not drawn yet on a busy machine.)
        let shot = FileManager.default.temporaryDirectory.appendingPathComponent("mosaic-\(UUID().uuidString).xwd")
        defer { try? FileManager.default.removeItem(at: shot) }
        var colors: [(red: Int, green: Int, blue: Int)] = []
        for _ in 0..<10 {
            try await display.runAsync("xwd", ["-root", "-silent", "-out", shot.path])
            let image = try await XWDImage.read(shot)
            // The lower middle of each 320x240 quadrant, below the moving box.
            colors = (0..<4).map { index in
                image.averageColor(x: (index % 2) * 320 + 80, y: (index / 2) * 240 + 140, width: 160, height: 60)
            }
            if zip(colors, Self.tileColors).allSatisfy({ Self.matches($0, $1) }) { break }
            try await Task.sleep(for: .milliseconds(200))
        }
        for (index, expected) in Self.tileColors.enumerated() {
            #expect(Self.matches(colors[index], expected), "quadrant \(index): \(colors[index]), expected \(expected)")
        }
        // Checked: SIGTERM ends it, and it shuts its players down and exits cleanly (--seconds is
        // only a backstop: a short one could close the window before a busy machine's screenshot).
        process.terminate()
        await reader.drain()
        await ChildProcess.waitForExit(process)
        #expect(process.terminationStatus == 0)
    }

    @Test("mosaic --headless renders the grid offscreen (no display), every event carries its player's ID")
    func headless() async throws {
        var environment = ProcessInfo.processInfo.environment
        environment.removeValue(forKey: "DISPLAY")
        environment.removeValue(forKey: "WAYLAND_DISPLAY")
        let (status, output, errors) = try await ChildProcess.runToEnd(
            ChildProcess.example("playerkit-mosaic"), ["--headless", "--json", "--seconds", "3"], environment: environment)
        #expect(status == 0, "exit status \(status): \(errors.suffix(2000))")
        let lines = try exampleJSONLines(output)
        let summaries = lines.filter { $0["event"] as? String == "tileSummary" }
        try #require(summaries.count == 4)
        for summary in summaries {
            let index = try #require(summary["index"] as? Int)
            #expect(summary["player"] as? String == "tile-\(index + 1)")
            // New frames drawn (few on a machine busy with the rest of the suite, but some).
            #expect((summary["count"] as? Int ?? 0) >= 3, "new frames drawn: \(summary)")
            let hex = try #require(summary["value"] as? String)
            let value = Int(hex.dropFirst(), radix: 16) ?? -1
            let color = (red: (value >> 16) & 255, green: (value >> 8) & 255, blue: value & 255)
            #expect(Self.matches(color, Self.tileColors[index]), "quadrant \(index): \(hex)")
        }
        // The bus printed each player's events by ID, from creation to shutdown.
        for index in 1...4 {
            let events = lines.filter { $0["player"] as? String == "tile-\(index)" }.compactMap { $0["event"] as? String }
            #expect(events.first == "created" && events.last == "shutDown" && events.contains("firstFrame"), "tile-\(index): \(events)")
        }
    }
}

/// An X window dump (`xwd` output, format version 7) of a TrueColor screen.
/// A screenshot in xwd's format, decoded once into 8-bit red, green and blue per pixel.
///
/// Decoded at init in one pass over raw bytes: reading pixels through `Data`'s subscript in a
/// debug build made every scan of a screen take seconds on a test thread of Swift's cooperative
/// pool (two threads on 2 cores), stalling every other test's tasks meanwhile (2026-11-28).
struct XWDImage: Sendable {
    let width: Int, height: Int
    /// Red, green and blue of each pixel, row by row.
    private let rgb: [UInt8]

    enum XWDError: Error { case unreadable(String) }

    init(contentsOf url: URL) throws {
        let data = try Data(contentsOf: url)
        guard data.count >= 100 else { throw XWDError.unreadable("\(data.count) bytes") }
        let header = (0..<25).map { index in
            data[(index * 4)..<(index * 4 + 4)].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        }
        guard header[1] == 7, header[13] == 4 || header[13] == 5 else {
            throw XWDError.unreadable("version \(header[1]), visual class \(header[13])")
        }
        let width = Int(header[4]), height = Int(header[5])
        let littleEndian = header[7] == 0
        // xwd reports 24 bits per pixel for a depth-24 screen whose rows it stores 3 bytes a pixel.
        let bytesPerPixel = Int(header[11]) / 8
        let bytesPerLine = Int(header[12])
        let masks = [header[14], header[15], header[16]]
        let pixelsOffset = Int(header[0]) + Int(header[19]) * 12
        guard bytesPerPixel >= 1, bytesPerPixel <= 4, data.count >= pixelsOffset + bytesPerLine * height else {
            throw XWDError.unreadable("short pixel data")
        }
        let shifts = masks.map { UInt32($0.trailingZeroBitCount) }
        var rgb = [UInt8](repeating: 0, count: width * height * 3)
        data.withUnsafeBytes { (raw: UnsafeRawBufferPointer) in
            rgb.withUnsafeMutableBufferPointer { out in
                for y in 0..<height {
                    let row = pixelsOffset + y * bytesPerLine
                    for x in 0..<width {
                        let offset = row + x * bytesPerPixel
                        var value: UInt32 = 0
                        for byte in 0..<bytesPerPixel {
                            let shift = littleEndian ? byte * 8 : (bytesPerPixel - 1 - byte) * 8
                            value |= UInt32(raw[offset + byte]) << UInt32(shift)
                        }
                        let index = (y * width + x) * 3
                        out[index] = UInt8(truncatingIfNeeded: (value & masks[0]) >> shifts[0])
                        out[index + 1] = UInt8(truncatingIfNeeded: (value & masks[1]) >> shifts[1])
                        out[index + 2] = UInt8(truncatingIfNeeded: (value & masks[2]) >> shifts[2])
                    }
                }
            }
        }
        self.width = width
        self.height = height
        self.rgb = rgb
    }

    /// Reads and decodes `url` on a thread of its own, off Swift's cooperative pool.
    static func read(_ url: URL) async throws -> XWDImage {
        try await offPool { try XWDImage(contentsOf: url) }
    }

    func color(x: Int, y: Int) -> (red: Int, green: Int, blue: Int) {
        let index = (y * width + x) * 3
        return (Int(rgb[index]), Int(rgb[index + 1]), Int(rgb[index + 2]))
    }

    func averageColor(x: Int, y: Int, width: Int, height: Int) -> (red: Int, green: Int, blue: Int) {
        var sums = (0, 0, 0)
        for row in y..<(y + height) {
            for column in x..<(x + width) {
                let pixel = color(x: column, y: row)
                sums.0 += pixel.red
                sums.1 += pixel.green
                sums.2 += pixel.blue
            }
        }
        let count = width * height
        return (sums.0 / count, sums.1 / count, sums.2 / count)
    }
}
