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

    /// Starts `executable` with its standard input and output on pipes: write lines to the
    /// returned `input`, read them from `output`.
    static func startInteractive(_ executable: URL, _ arguments: [String], environment: [String: String]? = nil) throws -> (process: Process, output: FileHandle, input: FileHandle) {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        if let environment { process.environment = environment }
        let output = Pipe()
        let input = Pipe()
        process.standardOutput = output
        process.standardInput = input
        process.standardError = FileHandle.nullDevice
        try process.run()
        return (process, output.fileHandleForReading, input.fileHandleForWriting)
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

/// Reads JSON lines from a pipe as they arrive.
final class JSONLineReader {
    private let handle: FileHandle
    private var pending = Data()

    init(_ handle: FileHandle) {
        self.handle = handle
    }

    /// The next line as an object; nil at the end of the output. Lines that are not JSON
    /// objects are skipped.
    func next() -> [String: Any]? {
        while true {
            if let newline = pending.firstIndex(of: 10) {
                let line = pending[pending.startIndex..<newline]
                pending.removeSubrange(pending.startIndex...newline)
                if let object = try? JSONSerialization.jsonObject(with: line) as? [String: Any] { return object }
                continue
            }
            let chunk = handle.availableData
            if chunk.isEmpty { return nil }
            pending.append(chunk)
        }
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
