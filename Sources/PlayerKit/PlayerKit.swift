// The PlayerKit umbrella: `import PlayerKit` gives an app the core and every in-process
// feature (fullscreen, budgets and loops, sync groups, the feed, the sequencer, posters, frames), as
// `import NIO` gives NIOCore and NIOPosix. It builds no network code: the media cache
// (PlayerKitCache, on libcurl and SQLite) and Syncplay rooms (PlayerKitRooms, on OpenSSL) are
// products of their own, imported by the apps that use them. Each module can also be imported
// on its own (for example only `PlayerKitCore`, to build an orchestration of your own).

@_exported import PlayerKitCore
@_exported import PlayerKitDisplay
@_exported import PlayerKitFeed
@_exported import PlayerKitPosters
@_exported import PlayerKitResources
@_exported import PlayerKitSequencer
@_exported import PlayerKitSync
