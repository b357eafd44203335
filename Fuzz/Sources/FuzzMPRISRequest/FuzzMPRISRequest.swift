import FuzzChecks
import FuzzDriver

/// libFuzzer on ParserFuzzTarget.mprisRequest (see Fuzz/README in README.md's "Fuzzing").
@main
enum FuzzMPRISRequest {
    static func main() { FuzzDriver.run(.mprisRequest) }
}
