// expect-ok
// Synchronous code (an app's main thread at startup, a tool's main) may block for the core's
// creation; async code awaits Player.create.
import PlayerKitCore

func makePlayer() throws -> Player {
    try Player(id: "main")
}

func makePlayerFromAsyncCode() async throws -> Player {
    try await Player.create(id: "main")
}
