@testable import PlayerKitCore
import Testing

/// `PlaybackModel`'s settings mirror on its own (`SettingsMirror`): which observed values become
/// change events, and which only set the baseline.
@Suite("Settings mirror: read-outs and the change events they make", .timeLimit(.minutes(1)))
struct SettingsMirrorTests {
    @Test("mpv's first report is the baseline, a later different one is a change, the same one is nothing")
    func baselineThenChanges() {
        var mirror = SettingsMirror()
        let e1 = mirror.apply("volume", .double(100), fromSetter: false)
        #expect(e1 == [])
        #expect(mirror.volume == 100)
        let e2 = mirror.apply("volume", .double(100), fromSetter: false)
        #expect(e2 == [])
        let e3 = mirror.apply("volume", .double(40), fromSetter: false)
        #expect(e3 == [.volumeChanged(40)])
        let e4 = mirror.apply("mute", .flag(false), fromSetter: false)
        #expect(e4 == [])
        let e5 = mirror.apply("mute", .flag(true), fromSetter: false)
        #expect(e5 == [.muteChanged(true)])
        let e6 = mirror.apply("speed", .double(1), fromSetter: false)
        #expect(e6 == [])
        let e7 = mirror.apply("speed", .double(1.5), fromSetter: false)
        #expect(e7 == [.speedChanged(1.5)])
        let e8 = mirror.apply("loop-file", .string("no"), fromSetter: false)
        #expect(e8 == [])
        let e9 = mirror.apply("loop-file", .string("inf"), fromSetter: false)
        #expect(e9 == [.loopModeChanged(.forever)])
        let e10 = mirror.apply("loop-file", .int(2), fromSetter: false)
        #expect(e10 == [.loopModeChanged(.playCount(3))])
    }

    @Test("a setter's value is reported even before mpv's first report; a first fullscreen true is a change")
    func settersAndFullscreen() {
        var mirror = SettingsMirror()
        let e11 = mirror.apply("volume", .double(70), fromSetter: true)
        #expect(e11 == [.volumeChanged(70)])
        var windowed = SettingsMirror()
        let e12 = windowed.apply("fullscreen", .flag(false), fromSetter: false)
        #expect(e12 == [])
        var fullscreen = SettingsMirror()
        let e13 = fullscreen.apply("fullscreen", .flag(true), fromSetter: false)
        #expect(e13 == [.fullscreenStateChanged(true)])
        #expect(fullscreen.isFullscreen == true)
    }

    @Test("the playlist starts empty, so the first filled report is a change; size, title and the rest are read-outs only")
    func playlistAndReadOuts() {
        var mirror = SettingsMirror()
        #expect(mirror.playlist == PlaylistPosition(index: nil, count: 0))
        let e14 = mirror.apply("playlist-count", .int(2), fromSetter: false)
        #expect(e14 == [.playlistChanged(PlaylistPosition(index: nil, count: 2))])
        let e15 = mirror.apply("playlist-pos", .int(0), fromSetter: false)
        #expect(e15 == [.playlistChanged(PlaylistPosition(index: 0, count: 2))])
        let e16 = mirror.apply("width", .int(320), fromSetter: false)
        #expect(e16 == [])
        #expect(mirror.videoSize == nil)
        let e17 = mirror.apply("height", .int(240), fromSetter: false)
        #expect(e17 == [])
        #expect(mirror.videoSize == VideoSize(width: 320, height: 240))
        mirror.itemStarted()
        #expect(mirror.videoSize == nil)
        let e18 = mirror.apply("media-title", .string("clip"), fromSetter: false)
        #expect(e18 == [] && mirror.mediaTitle == "clip")
        let e19 = mirror.apply("play-dir", .string("backward"), fromSetter: false)
        #expect(e19 == [] && mirror.playbackDirection == .backward)
        let e20 = mirror.apply("hwdec", .string("no"), fromSetter: false)
        #expect(e20 == [] && mirror.isHardwareDecodingEnabled == false)
        let e21 = mirror.apply("volume-max", .double(130), fromSetter: false)
        #expect(e21 == [] && mirror.volumeMaximum == 130)
        // Not a setting: the composer's.
        let e22 = mirror.apply("duration", .double(4), fromSetter: false)
        #expect(e22 == nil)
        let e23 = mirror.apply("track-list", .none, fromSetter: false)
        #expect(e23 == nil)
    }
}
