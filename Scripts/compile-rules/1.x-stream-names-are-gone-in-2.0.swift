// expect-error: cannot find type 'PlayerEventStream' in scope
// 2.0 removed 1.x's deprecated stream names: code that spells them fails with an error naming
// the name, and Migrating.md gives its replacement (EventStream<PlayerEventRecord>).
import PlayerKitCore

func oldName(player: Player) {
    let events: PlayerEventStream = player.events()
    _ = events
}
