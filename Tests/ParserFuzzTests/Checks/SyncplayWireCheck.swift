import Foundation
@testable import PlayerKitRooms

/// ``ParserFuzzTarget/syncplayWire``: a line a room server sent, as the connection hands it over
/// (valid UTF-8, trimmed), or the values of messages written for a round trip.
///
/// Checks: a refusal is ``RoomError/malformedMessage(line:reason:)`` naming the line; a decoded
/// state's position is finite and not negative, its ping fields finite; a `State` and a `Hello`
/// written by PlayerKit's encoder read back as the values written.
enum SyncplayWireCheck {
    static func check(_ bytes: [UInt8]) -> Violations {
        var violations = Violations()
        var input = FuzzInput(bytes)
        switch input.byte() % 2 {
        case 0:
            guard let line = String(validating: input.rest(), as: UTF8.self) else { return violations }
            decode(line.trimmingCharacters(in: .whitespacesAndNewlines), &violations)
        default:
            roundTrip(&input, &violations)
        }
        return violations
    }

    static func decode(_ line: String, _ violations: inout Violations) {
        let messages: [SyncplayWire.ServerMessage]
        do {
            messages = try SyncplayWire.decode(line)
        } catch {
            if case .malformedMessage(let named, _) = error {
                violations.expect(named == line, "a refusal names another line")
            } else {
                violations.expect(false, "decoding refused with \(error), not malformedMessage")
            }
            return
        }
        for message in messages {
            guard case .state(let state) = message else { continue }
            if let play = state.playState {
                violations.expect(play.position.isFinite && play.position >= 0, "a position of \(play.position)")
            }
            for value in [state.ping.latencyCalculation, state.ping.serverRtt, state.ping.clientLatencyCalculation] {
                violations.expect(value?.isFinite ?? true, "a ping field of \(String(describing: value))")
            }
        }
    }

    static func roundTrip(_ input: inout FuzzInput, _ violations: inout Violations) {
        let position = abs(input.double()), timestamp = input.double(), rtt = input.double()
        guard position.isFinite, timestamp.isFinite, rtt.isFinite else { return }
        let play = SyncplayWire.PlayState(position: position, paused: input.bool(), doSeek: input.bool(), setBy: nil)
        let latency: Double? = input.bool() ? Double(input.int64()) : nil
        let ignoringServer = Int(input.byte()), ignoringClient = Int(input.byte())
        let line = SyncplayWire.state(playState: play, latencyCalculation: latency, clientTimestamp: timestamp, clientRtt: rtt,
                                      ignoringServer: ignoringServer, ignoringClient: ignoringClient)
        do {
            let messages = try SyncplayWire.decode(line)
            guard messages.count == 1, case .state(let state) = messages[0] else {
                violations.expect(false, "\(line) read as \(messages)")
                return
            }
            violations.expect(state.playState == play, "\(play) written as \(line), read as \(String(describing: state.playState))")
            violations.expect(state.ping.latencyCalculation == latency && state.ping.clientLatencyCalculation == timestamp,
                              "ping \(String(describing: latency)), \(timestamp) written as \(line), read as \(state.ping)")
            violations.expect(state.ignoringServer == (ignoringServer > 0 ? ignoringServer : nil)
                              && state.ignoringClient == (ignoringClient > 0 ? ignoringClient : nil), "on-the-fly counters of \(line)")
        } catch {
            violations.expect(false, "\(line), written by PlayerKit, refused: \(error)")
        }
        let username = input.string(upTo: 64), room = input.string(upTo: 64)
        let hello = SyncplayWire.hello(username: username, room: room, passwordHash: nil)
        do {
            let messages = try SyncplayWire.decode(hello)
            violations.expect(messages == [.hello(username: username, room: room, version: SyncplayWire.realVersion, motd: nil)],
                              "\(hello) read as \(messages)")
        } catch {
            violations.expect(false, "\(hello), written by PlayerKit, refused: \(error)")
        }
    }
}
