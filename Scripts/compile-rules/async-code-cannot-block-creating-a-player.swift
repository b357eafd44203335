// expect-error: unavailable from asynchronous contexts
// Async code that creates a player with the blocking initializer is refused by the compiler
// (issue 51): it must use Player.create, which leaves Swift's cooperative pool free.
import PlayerKitCore

func makePlayer() async throws -> Player {
    try Player(id: "main")
}
