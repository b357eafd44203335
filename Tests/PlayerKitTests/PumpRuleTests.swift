import Foundation
import PlayerKit
import Testing

@Suite("The pump never blocks", .timeLimit(.minutes(4)))
struct PumpRuleTests {
    /// Tests/PumpRuleProbe makes a blocking mpv call (`property("volume")`) from an `.immediate`
    /// bus handler of a state change, which runs on the player's event pump. In a child process, so the suite
    /// survives the stop.
    @Test("a blocking mpv call from an event-pump handler stops a debug build with a message naming the call and the player")
    func blockingCallOnThePumpStops() async throws {
        let probe = try ChildProcess.example("PumpRuleProbe")
        var environment = ProcessInfo.processInfo.environment
        environment["SWIFT_BACKTRACE"] = "enable=no"
        let (status, output, errors) = try await ChildProcess.runToEnd(probe, [], environment: environment)
        #if DEBUG
        #expect(status != 0, "the probe exited normally: \(output)")
        #expect(errors.contains(#"blocking mpv call get property volume on the event pump of player "probe""#), "\(errors)")
        #expect(!output.contains("not checked"))
        #else
        // Release builds do not check; the probe then finishes on its own.
        #expect(status == 0 && output.contains("not checked"), "\(errors)")
        #endif
    }

    /// The same probe with `--pool`: under `BlockingCallCheck.enforcing`, `perform` is allowed and
    /// a blocking `setVolume` from the task stops a debug build.
    @Test("a blocking mpv call from a task under BlockingCallCheck stops a debug build; perform does not")
    func blockingCallOnThePoolStops() async throws {
        let probe = try ChildProcess.example("PumpRuleProbe")
        var environment = ProcessInfo.processInfo.environment
        environment["SWIFT_BACKTRACE"] = "enable=no"
        let (status, output, errors) = try await ChildProcess.runToEnd(probe, ["--pool"], environment: environment)
        #expect(output.contains("perform allowed"), "\(output) \(errors)")
        #if DEBUG
        #expect(status != 0, "the probe exited normally: \(output)")
        #expect(errors.contains("blocking mpv call set property volume from a task on Swift's cooperative pool"), "\(errors)")
        #expect(!output.contains("not checked"))
        #else
        #expect(status == 0 && output.contains("not checked"), "\(errors)")
        #endif
    }

    @Test("the same handler with send and the read-outs runs on the pump without stopping")
    func sendOnThePumpIsAllowed() async throws {
        let bus = PlayerEventBus(label: "pump-rule")
        var configuration = Fixtures.headless
        configuration.eventBus = bus
        let (player, recorder) = try await Fixtures.player(configuration: configuration)
        defer { Task { await player.shutdown() } }
        // Once the item is ready, the volume's first observation (its baseline) has come: it was
        // queued before the item started loading.
        let subscription = bus.subscribe(to: player.id, kinds: [.stateChanged], delivery: .immediate) { record in
            guard case .stateChanged(_, .ready) = record.event else { return }
            _ = player.volume
            try? player.send(.setVolume(60))
        }
        defer { subscription.cancel() }
        try await player.load(.file(Fixtures.clipA), startPaused: true)
        #expect(await recorder.waitFor { $0.event == .volumeChanged(60) } != nil)
    }
}
