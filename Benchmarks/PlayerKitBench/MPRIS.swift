import ArgumentParser
import ExampleSupport
import Foundation
import PlayerKit
import PlayerKitMPRIS

/// One player playing `clip` in a loop, published on the session bus (`DBUS_SESSION_BUS_ADDRESS`)
/// until SIGTERM or SIGINT; prints `{"ready": "<bus name>"}` once the name is the player's.
/// Benchmarks/mpris.py measures it from a desktop client's side (Benchmarks/c/mpris.c) next to
/// mpv with its MPRIS plugin.
struct MPRISServe: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "mpris-serve")
    @Option var app = "pkbench"
    @Argument var clip: String

    func run() async throws {
        let player = try await Player.create(id: "bench", configuration: PlayerConfiguration(videoOutput: .none, audioOutput: .none))
        try await player.perform(.setLoop(.forever))
        try await player.load(MediaSource(clip))
        let service = try MPRISService(configuration: MPRISConfiguration(appName: app, identity: "PlayerKit bench"))
        let published = player.events(kinds: [.mpris])
        try service.publish(player)
        // The player's publication names its bus name.
        let publication = await published.first(timeout: .seconds(10)) { record in
            if case .published? = record.event.feature(MPRISEvent.self) { return true }
            return false
        }
        guard case .published(let name)? = publication?.event.feature(MPRISEvent.self) else {
            throw ValidationError("the player was not published within 10 s (is DBUS_SESSION_BUS_ADDRESS a bus?)")
        }
        ExampleSupport.printLine("{\"ready\": \"\(name)\"}")
        await Interruption.shared.wait()
        await service.shutdown()
        await player.shutdown()
    }
}
