// The test bundle's entry point. Every test of the package is a Swift Testing test, found at run
// time; SwiftPM's generated entry point also runs XCTest, whose test discovery on Linux reads the
// index store, and writing that store for every module costs a third of a clean debug build
// (221 s with it, 175 s without, on 2 cores, 2026-11-27). With this file SwiftPM discovers no
// XCTest tests, so `make test` builds with --disable-index-store (Scripts/make-test.sh);
// `swift test` works as before.
import Testing

@main
struct TestMain {
    static func main() async {
        // `swift test` runs a bundle once per testing library; there is no XCTest test to run.
        let arguments = CommandLine.arguments
        if let flag = arguments.firstIndex(of: "--testing-library"), flag + 1 < arguments.count,
           arguments[flag + 1].lowercased() != "swift-testing" {
            return
        }
        await Testing.__swiftPMEntryPoint() as Never
    }
}
