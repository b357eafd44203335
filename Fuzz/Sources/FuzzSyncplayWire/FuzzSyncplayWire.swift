import FuzzChecks
import FuzzDriver

/// libFuzzer on ParserFuzzTarget.syncplayWire (see Fuzz/README in README.md's "Fuzzing").
@main
enum FuzzSyncplayWire {
    static func main() { FuzzDriver.run(.syncplayWire) }
}
