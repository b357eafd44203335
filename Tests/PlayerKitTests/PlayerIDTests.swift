@testable import PlayerKitCore
import Foundation
import Testing
import PlayerKit

@Suite("PlayerID", .timeLimit(.minutes(4)))
struct PlayerIDTests {
    @Test func literalRandomAndValidation() throws {
        let id: PlayerID = "main"
        #expect(id.description == "main")
        #expect(PlayerID.random() != PlayerID.random())
        #expect(throws: PlayerError.invalidID("")) { try PlayerID(validating: "") }
        #expect(throws: PlayerError.invalidID("  \t")) { try PlayerID(validating: "  \t") }
        #expect(try PlayerID(validating: "feed-3").rawValue == "feed-3")
    }

    @Test func codableRoundTripAndRejectsInvalid() throws {
        let data = try JSONEncoder().encode(["a": PlayerID("main")])
        #expect(String(decoding: data, as: UTF8.self) == #"{"a":"main"}"#)
        #expect(try JSONDecoder().decode([String: PlayerID].self, from: data)["a"] == "main")
        #expect(throws: DecodingError.self) { try JSONDecoder().decode([PlayerID].self, from: Data(#"[" "]"#.utf8)) }
    }
}
