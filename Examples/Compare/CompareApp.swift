import CGTK
import GTKSupport
import ExampleSupport
import Foundation
import PlayerKit
import PlayerKitAnalysis
import PlayerKitMPRIS

/// What the command line chose.
struct CompareOptions: Sendable {
    var files: [String]
    var ids: [PlayerID]
    var mode: ViewMode
    var divider: Double
    var startPaused: Bool
    /// Play the pair over and over.
    var looping: Bool
    var json: Bool
    var remote: Bool
    var seconds: Double?
    var width: Int
    var height: Int
    var audio: Bool
    /// Publish both players on the session bus (MPRIS).
    var mpris: Bool
    /// Both players' configuration (B never plays audio).
    var configuration: PlayerConfiguration
}

/// The app: two players in a sync group, their pictures in one GL area, a shared transport,
/// per-pane headers with each player's ID and live state, and one fullscreen owner.
///
/// Everything here runs on GTK's main loop (the main thread). PlayerKit's events come from the
/// bus on a queue of their own and are handed over with `MainLoop.post`; the group's async
/// calls run in detached tasks, which post their results back.
@MainActor
final class CompareApp {
    let options: CompareOptions
    let players: [Player]
    let group: SyncGroup
    /// One fullscreen owner among the two panes, whatever asks for fullscreen.
    let policy = FullscreenPolicy()
    let surface: CompareSurface
    private let start = ContinuousClock.now
    var sources: [String]
    private var subscription: PlayerSubscription?
    /// Signalled once per player when its `shutDown` event was handled (printed), so the app
    /// ends after its players' last events, not before.
    private let shutDownHandled = DispatchSemaphore(value: 0)
    /// With `--mpris`: both players on the desktop.
    private var mpris: MPRISService?

    private var loop: OpaquePointer?
    private var window: Widget?
    private var headers: [Widget] = []
    private var paneLabels: [Widget] = []
    private var fullscreenButtons: [Widget] = []
    private var playButton: Widget?
    private var seekBar: Widget?
    private var timeLabel: Widget?
    private var speedButton: Widget?
    private var modeButtons: [ViewMode: Widget] = [:]
    private var messageLabel: Widget?
    /// Each pane's latest playback statistics (sampled once a second with `--json`, or once the
    /// `i` key showed them), and whether the panes show them.
    private var statistics: [PlaybackStatistics?] = [nil, nil]
    private var statisticsObservations: [PropertyObservation] = []
    private var showsStatistics = false
    /// Each pane's alarms raised and not yet cleared, and the watches (the `i` key or the
    /// `alarms` command; a new threshold replaces them).
    private var alarms: [[Alarm]] = [[], []]
    private var alarmWatches: [PropertyObservation] = []
    /// The metric's graph under the transport, B's offset (adjustable by hand) and the
    /// measurement's summary.
    var graphArea: Widget?
    var offsetButton: Widget?
    var summaryLabel: Widget?
    var settingOffset = false
    /// B measured against A frame by frame (`measure`), for the graph, clicks on it and `worst`.
    var series: QualitySeries?

    private var states: [PlayerState] = [.idle, .idle]
    var positions: [Double?] = [nil, nil]
    var durations: [Double?] = [nil, nil]
    private var frames: [Int?] = [nil, nil]
    /// The mode chosen outside fullscreen (a pane's fullscreen shows that pane alone).
    private var chosenMode: ViewMode
    private var dragStart = 0.0
    private var settingSpeed = false
    private var settingMode = false
    private var quitting = false
    private(set) var failure: String?

    init(options: CompareOptions) throws {
        self.options = options
        sources = options.files
        chosenMode = options.mode
        // snippet: players
        var configuration = options.configuration
        configuration.positionUpdateInterval = .milliseconds(100)
        var first = configuration
        if options.audio { first.audioOutput = .system }  // A is heard; B is only seen
        players = [try Player(id: options.ids[0], configuration: first), try Player(id: options.ids[1], configuration: configuration)]
        group = try SyncGroup(players: players, onMemberFailure: .stopGroup)
        for player in players { try policy.add(player) }
        surface = CompareSurface(players: players)
        surface.mode = options.mode
        surface.divider = options.divider
        // end snippet
    }

