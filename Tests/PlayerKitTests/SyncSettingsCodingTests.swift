import Foundation
import PlayerKitCore
import PlayerKitSync
import Testing

/// What a group's settings save (issue 67, item 1): the settings, never the correction's own
/// constants, and nothing out of range gets back in.
@Suite("Sync settings: saved and read back", .timeLimit(.minutes(1)))
struct SyncSettingsCodingTests {
    @Test("the saved form has the settings and none of the correction's constants; it reads back equal")
    func savedForm() throws {
        var settings = SyncSettings()
        settings.realignThreshold = .milliseconds(400)
        settings.mediaOffsets = ["b": .milliseconds(120)]
        settings.clockDrifts = ["b": 35]
        let data = try JSONEncoder().encode(settings)
        let keys = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any]).keys.sorted()
        #expect(keys == ["alignedTolerance", "clockDrifts", "correctsSkew", "driftReportInterval", "holdThreshold",
                         "maximumSpeedTrim", "mediaOffsets", "realignThreshold", "skewWindow", "unrelatedTimestampThreshold"])
        #expect(try JSONDecoder().decode(SyncSettings.self, from: data) == settings)
    }

    @Test("1.x's saved constants (seekLead, trimGain, deadBand, startLatency, jumpThreshold) are ignored, whatever they say")
    func oldConstantsIgnored() throws {
        let old = #"{"realignThreshold":[0,300000000000000000],"seekLead":[-5,0],"trimGain":1e9,"deadBand":[0,0],"startLatency":[99,0],"jumpThreshold":[0,0]}"#
        let decoded = try JSONDecoder().decode(SyncSettings.self, from: Data(old.utf8))
        #expect(decoded == SyncSettings())
    }

    @Test("a saved setting out of range is refused as it is read, naming the setting and its value")
    func outOfRangeRefused() throws {
        var settings = SyncSettings()
        settings.maximumSpeedTrim = 3
        let data = try JSONEncoder().encode(settings)
        do {
            _ = try JSONDecoder().decode(SyncSettings.self, from: data)
            Issue.record("maximumSpeedTrim 3 was read back")
        } catch DecodingError.dataCorrupted(let context) {
            #expect(context.debugDescription.contains("maximumSpeedTrim") && context.debugDescription.contains("3"), "\(context.debugDescription)")
            #expect(context.underlyingError as? PlayerError != nil)
        }
    }
}
