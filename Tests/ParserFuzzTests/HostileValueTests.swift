import Foundation
@testable import PlayerKitCache
import PlayerKitCore
@testable import PlayerKitMPRIS
import PlayerKitTesting
import Testing

/// Values from outside that crashed a parser or a model before (found by the fuzz targets):
/// each is now an answer, never a trap.
@Suite("Hostile values (cache headers, MPRIS numbers)", .timeLimit(.minutes(1)))
struct HostileValueTests {
    @Test("a media file whose duration is past Int64 microseconds (9.3e12 s) is published with the largest length, not a crash")
    func durationPastInt64Microseconds() throws {
        let player = try FakePlayer(id: "hostile-duration", clock: ManualClock())
        var model = MPRISPlayerModel(player: player, now: .now)
        let now = ContinuousClock.now
        _ = model.apply(.mediaLoaded(MediaInfo(source: "/media/hostile.mp4", duration: 9.3e12, videoSize: nil, title: nil, tracks: [])), at: now)
        _ = model.apply(.stateChanged(from: .loading, to: .paused), at: now)
        _ = model.apply(.positionChanged(-9.3e12), at: now)
        let metadata = model.playerProperty("Metadata", controls: .all, now: now)
        guard case .dictionary(let entries)? = metadata else {
            Issue.record("no Metadata: \(String(describing: metadata))")
            return
        }
        #expect(entries.contains { $0.0 == "mpris:length" && $0.1 == .int64(.max) })
        #expect(model.playerProperty("Position", controls: .all, now: now) == .int64(0))
        #expect(MPRISPlayerModel.microseconds(-1e300) == .min)
        #expect(MPRISPlayerModel.microseconds(.nan) == 0)
        #expect(MPRISPlayerModel.microseconds(1.5) == 1_500_000)
    }

    @Test("an MPRIS Volume of the largest double is refused by name, not handed to the player as an infinite volume")
    func volumeOfTheLargestDouble() throws {
        let player = try FakePlayer(id: "hostile-volume", clock: ManualClock())
        let model = MPRISPlayerModel(player: player, now: .now)
        let decision = model.decide(.setVolume(.greatestFiniteMagnitude), controls: .all, isShutDown: false, now: .now)
        guard case .refuse(.invalidArgument(let name, _, _)) = decision else {
            Issue.record("decided \(decision)")
            return
        }
        #expect(name == "volume")
        #expect(model.decide(.setVolume(0.5), controls: .all, isShutDown: false, now: .now) == .command(.setVolume(50)))
    }

    @Test("an MP4 whose moov box claims nearly 2^63 bytes after another box: no moov end past the largest offset, no overflow")
    func moovOfLargestSize() {
        let ftyp = MP4Bytes.box("ftyp", Array("isom".utf8) + MP4Bytes.be32(512))
        let moov = MP4Bytes.largeBox("moov", size: UInt64(Int64.max) - 4, [UInt8](repeating: 0, count: 32))
        let header = MP4Header.parse(ftyp + moov)
        #expect(header.moovEnd == nil)
        #expect(header.duration == nil)
    }
}
