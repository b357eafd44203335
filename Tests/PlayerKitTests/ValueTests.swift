import Foundation
import Testing
import PlayerKit
@testable import PlayerKitCore
@testable import PlayerKitRooms
@testable import PlayerKitCache

/// Values with rules of their own, checked without a player: the commands' checks (the same a
/// player and a fake make before anything reaches mpv), the cache's byte ranges, a room's clock.
@Suite("Values: command checks, byte ranges, a room's clock (no mpv)", .timeLimit(.minutes(1)))
struct ValueTests {
    @Test("every command checks its values by name before anything reaches a player; the rest pass")
    func commandChecks() throws {
        let refused: [(PlayerCommand, PlayerError)] = [
            (.seek(to: -1, precision: .exact), .invalidArgument(name: "seek position", value: "-1.0", reason: "must be a finite number of seconds, 0 or more")),
            (.seek(to: .infinity, precision: .keyframe), .invalidArgument(name: "seek position", value: "inf", reason: "must be a finite number of seconds, 0 or more")),
            (.seekBy(.nan, precision: .exact), .invalidArgument(name: "seek offset", value: "nan", reason: "must be a finite number of seconds")),
            (.setSpeed(0.2), .invalidArgument(name: "speed", value: "0.2", reason: "must be between 0.25 and 4")),
            (.setSpeed(4.01), .invalidArgument(name: "speed", value: "4.01", reason: "must be between 0.25 and 4")),
            (.setVolume(-0.5), .invalidArgument(name: "volume", value: "-0.5", reason: "must be a finite number, 0 or more")),
            (.setVolume(.nan), .invalidArgument(name: "volume", value: "nan", reason: "must be a finite number, 0 or more")),
            (.setLoop(.playCount(0)), .invalidArgument(name: "loop play count", value: "0", reason: "must be 1 or more")),
            (.selectTrack(.audio, id: 0), .invalidArgument(
                name: "track ID", value: "0", reason: "must be 1 or more (mpv numbers tracks from 1), or nil for none")),
        ]
        for (command, error) in refused {
            #expect(throws: error, "\(command)") { try command.validate() }
        }
        let accepted: [PlayerCommand] = [
            .play, .pause, .stop, .seek(to: 0, precision: .exact), .seekBy(-3, precision: .keyframe), .setSpeed(0.25), .setSpeed(4),
            .setVolume(0), .setVolume(130), .setMuted(true), .setLoop(.forever), .setLoop(.playCount(1)),
            .setPlaybackDirection(.backward), .setFullscreen(true), .setFlip(.horizontal), .selectTrack(.subtitle, id: nil),
            .selectTrack(.video, id: 1),
        ]
        for command in accepted { try command.validate() }
    }

    @Test("byte ranges merge what overlaps or touches, clip, and answer what is held and where the next gap is")
    func byteRanges() {
        var ranges = ByteRanges()
        ranges.insert(10..<20)
        ranges.insert(30..<40)
        ranges.insert(0..<0)                                      // empty: nothing
        #expect(ranges.ranges == [10..<20, 30..<40] && ranges.count == 20)
        ranges.insert(20..<25)                                    // touches: merged
        ranges.insert(5..<12)                                     // overlaps: merged
        #expect(ranges.ranges == [5..<25, 30..<40] && ranges.description == "5-25,30-40")
        ranges.insert(24..<31)                                    // bridges the two
        #expect(ranges.ranges == [5..<40])
        ranges.insert(50..<60)
        #expect(ranges.contains(10..<40) && !ranges.contains(10..<41) && ranges.contains(45..<45))
        #expect(ranges.contiguousCount(from: 5) == 35 && ranges.contiguousCount(from: 40) == 0)
        #expect(ranges.firstGap(from: 0, below: 100) == 0 && ranges.firstGap(from: 5, below: 100) == 40)
        #expect(ranges.firstGap(from: 50, below: 60) == nil && ranges.nextStart(after: 40) == 50)
        ranges.clip(to: 55)
        #expect(ranges.ranges == [5..<40, 50..<55])
        ranges.clip(to: 3)
        #expect(ranges.isEmpty && ranges.description == "none")
        #expect(ByteRanges([30..<40, 0..<10, 10..<15]).ranges == [0..<15, 30..<40])
    }

    @Test("a room's clock moves on from its position while the room plays, and stands still while it is paused")
    func roomClock() {
        let start = ContinuousClock.now
        let playing = RoomFollower.Clock(position: 12.5, time: start, playing: true)
        #expect(abs(playing.position(at: start + .milliseconds(1500)) - 14) < 1e-9)
        #expect(abs(playing.position(at: start - .seconds(2)) - 10.5) < 1e-9)
        let paused = RoomFollower.Clock(position: 12.5, time: start, playing: false)
        #expect(paused.position(at: start + .seconds(30)) == 12.5)
    }

