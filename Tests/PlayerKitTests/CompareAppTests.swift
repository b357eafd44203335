import Foundation
import PlayerKitSupport
import Testing

/// The GTK 4 app `playerkit-compare` under Xvfb with Mesa's OpenGL: both players drawn into
/// the app's own `GtkGLArea`, checked in real screenshots of the X server. The clips'
/// top halves are red (A) and blue (B); their bottom halves show the frame number in binary
/// (eight blocks, least significant bit on the left, white = 1), so a screenshot says which
/// clip each pane shows and which frame.
@Suite("GTK 4 compare app", .timeLimit(.minutes(2)))
struct CompareAppTests {
    @Test("both panes show their clips, frame steps land both on the same burned-in frame, a clean quit")
    func panesAndFrameSteps() async throws {
        let app = try await CompareApp.start()
        defer { app.stop() }
        #expect(app.backend == "GdkX11Display")

        // Paused on the first frames: A red on the left, B blue on the right, both frame 0.
        var panes = try await app.panes { $0.a?.frame == 0 && $0.b?.frame == 0 }
        #expect(panes.a?.frame == 0 && panes.b?.frame == 0, "\(panes)")
        if let a = panes.a, let b = panes.b { #expect(a.box.maxX < b.box.minX, "A is left of B: \(panes)") }

        // Three steps forward, then one back; then a frame seek.
        for expected in [1, 2, 3] {
            let reply = try await app.send("step")
            #expect(reply["event"] as? String == "done", "\(reply)")
            #expect(reply["frames"] as? [String: Int] == ["left": expected, "right": expected], "\(reply)")
        }
        panes = try await app.panes { $0.a?.frame == 3 && $0.b?.frame == 3 }
        #expect(panes.a?.frame == 3 && panes.b?.frame == 3, "after three steps: \(panes)")
        let back = try await app.send("back")
        #expect(back["frames"] as? [String: Int] == ["left": 2, "right": 2], "\(back)")
        panes = try await app.panes { $0.a?.frame == 2 && $0.b?.frame == 2 }
        #expect(panes.a?.frame == 2 && panes.b?.frame == 2, "after a step back: \(panes)")
        let seek = try await app.send("frame 45")
        #expect(seek["frames"] as? [String: Int] == ["left": 45, "right": 45], "\(seek)")
        panes = try await app.panes { $0.a?.frame == 45 && $0.b?.frame == 45 }
        #expect(panes.a?.frame == 45 && panes.b?.frame == 45, "after frame 45: \(panes)")

        // A bad command is refused by name; the app goes on.
        let bad = try await app.send("frame -3")
        #expect(bad["event"] as? String == "failed")
        #expect((bad["error"] as? String)?.contains("-3") == true, "\(bad)")
        #expect(try await app.send("status")["event"] as? String == "done")

        // --json prints each player's statistics once a second (issue 68): frames shown by the
        // steps and the seek, the decoder.
        _ = try await app.status { _ in
            app.statistics.withLock { $0.keys.sorted() == ["left", "right"] && $0.values.allSatisfy { $0.framesRendered >= 3 } }
        }
        let seen = app.statistics.withLock { $0 }
        #expect(seen.keys.sorted() == ["left", "right"], "\(seen)")
        for (player, statistics) in seen {
            #expect(statistics.framesRendered >= 3 && statistics.hasDecoder, "\(player): \(statistics.text)")
        }

        let end = try await app.quit()
        #expect(end.status == 0)
        #expect(end.livePlayers == [], "players left at the end: \(String(describing: end.livePlayers))")
        #expect(end.shutDowns == ["left", "right"])
    }

    @Test("--mpris: both players on the session bus by ID; the desktop's Play and Pause move the pair (the app's policy), media keys follow the clicked pane, Quit ends the app cleanly")
    func onTheDesktop() async throws {
        let bus = try await SessionBus.start()
        defer { bus.stop() }
        // Looping: the 4 s clips would end (leaving no pair to pause) on a loaded machine.
        let app = try await CompareApp.start(arguments: ["--mpris", "--loop"], environment: ["DBUS_SESSION_BUS_ADDRESS": bus.address])
        defer { app.stop() }
        let left = "org.mpris.MediaPlayer2.playerkit_compare.instance_left", right = "org.mpris.MediaPlayer2.playerkit_compare.instance_right"
        let names = try await bus.waitForNames { [left, right, "org.mpris.MediaPlayer2.playerkit_compare"].allSatisfy($0.contains) }
        #expect([left, right, "org.mpris.MediaPlayer2.playerkit_compare"].allSatisfy(names.contains), "\(names)")

        // Play on B's entry: the app plays the group, so both play.
        _ = try await bus.playerctl(["--player=playerkit_compare.instance_right", "play"])
        func state(_ player: String, _ state: String) -> @Sendable ([String: Any]) -> Bool {
            { $0["event"] as? String == "stateChanged" && $0["player"] as? String == player && $0["state"] as? String == state }
        }
        #expect(await app.lines([state("left", "playing"), state("right", "playing")]))
        #expect(try await bus.playerctl(["--player=playerkit_compare.instance_left", "status"]) == "Playing")

        // The media keys are A's (the app's own name); after `keys b` they are B's. Either way
        // the pair pauses, and the request reaches the pane that has them.
        let keys = try await app.send("keys b")
        #expect(keys["event"] as? String == "done", "\(keys)")
        let pause = try await bus.run("gdbus", ["call", "--session", "--dest", "org.mpris.MediaPlayer2.playerkit_compare",
                                                "--object-path", "/org/mpris/MediaPlayer2", "--method", "org.mpris.MediaPlayer2.Player.Pause"])
        #expect(pause.status == 0, "\(pause.errors)")
        #expect(await app.lines([
            state("left", "paused"), state("right", "paused"),
            { $0["event"] as? String == "mprisRequest" && $0["player"] as? String == "right" },
        ]))

        // Quit from the desktop: the app ends, no player left.
        let quit = try await bus.run("gdbus", ["call", "--session", "--dest", left, "--object-path", "/org/mpris/MediaPlayer2",
                                               "--method", "org.mpris.MediaPlayer2.Quit"])
        #expect(quit.status == 0, "\(quit.errors)")
        let end = try await app.quit(sending: nil)
        #expect(end.status == 0)
        #expect(end.livePlayers == [], "players left at the end: \(String(describing: end.livePlayers))")
        let after = try await bus.waitForNames { !$0.contains(left) && !$0.contains(right) }
        #expect(!after.contains(left) && !after.contains(right), "\(after)")
    }

    @Test("the wipe puts its divider where asked, the difference is black where the frames agree, one pane fullscreen at a time, a file opened in one pane")
    func wipeDifferenceFullscreen() async throws {
        let app = try await CompareApp.start()
        defer { app.stop() }
        _ = try await app.panes { $0.a != nil && $0.b != nil }

        // The wipe: one picture, A left of the divider, B right of it.
        _ = try await app.send("mode wipe")
        for divider in [0.3, 0.7] {
            let reply = try await app.send("wipe \(divider)")
            let areaWidth = (reply["area"] as? [Int])?.first ?? 0
            let wipe = try await app.picture { Self.wipePosition($0, areaWidth: areaWidth).map { abs($0 - divider) < 0.02 } ?? false }
            let measured = Self.wipePosition(wipe, areaWidth: areaWidth)
            #expect(measured.map { abs($0 - divider) < 0.02 } == true, "divider at \(String(describing: measured)), asked \(divider)")
        }

        // The difference of A and B on the same frame: |red - blue| on top, black below.
        _ = try await app.send("frame 20")
        _ = try await app.send("mode difference")
        let difference = try await app.picture { Self.differenceIsRight($0) }
        #expect(Self.differenceIsRight(difference), "the difference picture: \(Self.colorSummary(difference))")

        // One fullscreen owner through the policy: A alone, then B alone, then both again.
        _ = try await app.send("mode side")
        let first = try await app.send("fullscreen a")
        #expect(first["owner"] as? String == "left" && first["fullscreen"] as? Bool == true, "\(first)")
        var shot = try await app.picture { $0.box(where: Pixel.isBlue) == nil && $0.box(where: Pixel.isRed) != nil }
        #expect(shot.box(where: Pixel.isBlue) == nil && shot.box(where: Pixel.isRed) != nil, "A alone: \(Self.colorSummary(shot))")
        let second = try await app.send("fullscreen b")
        #expect(second["owner"] as? String == "right" && second["fullscreen"] as? Bool == true, "\(second)")
        shot = try await app.picture { $0.box(where: Pixel.isRed) == nil && $0.box(where: Pixel.isBlue) != nil }
        #expect(shot.box(where: Pixel.isRed) == nil && shot.box(where: Pixel.isBlue) != nil, "B alone: \(Self.colorSummary(shot))")
        let off = try await app.send("fullscreen off")
        #expect(off["fullscreen"] as? Bool == false, "\(off)")
        shot = try await app.picture { $0.box(where: Pixel.isRed) != nil && $0.box(where: Pixel.isBlue) != nil }
        #expect(shot.box(where: Pixel.isRed) != nil && shot.box(where: Pixel.isBlue) != nil)

        // Opening a file in one pane (what a file dropped on it does): B shows clip A too.
        let open = try await app.send("open b \(Fixtures.media("compare-a.mp4"))")
        #expect(open["event"] as? String == "done", "\(open)")
        shot = try await app.picture { $0.box(where: Pixel.isBlue) == nil && Panes($0).a != nil }
        #expect(shot.box(where: Pixel.isBlue) == nil, "B still shows blue: \(Self.colorSummary(shot))")
        if let red = shot.box(where: Pixel.isRed) { #expect(red.maxX - red.minX > 600, "red in both panes: \(red)") }

        let end = try await app.quit()
        #expect(end.status == 0)
        #expect(end.livePlayers == [])
    }

    @Test("by the numbers: B, cut 0.5 s into A's recording, is aligned by sound and by picture (both panes then show one burned-in frame), its offset set by hand; the SSIM graph is drawn under the transport, a real click on it puts both players on that pair, and the worst-frame button on the frames B's encode spoiled")
    func alignMeasureGraph() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("pk-compare-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let (a, b) = try Self.recordings(in: folder)
        let app = try await CompareApp.start(files: [a.path, b.path])
        defer { app.stop() }

        // Aligned by sound: B plays each moment 0.5 s earlier; then A's frame 60 and B's frame 45
        // show the same burned-in number.
        let bySound = try await app.send("align sound")
        #expect(bySound["event"] as? String == "done", "\(bySound)")
        #expect(((bySound["offset"] as? Double).map { abs($0 + 0.5) < 0.002 }) == true, "\(bySound)")
        let sixty = try await app.send("frame 60")
        #expect(sixty["frames"] as? [String: Int] == ["left": 60, "right": 45], "\(sixty)")
        var panes = try await app.panes { $0.a?.frame == 60 && $0.b?.frame == 60 }
        #expect(panes.a?.frame == 60 && panes.b?.frame == 60, "aligned: \(panes)")

        // By hand, then by picture.
        let byHand = try await app.send("offset 0")
        #expect((byHand["offset"] as? Double) == 0, "\(byHand)")
        panes = try await app.panes { $0.a?.frame == 60 && $0.b?.frame == 75 }
        #expect(panes.a?.frame == 60 && panes.b?.frame == 75, "offset 0: \(panes)")
        let byPicture = try await app.send("align picture")
        #expect(((byPicture["offset"] as? Double).map { abs($0 + 0.5) < 0.034 }) == true, "\(byPicture)")
        panes = try await app.panes { $0.a?.frame == $0.b?.frame && $0.a != nil }
        #expect(panes.a != nil && panes.a?.frame == panes.b?.frame, "aligned by picture: \(panes)")

        // Measured: every B frame paired, the graph drawn in green below the pictures (at a
        // frame B's encode did not spoil: its noise has green in it).
        _ = try await app.send("frame 100")
        let measured = try await app.send("measure")
        #expect(measured["event"] as? String == "done", "\(measured)")
        #expect((measured["pairs"] as? Int ?? 0) >= 160 && (measured["graphColumns"] as? Int ?? 0) > 100, "\(measured)")
        let graph = try await app.picture { $0.box(where: Self.isGraphLine) != nil }
        let line = try #require(graph.box(where: Self.isGraphLine), "no SSIM line: \(Self.colorSummary(graph))")
        if let red = graph.box(where: Pixel.isRed) { #expect(line.minY > red.maxY, "the graph \(line) is below the pictures \(red)") }

        // The worst pair: B's spoiled frames 45 to 47 (A's 60 to 62).
        let worst = try await app.send("worst")
        let worstA = (worst["frames"] as? [String: Int])?["left"] ?? -1
        #expect((60...62).contains(worstA), "\(worst)")

        // A real click on the graph, where A's time is 3 s: both players on that pair (A's frame 90).
        let first = 0.5, last = 5.5 + 0.5 - 1.0 / 30         // the pairs' reference times
        let x = Double(line.minX) + (3 - first) / (last - first) * Double(line.maxX - line.minX)
        try await app.click(x: Int(x.rounded()), y: (line.minY + line.maxY) / 2)
        let clicked = try await app.status { (($0["frames"] as? [String: Int])?["left"]).map { abs($0 - 90) <= 3 } == true }
        #expect(((clicked["frames"] as? [String: Int])?["left"]).map { abs($0 - 90) <= 3 } == true, "after a click at x \(x) on \(line): \(clicked)")

        let end = try await app.quit()
        #expect(end.status == 0)
        #expect(end.livePlayers == [])
    }

    static func isGraphLine(_ pixel: (red: Int, green: Int, blue: Int)) -> Bool { pixel.green > 150 && pixel.red < 130 && pixel.blue < 140 }

    /// Two recordings of one 6 s event at 30 fps, each with the frame number burned in below its
    /// colour (A red, B blue) and the event's sound (pink noise in bursts): B starts 0.5 s (15
    /// frames) in, so its frame k shows number k + 15, and its encode spoiled its frames 45 to 47.
    static func recordings(in folder: URL) throws -> (URL, URL) {
        let code = "255*mod(floor((N+SHIFT)/pow(2,floor(X/40))),2)"
        func make(_ name: String, colour: (Int, Int, Int), shift: Int, seconds: Double, extra: String, audioStart: Double) throws -> URL {
            let bits = code.replacingOccurrences(of: "SHIFT", with: "\(shift)")
            let output = folder.appendingPathComponent(name)
            let video = "color=c=black:s=320x240:r=30:d=\(seconds),format=rgb24,"
                + "geq=r='if(lt(Y,120),\(colour.0),\(bits))':g='if(lt(Y,120),\(colour.1),\(bits))':b='if(lt(Y,120),\(colour.2),\(bits))'\(extra)"
            let audio = "anoisesrc=d=6:c=pink:r=48000:a=0.4:seed=7,volume='if(lt(mod(t,1),0.6),1,0.15)':eval=frame,"
                + "atrim=start=\(audioStart),asetpts=PTS-STARTPTS"
            let (status, log) = try ChildProcess.run(URL(fileURLWithPath: "/usr/bin/ffmpeg"), [
                "-v", "error", "-y", "-f", "lavfi", "-i", video, "-f", "lavfi", "-i", audio,
                "-c:v", "libx264", "-preset", "veryfast", "-crf", "12", "-pix_fmt", "yuv420p", "-g", "30",
                "-c:a", "aac", "-b:a", "96k", "-shortest", output.path,
            ])
            try #require(status == 0, "ffmpeg: \(log)")
            return output
        }
        let a = try make("a.mp4", colour: (220, 40, 40), shift: 0, seconds: 6, extra: "", audioStart: 0)
        let b = try make("b.mp4", colour: (40, 60, 220), shift: 15, seconds: 5.5,
                         extra: ",noise=alls=100:allf=t:enable='between(n,45,47)'", audioStart: 0.5)
        return (a, b)
    }

    @Test("under a headless Wayland compositor (weston): GTK picks Wayland, both panes drawn, a frame seek lands both")
    func wayland() async throws {
        let app = try await CompareApp.start(wayland: true)
        defer { app.stop() }
        #expect(app.backend == "GdkWaylandDisplay")
        let seek = try await app.send("frame 5")
        #expect(seek["frames"] as? [String: Int] == ["left": 5, "right": 5], "\(seek)")
        // weston's desktop shell puts a panel on top and decorations around the window: the
        // panes are found by colour wherever they are.
        let panes = try await app.panes { $0.a?.frame == 5 && $0.b?.frame == 5 }
        #expect(panes.a?.frame == 5 && panes.b?.frame == 5, "\(panes)")
        if let a = panes.a, let b = panes.b { #expect(a.box.maxX < b.box.minX, "A is left of B: \(panes)") }
        let end = try await app.quit()
        #expect(end.status == 0)
        #expect(end.livePlayers == [])
    }

    @Test("the play button offers Play once both clips ended; with --loop the seek bar spans one pass and follows the time")
    func buttonAndSeekBar() async throws {
        let app = try await CompareApp.start()
        defer { app.stop() }
        _ = try await app.send("play")
        let ended = await app.lines([
            { $0["event"] as? String == "itemEnded" && $0["player"] as? String == "left" },
            { $0["event"] as? String == "itemEnded" && $0["player"] as? String == "right" },
        ])
        #expect(ended, "both clips should end")
        // The window applies the events on its main loop, a moment after they are printed.
        let status = try await app.status { $0["playButton"] as? String == "Play" }
        #expect(status["playButton"] as? String == "Play", "after both clips ended: \(status)")
        _ = try await app.quit()

        let looping = try await CompareApp.start(arguments: ["--loop"])
        defer { looping.stop() }
        _ = try await looping.send("seek 1.5")
        let seeked = try await looping.status { $0["timeLabel"] as? String == "1.500 s" }
        let bar = seeked["seekBar"] as? [Double] ?? []
        #expect(bar.count == 2 && abs(bar[0] - 1.5) < 0.05, "the bar after seek 1.5: \(seeked)")
        #expect(bar.count == 2 && abs(bar[1] - 4) < 0.1, "one pass of the 4 s clips: \(seeked)")
        #expect(seeked["timeLabel"] as? String == "1.500 s", "\(seeked)")
        _ = try await looping.quit()
    }

    @Test("alarms: both panes watched, the frozen and black stretches written into the clips raise and clear alarms on both players, and each pane's label shows its alarm while it lasts; a bad threshold is refused by name")
    func alarms() async throws {
        let faults = Fixtures.fixture("faults.mp4")
        let app = try await CompareApp.start(files: [faults, faults])
        defer { app.stop() }
        let bad = try await app.send("alarms 0")
        #expect(bad["event"] as? String == "failed" && (bad["error"] as? String)?.contains("0") == true, "\(bad)")
        #expect(try await app.send("alarms 0.5")["event"] as? String == "done")
        _ = try await app.send("play")
        func raised(_ player: String, _ kind: String) -> @Sendable ([String: Any]) -> Bool {
            { $0["event"] as? String == "alarmRaised" && $0["player"] as? String == player && ($0["alarm"] as? [String: Any])?["kind"] as? String == kind }
        }
        func cleared(_ player: String, _ kind: String, end: Double) -> @Sendable ([String: Any]) -> Bool {
            { line in
                guard line["event"] as? String == "alarmCleared", line["player"] as? String == player,
                      let alarm = line["alarm"] as? [String: Any], alarm["kind"] as? String == kind, let at = alarm["end"] as? Double else { return false }
                return abs(at - end) <= 0.05
            }
        }
        // Every line first: a status poll in between reads (and drops) the lines that come meanwhile.
        #expect(await app.lines([raised("left", "freeze"), raised("right", "freeze"),
                                 cleared("left", "freeze", end: 3), cleared("right", "freeze", end: 3),
                                 raised("left", "black"), raised("right", "black"),
                                 cleared("left", "black", end: 5.52), cleared("right", "black", end: 5.52)]))
        let after = try await app.status { ($0["paneLabels"] as? [String])?.allSatisfy { !$0.contains("⚠") } == true }
        #expect((after["paneLabels"] as? [String])?.allSatisfy { !$0.contains("⚠") } == true, "\(after)")
        let end = try await app.quit()
        #expect(end.status == 0)
    }

    @Test("on screen: the i key adds a line of figures to each pane's label and takes it away again, and an alarm adds one while it lasts, in screenshots of the window")
    func figuresAndAlarmsOnScreen() async throws {
        let faults = Fixtures.fixture("faults.mp4")
        let app = try await CompareApp.start(files: [faults, faults])
        defer { app.stop() }
        // Pane A's label, one line: the ID, state, position and frame.
        let plain = try await app.picture { Self.labelHeight($0) != nil }
        let line = try #require(Self.labelHeight(plain), "no label in the header of \(plain)")
        // A real key press (XTEST): the figures come with the next sample, within a second.
        try await app.key("i")
        let figures = try await app.picture { (Self.labelHeight($0) ?? 0) >= line * 16 / 10 }
        #expect((Self.labelHeight(figures) ?? 0) >= line * 16 / 10, "one line is \(line) px; with the figures \(String(describing: Self.labelHeight(figures)))")
        try await app.key("i")
        let again = try await app.picture { (Self.labelHeight($0) ?? .max) <= line * 12 / 10 }
        #expect((Self.labelHeight(again) ?? .max) <= line * 12 / 10, "after the second i: \(String(describing: Self.labelHeight(again))) px")
        // An alarm: the players are paused while it lasts (the frozen stretch is 2 s), for the
        // screenshot to find it there whatever the machine's load.
        #expect(try await app.send("alarms 0.5")["event"] as? String == "done")
        _ = try await app.send("play")
        let raised: @Sendable ([String: Any]) -> Bool = {
            $0["event"] as? String == "alarmRaised" && $0["player"] as? String == "left" && ($0["alarm"] as? [String: Any])?["kind"] as? String == "freeze"
        }
        #expect(await app.lines([raised]))
        _ = try await app.send("pause")
        let labels = try await app.status { ($0["paneLabels"] as? [String])?.first?.contains("⚠") == true }
        #expect((labels["paneLabels"] as? [String])?.first?.contains("⚠ freeze") == true, "paused while the freeze lasts: \(labels)")
        let alarmed = try await app.picture { (Self.labelHeight($0) ?? 0) >= line * 16 / 10 }
        #expect((Self.labelHeight(alarmed) ?? 0) >= line * 16 / 10, "with the alarm: \(String(describing: Self.labelHeight(alarmed))) px")
        // Played to the end: every alarm cleared, one line again.
        _ = try await app.send("play")
        #expect(await app.lines([{ $0["event"] as? String == "itemEnded" && $0["player"] as? String == "left" }]))
        let cleared = try await app.picture { (Self.labelHeight($0) ?? .max) <= line * 12 / 10 }
        #expect((Self.labelHeight(cleared) ?? .max) <= line * 12 / 10, "at the end: \(String(describing: Self.labelHeight(cleared))) px")
        _ = try await app.quit()
    }

    /// The height in pixels of pane A's label text in the header row above the picture: from
    /// the first to the last row with dark (text) pixels, among the rows that are mostly (60%)
    /// the window's light background, in the pane's left part (its Fullscreen button is on the right).
    static func labelHeight(_ screen: Screen) -> Int? {
        let columns = Array(stride(from: 4, to: min(screen.width / 2 - 140, 360), by: 1))
        guard !columns.isEmpty else { return nil }
        var first: Int?, last: Int?
        for y in 0..<min(screen.height, 200) {
            var light = 0, dark = 0
            for x in columns {
                let pixel = screen.image.color(x: x, y: y)
                let level = (pixel.red + pixel.green + pixel.blue) / 3
                if level > 200 { light += 1 } else if level < 110 { dark += 1 }
            }
            if light < columns.count * 6 / 10 { break }  // the picture begins (text is thin)
            if dark > 0 {
                first = first ?? y
                last = y
            }
        }
        guard let first, let last else { return nil }
        return last - first + 1
    }

    @Test("SIGTERM closes the window: the players shut down, none is left, exit status 0")
    func terminated() async throws {
        let app = try await CompareApp.start()
        defer { app.stop() }
        _ = try await app.send("play")
        app.process.terminate()  // SIGTERM
        let end = try await app.quit(sending: nil)
        #expect(end.status == 0)
        #expect(end.livePlayers == [])
        #expect(end.shutDowns == ["left", "right"])
    }

    /// Where the wipe's divider is, as a fraction of the picture area's width (the area spans the
    /// window, whose left edge is the screen's): the yellow line's column. Nil unless A's red is
    /// left of the line and B's blue right of it.
    static func wipePosition(_ image: Screen, areaWidth: Int) -> Double? {
        guard let line = image.box(where: { $0.red > 200 && $0.green > 200 && $0.blue < 80 }),
              let red = image.box(where: Pixel.isRed), let blue = image.box(where: Pixel.isBlue),
              red.maxX <= line.minX + 2, blue.minX >= line.maxX - 2, areaWidth > 0 else { return nil }
        return Double(line.minX + line.maxX) / 2 / Double(areaWidth)
    }

    /// The difference of the two clips on one frame: the top half |A - B| = (180, 20, 180), the
    /// bottom half (the same frame number on both) black.
    static func differenceIsRight(_ image: Screen) -> Bool {
        guard let top = image.box(where: { $0.red > 140 && $0.green < 60 && $0.blue > 140 }) else { return false }
        let height = top.maxY + 1 - top.minY
        let below = image.averageColor(x: top.minX + 4, y: top.maxY + height / 4, width: top.maxX - top.minX - 8, height: height / 2)
        return below.red < 24 && below.green < 24 && below.blue < 24 && image.box(where: Pixel.isRed) == nil
    }

    static func colorSummary(_ image: Screen) -> String {
        "red \(String(describing: image.box(where: Pixel.isRed))), blue \(String(describing: image.box(where: Pixel.isBlue)))"
    }
}

