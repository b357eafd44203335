import FuzzChecks
import FuzzDriver

/// libFuzzer on ParserFuzzTarget.segmentTimestamps (see Fuzz/README in README.md's "Fuzzing").
@main
enum FuzzSegmentTimestamps {
    static func main() { FuzzDriver.run(.segmentTimestamps) }
}
