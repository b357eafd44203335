// Breaks the pump rule on purpose, for the test "a blocking call from an event-pump handler
// stops a debug build" (Tests/PlayerKitTests/PumpRuleTests.swift): an `.immediate` bus handler
// runs on the player's event pump and makes a blocking mpv call there. A debug build of
// PlayerKit stops the process with a message naming the call; a release build does not check
// and this program then prints "not checked" and exits 0.
//
// With `--pool`, it breaks the cooperative-pool rule instead: a task under
// `BlockingCallCheck.enforcing` makes a blocking mpv call (`setVolume`), and then creates a
// player with the blocking initializer.
import Dispatch
import Foundation
import PlayerKitCore

/// Runs the probe; returns the exit status (when the process is not stopped first).
func probe() throws -> Int32 {
    var configuration = PlayerConfiguration(videoOutput: .none, audioOutput: .none)
    configuration.eventBus = PlayerEventBus(label: "pump-rule-probe")
    let player = try Player(id: "probe", configuration: configuration)
    let done = DispatchSemaphore(value: 0)
    // A state change comes from the event pump (the player's `created` event does not: it is
    // delivered on the thread that creates the player).
    let subscription = configuration.eventBus.subscribe(to: player.id, kinds: [.stateChanged], delivery: .immediate) { _ in
        // On the pump: a blocking read. Debug builds stop here.
        _ = try? player.property("volume")
        done.signal()
    }
    defer { subscription.cancel() }
    // Detached: this thread waits below.
    Task.detached { try await player.load("av://lavfi:testsrc=duration=2", startPaused: true) }
    if done.wait(timeout: .now() + 20) == .timedOut {
        FileHandle.standardError.write(Data("no state change arrived\n".utf8))
        return 2
    }
    print("not checked")
    return 0
}

/// A blocking call from a task under the pool check; returns the exit status when not stopped.
func poolProbe() async throws -> Int32 {
    var configuration = PlayerConfiguration(videoOutput: .none, audioOutput: .none)
    configuration.eventBus = PlayerEventBus(label: "pool-rule-probe")
    let player = try await Player.create(id: "pool-probe", configuration: configuration)
    // Allowed: suspends.
    try await BlockingCallCheck.enforcing { () async throws(PlayerError) in try await player.perform(.setVolume(50)) }
    // Unbuffered: the process may stop right after.
    FileHandle.standardOutput.write(Data("perform allowed\n".utf8))
    // Blocks a pool thread: debug builds stop here.
    try await BlockingCallCheck.enforcing { () async throws(PlayerError) in try player.setVolume(40) }
    print("not checked")
    return 0
}

if CommandLine.arguments.contains("--pool") {
    exit(try await poolProbe())
}
exit(try probe())
