import ArgumentParser
import Dispatch
import Foundation
import ExampleSupport
import PlayerKit

/// Three players on one screen and one fullscreen policy: a scripted sequence of rotations,
/// claims, transfers and refused requests, printing after each step who is fullscreen.
@main
struct FullscreenPolicyExample: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "playerkit-fullscreen-policy",
        abstract: "Three players share one fullscreen policy: only its owner ever goes fullscreen.",
        discussion: """
            The policy has both switches on: turning the screen to landscape puts the owner in \
            fullscreen and turning it back to portrait takes it out; entering fullscreen in \
            portrait asks the app for landscape. After each step the program reads every \
            player's mpv `fullscreen` property and prints it.
            """)

    @OptionGroup var logging: LoggingOptions

    @Flag(help: "Open a real window per player (X11): the owner's window fills the screen.")
    var window = false

    @Flag(help: "Print one JSON object per line: player, event, t, and fullscreen/owner/orientation/step where they apply.")
    var json = false

    @Option(help: "Seconds to hold after each step (default: 0.25, or 1.5 with --window).")
    var stepSeconds: Double?

    @Flag(help: "Wait for a line on standard input (Enter) before each step.")
    var interactive = false

    @Option(help: "mpv video driver for --window.")
    var vo = "x11"

    func validate() throws {
        if let stepSeconds, !(stepSeconds >= 0) { throw ValidationError("--step-seconds must be 0 or more, got \(stepSeconds)") }
    }

    func run() async throws {
        logging.bootstrap()
        _ = Interruption.shared  // Ctrl-C ends the script and shuts the players down
        let output = DispatchQueue(label: "fullscreen-policy.output")  // one queue: lines never interleave
        let printer = Printer(json: json, output: output)

        // Three players side by side, each looping its clip.
        let names: [PlayerID] = ["left", "center", "right"]
        var players: [PlayerID: Player] = [:]
        for (index, id) in names.enumerated() {
            var configuration = PlayerConfiguration(videoOutput: window ? .window : .none, audioOutput: .none)
            configuration = logging.applied(to: configuration)
            configuration.videoDriver = vo
            configuration.delegateQueue = output
            if window {
                configuration.extraOptions["geometry"] = "+\(40 + index * 400)+40"
                configuration.extraOptions["title"] = "fullscreen-policy: \(id)"
            }
            players[id] = try await Player.create(id: id, configuration: configuration)
        }
        let subscription = PlayerEventBus.shared.subscribe(
            to: .players(Set(names)),
            kinds: [.fullscreenPolicy, .error],
            delivery: .queue(output)
        ) { record in printer.player(record) }
        defer { subscription.cancel() }

        for id in names {
            let player = players[id]!
            try await player.perform(.setLoop(.forever))
            _ = try await player.load(MediaSource(ExampleSupport.shippedMedia(id == "center" ? "clip-b.mp4" : "clip-a.mp4")))
        }

        let policy = FullscreenPolicy(orientationControlsFullscreen: true, fullscreenControlsOrientation: true)
        // The policy governs every player on the screen, whatever path fullscreen takes.
        for id in names { try policy.add(players[id]!) }
        if !json { printer.line(screenLine()) }

        let left = players["left"]!, center = players["center"]!, right = players["right"]!
        let script: [(String, @Sendable () async throws -> Void)] = [
            ("the screen is in portrait", { await policy.setOrientation(.portrait) }),
            ("center claims the policy", { try await policy.claim(center) }),
            ("the screen turns to landscape left", { await policy.setOrientation(.landscapeLeft) }),
            ("left claims the policy", { try await policy.claim(left) }),
            ("right asks for fullscreen", { try await policy.enterFullscreen(right) }),
            ("the screen turns to portrait", { await policy.setOrientation(.portrait) }),
            ("the screen turns to landscape right", { await policy.setOrientation(.landscapeRight) }),
            ("center hands the policy to right", { try await policy.transfer(from: center, to: right) }),
            ("center asks to leave fullscreen", { try await policy.exitFullscreen(center) }),
            ("the screen turns to portrait", { await policy.setOrientation(.portrait) }),
            ("right asks for fullscreen in portrait", { try await policy.enterFullscreen(right) }),
            ("right releases the policy", { try await policy.release(right) }),
            ("left claims the policy", { try await policy.claim(left) }),
            ("the screen turns to landscape left", { await policy.setOrientation(.landscapeLeft) }),
            ("center's own mpv window goes fullscreen (as a key in it would; the policy undoes it)", {
                let undone = center.events(kinds: [.fullscreenPolicy])
                try await center.command(["set", "fullscreen", "yes"])
                try await Self.first(of: undone, within: .seconds(5), waitingFor: "the policy to undo center's fullscreen") {
                    if case .fullscreenUndone? = $0.event.feature(FullscreenEvent.self) { true } else { false }
                }
            }),
            ("right asks its own player for fullscreen", { try await right.perform(.setFullscreen(true)) }),
            ("left shuts down", { await left.shutdown() }),
        ]
        let hold = stepSeconds ?? (window ? 1.5 : 0.25)
        let interactive = self.interactive, playing = players
        try await Interruption.shared.run {
            for (index, (action, perform)) in script.enumerated() {
                if interactive { _ = readLine() }
                if Task.isCancelled { return }
                let step = index + 1
                printer.step(step, action)
                do {
                    try await perform()
                } catch {
                    printer.refused(step, error)
                }
                await printer.status(step, players: names.compactMap { playing[$0] }, policy: policy)
                if hold > 0 { try await Task.sleep(for: .seconds(hold)) }
            }
        }
        for id in names { await players[id]!.shutdown() }
        output.sync {}  // the last lines
    }

    /// Waits for the first event of `events`, at most `limit` (on the monotonic clock).
    private static func first(
        of events: EventStream<PlayerEventRecord>, within limit: Duration, waitingFor what: String,
        where matches: @escaping @Sendable (PlayerEventRecord) -> Bool = { _ in true }
    ) async throws {
        let arrived = await withTaskGroup(of: Bool.self) { group in
            group.addTask {
                for await record in events where matches(record) { return true }
                return false
            }
            group.addTask {
                try? await Task.sleep(for: limit)
                return false
            }
            let first = await group.next() ?? false
            group.cancelAll()
            events.cancel()
            return first
        }
        guard arrived else { throw ValidationError("timed out after \(limit) waiting for \(what)") }
    }

    /// What the RandR adapter says about this X screen, if there is one.
    private func screenLine() -> String {
        do throws(FullscreenPolicyError) {
            return "screen (RandR): \(try RandROrientationSource().currentOrientation())"
        } catch {
            return "screen (RandR): \(error)"
        }
    }
}