/// Colour tests for the clips' pixels (x264 and scaling blur edges a little).
enum Pixel {
    static func isRed(_ pixel: (red: Int, green: Int, blue: Int)) -> Bool { pixel.red > 150 && pixel.green < 90 && pixel.blue < 90 }
    static func isBlue(_ pixel: (red: Int, green: Int, blue: Int)) -> Bool { pixel.blue > 150 && pixel.red < 100 && pixel.green < 120 }
}

/// A screenshot of the X server's screen; the app's window sits at its top-left corner (Xvfb has no
/// window manager to place it elsewhere).
struct Screen: CustomStringConvertible {
    let image: XWDImage
    let width: Int, height: Int

    struct Box: CustomStringConvertible {
        var minX: Int, minY: Int, maxX: Int, maxY: Int
        var description: String { "(\(minX),\(minY))-(\(maxX),\(maxY))" }
    }

    /// The smallest box around the pixels `match` accepts (scanned every second pixel), when
    /// there are more than a few.
    func box(where match: ((red: Int, green: Int, blue: Int)) -> Bool) -> Box? {
        var box: Box?
        var count = 0
        for y in stride(from: 0, to: height, by: 2) {
            for x in stride(from: 0, to: width, by: 2) where match(image.color(x: x, y: y)) {
                count += 1
                if var found = box {
                    found.minX = min(found.minX, x); found.maxX = max(found.maxX, x)
                    found.minY = min(found.minY, y); found.maxY = max(found.maxY, y)
                    box = found
                } else {
                    box = Box(minX: x, minY: y, maxX: x, maxY: y)
                }
            }
        }
        return count > 20 ? box : nil
    }

