// swift-tools-version: 6.3
import Foundation
import PackageDescription

/// Settings applied to every Swift target of the package: Swift 6 language mode (strict
/// concurrency is part of it). Warnings are errors only in the project's own builds (`make`
/// exports `PLAYERKIT_WARNINGS_AS_ERRORS=1`), never in an app that depends on PlayerKit: a
/// warning a newer compiler finds in PlayerKit must not break the app's build.
let strictSettings: [SwiftSetting] = [.swiftLanguageMode(.v6)]
    + (Context.environment["PLAYERKIT_WARNINGS_AS_ERRORS"] == "1" ? [.treatAllWarnings(as: .error)] : [])

/// The layers, as swift-nio splits NIOCore, NIOPosix and the NIO umbrella. Each target may
/// import only what it lists (`make test` builds with
/// `--explicit-target-dependency-import-check error`), so the compiler keeps the layering:
///
///     CMPV (C)            PlayerKitSupport (leaf: `package` helpers, imports nothing of PlayerKit)
///        \                 /
///         PlayerKitCore    (engine, Player, events, bus, delegate; only its Engine imports CMPV)
///        /      |      \        \          \            \                    \
///   Display  Resources  Sync     Feed (-> Resources)  Sequencer  Posters   Cache (CCurl, CSQLite)  Rooms (-> Sync; COpenSSL)  HLS (-> Sync; CCurl)  MPRIS (CSDBus)
///        \      |      /        /          /
///         PlayerKit        (umbrella of the in-process features: no network code)
///
/// Products: `PlayerKit` (players and the in-process features), `PlayerKitCache`,
/// `PlayerKitRooms` and `PlayerKitHLS` (network features, each on its own), `PlayerKitMPRIS` (the desktop, on its own), `PlayerKitTesting` (fakes for apps'
/// tests), and each module. The feed precaches through the core's `MediaPrecaching`, which the
/// cache's `MediaCache` conforms to: the app wires one to the other, the feed imports no cache.
/// GTK 4's header folders for the GTK example (`-Xcc -I...`), from `pkg-config --cflags-only-I
/// gtk4`; none when GTK 4 is not installed (then only playerkit-compare fails to build, naming
/// the missing header). Unsafe flags are allowed here: no product of the package contains the
/// example, so no app that depends on PlayerKit ever builds it.
let gtkHeaderFlags: [String] = {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = ["pkg-config", "--cflags-only-I", "gtk4"]
    let output = Pipe()
    process.standardOutput = output
    process.standardError = FileHandle.nullDevice
    guard (try? process.run()) != nil else { return [] }
    let data = output.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    guard process.terminationStatus == 0 else { return [] }
    return String(decoding: data, as: UTF8.self).split(whereSeparator: \.isWhitespace)
        .filter { $0.hasPrefix("-I") }.flatMap { ["-Xcc", String($0)] }
}()

let featureDependencies: [Target.Dependency] = ["PlayerKitCore", "PlayerKitSupport"]

