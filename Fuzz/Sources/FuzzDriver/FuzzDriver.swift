import CFuzzDriver
import FuzzChecks
import Glibc

/// Runs libFuzzer on one target: every input it makes goes through the target's check, and a
/// broken promise ends the run as a crash (libFuzzer keeps the input as `crash-<sha1>`).
public enum FuzzDriver {
    /// The target of this process (set once, before libFuzzer starts).
    nonisolated(unsafe) private static var target = ParserFuzzTarget.hlsPlaylist

    /// Hands the process's arguments to libFuzzer (its flags, corpus folders, inputs to replay).
    public static func run(_ target: ParserFuzzTarget) -> Never {
        Self.target = target
        var argc = CommandLine.argc
        var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
        exit(LLVMFuzzerRunDriver(&argc, &argv) { data, count in
            let bytes = count == 0 || data == nil ? [] : Array(UnsafeBufferPointer(start: data, count: count))
            let violations = FuzzDriver.target.check(bytes)
            if !violations.isEmpty { fatalError("\(FuzzDriver.target.rawValue): \(violations)") }
            return 0
        })
    }
}
