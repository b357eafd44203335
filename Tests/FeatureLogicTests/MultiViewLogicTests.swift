import PlayerKitCore
import PlayerKitSupport
import PlayerKitSync
@testable import PlayerKitTesting
import Testing

@Suite("MultiView on fake players: the core's typed API only, settings checked", .timeLimit(.minutes(1)))
struct MultiViewLogicTests {
    let bus = PlayerEventBus(label: "multiview-logic")
    let clock = ManualClock()

    func players(_ count: Int) throws -> [FakePlayer] {
        try (0..<count).map { _ in try FakePlayer(clock: clock, bus: bus, defaultMedia: .init(duration: 60)) }
    }

    @Test("a member is set up through typed commands a fake carries out as a real player does: the source's timestamps, positions when a frame is due, 0.2 s after a stall, its video on its own clock until it is heard")
    func membersSetUpThroughTypedCommands() async throws {
        let p = try players(2)
        let view = try MultiView(players: p, clock: clock)
        try await view.load([MediaSource("a.mp4"), MediaSource("b.mp4")])
        for player in p {
            #expect(player.timestampOrigin == .source)
            #expect(player.positionTiming == .whenDue)
            #expect(player.bufferAfterStall == .milliseconds(200))
            #expect(player.videoClock == .independent)
            #expect(player.bufferedMediaObservationCount == 1)
        }
        try view.setAudioFocus(p[0].id)
        #expect(p[0].videoClock == .audio && p[1].videoClock == .independent)
        #expect(p[0].snapshot.isMuted == false && p[1].snapshot.isMuted == true)
        try view.setAudioFocus(p[1].id)
        #expect(p[0].videoClock == .independent && p[1].videoClock == .audio)
        view.invalidate()
        #expect(p.allSatisfy { $0.bufferedMediaObservationCount == 0 && $0.frameObservationCount == 0 })
        for player in p { await player.shutdown() }
    }

    @Test("a member shut down while in the group hears dropped(shutDown) on its own ID before its shutDown; the others stay members")
    func memberShutDown() async throws {
        let p = try players(2)
        let view = try MultiView(players: p, clock: clock)
        try await view.load([MediaSource("a.mp4"), MediaSource("b.mp4")])
        let log = EventLog(bus: bus, players: [p[0].id])
        await p[0].shutdown()
        let events = log.events(of: p[0].id)
        let dropped = events.firstIndex { $0.feature(MultiViewEvent.self) == .dropped(.shutDown) }
        let last = events.lastIndex(of: .shutDown)
        #expect(dropped != nil, "\(events)")
        #expect(last == events.count - 1)
        if let dropped, let last { #expect(dropped < last) }
        #expect(view.members.map(\.id) == [p[1].id])
        view.invalidate()
        await p[1].shutdown()
    }

    /// A setting that makes no sense, by name and case.
    static let badSettings = [
        "maximumSpeedTrim nan", "maximumSpeedTrim negative", "maximumSpeedTrim infinite", "realignThreshold zero",
        "holdThreshold negative", "alignedTolerance negative", "skewWindow zero", "unrelatedTimestampThreshold negative",
    ]

    @Test("settings that make no sense are refused by name (a NaN trim played a follower at 0.25x), and nothing is left subscribed",
          arguments: badSettings)
    func settingsChecked(bad: String) async throws {
        let setting = String(bad.split(separator: " ")[0])
        let p = try players(2)
        var settings = MultiView.Settings()
        switch bad {
        case "maximumSpeedTrim nan": settings.maximumSpeedTrim = .nan
        case "maximumSpeedTrim negative": settings.maximumSpeedTrim = -0.05
        case "maximumSpeedTrim infinite": settings.maximumSpeedTrim = .infinity
        case "realignThreshold zero": settings.realignThreshold = .zero
        case "holdThreshold negative": settings.holdThreshold = .milliseconds(-1)
        case "alignedTolerance negative": settings.alignedTolerance = .milliseconds(-5)
        case "skewWindow zero": settings.skewWindow = .zero
        default: settings.unrelatedTimestampThreshold = .seconds(-1)
        }
        do {
            _ = try MultiView(players: p, settings: settings, clock: clock)
            Issue.record("\(setting): accepted")
        } catch {
            guard case .invalidArgument(let name, _, _) = error else {
                Issue.record("\(setting): \(error)")
                return
            }
            #expect(name == "multi-view \(setting)")
        }
        #expect(p.allSatisfy { $0.frameObservationCount == 0 && $0.bufferedMediaObservationCount == 0 && $0.commands.isEmpty })
        for player in p { await player.shutdown() }
    }
}
