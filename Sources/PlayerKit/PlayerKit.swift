// The PlayerKit umbrella: `import PlayerKit` gives an app the core and every feature, as
// `import NIO` gives NIOCore and NIOPosix. Each module can also be imported on its own
// (for example only `PlayerKitCore`, to build an orchestration of your own on the core).

@_exported import PlayerKitCache
@_exported import PlayerKitCore
@_exported import PlayerKitDisplay
@_exported import PlayerKitFeed
@_exported import PlayerKitResources
@_exported import PlayerKitRooms
@_exported import PlayerKitSequencer
@_exported import PlayerKitSupport
@_exported import PlayerKitSync
