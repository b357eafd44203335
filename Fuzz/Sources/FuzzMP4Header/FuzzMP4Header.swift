import FuzzChecks
import FuzzDriver

/// libFuzzer on ParserFuzzTarget.mp4Header (see Fuzz/README in README.md's "Fuzzing").
@main
enum FuzzMP4Header {
    static func main() { FuzzDriver.run(.mp4Header) }
}