    func averageColor(x: Int, y: Int, width: Int, height: Int) -> (red: Int, green: Int, blue: Int) {
        image.averageColor(x: x, y: y, width: max(width, 1), height: max(height, 1))
    }

    /// The frame number a clip shows, read from its bottom half: the clip's top half is `top`
    /// (its width is the video's), the bits are eight blocks across the middle of the bottom half.
    func frameNumber(below top: Box) -> Int {
        let width = Double(top.maxX + 2 - top.minX)
        let height = top.maxY + 2 - top.minY
        let y = top.maxY + height / 2
        var number = 0
        for bit in 0..<8 {
            let x = top.minX + Int((Double(bit) + 0.5) * width / 8)
            let pixel = image.averageColor(x: x - 3, y: y - 3, width: 6, height: 6)
            if pixel.red > 128 && pixel.green > 128 && pixel.blue > 128 { number |= 1 << bit }
        }
        return number
    }

    var description: String { "screen \(width)x\(height)" }
}

/// What a side-by-side screenshot shows: each pane's place and frame number.
struct Panes: CustomStringConvertible {
    struct Pane { var box: Screen.Box; var frame: Int }
    var a: Pane?
    var b: Pane?

    init(_ screen: Screen) {
        a = screen.box(where: Pixel.isRed).map { Pane(box: $0, frame: screen.frameNumber(below: $0)) }
        b = screen.box(where: Pixel.isBlue).map { Pane(box: $0, frame: screen.frameNumber(below: $0)) }
    }

