import Foundation
@testable import PlayerKitCore
@testable import PlayerKitMPRIS
import PlayerKitTesting

/// ``ParserFuzzTarget/mprisRequest``: what D-Bus clients can send a published player (every
/// method and property set, with any numbers, track IDs and strings: NaN, the infinities, the
/// largest and smallest Int64 microseconds), against a player brought into any state by the
/// events a player can report (durations and positions of any size, as a malformed file can make
/// mpv report them); and bus names as the bus can show them.
///
/// Checks: a command handed to the player is within its domain (a seek to a finite position from
/// 0, within a known duration; a finite volume from 0; a rate within ``PlayerCommand/speedRange``);
/// every property a client can read has a value; an ID escaped into a bus name reads back as
/// itself.
enum MPRISRequestCheck {
    static let names = ["PlaybackStatus", "LoopStatus", "Rate", "Metadata", "Volume", "Position", "MinimumRate",
                        "MaximumRate", "CanGoNext", "CanGoPrevious", "CanPlay", "CanPause", "CanSeek", "CanControl"]

    /// The player the model starts from (idle, nothing loaded); the events move it on.
    static let player: FakePlayer? = try? FakePlayer(id: "mpris-fuzz", clock: ManualClock())

    static func check(_ bytes: [UInt8]) -> Violations {
        var violations = Violations()
        guard let player else {
            violations.expect(false, "no fake player")
            return violations
        }
        var input = FuzzInput(bytes)
        let start = ContinuousClock.now
        var now = start
        var model = MPRISPlayerModel(player: player, now: now)
        for _ in 0..<Int(input.byte() % 16) {
            now += .milliseconds(Int64(input.uint16()))
            _ = model.apply(event(&input), at: now)
        }
        let controls = MPRISControls(rawValue: Int(input.uint16()))
        for name in names {
            violations.expect(model.playerProperty(name, controls: controls, now: now) != nil, "\(name) has no value")
        }
        for _ in 0..<Int(1 + input.byte() % 4) {
            let request = self.request(&input, model: model)
            let decision = model.decide(request, controls: controls, appHandles: MPRISControls(rawValue: Int(input.byte())),
                                        isShutDown: input.byte() == 0xFF, now: now)
            let command: PlayerCommand?
            switch decision {
            case .command(let given): command = given
            case .forward(let given): command = given
            case .ignore(let reason):
                command = nil
                violations.expect(!reason.isEmpty, "\(request) ignored with no reason")
            case .refuse(let refusal):
                command = nil
                violations.expect(!refusal.description.isEmpty && refusal.dbusName.hasPrefix("org.playerkit.MPRIS."), "\(request) refused as \(refusal)")
            }
            switch command {
            case .seek(let position, _)?:
                violations.expect(position.isFinite && position >= 0, "\(request) seeks to \(position)")
                if let duration = model.duration, duration.isFinite, duration >= 0 {
                    violations.expect(position <= max(duration, 0), "\(request) seeks to \(position), past the duration \(duration)")
                }
            case .setVolume(let volume)?:
                violations.expect(volume.isFinite && volume >= 0, "\(request) sets the volume \(volume)")
            case .setSpeed(let speed)?:
                violations.expect(PlayerCommand.speedRange.contains(speed), "\(request) sets the speed \(speed)")
            default:
                break
            }
            _ = request.description
        }
        // An ID as a bus name element, and back.
        let text = input.string(upTo: 300)
        if let id = try? PlayerID(validating: text) {
            let element = MPRISBusName.escape(id)
            violations.expect(MPRISBusName.unescape(element) == id, "\(id) escaped as \(element) reads back as \(String(describing: MPRISBusName.unescape(element)))")
        }
        _ = MPRISBusName.unescape(input.string(upTo: 300))
        return violations
    }

    static func event(_ input: inout FuzzInput) -> PlayerEvent {
        let states: [PlayerState] = [.idle, .loading, .ready, .playing, .paused, .buffering]
        switch input.byte() % 9 {
        case 0: return .stateChanged(from: input.pick(states), to: input.pick(states))
        case 1: return .positionChanged(number(&input))
        case 2: return .durationKnown(number(&input))
        case 3: return .mediaLoaded(MediaInfo(source: input.string(upTo: 64), duration: input.bool() ? number(&input) : nil,
                                             videoSize: nil, title: input.bool() ? input.string(upTo: 64) : nil, tracks: []))
        case 4: return .seekCompleted(position: input.bool() ? number(&input) : nil)
        case 5: return .speedChanged(number(&input))
        case 6: return .volumeChanged(number(&input))
        case 7: return .loopModeChanged(input.pick([.off, .forever, .playCount(Int(input.int64()))]))
        default:
            let count = Int(input.int64())
            return .playlistChanged(PlaylistPosition(index: input.bool() ? Int(input.int64()) : nil, count: count))
        }
    }

    /// A number as a player could report it: any double, or one near a boundary.
    static func number(_ input: inout FuzzInput) -> Double {
        input.pick([input.double(), Double(input.int64()) / 1_000_000, Double(input.byte()), 9.3e12, -1, .greatestFiniteMagnitude])
    }

    static func request(_ input: inout FuzzInput, model: MPRISPlayerModel) -> MPRISRequest {
        switch input.byte() % 15 {
        case 0: return .play
        case 1: return .pause
        case 2: return .playPause
        case 3: return .stop
        case 4: return .next
        case 5: return .previous
        // As BusLoop reads them: Int64 microseconds.
        case 6: return .seek(by: Double(input.int64()) / 1_000_000)
        case 7: return .setPosition(Double(input.int64()) / 1_000_000, trackID: input.bool() ? model.trackID : input.string(upTo: 64))
        case 8: return .setVolume(number(&input))
        case 9: return .setRate(number(&input))
        case 10: return .setLoopStatus(input.pick(["None", "Track", "Playlist", input.string(upTo: 32)]))
        case 11: return .setFullscreen(input.bool())
        case 12: return .openURI(input.string(upTo: 256))
        case 13: return .raise
        default: return .quit
        }
    }
}
