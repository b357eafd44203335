// Breaks the pump rule on purpose, for the test "a blocking call from an event-pump handler
// stops a debug build" (Tests/PlayerKitTests/PumpRuleTests.swift): an `.immediate` bus handler
// runs on the player's event pump and makes a blocking mpv call there. A debug build of
// PlayerKit stops the process with a message naming the call; a release build does not check
// and this program then prints "not checked" and exits 0.
import Dispatch
import Foundation
import PlayerKitCore

var configuration = PlayerConfiguration(videoOutput: .none, audioOutput: .none)
configuration.eventBus = PlayerEventBus(label: "pump-rule-probe")
let player = try Player(id: "probe", configuration: configuration)
let done = DispatchSemaphore(value: 0)
let subscription = configuration.eventBus.subscribe(to: player.id, kinds: [.volumeChanged], delivery: .immediate) { _ in
    // On the pump: a blocking read. Debug builds stop here.
    _ = try? player.property("volume")
    done.signal()
}
try player.setVolume(50)
if done.wait(timeout: .now() + 20) == .timedOut {
    FileHandle.standardError.write(Data("no volume change arrived\n".utf8))
    exit(2)
}
subscription.cancel()
print("not checked")
exit(0)