    var description: String {
        "A: \(a.map { "frame \($0.frame) at \($0.box)" } ?? "not found"), B: \(b.map { "frame \($0.frame) at \($0.box)" } ?? "not found")"
    }
}

/// Where the app's window is shown: an X server (Xvfb) or a Wayland compositor (weston).
enum DisplayServer: Sendable {
    case x11(VirtualDisplay)
    case wayland(HeadlessWayland)

    static func start(wayland: Bool) async throws -> DisplayServer {
        wayland ? .wayland(try await HeadlessWayland.start()) : .x11(try await VirtualDisplay.start(size: "1024x600"))
    }

    var environment: [String: String] {
        switch self {
        case .x11(let display):
            var environment = display.environment
            environment["GDK_BACKEND"] = "x11"
            return Self.withoutAccessibilityBus(environment)
        case .wayland(let compositor): return Self.withoutAccessibilityBus(compositor.environment)
        }
    }

    /// GTK starts the desktop's accessibility bus (at-spi-bus-launcher, a dbus-daemon and a
    /// registry daemon) when it finds a session bus, and those outlive the app: a test run must
    /// not leave them behind.
    private static func withoutAccessibilityBus(_ environment: [String: String]) -> [String: String] {
        var environment = environment
        environment["NO_AT_BRIDGE"] = "1"
        environment["GTK_A11Y"] = "none"
        return environment
    }

