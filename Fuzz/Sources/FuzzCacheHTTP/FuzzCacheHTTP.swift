import FuzzChecks
import FuzzDriver

/// libFuzzer on ParserFuzzTarget.cacheHTTP (see Fuzz/README in README.md's "Fuzzing").
@main
enum FuzzCacheHTTP {
    static func main() { FuzzDriver.run(.cacheHTTP) }
}
