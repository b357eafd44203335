// swift-tools-version: 6.2
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
            // Players, events and the bus: the lightest product (no network stack). The umbrella
            // "PlayerKit" adds every feature; each feature is a product of its own too.
            .product(name: "PlayerKitCore", package: "PlayerKit"),
        ]),
    ]
)