    func screenshot() async throws -> XWDImage {
        switch self {
        case .x11(let display):
            let file = FileManager.default.temporaryDirectory.appendingPathComponent("compare-\(UUID().uuidString).xwd")
            defer { try? FileManager.default.removeItem(at: file) }
            try await display.runAsync("xwd", ["-root", "-silent", "-out", file.path])
            return try await XWDImage.read(file)
        case .wayland(let compositor):
            return try await compositor.screenshot()
        }
    }

    func stop() {
        switch self {
        case .x11(let display): display.stop()
        case .wayland(let compositor): compositor.stop()
        }
    }
}

/// A running `playerkit-compare --remote --json` on a display server of its own.
final class CompareApp: Sendable {
    let display: DisplayServer
    let process: Process
    let input: FileHandle
    let reader: JSONLineReader
    /// GDK's display type, from the app's `ready` line.
    let backend: String?
    private let shutDowns = Locked<[String]>([])
    /// The players' latest `statisticsUpdated` figures seen (`--json` samples them once a second).
    let statistics = Locked<[String: SeenStatistics]>([:])

    /// What a `statisticsUpdated` line said of a player.
    struct SeenStatistics: Sendable {
        var framesRendered: Int
        var hasDecoder: Bool
        var text: String
    }

    private init(display: DisplayServer, process: Process, input: FileHandle, reader: JSONLineReader, backend: String?) {
        self.display = display
        self.process = process
        self.input = input
        self.reader = reader
        self.backend = backend
    }