/// Prints script steps, refusals, status read-outs and events, on one serial queue.
final class Printer: Sendable {
    private let json: Bool
    private let output: DispatchQueue
    private let start = ContinuousClock.now

    init(json: Bool, output: DispatchQueue) {
        self.json = json
        self.output = output
    }

    private var t: Double { ExampleSupport.seconds(since: start) }

    func line(_ text: String) {
        output.async { ExampleSupport.printLine(text) }
    }

    private func emit(_ line: JSONEventLine) {
        output.async { ExampleSupport.printLine(line.json) }
    }

    func step(_ number: Int, _ action: String) {
        if json {
            var line = JSONEventLine(player: "", event: "step", t: t)
            line.step = number
            line.action = action
            emit(line)
        } else {
            line(String(format: "%6.2f  step %2d: %@", t, number, action))
        }
    }

    func refused(_ number: Int, _ error: any Error) {
        if json {
            var line = JSONEventLine(player: Self.requester(error), event: "refused", t: t)
            line.step = number
            line.error = "\(error)"
            emit(line)
        } else {
            line("        refused: \(error)")
        }
    }

    /// Reads each live player's mpv `fullscreen` property: the truth, not PlayerKit's belief.
    func status(_ number: Int, players: [Player], policy: FullscreenPolicy) async {
        let owner = policy.owner
        var fullscreen: [String] = []
        for player in players where !player.isShutDown {
            let isFullscreen = (try? await player.property("fullscreen")) == .flag(true)
            if isFullscreen { fullscreen.append(player.id.rawValue) }
            if json {
                var line = JSONEventLine(player: player.id.rawValue, event: "status", t: t)
                line.step = number
                line.fullscreen = isFullscreen
                line.owner = owner?.rawValue ?? ""
                line.orientation = policy.orientation.rawValue
                emit(line)
            }
        }
        if !json {
            let who = fullscreen.isEmpty ? "nobody" : fullscreen.joined(separator: ", ")
            line("        fullscreen: \(who)   owner: \(owner?.rawValue ?? "none")   orientation: \(policy.orientation)")
        }
    }

    /// A player's event from the bus (already on the output queue). The policy asking the app
    /// to turn the screen is printed as a request to the app.
    func player(_ record: PlayerEventRecord) {
        if case .orientationRequested(let orientation)? = record.event.feature(FullscreenEvent.self) {
            if json {
                var line = JSONEventLine(player: record.playerID.rawValue, event: "orientationRequested", t: t)
                line.orientation = orientation.rawValue
                ExampleSupport.printLine(line.json)
            } else {
                ExampleSupport.printLine("        policy asks the app to turn the screen to \(orientation) for \(record.playerID)")
            }
        } else if json {
            ExampleSupport.printLine(JSONEventLine(record, t: t).json)
        } else {
            ExampleSupport.printLine("        \(record.playerID): \(record.event)")
        }
    }

    /// The player that made a refused request.
    private static func requester(_ error: any Error) -> String {
        switch error as? FullscreenPolicyError {
        case .ownedByAnotherPlayer(_, let requester): return requester.rawValue
        case .notOwner(let player, _): return player.rawValue
        case .playerShutDown(let player): return player.rawValue
        default:
            if case .fullscreenRefused(let player, _)? = error as? PlayerError { return player.rawValue }
            return ""
        }
    }
}
