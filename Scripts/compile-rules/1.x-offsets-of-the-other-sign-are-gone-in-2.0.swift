// expect-error: value of type 'SyncGroup' has no member 'setOffset'
// 2.0 has one offset sign, the media offset (the member's media time minus the group's). 1.x's
// setOffset took the other sign: code that calls it fails to compile instead of placing a member
// the wrong way, and Migrating.md gives setMediaOffset with the value negated.
import PlayerKitCore
import PlayerKitSync

func oldSign(group: SyncGroup, id: PlayerID) throws {
    try group.setOffset(.seconds(-2), for: id)
}
