import CGTK
import ExampleSupport
import Foundation
import GTKSupport
import PlayerKit
import PlayerKitHLS
import PlayerKitMPRIS

/// What the command line chose.
struct MultiViewOptions: Sendable {
    var sources: [String]
    var ids: [PlayerID]
    /// The angle that starts with the audio focus (index).
    var focus: Int
    var programDateTime: Bool
    /// Seconds behind the live edge (nil: follow the angle furthest ahead).
    var latency: Double?
    var audio: Bool
    var mpris: Bool
    var headless: Bool
    var json: Bool
    var seconds: Double?
    /// When each angle joins, in seconds after the start (nil: all at once).
    var joinAt: [Double]?
    /// Where to write the frame log when quitting.
    var frameLog: String?
    /// Headless: where to write the frames each angle rendered, read from their pixels.
    var renderedLog: String?
    /// Whether the angles are watched for faults from the start, and the threshold.
    var alarms: Bool
    var alarmAfter: Duration
    var width: Int
    var height: Int
    var configuration: PlayerConfiguration
}

/// The app: a player per angle in one `MultiView`, each drawn into a tile of one window's grid,
/// its skew on the tile; a click focuses an angle (its audio, a larger tile, the media keys).
///
/// Everything here runs on GTK's main loop (the main thread). PlayerKit's events come from the
/// bus on a queue of its own and are handed over with `MainLoop.post`; async calls run in
/// detached tasks, which post their results back.
@MainActor
final class MultiViewApp {
    let options: MultiViewOptions
    let players: [Player]
    let view: MultiView
    /// One angle heard at a time; the group keeps the heard angle's video on its audio.
    let audio: AudioPolicy
    /// The angle last given the audio focus (`audio.focus(_:)`): the app keeps what it told
    /// the policy. Nil until the first focus.
    private var focused: PlayerID?
    private let tiles: [AngleTile]
    private let start = ContinuousClock.now
    private var subscription: PlayerSubscription?
    private var mpris: MPRISService?
    private var loop: OpaquePointer?
    private var window: Widget?
    private var grid: Widget?
    private var readyTiles = 0
    private var loading = false
    /// The angle shown large (nil: the grid).
    private var large: Int?
    private var quitting = false
    private var failure: String?
    /// Each angle's latest group event, shown on its tile.
    private var notes: [PlayerID: String] = [:]
    /// Each angle's latest playback statistics (sampled once a second with `--json`, or once
    /// the `s` key showed them), and whether the tiles show them.
    private var statistics: [PlayerID: PlaybackStatistics] = [:]
    private var statisticsObservations: [PropertyObservation] = []
    private var showsStatistics = false
    /// Each angle's alarms raised and not yet cleared, and the watches (from `--alarms` or the
    /// `s` key, once).
    private var alarms: [PlayerID: [Alarm]] = [:]
    private var alarmWatches: [PropertyObservation] = []
    private var watchingAlarms = false
    /// With `--frame-log`: every frame change, recorded apart from the group.
    private let frames = FrameRecorder()
    /// With `--rendered-log`: every rendered frame's burned-in number, read from its pixels.
    private let rendered = RenderedFrameProbe()

    init(options: MultiViewOptions) throws {
        self.options = options
        // snippet: multiview-app
        players = try options.ids.map { try Player(id: $0, configuration: options.configuration) }
        let leader: MultiView.Leader = options.latency.map { .liveEdge(latency: .seconds($0)) } ?? .furthestAhead
        view = try MultiView(players: players, leader: leader)
        // One angle heard; the others decode no sound (their audio tracks are off).
        audio = try AudioPolicy(mode: .solo, players: players, decodesUnheardAudio: false)
        // end snippet
        tiles = players.map(AngleTile.init(player:))
        large = options.focus == 0 ? nil : options.focus
    }

    var elapsed: Double { ExampleSupport.seconds(since: start) }

    // MARK: Running

