import Foundation

/// Runs other programs (the examples, X clients) for tests. Standard error is discarded.
enum ChildProcess {
    /// Starts `executable` with its standard output on a pipe.
    static func start(_ executable: URL, _ arguments: [String], environment: [String: String]? = nil) throws -> (Process, FileHandle) {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        if let environment { process.environment = environment }
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        return (process, output.fileHandleForReading)
    }

    /// Runs `executable` to its end and returns its exit status and standard output.
    static func run(_ executable: URL, _ arguments: [String], environment: [String: String]? = nil) throws -> (status: Int32, output: String) {
        let (process, output) = try start(executable, arguments, environment: environment)
        let data = output.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }

    /// A built example executable, e.g. "two-players"; fails the test when it was not built.
    static func example(_ name: String) throws -> URL {
        let binary = Fixtures.productsDirectory.appendingPathComponent(name)
        guard FileManager.default.isExecutableFile(atPath: binary.path) else { throw ChildProcessError.notBuilt(name) }
        return binary
    }
}

enum ChildProcessError: Error, CustomStringConvertible {
    case notBuilt(String)

    var description: String {
        switch self {
        case .notBuilt(let name): return "\(name) is not built: run `swift build` first"
        }
    }
}
