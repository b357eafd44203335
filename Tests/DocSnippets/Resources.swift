// The code blocks of Documentation/Resources.md, compiled by `make test` (the DocSnippets test target builds them;
// Scripts/check-snippets.py checks that each block shown is the region here). Not run.
import Foundation
import Logging
import PlayerKit
import PlayerKitCache
import PlayerKitRooms
import PlayerKitTesting
import CGLHost

func snippet_budget(p1: Player, p5: Player) async throws {
    // snippet: budget
    let budget = try DecoderBudget(limit: 4)                       // 0 or less: DecoderBudgetError.invalidLimit(0)
    try await budget.load("a.mp4", into: p1)                        // takes a slot
    try await budget.load("b.mp4", into: p5)                        // full: DecoderBudgetError.full(limit: 4, holders: [...])
    try await budget.load("b.mp4", into: p5, whenFull: .wait(timeout: .seconds(5)))  // waits for a slot
    try budget.release(p1)                                          // unloads p1; the waiter gets the slot
    try budget.release(p1)                                          // DecoderBudgetError.notHolding("p1")
    // end snippet
}

func snippet_loop(background: Player) async throws {
    // snippet: loop
    let loop = try ClipLoop(player: background, clips: ["intro.mp4", "waves.mp4", "city.mp4"])
    try await loop.start()     // 0, 1, 2, 0, 1, 2, ... until loop.stop()
    // end snippet
}

func snippet_prefetch(items: [PrefetchWindow.Item], headless: PlayerConfiguration) async throws {
    // snippet: prefetch
    let window = try PrefetchWindow(items: items, radius: 1) { slot async throws(PlayerError) in
        try await Player.create(id: PlayerID(stringLiteral: "sequencer-\(slot)"), configuration: headless)
    }
    let player = try await window.move(to: 0)    // prepared: 0, 1
    try await player.play()
    try await window.move(to: 2)                 // prepared: 1, 2, 3; item 0's player released
    // end snippet
}