    var elapsed: Double { ExampleSupport.seconds(since: start) }

    // MARK: Running

    /// Runs GTK's main loop until the window closes; then shuts the players down. Returns the
    /// exit status.
    func run() -> Int32 {
        subscribe()
        if options.json { observeStatistics() }
        if options.mpris { publishOnTheDesktop() }
        gtk_init()
        // SIGINT and SIGTERM close the window like its close button. They are unblocked on
        // this thread first: a process inherits its parent's signal mask, and a parent that
        // blocks them (a test runner, some service managers) would otherwise never stop the app.
        var signals = sigset_t()
        sigemptyset(&signals)
        sigaddset(&signals, SIGINT)
        sigaddset(&signals, SIGTERM)
        pthread_sigmask(SIG_UNBLOCK, &signals, nil)
        for number in [SIGINT, SIGTERM] {
            let box = Unmanaged.passUnretained(self).toOpaque()
            _ = g_unix_signal_add(number, { data in
                let app = Unmanaged<CompareApp>.fromOpaque(data!).takeUnretainedValue()
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
        if options.remote { readCommands() }
        let loop = g_main_loop_new(nil, 0)
        self.loop = loop
        buildWindow()
        // Until the window is destroyed (its close button, `q`, `quit`, a signal).
        g_main_loop_run(loop)
        g_main_loop_unref(loop)
        self.loop = nil
        return finish(status: 0)
    }

    /// The bus: every event of the two players, printed with `--json` and shown in the panes.
    private func subscribe() {
        // snippet: events
        let json = options.json
        let start = start
        let shutDownHandled = shutDownHandled
        subscription = PlayerEventBus.shared.subscribe(to: .players(Set(options.ids))) { [weak self] record in
            if json { ExampleSupport.printLine(JSONEventLine(record, t: ExampleSupport.seconds(since: start)).json) }
            if record.event == .shutDown { shutDownHandled.signal() }
            MainLoop.post { [weak self] in self?.apply(record) }
        }
        // end snippet
    }

    // snippet: mpris
    /// `--mpris`: both players on the session bus, named by their IDs. The desktop may play,
    /// pause, seek, change the speed, go fullscreen, raise and quit; the app carries those out
    /// itself, on the sync group (a desktop's Pause pauses the pair), and leaves volume and loop
    /// to each player. Pane A has the media keys until another pane is clicked.
    private func publishOnTheDesktop() {
        do {
            let service = try MPRISService(configuration: MPRISConfiguration(appName: "playerkit_compare", identity: "PlayerKit Compare"))
            let options = MPRISPlayerOptions(controls: [.playback, .seeking, .rate, .volume, .loop, .fullscreen, .raise, .quit],
                                             appHandles: [.playback, .seeking, .rate, .fullscreen])
            for player in players { try service.publish(player, options: options) }
            try service.setMediaKeysPlayer(players[0].id)
            mpris = service
        } catch {
            fail("MPRIS: \(error)")
        }
    }

    /// A request the desktop sent that the app carries out (see `publishOnTheDesktop`).
    private func desktopAsked(_ request: MPRISRequest, of pane: Int, command: PlayerCommand?) {
        let name = "mpris \(request)"
        switch command {
        case .play?: perform(.play, named: name)
        case .pause?, .stop?: perform(.pause, named: name)
        case .seek(let seconds, _)?: perform(.seek(seconds), named: name)
        case .setSpeed(let speed)?: perform(.speed(speed), named: name)
        case .setFullscreen(let fullscreen)?: perform(.fullscreen(fullscreen ? pane : nil), named: name)
        case nil where request == .raise: if let window { gtk_window_present(gtkCast(window, to: GtkWindow.self)) }
        case nil where request == .quit: perform(.quit, named: name)
        default: break
        }
    }
    // end snippet

    /// Standard input, one command per line, on a thread of its own; its end quits.
    private func readCommands() {
        Thread {
            while let line = readLine() {
                MainLoop.post { [weak self] in self?.handle(line: line) }
            }
            MainLoop.post { [weak self] in self?.quit() }
        }.start()
    }

    /// After the main loop: the renderers were closed when the window went; shut the players
    /// down (bounded), check none is left, and report.
    private func finish(status: Int32) -> Int32 {
        group.invalidate()
        let players = players
        let done = DispatchSemaphore(value: 0)
        let mpris = mpris
        Task.detached {
            await mpris?.shutdown()
            for player in players { await player.shutdown() }
            done.signal()
        }
        // The main thread may wait (it is not one of Swift's pool threads); bounded all the same.
        let finished = done.wait(timeout: .now() + 15) == .success
        // The subscription's queue may still be printing the last `shutDown`: let it (bounded).
        for _ in players { _ = shutDownHandled.wait(timeout: .now() + 5) }
        subscription?.cancel()
        let live = options.ids.filter { Player.live($0) != nil }.map(\.rawValue)
        var line = AppLine(event: "quit", t: elapsed)
        line.livePlayers = live
        line.draws = surface.draws
        line.error = failure ?? (finished ? nil : "the players did not shut down within 15 s")
        report(line, text: "quit: \(surface.draws) draws, players left: \(live.isEmpty ? "none" : live.joined(separator: ", "))")
        if let failure { FileHandle.standardError.write(Data("playerkit-compare: \(failure)\n".utf8)) }
        return status != 0 || failure != nil || !live.isEmpty || !finished ? 1 : 0
    }

    /// Closes the window; the main loop then ends. Safe to call more than once.
    func quit() {
        guard !quitting else { return }
        quitting = true
        if let window { gtk_window_destroy(gtkCast(window, to: GtkWindow.self)) } else if let loop { g_main_loop_quit(loop) }
    }

    /// The window is gone (its GL area was unrealized first, which closed the renderers): the
    /// widgets are no more, events still on their way update nothing, the main loop ends.
    private func windowDestroyed() {
        quitting = true
        window = nil
        headers = []
        paneLabels = []
        fullscreenButtons = []
        playButton = nil
        seekBar = nil
        timeLabel = nil
        speedButton = nil
        modeButtons = [:]
        messageLabel = nil
        surface.forgetArea()
        if let loop { g_main_loop_quit(loop) }
    }

    // MARK: The window

    private func buildWindow() {
        let window = gtk_window_new()!
        self.window = window
        gtk_window_set_title(gtkCast(window, to: GtkWindow.self), "PlayerKit compare")
        gtk_window_set_default_size(gtkCast(window, to: GtkWindow.self), Int32(options.width), Int32(options.height))
        Signal.on(window, "destroy") { [unowned self] in windowDestroyed() }

        let column = gtk_box_new(GTK_ORIENTATION_VERTICAL, 4)!
        // A header per pane: its player's ID and live state, and its fullscreen button.
        let headerRow = gtk_box_new(GTK_ORIENTATION_HORIZONTAL, 8)!
        gtk_box_set_homogeneous(gtkCast(headerRow, to: GtkBox.self), 1)
        for (index, name) in ["A", "B"].enumerated() {
            let header = gtk_box_new(GTK_ORIENTATION_HORIZONTAL, 6)!
            let label = gtk_label_new("\(name) · \(players[index].id)")!
            gtk_widget_set_hexpand(label, 1)
            gtk_label_set_xalign(OpaquePointer(label), 0)
            let button = gtk_button_new_with_label("Fullscreen")!
            Signal.on(button, "clicked") { [unowned self] in perform(.fullscreen(isOwnerFullscreen(index) ? nil : index)) }
            gtk_box_append(gtkCast(header, to: GtkBox.self), label)
            gtk_box_append(gtkCast(header, to: GtkBox.self), button)
            gtk_box_append(gtkCast(headerRow, to: GtkBox.self), header)
            headers.append(header)
            paneLabels.append(label)
            fullscreenButtons.append(button)
        }
        gtk_box_append(gtkCast(column, to: GtkBox.self), headerRow)

        // The picture: both players in one GL area, with the wipe's drag and dropped files.
        let area = surface.makeArea()
        surface.onReady = { [unowned self] result in
            switch result {
            case .success: openSources(sources, play: !options.startPaused)
            case .failure(let failure): fail(failure.description)
            }
        }
        surface.onDrawFailure = { [unowned self] reason in fail("drawing: \(reason)") }
        let drag = gtk_gesture_drag_new()!
        Signal.onPoint(UnsafeMutableRawPointer(drag), "drag-begin") { [unowned self] x, _ in
            dragStart = x
            if mpris != nil { perform(.mediaKeys(pane(atX: x))) }
            if surface.mode == .wipe { perform(.wipe(surface.dividerPosition(atX: x))) }
        }
        Signal.onPoint(UnsafeMutableRawPointer(drag), "drag-update") { [unowned self] dx, _ in
            if surface.mode == .wipe { perform(.wipe(surface.dividerPosition(atX: dragStart + dx))) }
        }
        gtk_widget_add_controller(area, drag)
        let drop = gtk_drop_target_new(gdk_file_list_get_type(), GDK_ACTION_COPY)!
        Signal.onDropFiles(UnsafeMutableRawPointer(drop)) { [unowned self] paths, x in dropped(paths, atX: x) }
        gtk_widget_add_controller(area, drop)
        gtk_box_append(gtkCast(column, to: GtkBox.self), area)

        // The shared transport.
        let transport = gtk_box_new(GTK_ORIENTATION_HORIZONTAL, 6)!
        let box = gtkCast(transport, to: GtkBox.self)
        func button(_ title: String, _ command: Command) -> Widget {
            let button = gtk_button_new_with_label(title)!
            Signal.on(button, "clicked") { [unowned self] in perform(command) }
            gtk_box_append(box, button)
            return button
        }
        playButton = button("Play", .togglePlay)
        _ = button("◀ Frame", .back)
        _ = button("Frame ▶", .step)
        let seekBar = gtk_scale_new_with_range(GTK_ORIENTATION_HORIZONTAL, 0, 1, 0.001)!
        gtk_scale_set_draw_value(gtkCast(seekBar, to: GtkScale.self), 0)
        gtk_widget_set_hexpand(seekBar, 1)
        gtk_widget_set_size_request(seekBar, 160, -1)
        Signal.onUserValue(seekBar) { [unowned self] value in perform(.seek(max(value, 0))) }
        gtk_box_append(box, seekBar)
        self.seekBar = seekBar
        let timeLabel = gtk_label_new("0.000 s")!
        gtk_box_append(box, timeLabel)
        self.timeLabel = timeLabel
        gtk_box_append(box, gtk_label_new("Speed"))
        let speed = gtk_spin_button_new_with_range(0.25, 4, 0.25)!
        gtk_spin_button_set_value(OpaquePointer(speed), 1)
        Signal.on(speed, "value-changed") { [unowned self] in
            guard !settingSpeed, let speedButton else { return }
            perform(.speed(gtk_spin_button_get_value(OpaquePointer(speedButton))))
        }
        gtk_box_append(box, speed)
        speedButton = speed
        var first: Widget?
        for (mode, title) in [(ViewMode.sideBySide, "Side by side"), (.wipe, "Wipe"), (.difference, "Difference")] {
            let toggle = gtk_toggle_button_new_with_label(title)!
            if let first { gtk_toggle_button_set_group(gtkCast(toggle, to: GtkToggleButton.self), gtkCast(first, to: GtkToggleButton.self)) }
            first = first ?? toggle
            Signal.on(toggle, "toggled") { [unowned self] in
                guard !settingMode, gtk_toggle_button_get_active(gtkCast(toggle, to: GtkToggleButton.self)) != 0 else { return }
                perform(.mode(mode))
            }
            gtk_box_append(box, toggle)
            modeButtons[mode] = toggle
        }
        gtk_box_append(gtkCast(column, to: GtkBox.self), transport)
        buildAnalysisRows(in: column)
        let message = gtk_label_new("Space: play/pause · , and .: frame back/forward · s w d: side/wipe/difference · f: fullscreen A · Esc · q")!
        gtk_label_set_xalign(OpaquePointer(message), 0)
        gtk_box_append(gtkCast(column, to: GtkBox.self), message)
        messageLabel = message

        let keys = gtk_event_controller_key_new()!
        Signal.onKey(UnsafeMutableRawPointer(keys)) { [unowned self] key, _ in handleKey(key) }
        gtk_widget_add_controller(window, keys)
        gtk_window_set_child(gtkCast(window, to: GtkWindow.self), column)
        showMode()
        updateLabels()
        gtk_window_present(gtkCast(window, to: GtkWindow.self))
    }

    private func handleKey(_ key: UInt32) -> Bool {
        switch key {
        case 0x20: perform(.togglePlay)  // space
        case 0x2e: perform(.step)  // .
        case 0x2c: perform(.back)  // ,
        case 0x73: perform(.mode(.sideBySide))  // s
        case 0x77: perform(.mode(.wipe))  // w
        case 0x64: perform(.mode(.difference))  // d
        case 0x66: perform(.fullscreen(isOwnerFullscreen(0) ? nil : 0))  // f
        case 0xff1b: perform(.fullscreen(nil))  // Escape
        case 0x71: perform(.quit)  // q
        case 0x69:  // i: frames per second, drops, buffer and stalls in each pane's label, and its alarms
            showsStatistics.toggle()
            observeStatistics()
            if alarmWatches.isEmpty { watchAlarms(after: .seconds(2)) }
            updateLabels()
        default: return false
        }
        return true
    }

    /// Samples both players' statistics once a second from now on (once).
    private func observeStatistics() {
        guard statisticsObservations.isEmpty else { return }
        do {
            statisticsObservations = try players.map { try $0.observeStatistics(every: .seconds(1)) }
        } catch {
            fail("statistics: \(error)")
        }
    }

    // MARK: Commands

    /// A line from standard input.
    func handle(line: String) {
        let text = line.trimmingCharacters(in: .whitespaces)
        do {
            perform(try Command(parsing: text), named: text)
        } catch {
            var reply = AppLine(event: "failed", t: elapsed)
            reply.command = text
            reply.error = error.description
            report(reply, text: "\(text): \(error)")
        }
    }

    /// Does `command`; with `--json`, answers with one line once it is done (or failed).
    func perform(_ command: Command, named name: String? = nil) {
        let name = name ?? "\(command)"
        switch command {
        case .play: runAsync(name) { group in try await group.play() }
        case .pause: runAsync(name) { group in try await group.pause() }
        case .togglePlay:
            let playing = isPlaying
            runAsync(name) { group in if playing { try await group.pause() } else { try await group.play() } }
        case .step: runFrames(name) { group in try await group.stepFrame() }
        case .back: runFrames(name) { group in try await group.stepFrameBack() }
        case .frame(let frame): runFrames(name) { group in try await group.seek(toFrame: frame) }
        case .seek(let seconds): runAsync(name) { group in try await group.seek(to: seconds) }
        case .speed(let speed):
            runAsync(name) { group in try await group.setSpeed(speed) }
        case .mode(let mode):
            chosenMode = mode
            if !policy.isFullscreen { surface.mode = mode }
            showMode()
            done(name)
        case .wipe(let divider):
            surface.divider = divider
            done(name)
        case .fullscreen(let pane):
            let (players, policy) = (players, policy)
            Task.detached {
                do {
                    try await Self.setFullscreen(pane, players: players, policy: policy)
                    MainLoop.post { [weak self] in self?.done(name) }
                } catch {
                    MainLoop.post { [weak self] in self?.failed(name, error) }
                }
            }
        case .open(let index, let path):
            var next = sources
            next[index] = path
            openSources(next, play: group.phase == .playing, command: name)
        case .mediaKeys(let pane):
            do {
                guard let mpris else {
                    throw CommandError.invalidValue(command: "keys", value: pane == 0 ? "a" : "b", expected: "the app started with --mpris")
                }
                try mpris.setMediaKeysPlayer(players[pane].id)
                done(name)
            } catch {
                failed(name, error)
            }
        case .align(let byPicture):
            align(byPicture: byPicture, named: name)
        case .offset(let seconds):
            setOffset(seconds, named: name)
        case .measure:
            measure(named: name)
        case .worst:
            showWorst(named: name)
        case .graph(let fraction):
            showPair(atFraction: fraction, named: name)
        case .alarms(let seconds):
            watchAlarms(after: .milliseconds(Int64((seconds * 1000).rounded())), command: name)
        case .status:
            done(name)
        case .quit:
            done(name)
            quit()
        }
    }

    /// Watches both players for faults lasting `threshold` (replacing the watches before);
    /// answers `command` once both watch.
    private func watchAlarms(after threshold: Duration, command: String? = nil) {
        let players = players
        let thresholds = AlarmThresholds(freeze: threshold, black: threshold, silence: threshold)
        Task.detached {
            do {
                var watches: [PropertyObservation] = []
                for player in players { watches.append(try await player.watchAlarms(thresholds)) }
                MainLoop.post { [weak self] in
                    guard let self else { return }
                    alarmWatches = watches
                    if let command { done(command) }
                }
            } catch {
                MainLoop.post { [weak self] in
                    if let command { self?.failed(command, error) } else { self?.fail("alarms: \(error)") }
                }
            }
        }
    }

    /// Runs a group call off the main loop; its answer comes back to it.
    func runAsync(_ name: String, _ work: @escaping @Sendable (SyncGroup) async throws -> Void) {
        let group = group
        Task.detached {
            do {
                try await work(group)
                MainLoop.post { [weak self] in self?.done(name) }
            } catch {
                MainLoop.post { [weak self] in self?.failed(name, error) }
            }
        }
    }

    // snippet: frames
    /// A frame command: the answer names each player's frame.
    func runFrames(_ name: String, _ work: @escaping @Sendable (SyncGroup) async throws -> GroupFrame) {
        let group = group
        Task.detached {
            do {
                let frame = try await work(group)
                MainLoop.post { [weak self] in self?.done(name, frame: frame) }
            } catch {
                MainLoop.post { [weak self] in self?.failed(name, error) }
            }
        }
    }
    // end snippet

    /// Loads `paths` into the two players (paused on their first frames), then plays if asked.
    private func openSources(_ paths: [String], play: Bool, command: String? = nil) {
        let group = group
        let ids = options.ids
        let looping = options.looping
        Task.detached {
            do {
                try await group.load(paths.map { MediaSource($0) }, looping: looping)
                if play { try await group.play() }
                MainLoop.post { [weak self] in
                    guard let self else { return }
                    sources = paths
                    forgetMeasurement()
                    if let command { done(command) } else { ready(ids) }
                }
            } catch {
                MainLoop.post { [weak self] in
                    guard let self else { return }
                    if let command { failed(command, error) } else { fail("cannot open \(paths.joined(separator: " and ")): \(error)") }
                }
            }
        }
    }

    /// Files dropped on the picture: one goes to the pane under the pointer, two to both.
    private func dropped(_ paths: [String], atX x: Double) -> Bool {
        guard !paths.isEmpty else { return false }
        if paths.count >= 2 {
            openSources(Array(paths.prefix(2)), play: group.phase == .playing, command: "drop")
        } else {
            perform(.open(pane(atX: x), paths[0]), named: "drop")
        }
        return true
    }

    /// The pane under the pointer at `x` in the picture.
    private func pane(atX x: Double) -> Int {
        let position = surface.dividerPosition(atX: x)
        let split = surface.mode == .wipe ? surface.divider : 0.5
        return surface.mode == .onlyB ? 1 : surface.mode == .onlyA ? 0 : (position < split ? 0 : 1)
    }

    // MARK: Fullscreen

    private func isOwnerFullscreen(_ index: Int) -> Bool {
        policy.owner == players[index].id && policy.isFullscreen
    }

    // snippet: fullscreen
    /// Pane `pane` fullscreen (nil: none), through the policy: at most one owner, and only the
    /// owner is ever fullscreen. The window follows the policy's events (`applyFullscreen`).
    private nonisolated static func setFullscreen(_ pane: Int?, players: [Player], policy: FullscreenPolicy) async throws {
        if let owner = policy.owner, let current = players.first(where: { $0.id == owner }) {
            if let pane, players[pane].id == owner {
                try await policy.enterFullscreen(current)
                return
            }
            if let pane {
                try await policy.transfer(from: current, to: players[pane])
            } else if policy.isFullscreen {
                try await policy.exitFullscreen(current)
                return
            }
        }
        if let pane { try await policy.enterFullscreen(players[pane]) }
    }
    // end snippet

    /// The policy's state on screen: the owner's pane alone in a fullscreen window, or the
    /// chosen mode in a normal one.
    private func applyFullscreen() {
        guard let window else { return }
        let owner = policy.isFullscreen ? players.firstIndex { $0.id == policy.owner } : nil
        if let owner {
            gtk_window_fullscreen(gtkCast(window, to: GtkWindow.self))
            surface.mode = owner == 0 ? .onlyA : .onlyB
        } else {
            gtk_window_unfullscreen(gtkCast(window, to: GtkWindow.self))
            surface.mode = chosenMode
        }
        for index in 0..<2 {
            gtk_widget_set_visible(headers[index], owner == nil || owner == index ? 1 : 0)
            gtk_button_set_label(gtkCast(fullscreenButtons[index], to: GtkButton.self), owner == index ? "Leave fullscreen" : "Fullscreen")
        }
    }

    // MARK: Events

    private func apply(_ record: PlayerEventRecord) {
        guard let index = players.firstIndex(where: { $0.id == record.playerID }) else { return }
        switch record.event {
        case .stateChanged(_, let state):
            states[index] = state
            if state != .paused { frames[index] = nil }
        case .positionChanged(let position):
            positions[index] = position
        case .durationKnown(let duration):
            // A looping pair plays each clip as one timeline of many passes: the bar shows one pass.
            durations[index] = options.looping ? duration / Double(SyncGroup.loopRepeats) : duration
            if let seekBar, let longest = durations.compactMap({ $0 }).max() {
                gtk_range_set_range(gtkCast(seekBar, to: GtkRange.self), 0, max(longest, 0.001))
            }
        case .seekCompleted(let position):
            positions[index] = position ?? positions[index]
        case .statisticsUpdated(let figures):
            statistics[index] = figures
        case .alarmRaised(let alarm):
            alarms[index].removeAll { $0.kind == alarm.kind }
            alarms[index].append(alarm)
        case .alarmCleared(let alarm):
            alarms[index].removeAll { $0.kind == alarm.kind }
        case .feature(let event) where event is FullscreenEvent:
            applyFullscreen()
        case .feature(let event):
            if case .requested(let request, _, .forwardedToApp(let command))? = event as? MPRISEvent {
                desktopAsked(request, of: index, command: command)
            }
        default:
            break
        }
        updateLabels()
    }

    /// Whether the pair is playing: the group plays and a clip has not ended (the group stays in
    /// its playing phase when both clips end; then the button offers Play again).
    private var isPlaying: Bool {
        group.phase == .playing && states.contains { $0 != .ended && $0 != .idle && $0 != .failed }
    }

    /// `position` within the current pass of a looping pair (the position itself otherwise).
    private func inPass(_ position: Double) -> Double {
        guard options.looping, let pass = durations[0], pass > 0 else { return position }
        return position.truncatingRemainder(dividingBy: pass)
    }

    private func updateLabels() {
        for index in paneLabels.indices {
            var text = "\(index == 0 ? "A" : "B") · \(players[index].id) · \(states[index])"
            if let position = positions[index] { text += String(format: " · %.3f s", position) }
            if let frame = frames[index] { text += " · frame \(frame)" }
            if showsStatistics, let figures = statistics[index] { text += "\n" + ExampleSupport.statisticsSummary(figures) }
            for alarm in alarms[index] { text += String(format: "\n⚠ %@ since %.1f s", alarm.kind.rawValue, alarm.start) }
            gtk_label_set_text(OpaquePointer(paneLabels[index]), text)
        }
        if let playButton {
            gtk_button_set_label(gtkCast(playButton, to: GtkButton.self), isPlaying ? "Pause" : "Play")
        }
        if let graphArea, series != nil { gtk_widget_queue_draw(graphArea) }
        if let position = positions[0].map(inPass) {
            if let seekBar { gtk_range_set_value(gtkCast(seekBar, to: GtkRange.self), position) }
            if let timeLabel { gtk_label_set_text(OpaquePointer(timeLabel), String(format: "%.3f s", position)) }
        }
    }

    private func showMode() {
        settingMode = true
        for (mode, button) in modeButtons {
            gtk_toggle_button_set_active(gtkCast(button, to: GtkToggleButton.self), mode == chosenMode ? 1 : 0)
        }
        settingMode = false
    }

    // MARK: Reports

    private func ready(_ ids: [PlayerID]) {
        var line = AppLine(event: "ready", t: elapsed)
        line.players = ids.map(\.rawValue)
        line.mode = surface.mode.rawValue
        line.backend = gdk_display_get_default().map { String(cString: g_type_name_from_instance(gtkCast(UnsafeMutableRawPointer($0), to: GTypeInstance.self))) }
        report(line, text: "ready: \(ids.map(\.rawValue).joined(separator: " and ")) on \(line.backend ?? "?")")
    }

    func done(_ name: String, frame: GroupFrame? = nil) {
        if let frame {
            for (index, player) in players.enumerated() {
                frames[index] = frame.members.first { $0.player == player.id }?.frameNumber
                positions[index] = frame.members.first { $0.player == player.id }?.time ?? positions[index]
            }
            updateLabels()
        }
        var line = AppLine(event: "done", t: elapsed)
        line.command = name
        line.frames = frame.map { Dictionary(uniqueKeysWithValues: $0.members.map { ($0.player.rawValue, $0.frameNumber) }) }
        if frame == nil, name == "status", frames.allSatisfy({ $0 != nil }) {
            // The frames the panes show after the last frame command (or click on the graph).
            line.frames = Dictionary(uniqueKeysWithValues: zip(players.map(\.id.rawValue), frames.compactMap { $0 }))
        }
        line.time = frame?.time
        line.mode = surface.mode.rawValue
        line.divider = surface.divider
        line.area = [surface.pixelSize.width, surface.pixelSize.height]
        line.owner = policy.owner?.rawValue
        line.fullscreen = policy.isFullscreen
        line.draws = surface.draws
        line.newFrames = Dictionary(uniqueKeysWithValues: zip(players.map(\.id.rawValue), surface.newFrames))
        if let playButton, let label = gtk_button_get_label(gtkCast(playButton, to: GtkButton.self)) {
            line.playButton = String(cString: label)
        }
        if let seekBar {
            let range = gtkCast(seekBar, to: GtkRange.self)
            line.seekBar = [gtk_range_get_value(range), gtk_adjustment_get_upper(gtk_range_get_adjustment(range))]
        }
        if let timeLabel, let text = gtk_label_get_text(OpaquePointer(timeLabel)) { line.timeLabel = String(cString: text) }
        line.paneLabels = paneLabels.map { label in gtk_label_get_text(OpaquePointer(label)).map { String(cString: $0) } ?? "" }
        describeAnalysis(in: &line)
        report(line, text: frame.map { "\(name): \($0)" } ?? name)
    }

    func failed(_ name: String, _ error: any Error) {
        var line = AppLine(event: "failed", t: elapsed)
        line.command = name
        line.error = "\(error)"
        report(line, text: "\(name) failed: \(error)")
        if let messageLabel { gtk_label_set_text(OpaquePointer(messageLabel), "\(name): \(error)") }
    }

    /// Something the app cannot go on without: reported, and the app quits with status 1.
    private func fail(_ reason: String) {
        failure = failure ?? reason
        quit()
    }

    private func report(_ line: AppLine, text: String) {
        ExampleSupport.printLine(options.json ? line.json : text)
    }
}
