import PlayerKit

/// Prints each player's state changes. Delegates are held weakly: keep this object.
final class Monitor: PlayerDelegate {
    func player(_ player: any MediaPlayer, didChangeStateFrom old: PlayerState, to new: PlayerState) {
        print("\(player.id): \(old) -> \(new)")
    }
}

let monitor = Monitor()
// Headless here: no window, no sound (an app passes .window, .embedded(x11WindowID:), .system).
let configuration = PlayerConfiguration(videoOutput: .none, audioOutput: .none)
let main = try await Player.create(id: "main", configuration: configuration)  // custom ID; unique among live players
let background = try await Player.create(configuration: configuration)         // random ID
main.delegate = monitor                                 // called on the player's delegate queue
background.delegate = monitor
try await main.load("Media/clip-a.mp4")                 // returns once loaded: duration, size, tracks
try await background.load("av://lavfi:testsrc", startPaused: true)
try await main.seek(to: 2, precision: .exact)

// Every event also goes, with its player's ID, to the event bus: code that does not hold the
// players can listen by ID (here both: a selection of IDs).
let subscription = PlayerEventBus.shared.subscribe(to: .players(["main", background.id]), kinds: [.itemEnded]) { record in
    print("\(record.playerID) ended: \(record.event)")   // on a serial queue of the subscription's own
}
let mainEnds = PlayerEventBus.shared.events(for: "main", kinds: [.itemEnded])  // an AsyncSequence
try await main.play()
for await record in mainEnds {                          // buffered from its creation: none is missed
    print("the stream saw \(record.playerID) end: \(record.event)")
    break
}
subscription.cancel()
await main.shutdown()                                   // returns once the mpv core is destroyed
await background.shutdown()
