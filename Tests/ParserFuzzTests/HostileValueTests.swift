import Foundation
@testable import PlayerKitCache
@testable import PlayerKitCore
@testable import PlayerKitMPRIS
@testable import PlayerKitRooms
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

    @Test("a player reporting a rate of 1e308 while it plays: an MPRIS Seek is to a finite position, and Position reads one")
    func seekAfterAnEndlessRate() throws {
        let player = try FakePlayer(id: "hostile-rate", clock: ManualClock())
        var model = MPRISPlayerModel(player: player, now: .now)
        let start = ContinuousClock.now
        _ = model.apply(.mediaLoaded(MediaInfo(source: "/media/hostile.mp4", duration: nil, videoSize: nil, title: nil, tracks: [])), at: start)
        _ = model.apply(.stateChanged(from: .loading, to: .playing), at: start)
        _ = model.apply(.speedChanged(1e308), at: start)
        let later = start + .seconds(10)
        let decision = model.decide(.seek(by: 5), controls: .all, isShutDown: false, now: later)
        if case .command(.seek(let position, _)) = decision {
            #expect(position.isFinite && position >= 0, "seeks to \(position)")
        } else {
            Issue.record("decided \(decision)")
        }
        #expect(model.position(at: later).isFinite)
        _ = model.apply(.positionChanged(.nan), at: later)
        #expect(model.position(at: later) == 0)
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

    @Test("a room server's on-the-fly counter of 1e300 (or -1, or 1.5) is a malformed message naming the field, not a crash")
    func onTheFlyCounterPastInt() {
        for value in ["1e300", "-1", "1.5", "-1e300"] {
            let line = #"{"State": {"ignoringOnTheFly": {"server": "# + value + "}}}"
            #expect(throws: RoomError.malformedMessage(line: line, reason: "State.ignoringOnTheFly.server \(Double(value)!) is not a count")) {
                try SyncplayWire.decode(line)
            }
        }
        let fine = try? SyncplayWire.decode(#"{"State": {"ignoringOnTheFly": {"server": 2, "client": 0}}}"#)
        #expect(fine == [.state(.init(ping: .init(), ignoringServer: 2, ignoringClient: 0))])
    }

    @Test("a playlist position at Int's ends answers hasNext, hasPrevious and its description without overflowing")
    func playlistPositionAtTheEnds() {
        #expect(!PlaylistPosition(index: .max, count: .max).hasNext)
        #expect(PlaylistPosition(index: .max - 1, count: .max).hasNext == false)
        #expect(PlaylistPosition(index: .max - 2, count: .max).hasNext)
        #expect(PlaylistPosition(index: .max, count: .max).description == "9223372036854775808 of 9223372036854775807")
        #expect(!PlaylistPosition(index: .min, count: .min).hasPrevious)
        #expect(PlaylistPosition(index: 1, count: 3).hasNext && PlaylistPosition(index: 1, count: 3).hasPrevious)
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