    /// Starts Xvfb (or weston) and the app on the shipped compare clips, paused on their first
    /// frames, and waits for its `ready` line.
    static func start(wayland: Bool = false, arguments: [String] = [], environment extra: [String: String] = [:],
                      files: [String] = [Fixtures.media("compare-a.mp4"), Fixtures.media("compare-b.mp4")]) async throws -> CompareApp {
        let display = try await DisplayServer.start(wayland: wayland)
        let environment = display.environment.merging(extra) { $1 }
        let child = try ChildProcess.startInteractive(
            ChildProcess.example("playerkit-compare"),
            ["--json", "--remote", "--paused", "--size", "800x500"] + arguments + files,
            environment: environment)
        let reader = JSONLineReader(child.output)
        var ready = false
        var backend: String?
        while let line = await reader.next() {
            if line["event"] as? String == "ready" {
                ready = true
                backend = line["backend"] as? String
                break
            }
        }
        let app = CompareApp(display: display, process: child.process, input: child.input, reader: reader, backend: backend)
        guard ready else {
            app.stop()
            throw CompareAppError.notReady
        }
        return app
    }

    /// A real click of the pointer's first button at (`x`, `y`) on the X server's screen
    /// (xdotool, through XTEST).
    func click(x: Int, y: Int) async throws {
        guard case .x11(let display) = display else { throw CompareAppError.notReady }
        _ = try await display.runAsync("xdotool", ["mousemove", "\(x)", "\(y)", "click", "1"])
    }