    @Test("a media source from a string: scheme:// is a URL with its scheme lowercased, file:// a path, anything else a path as written")
    func mediaSources() {
        #expect(MediaSource("https://example.com/a.mp4").location == .url("https://example.com/a.mp4"))
        #expect(MediaSource("HTTP://example.com/a.mp4").scheme == "http")
        #expect(MediaSource("av://lavfi:testsrc").scheme == "av")
        #expect(MediaSource("file:///tmp/a%20b.mp4").location == .file(path: "/tmp/a b.mp4"))
        #expect(MediaSource("Media/clip-a.mp4").location == .file(path: "Media/clip-a.mp4"))
        #expect(MediaSource("Media/clip-a.mp4").scheme == nil)
        // Not schemes: a path with "://" later on, a scheme that starts with a digit or holds a space.
        #expect(MediaSource("dir/x://y").location == .file(path: "dir/x://y"))
        #expect(MediaSource("1http://x").location == .file(path: "1http://x"))
        #expect(MediaSource("my scheme://x").location == .file(path: "my scheme://x"))
        #expect(MediaSource("a+b.c-d://x").scheme == "a+b.c-d")
        let literal: MediaSource = "https://example.com/b.mp4"
        #expect(literal == MediaSource.url(URL(string: "https://example.com/b.mp4")!) && literal.description == "https://example.com/b.mp4")
    }

    @Test("every typed error's description names the value or player at fault, for the core and the features")
    func errorsNameTheirValues() {
        let named: [(String, [String])] = [
            ("\(PlayerError.invalidArgument(name: "speed", value: "9.0", reason: "must be between 0.25 and 4"))", ["speed", "9.0", "0.25"]),
            ("\(PlayerError.duplicateID("main"))", ["main"]),
            ("\(PlayerError.playerShutDown("main"))", ["main"]),
            ("\(PlayerError.timedOut(operation: "load", after: .seconds(5)))", ["load", "5"]),
            ("\(PlayerError.fullscreenRefused("side", reason: "player \"main\" owns the fullscreen policy"))", ["side", "main"]),
            ("\(DecoderBudgetError.invalidLimit(0))", ["0"]),
            ("\(DecoderBudgetError.full(limit: 2, holders: ["a", "b"]))", ["2", "\"a\"", "\"b\""]),
            ("\(DecoderBudgetError.notHolding("c"))", ["\"c\""]),
            ("\(DecoderBudgetError.timedOut(player: "c", limit: 1, after: .seconds(3)))", ["\"c\"", "1", "3"]),
            ("\(FullscreenPolicyError.ownedByAnotherPlayer(owner: "main", requester: "side"))", ["\"main\"", "\"side\""]),
            ("\(FullscreenPolicyError.notOwner("side", owner: nil))", ["\"side\"", "none"]),
            ("\(FullscreenPolicyError.governedByAnotherPolicy("side"))", ["\"side\""]),
        ]
        for (description, parts) in named {
            for part in parts { #expect(description.contains(part), "\"\(description)\" does not name \(part)") }
        }
    }

    @Test("a command's description names the command and its values, as logs and fake players' command lists show them")
    func commandDescriptions() {
        let described: [(PlayerCommand, String)] = [
            (.play, "play"), (.stop, "stop"), (.setSpeed(1.5), "setSpeed(1.5)"), (.setVolume(40), "setVolume(40.0)"),
            (.setMuted(true), "setMuted(true)"), (.setFullscreen(false), "setFullscreen(false)"),
            (.selectTrack(.subtitle, id: nil), "selectTrack(sub, none)"), (.selectTrack(.audio, id: 2), "selectTrack(audio, 2)"),
        ]
        for (command, text) in described { #expect(command.description == text) }
        #expect(PlayerCommand.seek(to: 12.5, precision: .exact).description.hasPrefix("seek(to: 12.5, "))
        #expect(PlayerCommand.seekBy(-3, precision: .keyframe).description.hasPrefix("seekBy(-3.0, "))
        // Equal commands are equal values: what a fake's command log is compared with.
        #expect(PlayerCommand.seek(to: 1, precision: .exact) == .seek(to: 1, precision: .exact))
        #expect(PlayerCommand.seek(to: 1, precision: .exact) != .seek(to: 1, precision: .keyframe))
    }
}

