import FuzzChecks
import FuzzDriver

/// libFuzzer on ParserFuzzTarget.hlsPlaylist (see Fuzz/README in README.md's "Fuzzing").
@main
enum FuzzHLSPlaylist {
    static func main() { FuzzDriver.run(.hlsPlaylist) }
}