    /// Runs GTK's main loop until the window closes (or, headless, until `--seconds` or a
    /// signal); then shuts the players down. Returns the exit status.
    func run() -> Int32 {
        subscribe()
        if options.mpris { publishOnTheDesktop() }
        if !options.headless { gtk_init() }
        var signals = sigset_t()
        sigemptyset(&signals)
        sigaddset(&signals, SIGINT)
        sigaddset(&signals, SIGTERM)
        pthread_sigmask(SIG_UNBLOCK, &signals, nil)
        for number in [SIGINT, SIGTERM] {
            let box = Unmanaged.passUnretained(self).toOpaque()
            _ = g_unix_signal_add(number, { data in
                let app = Unmanaged<MultiViewApp>.fromOpaque(data!).takeUnretainedValue()
                MainActor.assumeIsolated { app.quit() }
                return 1
            }, box)
        }
        if let seconds = options.seconds {
            MainLoop.every(milliseconds: UInt32(seconds * 1000)) { [unowned self] in
                quit()
                return false
            }
        }
        MainLoop.every(milliseconds: 1000) { [unowned self] in
            reportSkews()
            return !quitting
        }
        let loop = g_main_loop_new(nil, 0)
        self.loop = loop
        if options.headless {
            if options.renderedLog != nil {
                do { try rendered.attach(to: players, since: start) } catch { fail("the rendered frames: \(error)") }
            }
            report(AppLine(type: "ready", t: elapsed, angles: options.ids.map(\.rawValue), backend: "headless"))
            loadAngles()
        } else {
            buildWindow()
        }
        g_main_loop_run(loop)
        g_main_loop_unref(loop)
        self.loop = nil
        return finish()
    }

    /// The group's events on every angle, printed with `--json` and shown on the tiles.
    private func subscribe() {
        if options.frameLog != nil { frames.follow(players, since: start) }
        if options.json { observeStatistics() }
        if options.alarms { watchAlarms() }
        let json = options.json
        let start = start
        subscription = PlayerEventBus.shared.subscribe(
            to: .players(Set(options.ids)), kinds: [.sync, .itemEnded, .shutDown, .statisticsUpdated, .alarmRaised, .alarmCleared]
        ) { [weak self] record in
            switch record.event {
            case .statisticsUpdated(let figures):
                MainLoop.post { [weak self] in self?.statistics[record.playerID] = figures }
                return
            case .alarmRaised(let alarm), .alarmCleared(let alarm):
                if json {
                    var line = AppLine(type: "alarm", t: ExampleSupport.seconds(since: start), player: record.playerID.rawValue, event: record.event.kind.rawValue)
                    line.alarm = alarm
                    ExampleSupport.printLine(line.json)
                }
                MainLoop.post { [weak self] in self?.noteAlarm(alarm, of: record.playerID, raised: record.event.kind == .alarmRaised) }
                return
            default: break
            }
            // The correction's steps; not the drift reports and speed corrections (also `.sync`).
            switch record.event.feature(SyncEvent.self) {
            case .drift?, .corrected?: return
            default: break
            }
            if json {
                let line = AppLine(type: "event", t: ExampleSupport.seconds(since: start), player: record.playerID.rawValue, event: record.event.description)
                ExampleSupport.printLine(line.json)
            }
            MainLoop.post { [weak self] in self?.apply(record) }
        }
    }

    private func apply(_ record: PlayerEventRecord) {
        guard let event = record.event.feature(SyncEvent.self) else { return }
        switch event {
        case .joined: notes[record.playerID] = "joined"
        case .aligned: notes[record.playerID] = nil
        case .fellBehind(let reason): notes[record.playerID] = "fell behind: \(reason)"
        case .realigned: notes[record.playerID] = nil
        case .dropped(let reason): notes[record.playerID] = "dropped: \(reason)"
        default: break
        }
        updateLabels()
    }

    /// `--mpris`: every angle on the session bus, named by its ID; the focused one has the media
    /// keys. The desktop may raise and quit the app and change an angle's volume.
    private func publishOnTheDesktop() {
        do {
            let service = try MPRISService(configuration: MPRISConfiguration(appName: "playerkit_multiview", identity: "PlayerKit multi-view"))
            let options = MPRISPlayerOptions(controls: [.volume, .raise, .quit], appHandles: [])
            for player in players { try service.publish(player, options: options) }
            try service.setMediaKeysPlayer(players[self.options.focus].id)
            mpris = service
        } catch {
            fail("MPRIS: \(error)")
        }
    }

