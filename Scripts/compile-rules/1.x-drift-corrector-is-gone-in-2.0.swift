// expect-error: cannot find 'DriftCorrector' in scope
// 2.0 removed 1.0's deprecated DriftCorrector and the initializers that took its settings: code
// that spells it fails with an error naming it, and Migrating.md gives the SyncSettings fields
// that replace its settings' (seekThreshold is realignThreshold, and so on).
import PlayerKitCore
import PlayerKitSync

func oldSettings(players: [Player]) throws {
    var corrector = DriftCorrector.Settings()
    corrector.seekThreshold = 0.5
    _ = try SyncGroup(players: players, settings: corrector)
}
