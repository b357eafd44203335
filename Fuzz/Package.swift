// swift-tools-version: 6.3
import PackageDescription

/// PlayerKit's fuzz targets: one executable per parser of bytes from outside the process, each
/// libFuzzer over the checks in ../Tests/ParserFuzzTests/Checks (Sources/FuzzChecks links there),
/// which the main package's tests replay on Fuzz/Corpus in the normal build. A package of its own
/// so the main build never needs the sanitizer: `make fuzz` (Scripts/fuzz.sh) builds it in release
/// mode with AddressSanitizer, libFuzzer's coverage and testable imports.
let targets: [(name: String, folder: String)] = [
    ("FuzzHLSPlaylist", "hls-playlist"), ("FuzzSegmentTimestamps", "segment-timestamps"), ("FuzzCacheHTTP", "cache-http"),
    ("FuzzMP4Header", "mp4-header"), ("FuzzSyncplayWire", "syncplay-wire"), ("FuzzMPRISRequest", "mpris-request"),
]

let package = Package(
    name: "PlayerKitFuzz",
    products: targets.map { .executable(name: $0.name, targets: [$0.name]) },
    dependencies: [.package(name: "PlayerKit", path: "..")],
    targets: [
        .target(
            name: "FuzzChecks",
            dependencies: [
                .product(name: "PlayerKitCore", package: "PlayerKit"), .product(name: "PlayerKitHLS", package: "PlayerKit"),
                .product(name: "PlayerKitCache", package: "PlayerKit"), .product(name: "PlayerKitRooms", package: "PlayerKit"),
                .product(name: "PlayerKitMPRIS", package: "PlayerKit"), .product(name: "PlayerKitTesting", package: "PlayerKit"),
            ],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        .target(name: "CFuzzDriver"),
        .target(name: "FuzzDriver", dependencies: ["CFuzzDriver", "FuzzChecks"], swiftSettings: [.swiftLanguageMode(.v6)]),
    ] + targets.map {
        .executableTarget(name: $0.name, dependencies: ["FuzzChecks", "FuzzDriver"], swiftSettings: [.swiftLanguageMode(.v6)])
    }
)