    /// Every renderer exists (or, headless, at once): load the angles, all together.
    private func loadAngles() {
        guard !loading else { return }
        loading = true
        let view = view
        let audio = audio
        let ids = options.ids
        let sources = options.sources
        let alignByPlaylists = options.programDateTime
        let focus = options.ids[options.focus]
        if players.contains(where: { $0.id == focus }) { focused = focus }
        let joinAt = options.joinAt
        let start = start
        let players = players
        Task.detached { [weak self] in
            do {
                if alignByPlaylists {
                    let playlists = Dictionary(uniqueKeysWithValues: zip(ids, sources.compactMap { URL(string: $0) }))
                    let offsets = try await view.alignTimestamps(ofPlaylists: playlists)
                    let text = offsets.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)" }.joined(separator: ", ")
                    await MainActor.run { self?.note("offsets by PROGRAM-DATE-TIME: \(text)") }
                }
                if let heard = players.first(where: { $0.id == focus }) { try await audio.focus(heard) }
                if let joinAt {
                    // Each angle joins at its moment: a late join, aligned like the others.
                    try await withThrowingTaskGroup(of: Void.self) { group in
                        for (index, delay) in joinAt.enumerated() {
                            group.addTask {
                                try await Task.sleep(until: start + .seconds(delay), clock: .continuous)
                                try await view.load(MediaSource(sources[index]), on: view.members.first { $0.id == ids[index] } ?? players[index])
                            }
                        }
                        try await group.waitForAll()
                    }
                } else {
                    try await view.load(sources.map { MediaSource($0) })
                }
            } catch {
                await MainActor.run { self?.fail("loading the angles: \(error)") }
            }
        }
    }

    // MARK: The window

    private func buildWindow() {
        let window = gtk_window_new()!
        self.window = window
        gtk_window_set_title(gtkCast(window, to: GtkWindow.self), "PlayerKit multi-view")
        gtk_window_set_default_size(gtkCast(window, to: GtkWindow.self), Int32(options.width), Int32(options.height))
        Signal.on(window, "destroy") { [unowned self] in windowDestroyed() }
        let grid = gtk_grid_new()!
        self.grid = grid
        gtk_grid_set_row_homogeneous(gtkCast(grid, to: GtkGrid.self), 1)
        gtk_grid_set_column_homogeneous(gtkCast(grid, to: GtkGrid.self), 1)
        gtk_grid_set_row_spacing(gtkCast(grid, to: GtkGrid.self), 2)
        gtk_grid_set_column_spacing(gtkCast(grid, to: GtkGrid.self), 2)
        for (index, tile) in tiles.enumerated() {
            let widget = tile.makeWidget()
            tile.onReady = { [unowned self] result in
                switch result {
                case .success:
                    readyTiles += 1
                    if readyTiles == tiles.count { loadAngles() }
                case .failure(let failure): fail(failure.description)
                }
            }
            tile.onDrawFailure = { [unowned self] reason in fail("drawing: \(reason)") }
            tile.onClick = { [unowned self] in focus(index) }
            gtk_grid_attach(gtkCast(grid, to: GtkGrid.self), widget, 0, 0, 1, 1)
        }
        layOut()
        gtk_window_set_child(gtkCast(window, to: GtkWindow.self), grid)
        let keys = gtk_event_controller_key_new()!
        Signal.onKey(UnsafeMutableRawPointer(keys)) { [unowned self] key, _ in handleKey(key) }
        gtk_widget_add_controller(window, keys)
        gtk_window_present(gtkCast(window, to: GtkWindow.self))
        let backend = gdk_display_get_default().map { String(cString: g_type_name_from_instance(gtkCast(UnsafeMutableRawPointer($0), to: GTypeInstance.self))) }
        report(AppLine(type: "ready", t: elapsed, angles: options.ids.map(\.rawValue), backend: backend))
        // The tiles' places once GTK laid them out (for screenshots read by tests).
        MainLoop.every(milliseconds: 500) { [unowned self] in
            reportTiles()
            return false
        }
    }

    /// The grid: `columns` × `rows` equal tiles; or, with an angle large, that one over
    /// (n − 1) × (n − 1) cells (at least 2 × 2) and the others in a column beside it.
    private func layOut() {
        guard let grid else { return }
        let manager = gtk_widget_get_layout_manager(grid)
        let count = tiles.count
        for (index, tile) in tiles.enumerated() {
            guard let widget = tile.widget, let child = gtk_layout_manager_get_layout_child(manager, widget) else { continue }
            let place = OpaquePointer(child)
            var (column, row, span) = (0, 0, 1)
            if let large {
                let size = max(2, count - 1)
                if index == large {
                    span = size
                } else {
                    column = size
                    row = index < large ? index : index - 1
                }
            } else {
                let columns = Int(Double(count).squareRoot().rounded(.up))
                column = index % columns
                row = index / columns
            }
            gtk_grid_layout_child_set_column(place, Int32(column))
            gtk_grid_layout_child_set_row(place, Int32(row))
            gtk_grid_layout_child_set_column_span(place, Int32(span))
            gtk_grid_layout_child_set_row_span(place, Int32(span))
        }
    }

    /// A click or a number key: angle `index` is heard, shown large and has the media keys.
    private func focus(_ index: Int) {
        let id = players[index].id
        let (audio, heard) = (audio, players[index])
        focused = id
        Task { [weak self] in
            do { try await audio.focus(heard) } catch { self?.fail("focus: \(error)") }
        }
        do {
            try mpris?.setMediaKeysPlayer(id)
        } catch {
            fail("focus: \(error)")
            return
        }
        large = index
        layOut()
        report(AppLine(type: "focus", t: elapsed, player: id.rawValue))
        updateLabels()
        MainLoop.every(milliseconds: 300) { [unowned self] in
            reportTiles()
            return false
        }
    }

    /// Keeps an angle's alarm while it is raised, for its tile.
    private func noteAlarm(_ alarm: Alarm, of id: PlayerID, raised: Bool) {
        alarms[id, default: []].removeAll { $0.kind == alarm.kind }
        if raised { alarms[id, default: []].append(alarm) }
        updateLabels()
    }

    /// Watches every angle for a frozen or black picture and silence from now on (once).
    private func watchAlarms() {
        guard !watchingAlarms else { return }
        watchingAlarms = true
        let thresholds = AlarmThresholds(freeze: options.alarmAfter, black: options.alarmAfter, silence: options.alarmAfter)
        let players = players
        // Off the main thread (headless, nothing drains the main actor); the watches are kept
        // on the main loop.
        Task.detached { [weak self] in
            for player in players {
                do {
                    let watch = try await player.watchAlarms(thresholds)
                    MainLoop.post { [weak self] in self?.alarmWatches.append(watch) }
                } catch {
                    MainLoop.post { [weak self] in self?.fail("alarms: \(error)") }
                }
            }
        }
    }

    /// Samples every angle's statistics once a second from now on (once).
    private func observeStatistics() {
        guard statisticsObservations.isEmpty else { return }
        do {
            statisticsObservations = try players.map { try $0.observeStatistics(every: .seconds(1)) }
        } catch {
            fail("statistics: \(error)")
        }
    }

    private func handleKey(_ key: UInt32) -> Bool {
        switch key {
        case UInt32(GDK_KEY_s):
            // Frames per second, drops and buffer on each tile, on and off.
            showsStatistics.toggle()
            observeStatistics()
            watchAlarms()
            updateLabels()
            note(showsStatistics ? "statistics shown" : "statistics hidden")
        case UInt32(GDK_KEY_q), UInt32(GDK_KEY_Escape):
            quit()
        case UInt32(GDK_KEY_g):
            large = nil
            layOut()
            MainLoop.every(milliseconds: 300) { [unowned self] in
                reportTiles()
                return false
            }
        case UInt32(GDK_KEY_space):
            // The group pauses and resumes as a whole: on from the same frames.
            let view = view
            if view.isPaused {
                Task { [weak self] in
                    do { try await view.resume(); self?.note("resumed where paused") } catch { self?.fail("resume: \(error)") }
                }
            } else {
                Task { [weak self] in
                    do { try await view.pause(); self?.note("paused") } catch { self?.fail("pause: \(error)") }
                }
            }
        case UInt32(GDK_KEY_l):
            // Back to as far behind the live edge as before the pause.
            let view = view
            if view.isPaused {
                Task { [weak self] in
                    do { try await view.resume(from: .liveEdge); self?.note("resumed at the live edge") } catch { self?.fail("resume: \(error)") }
                }
            }
        case UInt32(GDK_KEY_1)...UInt32(GDK_KEY_9):
            let index = Int(key - UInt32(GDK_KEY_1))
            if index < tiles.count { focus(index) }
        default:
            return false
        }
        return true
    }

    // MARK: Reports

    /// Once a second: each angle's skew, on its tile and, with `--json`, as one line.
    private func reportSkews() {
        let skews = view.skews
        updateLabels(skews)
        var line = AppLine(type: "skews", t: elapsed)
        line.members = players.map { player in
            let skew = skews[player.id]
            return MemberLine(id: player.id.rawValue, inGroup: view.members.contains { $0.id == player.id },
                              skewMs: skew.map { $0.current * 1000 }, skewP50Ms: skew.map { $0.p50 * 1000 },
                              skewP95Ms: skew.map { $0.p95 * 1000 }, skewP99Ms: skew.map { $0.p99 * 1000 }, samples: skew?.samples ?? 0)
        }
        line.audioFocus = focused?.rawValue
        line.leader = view.leader?.rawValue
        if options.json { ExampleSupport.printLine(line.json) }
        if options.json, !statistics.isEmpty {
            var figures = AppLine(type: "statistics", t: elapsed)
            figures.statistics = Dictionary(uniqueKeysWithValues: statistics.map { ($0.key.rawValue, $0.value) })
            ExampleSupport.printLine(figures.json)
        }
    }

    private func updateLabels(_ skews: [PlayerID: MemberSkew]? = nil) {
        let skews = skews ?? view.skews
        let focus = focused
        for tile in tiles {
            let id = tile.player.id
            var text = "\(id)\(focus == id ? "  ♪" : "")"
            if let skew = skews[id] { text += String(format: "\n%+.1f ms · p99 %.1f ms", skew.current * 1000, skew.p99 * 1000) }
            if let note = notes[id] { text += "\n\(note)" }
            if showsStatistics, let figures = statistics[id] { text += "\n" + ExampleSupport.statisticsSummary(figures) }
            for alarm in alarms[id] ?? [] { text += String(format: "\n⚠ %@ since %.1f s", alarm.kind.rawValue, alarm.start) }
            tile.setLabel(text)
        }
    }

    /// The tiles' places in the window's surface, in pixels.
    private func reportTiles() {
        guard let window else { return }
        var offset = (x: 0.0, y: 0.0)
        if let native = gtk_widget_get_native(window) { gtk_native_get_surface_transform(native, &offset.x, &offset.y) }
        var line = AppLine(type: "tiles", t: elapsed)
        line.tiles = tiles.compactMap { tile in
            guard let widget = tile.widget else { return nil }
            var bounds = graphene_rect_t()
            guard gtk_widget_compute_bounds(widget, window, &bounds) != 0 else { return nil }
            return TileLine(id: tile.player.id.rawValue, x: Int((Double(bounds.origin.x) + offset.x).rounded()),
                            y: Int((Double(bounds.origin.y) + offset.y).rounded()),
                            width: Int(Double(bounds.size.width).rounded()), height: Int(Double(bounds.size.height).rounded()))
        }
        report(line)
    }

    private func note(_ text: String) {
        report(AppLine(type: "note", t: elapsed, message: text))
    }

    private func report(_ line: AppLine) {
        if options.json { ExampleSupport.printLine(line.json) }
    }

    private func fail(_ reason: String) {
        failure = failure ?? reason
        var line = AppLine(type: "failed", t: elapsed)
        line.message = reason
        report(line)
        FileHandle.standardError.write(Data("playerkit-multiview: \(reason)\n".utf8))
        quit()
    }

    // MARK: Ending

    /// Closes the window (headless: ends the main loop). Safe to call more than once.
    func quit() {
        guard !quitting else { return }
        quitting = true
        if let window { gtk_window_destroy(gtkCast(window, to: GtkWindow.self)) } else if let loop { g_main_loop_quit(loop) }
    }

    /// The window is gone (its GL areas were unrealized first, which closed the renderers).
    private func windowDestroyed() {
        quitting = true
        window = nil
        grid = nil
        for tile in tiles { tile.forget() }
        if let loop { g_main_loop_quit(loop) }
    }

    /// After the main loop: shut the players down (bounded), check none is left, and report.
    private func finish() -> Int32 {
        view.invalidate()
        let players = players
        let mpris = mpris
        let done = DispatchSemaphore(value: 0)
        let counted = DispatchSemaphore(value: 0)
        let frameLog = options.frameLog
        let frames = frames
        let dropped = Guarded<[String: Int]>([:])
        Task.detached {
            if frameLog != nil {
                // Frames mpv dropped, by angle (its video output's and its decoder's).
                for player in players {
                    var count = 0
                    for name in ["frame-drop-count", "decoder-frame-drop-count"] {
                        if case .int(let value)? = try? await player.property(name) { count += Int(value) }
                    }
                    dropped.withLock { $0[player.id.rawValue] = count }
                }
            }
            counted.signal()
        }
        _ = counted.wait(timeout: .now() + 5)
        frames.stop()
        if let frameLog {
            do { try frames.write(to: frameLog, dropped: dropped.withLock { $0 }) } catch { failure = failure ?? "the frame log: \(error)" }
        }
        rendered.stop()
        if let renderedLog = options.renderedLog {
            do { try rendered.write(to: renderedLog) } catch { failure = failure ?? "the rendered frames: \(error)" }
        }
        // Every angle stops first, then they shut down together: a core that shuts down hands
        // FFmpeg's log back to FFmpeg's default (mpv resets it), and the others' network reads
        // would then print to standard error until they stop.
        for player in players { try? player.send(.stop) }
        Task.detached {
            await mpris?.shutdown()
            await withTaskGroup(of: Void.self) { group in
                for player in players { group.addTask { await player.shutdown() } }
            }
            done.signal()
        }
        // The main thread may wait (it is not one of Swift's pool threads); bounded all the same.
        let finished = done.wait(timeout: .now() + 15) == .success
        subscription?.cancel()
        let live = options.ids.filter { Player.live($0) != nil }.map(\.rawValue)
        var line = AppLine(type: "quit", t: elapsed)
        line.livePlayers = live
        if !options.headless { line.frames = Dictionary(uniqueKeysWithValues: tiles.map { ($0.player.id.rawValue, $0.newFrames) }) }
        line.message = failure ?? (finished ? nil : "the players did not shut down within 15 s")
        report(line)
        return failure != nil || !live.isEmpty || !finished ? 1 : 0
    }
}