let package = Package(
    name: "PlayerKit",
    // Linux only (Glibc, glibc's malloc, X11, libmpv from the distribution): SwiftPM has no way
    // to declare Linux, so no platform is listed; nothing here builds for Apple platforms.
    products: [
        .library(name: "PlayerKit", targets: ["PlayerKit"]),
        .library(name: "PlayerKitCore", targets: ["PlayerKitCore"]),
        .library(name: "PlayerKitDisplay", targets: ["PlayerKitDisplay"]),
        .library(name: "PlayerKitResources", targets: ["PlayerKitResources"]),
        .library(name: "PlayerKitSync", targets: ["PlayerKitSync"]),
        .library(name: "PlayerKitFeed", targets: ["PlayerKitFeed"]),
        .library(name: "PlayerKitSequencer", targets: ["PlayerKitSequencer"]),
        .library(name: "PlayerKitPosters", targets: ["PlayerKitPosters"]),
        .library(name: "PlayerKitCache", targets: ["PlayerKitCache"]),
        .library(name: "PlayerKitRooms", targets: ["PlayerKitRooms"]),
        // Live HLS angles on one timeline (their playlists' PROGRAM-DATE-TIME, over libcurl): on
        // its own, so a multi-view without it links no HTTP client.
        .library(name: "PlayerKitHLS", targets: ["PlayerKitHLS"]),
        // Players on the desktop through MPRIS over D-Bus (the system's sd-bus): on its own, so
        // an app without it links no libsystemd.
        .library(name: "PlayerKitMPRIS", targets: ["PlayerKitMPRIS"]),
        .library(name: "PlayerKitAnalysis", targets: ["PlayerKitAnalysis"]),
        // Test support for apps: FakePlayer and ManualClock (no mpv cores, no wall clock).
        .library(name: "PlayerKitTesting", targets: ["PlayerKitTesting"]),
        .executable(name: "playerkit-two-players", targets: ["TwoPlayers"]),
        .executable(name: "playerkit-player-monitor", targets: ["PlayerMonitor"]),
        .executable(name: "playerkit-live-cameras", targets: ["LiveCameras"]),
        .executable(name: "playerkit-fullscreen-policy", targets: ["FullscreenPolicy"]),
        .executable(name: "playerkit-background-loop", targets: ["BackgroundLoop"]),
        .executable(name: "playerkit-ab-compare", targets: ["ABCompare"]),
        .executable(name: "playerkit-feed", targets: ["Feed"]),
        .executable(name: "playerkit-mosaic", targets: ["Mosaic"]),
        .executable(name: "playerkit-sequencer", targets: ["Sequencer"]),
        .executable(name: "playerkit-room", targets: ["Room"]),
        .executable(name: "playerkit-compare", targets: ["Compare"]),
        .executable(name: "playerkit-multiview", targets: ["MultiViewApp"]),
        .executable(name: "playerkit-quality", targets: ["Quality"]),
        .executable(name: "playerkit-bench", targets: ["PlayerKitBench"]),
        // Players' statistics and events through apple/swift-metrics (issue 68): on its own, so
        // an app that reports nothing builds no metrics package.
        .library(name: "PlayerKitMetrics", targets: ["PlayerKitMetrics"]),
        .executable(name: "playerkit-metrics-server", targets: ["MetricsServer"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-collections", from: "1.6.0"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        // Only the metrics example and the tests: the product takes whatever backend the app has.
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
    ],
    targets: [
        // The only C boundary: libmpv's client API (Debian/Ubuntu: apt-get install libmpv-dev).
        // No `pkgConfig: "mpv"` here on purpose: Debian's mpv.pc pulls -D_REENTRANT in through
        // Requires.private, which SwiftPM rejects with a "prohibited flag" warning on every
        // build. The headers live in /usr/include and the modulemap links libmpv itself.
        .systemLibrary(name: "CMPV"),
        // The media cache's index: the system's SQLite (Debian/Ubuntu: libsqlite3-dev). Its C API
        // directly: the index is two tables and six statements, and GRDB cost 10-15 s of every
        // clean build for them.
        .systemLibrary(name: "CSQLite"),
        // The media cache's HTTP: the system's libcurl (Debian/Ubuntu: libcurl4-openssl-dev),
        // one transfer per thread. AsyncHTTPClient built SwiftNIO's HTTP/1 and HTTP/2 stacks,
        // swift-algorithms, swift-configuration and more for the cache's one kind of request.
        .systemLibrary(name: "CCurl"),
        // Syncplay rooms' TLS (STARTTLS): the system's OpenSSL (Debian/Ubuntu: libssl-dev), on a
        // connection's own thread. swift-nio-ssl compiled BoringSSL (406 C files, about 100 s of
        // every clean build on 2 cores) and SwiftNIO for one line-based connection per room.
        .systemLibrary(name: "COpenSSL"),
        // MPRIS's D-Bus: the system's sd-bus (Debian/Ubuntu: libsystemd-dev), with the two MPRIS
        // interface tables built in C (sd-bus's table macros cannot be used from Swift).
        .systemLibrary(name: "CSDBus"),
        // Comparisons' decoding: FFmpeg's libraries (Debian/Ubuntu: libavformat-dev,
        // libavcodec-dev, libswscale-dev; libmpv is built on them, so they are on every machine
        // that plays). Only PlayerKitAnalysis links them.
        .systemLibrary(name: "CFFmpeg"),
        // FFmpeg's log callback, which Swift cannot declare (it takes a `va_list`): found in the
        // process at run time (libmpv links libavutil), so the core links nothing of FFmpeg's.
        .target(name: "CFFmpegLog"),
        // Helpers every layer may use; imports nothing of PlayerKit. Not a product and not public
        // API: its declarations are `package` (the one module where check-layers allows that).
        .target(name: "PlayerKitSupport", swiftSettings: strictSettings),
        // The core: the only module that talks to libmpv (and, inside it, only Engine/).
        .target(
            name: "PlayerKitCore",
            dependencies: [
                "CMPV", "CFFmpegLog", "PlayerKitSupport",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "DequeModule", package: "swift-collections"),
            ],
            swiftSettings: strictSettings
        ),
        // Features, written against the core's public API as an app would write its own.
        .target(name: "PlayerKitDisplay", dependencies: featureDependencies, swiftSettings: strictSettings),
        .target(
            name: "PlayerKitResources",
            dependencies: featureDependencies + [.product(name: "DequeModule", package: "swift-collections")],
            swiftSettings: strictSettings
        ),
        .target(
            name: "PlayerKitSync",
            dependencies: featureDependencies + [.product(name: "DequeModule", package: "swift-collections")],
            swiftSettings: strictSettings
        ),
        // The media cache shared by every player: streams served to mpv through the core's
        // MediaStreamProvider, one download per key, an index that survives crashes.
        .target(
            name: "PlayerKitCache",
            dependencies: featureDependencies + [
                .product(name: "Logging", package: "swift-log"),
                "CSQLite",
                "CCurl",
            ],
            swiftSettings: strictSettings
        ),
        .target(
            name: "PlayerKitFeed",
            dependencies: featureDependencies + ["PlayerKitResources"],
            swiftSettings: strictSettings
        ),
        // Rooms across processes and machines: a client of Syncplay's protocol and a follower
        // that keeps players on a room's clock.
        .target(
            name: "PlayerKitRooms",
            dependencies: featureDependencies + [
                "PlayerKitSync",
                .product(name: "Logging", package: "swift-log"),
                "COpenSSL",
            ],
            swiftSettings: strictSettings
        ),
        // Live HLS angles on one timeline: reads playlists and segments (the system's libcurl)
        // to give a multi-view's members their offsets.
        .target(
            name: "PlayerKitHLS",
            dependencies: featureDependencies + ["PlayerKitSync", "CCurl"],
            swiftSettings: strictSettings
        ),
        .target(
            name: "PlayerKitSequencer",
            dependencies: featureDependencies + [.product(name: "Logging", package: "swift-log")],
            swiftSettings: strictSettings
        ),
        // Poster frames for many items from a small pool of players.
        .target(name: "PlayerKitPosters", dependencies: featureDependencies, swiftSettings: strictSettings),
        // Each published player an MPRIS media player on the session bus, named by its ID.
        .target(
            name: "PlayerKitMPRIS",
            dependencies: featureDependencies + [.product(name: "Logging", package: "swift-log"), "CSDBus"],
            swiftSettings: strictSettings
        ),
        // Every player's statistics and events as swift-metrics counters, gauges and timers,
        // dimensioned by player ID and the app's labels; the backend is the app's.
        .target(
            name: "PlayerKitMetrics",
            dependencies: featureDependencies + [.product(name: "CoreMetrics", package: "swift-metrics")],
            swiftSettings: strictSettings
        ),
        .executableTarget(
            name: "MetricsServer",
            dependencies: [
                "PlayerKit", "PlayerKitMetrics", "ExampleSupport",
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "Examples/MetricsServer",
            exclude: ["README.md"],
            swiftSettings: strictSettings
        ),
        // Comparisons by the numbers: frame-by-frame PSNR and SSIM of an encode against its
        // reference, and recordings aligned by their sound or pictures, decoded by FFmpeg faster
        // than real time; a sync group's members put where their recordings meet (so it builds
        // on Sync). A product of its own: an app that only plays builds and links none of it.
        .target(
            name: "PlayerKitAnalysis",
            dependencies: ["PlayerKitCore", "PlayerKitSync", "PlayerKitSupport", "CFFmpeg", "CFFmpegLog", .product(name: "Logging", package: "swift-log")],
            swiftSettings: strictSettings
        ),
        // A fake player and a manual clock, for tests of features and apps' orchestration.
        .target(name: "PlayerKitTesting", dependencies: featureDependencies, swiftSettings: strictSettings),
        // The umbrella: `import PlayerKit` keeps working for apps.
        .target(
            name: "PlayerKit",
            dependencies: [
                "PlayerKitCore", "PlayerKitDisplay", "PlayerKitResources", "PlayerKitSync", "PlayerKitFeed",
                "PlayerKitSequencer", "PlayerKitPosters",
            ],
            swiftSettings: strictSettings
        ),
        // What the examples share (media paths, the --json line format). Not a product.
        .target(
            name: "ExampleSupport",
            dependencies: [
                "PlayerKit",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Examples/ExampleSupport",
            swiftSettings: strictSettings
        ),
        .executableTarget(
            name: "TwoPlayers",
            dependencies: [
                "PlayerKit", "ExampleSupport",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "Examples/TwoPlayers",
            exclude: ["README.md"],
            swiftSettings: strictSettings
        ),
        .executableTarget(
            name: "PlayerMonitor",
            dependencies: [
                "PlayerKit", "ExampleSupport",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "Examples/PlayerMonitor",
            exclude: ["README.md"],
            swiftSettings: strictSettings
        ),
        .executableTarget(
            name: "LiveCameras",
            dependencies: [
                "PlayerKit", "ExampleSupport",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "Examples/LiveCameras",
            exclude: ["README.md"],
            swiftSettings: strictSettings
        ),
        .executableTarget(
            name: "FullscreenPolicy",
            dependencies: [
                "PlayerKit", "ExampleSupport",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "Examples/FullscreenPolicy",
            exclude: ["README.md"],
            swiftSettings: strictSettings
        ),
        .executableTarget(
            name: "BackgroundLoop",
            dependencies: [
                "PlayerKit", "ExampleSupport",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "Examples/BackgroundLoop",
            exclude: ["README.md"],
            swiftSettings: strictSettings
        ),
        // An encode against its reference for an encoder's CI: the analysis product alone (no
        // player, no libmpv), thresholds that set the exit status.
        .executableTarget(
            name: "Quality",
            dependencies: ["PlayerKitAnalysis", .product(name: "ArgumentParser", package: "swift-argument-parser")],
            path: "Examples/Quality",
            swiftSettings: strictSettings
        ),
        .executableTarget(
            name: "ABCompare",
            dependencies: [
                "PlayerKit", "ExampleSupport",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "Examples/ABCompare",
            exclude: ["README.md"],
            swiftSettings: strictSettings
        ),
        .executableTarget(
            name: "Feed",
            dependencies: [
                "PlayerKit", "PlayerKitCache", "ExampleSupport", "CGLHost",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "Examples/Feed",
            exclude: ["README.md"],
            swiftSettings: strictSettings
        ),
        // What the OpenGL examples host players in (an app's own toolkit, not PlayerKit's):
        // SDL2, EGL and OpenGL from Debian (libsdl2-dev, libegl-dev, libopengl-dev).
        .systemLibrary(name: "CGLHost", path: "Examples/CGLHost"),
        .executableTarget(
            name: "Mosaic",
            dependencies: [
                "PlayerKit", "ExampleSupport", "CGLHost",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "Examples/Mosaic",
            exclude: ["README.md"],
            swiftSettings: strictSettings
        ),
        .executableTarget(
            name: "Sequencer",
            dependencies: [
                "PlayerKit", "ExampleSupport", "CGLHost",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "Examples/Sequencer",
            exclude: ["README.md"],
            swiftSettings: strictSettings
        ),
        // The GTK 4 example's toolkit: GTK 4's C API from Debian (libgtk-4-dev) and OpenGL.
        // Its header folders come from pkg-config (`gtkHeaderFlags`), not from `pkgConfig: "gtk4"`:
        // gtk4.pc's flags include -pthread and -msse, which SwiftPM rejects with a warning on
        // every build. The modulemap links the libraries.
        .systemLibrary(name: "CGTK", path: "Examples/CGTK"),
        // Swift closures on GTK signals and GTK's main loop, shared by the GTK examples.
        // Camera angles in lockstep in one GTK 4 window (issue 42).
        .executableTarget(
            name: "MultiViewApp",
            dependencies: [
                "PlayerKit", "PlayerKitHLS", "PlayerKitMPRIS", "ExampleSupport", "CGTK", "GTKSupport",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "Examples/MultiView",
            exclude: ["README.md"],
            swiftSettings: strictSettings + [.unsafeFlags(gtkHeaderFlags)]
        ),
        .target(
            name: "GTKSupport",
            dependencies: ["CGTK"],
            path: "Examples/GTKSupport",
            swiftSettings: strictSettings + [.unsafeFlags(gtkHeaderFlags)]
        ),
        .executableTarget(
            name: "Compare",
            dependencies: [
                "PlayerKit", "PlayerKitMPRIS", "PlayerKitAnalysis", "ExampleSupport", "CGTK", "GTKSupport",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "Examples/Compare",
            exclude: ["README.md"],
            swiftSettings: strictSettings + [.unsafeFlags(gtkHeaderFlags)]
        ),
        .executableTarget(
            name: "Room",
            dependencies: [
                "PlayerKit", "PlayerKitRooms", "ExampleSupport",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "Examples/Room",
            exclude: ["README.md"],
            swiftSettings: strictSettings
        ),
        // Benchmarks: PlayerKit's side; Benchmarks/run.py runs it next to plain C and python-mpv.
        .executableTarget(
            name: "PlayerKitBench",
            dependencies: [
                "PlayerKit", "PlayerKitCache", "PlayerKitMPRIS", "ExampleSupport", "CGLHost",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "Benchmarks/PlayerKitBench",
            swiftSettings: strictSettings
        ),
        // Downloads through a media cache until it is killed (the cache's crash-repair test).
        .executableTarget(
            name: "CacheCrashProbe",
            dependencies: ["PlayerKitCache"],
            path: "Tests/CacheCrashProbe",
            swiftSettings: strictSettings
        ),
        // Random operations on up to 32 players with invariants checked (make soak; SoakTests).
        .executableTarget(
            name: "SoakProbe",
            dependencies: ["PlayerKit", "ExampleSupport", "PlayerKitTesting", "PlayerKitSupport"],
            path: "Tests/SoakProbe",
            swiftSettings: strictSettings
        ),
        // Plays the corrupted-media corpus through 8 players in one process (a crash ends it).
        .executableTarget(
            name: "CorpusProbe",
            dependencies: ["PlayerKit", "PlayerKitSupport", "ExampleSupport"],
            path: "Tests/CorpusProbe",
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "PlayerKitTests",
            dependencies: [
                "PlayerKit", "ExampleSupport", "TwoPlayers", "PlayerMonitor", "FullscreenPolicy", "BackgroundLoop", "ABCompare", "Feed",
                "Mosaic", "Sequencer", "CacheCrashProbe", "CorpusProbe", "SoakProbe", "PlayerKitCache", "PlayerKitRooms",
                "Room", "PlayerKitSupport", "PlayerKitTesting", "PlayerKitMPRIS", "PlayerKitHLS", "PlayerKitAnalysis", "Quality",
                "PlayerKitMetrics", "MetricsServer", .product(name: "MetricsTestKit", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
            ],
            swiftSettings: strictSettings
        ),
        // Features' logic on FakePlayer and ManualClock: no mpv core is started, no wall clock.
        .testTarget(
            name: "FeatureLogicTests",
            dependencies: [
                "PlayerKitTesting", "PlayerKitCore", "PlayerKitSupport", "PlayerKitDisplay", "PlayerKitResources",
                "PlayerKitSync", "PlayerKitFeed", "PlayerKitSequencer", "PlayerKitRooms", "PlayerKitPosters", "PlayerKitMPRIS",
            ],
            swiftSettings: strictSettings
        ),
        // The Swift code blocks of README.md and Documentation/, compiled (never run): each block
        // shown is a region here (Scripts/check-snippets.py checks they are the same). Written as
        // an app would, on public API; their warnings (an example's unused value) are not errors.
        .testTarget(
            name: "DocSnippets",
            dependencies: [
                "PlayerKit", "PlayerKitCache", "PlayerKitRooms", "PlayerKitMPRIS", "PlayerKitTesting", "PlayerKitHLS", "PlayerKitAnalysis", "CGLHost",
                "PlayerKitMetrics", .product(name: "Logging", package: "swift-log"),
                .product(name: "Prometheus", package: "swift-prometheus"),
            ],
            swiftSettings: [.swiftLanguageMode(.v6), .unsafeFlags(["-suppress-warnings"])]
        ),
        // The parsers of bytes from outside the process, against hostile inputs and every fuzz
        // corpus (Fuzz/Corpus: seeds and the inputs the fuzzers found), replayed through the same
        // checks the fuzz targets run (Checks/, which the fuzz package under Fuzz/ shares).
        .testTarget(
            name: "ParserFuzzTests",
            dependencies: ["PlayerKitCore", "PlayerKitCache", "PlayerKitHLS", "PlayerKitRooms", "PlayerKitMPRIS", "PlayerKitTesting"],
            swiftSettings: strictSettings
        ),
        // A feature written in a test target from the core's public API alone (no @testable).
        .testTarget(
            name: "CustomFeatureTests",
            dependencies: ["PlayerKitCore"],
            swiftSettings: strictSettings
        ),
    ]
)
