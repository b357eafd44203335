// swift-tools-version: 6.3
// A package that uses PlayerKit the way an app does, with the lines README.md gives. `make test`
// builds and runs it (Scripts/check-consumer.sh) next to a checkout named PlayerKit, so the
// README's lines and snippet cannot drift from what compiles.
import PackageDescription

let package = Package(
    name: "Consumer",
    dependencies: [
        .package(path: "../PlayerKit"),
    ],
    targets: [
        .executableTarget(name: "Consumer", dependencies: [
            // Players, events, the bus and the in-process features (fullscreen, budgets, loops,
            // sync, feed, sequencer, frames): no network code. The media cache and Syncplay
            // rooms are products of their own ("PlayerKitCache", "PlayerKitRooms").
            .product(name: "PlayerKit", package: "PlayerKit"),
        ]),
    ]
)
