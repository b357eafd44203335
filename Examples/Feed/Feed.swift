import ArgumentParser
import Dispatch
import Foundation
import ExampleSupport
import PlayerKit

/// A feed of ten items and a scripted scroll: prints which item plays and why, through an
/// `AutoplayCoordinator` with a decoder budget of three.
@main
struct Feed: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "feed",
        abstract: "Scroll a feed of ten items; the most visible one plays once scrolling stops.")

    @Flag(help: "Print one JSON object per line: player, event (play, pause, release, prepare), t, and value (the reason).")
    var json = false

    @Option(help: "Decoder budget: items holding media at once.")
    var decoders = 3

    @Option(help: "Seconds without scrolling before the coordinator decides.")
    var settle = 0.3

    func validate() throws {
        guard decoders >= 1 else { throw ValidationError("--decoders must be 1 or more, got \(decoders)") }
        guard settle >= 0, settle.isFinite else { throw ValidationError("--settle must be 0 or more, got \(settle)") }
    }

    /// The viewport is 1.2 item heights tall; `offset` is its top, in item heights.
    static func visibility(of item: Int, at offset: Double) -> Double {
        let top = Double(item), bottom = top + 1
        return max(0, min(bottom, offset + 1.2) - max(top, offset))
    }

    func run() async throws {
        let start = ContinuousClock.now
        let json = self.json
        let budget = try DecoderBudget(limit: decoders)
        var settings = AutoplayCoordinator.Settings()
        settings.settleDelay = .milliseconds(Int(settle * 1000))
        let coordinator = try AutoplayCoordinator(settings: settings, budget: budget)
        coordinator.onDecision = { decision in
            let t = ExampleSupport.seconds(since: start)
            if json {
                var line = JSONEventLine(player: decision.item, event: decision.action.rawValue, t: t)
                line.value = decision.reason
                ExampleSupport.printLine(line.json)
            } else {
                ExampleSupport.printLine(String(format: "%7.2f  %@", t, decision.description))
            }
        }
        var players: [Player] = []
        for index in 0..<10 {
            let player = try Player(id: PlayerID(stringLiteral: "item-\(index)"), configuration: PlayerConfiguration(videoOutput: .none, audioOutput: .none))
            try player.setLoop(.forever)
            try coordinator.add(player.id.rawValue, player: player,
                                source: MediaSource(ExampleSupport.shippedMedia(index % 2 == 0 ? "clip-a.mp4" : "clip-b.mp4")))
            players.append(player)
        }

        func scroll(to offset: Double) throws {
            for index in 0..<10 { try coordinator.reportVisibility(min(1, Self.visibility(of: index, at: offset)), of: "item-\(index)") }
        }
        func note(_ text: String) {
            if !json { ExampleSupport.printLine(String(format: "%7.2f  -- %@", ExampleSupport.seconds(since: start), text)) }
        }
        // The script: (what, from, to, seconds of scrolling, seconds to rest after).
        let script: [(String, Double, Double, Double, Double)] = [
            ("the feed opens at the top", 0, 0, 0, 1.0),
            ("a fast fling down to item 4", 0, 4, 1.0, 1.0),
            ("a slow drag to between items 6 and 7", 4, 6.45, 1.0, 1.0),
            ("settle on item 7", 6.45, 7, 0.3, 1.0),
            ("a fast fling back up to item 1", 7, 1, 0.8, 1.0),
        ]
        for (what, from, to, seconds, rest) in script {
            note(what)
            let steps = max(1, Int(seconds / 0.05))
            for step in 1...steps {
                try scroll(to: from + (to - from) * Double(step) / Double(steps))
                if seconds > 0 { try await Task.sleep(for: .milliseconds(50)) }
            }
            try await Task.sleep(for: .seconds(rest + settle))
            note("playing: \(coordinator.playingItem ?? "nothing (no item at or above \(settings.threshold) visible)")")
        }
        note("done; playing: \(coordinator.playingItem ?? "none"), holding decoders: \(budget.holders.map(\.rawValue).joined(separator: ", "))")
        for player in players { await player.shutdown() }
    }
}