    /// A real press of `key` (an X keysym name) on the window (xdotool, through XTEST; the
    /// pointer is moved over the window first: with no window manager, it has the focus then).
    func key(_ key: String) async throws {
        guard case .x11(let display) = display else { throw CompareAppError.notReady }
        _ = try await display.runAsync("xdotool", ["mousemove", "400", "250", "key", key])
    }

    /// Sends one command and returns the app's answer to it (`done` or `failed`).
    func send(_ command: String) async throws -> [String: Any] {
        input.write(Data((command + "\n").utf8))
        while let line = await reader.next() {
            if line["event"] as? String == "shutDown", let player = line["player"] as? String { shutDowns.withLock { $0.append(player) } }
            if line["event"] as? String == "statisticsUpdated", let player = line["player"] as? String,
               let figures = line["statistics"] as? [String: Any] {
                let seen = SeenStatistics(framesRendered: figures["framesRendered"] as? Int ?? 0,
                                          hasDecoder: figures["videoDecoder"] != nil, text: "\(figures)")
                statistics.withLock { $0[player] = seen }
            }
            if ["done", "failed"].contains(line["event"] as? String ?? ""), line["command"] as? String == command { return line }
        }
        throw CompareAppError.ended(command)
    }

    /// Asks for `status` until its answer satisfies `accept` (at most 50 times, 0.1 s apart: the
    /// window applies events on its main loop, a moment after they happen); returns the last.
    func status(until accept: ([String: Any]) -> Bool) async throws -> [String: Any] {
        var answer: [String: Any] = [:]
        for _ in 0..<50 {
            answer = try await send("status")
            if accept(answer) { break }
            try await Task.sleep(for: .milliseconds(100))
        }
        return answer
    }