/// One line of `--json` output.
struct AppLine: Encodable {
    /// `ready`, `skews`, `statistics`, `event`, `tiles`, `focus`, `note`, `failed`, `quit`.
    var type: String
    /// Seconds since the app started.
    var t: Double
    var angles: [String]?
    /// GDK's display type, or "headless".
    var backend: String?
    var player: String?
    /// A group event, as text ("sync(aligned after 0.41 s)").
    var event: String?
    var members: [MemberLine]?
    var audioFocus: String?
    var leader: String?
    var tiles: [TileLine]?
    var message: String?
    var livePlayers: [String]?
    /// Frames drawn per angle, on `quit`.
    var frames: [String: Int]?
    /// Each angle's playback statistics, on `statistics` lines (once a second).
    var statistics: [String: PlaybackStatistics]?
    /// The alarm, on `alarm` lines (`event`: alarmRaised or alarmCleared).
    var alarm: Alarm?

    enum CodingKeys: String, CodingKey {
        case type, t, angles, backend, player, event, members, leader, tiles, message, frames, statistics, alarm
        case audioFocus = "audio_focus"
        case livePlayers = "live_players"
    }

    var json: String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return String(decoding: (try? encoder.encode(self)) ?? Data("{}".utf8), as: UTF8.self)
    }
}

/// One angle's figures on a `skews` line: milliseconds; null before its first measured frame.
struct MemberLine: Encodable {
    var id: String
    /// Whether it is still in the group (not dropped).
    var inGroup: Bool
    var skewMs: Double?
    var skewP50Ms: Double?
    var skewP95Ms: Double?
    var skewP99Ms: Double?
    var samples: Int

    enum CodingKeys: String, CodingKey {
        case id, samples
        case inGroup = "in_group"
        case skewMs = "skew_ms"
        case skewP50Ms = "skew_p50_ms"
        case skewP95Ms = "skew_p95_ms"
        case skewP99Ms = "skew_p99_ms"
    }
}

/// A tile's place in the window's surface, in pixels.
struct TileLine: Encodable {
    var id: String
    var x: Int
    var y: Int
    var width: Int
    var height: Int
}