    /// Reads the app's lines until `condition` has held of some line, for each condition (in any
    /// order); returns whether all did before the output ended. (The app's lines come as its
    /// events happen; the caller's time limit bounds the wait.)
    func lines(_ conditions: [@Sendable ([String: Any]) -> Bool]) async -> Bool {
        var pending = conditions
        while !pending.isEmpty, let line = await reader.next() {
            if line["event"] as? String == "shutDown", let player = line["player"] as? String { shutDowns.withLock { $0.append(player) } }
            pending.removeAll { $0(line) }
        }
        return pending.isEmpty
    }

    /// Screenshots of the window's region until `accept` takes one (at most 25, 0.2 s apart:
    /// GTK draws the area at its next frame, and a loaded machine is slow); returns the last.
    func picture(_ accept: (Screen) -> Bool) async throws -> Screen {
        var screen: Screen?
        for _ in 0..<25 {
            let image = try await display.screenshot()
            screen = Screen(image: image, width: image.width, height: image.height)
            if accept(screen!) { break }
            try await Task.sleep(for: .milliseconds(200))
        }
        return screen!
    }

    /// ``picture(_:)`` read as two panes side by side.
    func panes(_ accept: (Panes) -> Bool) async throws -> Panes {
        Panes(try await picture { accept(Panes($0)) })
    }

    /// Sends `quit` (or nothing, when the app was told another way), reads to the end of the output and waits for the exit: the status, the
    /// app's last report and which players reported their shutdown.
    func quit(sending command: String? = "quit") async throws -> (status: Int32, livePlayers: [String]?, shutDowns: [String]) {
        if let command { input.write(Data((command + "\n").utf8)) }
        var last: [String]?
        while let line = await reader.next() {
            if line["event"] as? String == "shutDown", let player = line["player"] as? String { shutDowns.withLock { $0.append(player) } }
            if line["event"] as? String == "quit" { last = line["livePlayers"] as? [String] }
        }
        await ChildProcess.waitForExit(process)
        return (process.terminationStatus, last, shutDowns.withLock { $0.sorted() })
    }

    func stop() {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        display.stop()
    }
}

enum CompareAppError: Error {
    case notReady
    case ended(String)
}
