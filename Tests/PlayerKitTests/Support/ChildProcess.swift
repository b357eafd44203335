import Foundation
import PlayerKitSupport
import Testing

/// Runs other programs (the examples, X clients) for tests. Standard error is discarded.
enum ChildProcess {
    /// A process for `executable` with `arguments` and, when given, `environment`.
    private static func makeProcess(_ executable: URL, _ arguments: [String], environment: [String: String]?) -> Process {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        var environment = environment
        // Under `make test-asan`: the OpenGL examples end with allocations of Mesa's drivers,
        // which libglvnd unloads at exit, so LeakSanitizer can neither attribute nor suppress
        // them. They run with AddressSanitizer still on, without the leak check.
        let inherited = ProcessInfo.processInfo.environment
        if let options = (environment ?? inherited)["ASAN_OPTIONS"], glExamples.contains(executable.lastPathComponent) {
            var changed = environment ?? inherited
            changed["ASAN_OPTIONS"] = options + ":detect_leaks=0"
            environment = changed
        }
        // Under `make test-tsan`: a child's ThreadSanitizer reports go to files in the folder the
        // Makefile names (standard error is discarded here), which it prints and fails on after
        // the run; an example with a race otherwise shows only its exit status, 66.
        if let folder = inherited["PLAYERKIT_SANITIZER_REPORTS"] {
            var changed = environment ?? inherited
            let options = changed["TSAN_OPTIONS"].map { $0 + ":" } ?? ""
            changed["TSAN_OPTIONS"] = options + "log_path=\(folder)/\(executable.lastPathComponent)"
            environment = changed
        }
        if let environment { process.environment = environment }
        return process
    }

    /// The examples that draw with OpenGL through Mesa.
    private static let glExamples: Set<String> = ["playerkit-mosaic", "playerkit-sequencer", "playerkit-compare", "playerkit-multiview"]

    /// Starts `executable` with its standard output on a pipe.
    static func start(_ executable: URL, _ arguments: [String], environment: [String: String]? = nil) throws -> (Process, FileHandle) {
        let process = makeProcess(executable, arguments, environment: environment)
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        return (process, output.fileHandleForReading)
    }

    /// Starts `executable` with its standard output on a pipe and its standard error in a
    /// temporary file, read with `String(contentsOf:)` once the process has ended.
    static func startKeepingErrors(_ executable: URL, _ arguments: [String], environment: [String: String]? = nil) throws -> (process: Process, output: FileHandle, errors: URL) {
        let process = makeProcess(executable, arguments, environment: environment)
        let output = Pipe()
        let errors = FileManager.default.temporaryDirectory.appendingPathComponent("playerkit-child-\(UUID().uuidString).err")
        _ = FileManager.default.createFile(atPath: errors.path, contents: nil)
        process.standardOutput = output
        process.standardError = try FileHandle(forWritingTo: errors)
        try process.run()
        return (process, output.fileHandleForReading, errors)
    }

    /// Starts `executable` with its standard input and output on pipes: write lines to the
    /// returned `input`, read them from `output`.
    static func startInteractive(_ executable: URL, _ arguments: [String], environment: [String: String]? = nil) throws -> (process: Process, output: FileHandle, input: FileHandle) {
        let process = makeProcess(executable, arguments, environment: environment)
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

/// Reads JSON lines from a pipe as they arrive, on a thread of its own, so a test awaiting
/// the next line never blocks Swift's cooperative thread pool (two threads on a 2-core
/// machine: blocking them stalls every other async test).
final class JSONLineReader: Sendable {
    private let lines: AsyncStream<Data>

    init(_ handle: FileHandle) {
        let (lines, continuation) = AsyncStream<Data>.makeStream()
        self.lines = lines
        readLines(from: handle, { continuation.yield($0) }, end: { continuation.finish() })
    }

    /// The next line as an object; nil at the end of the output. Lines that are not JSON
    /// objects are skipped.
    func next() async -> [String: Any]? {
        var iterator = lines.makeAsyncIterator()
        while let line = await iterator.next() {
            if let object = try? JSONSerialization.jsonObject(with: line) as? [String: Any] { return object }
        }
        return nil
    }

    /// Reads to the end of the output.
    func drain() async {
        for await _ in lines {}
    }
}

/// Splits what `handle` gives into lines on a thread of its own: `line` gets each (without its
/// newline) as it arrives, `end` is called at the end of the output.
func readLines(from handle: FileHandle, _ line: @escaping @Sendable (Data) -> Void, end: @escaping @Sendable () -> Void) {
    Thread {
        var pending = Data()
        while true {
            let chunk = handle.availableData
            if chunk.isEmpty { break }
            pending.append(chunk)
            while let newline = pending.firstIndex(of: 10) {
                line(Data(pending[pending.startIndex..<newline]))
                pending.removeSubrange(pending.startIndex...newline)
            }
        }
        end()
    }.start()
}

/// Reads a child's output as text lines, as they arrive (``readLines(from:_:end:)``), keeping
/// every line for the test's messages.
final class LineReader: Sendable {
    private let lines: AsyncStream<String>
    private let record = Locked<[String]>([])
    /// Every line read so far.
    var seen: [String] { record.withLock { $0 } }

    init(_ handle: FileHandle) {
        let (stream, continuation) = AsyncStream.makeStream(of: String.self)
        lines = stream
        let record = record
        readLines(from: handle, { data in
            let line = String(decoding: data, as: UTF8.self)
            record.withLock { $0.append(line) }
            continuation.yield(line)
        }, end: { continuation.finish() })
    }

    /// The next line matching `condition`, within `timeout`; nil when none came.
    func next(timeout: Duration, _ condition: @escaping @Sendable (String) -> Bool) async -> String? {
        await withTaskGroup(of: String?.self) { group in
            group.addTask { [lines] in
                for await line in lines where condition(line) { return line }
                return nil
            }
            group.addTask {
                try? await Task.sleep(for: timeout)
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first
        }
    }
}

extension ChildProcess {
    /// Starts `arguments[0]` with the rest as its arguments, `environment` as its environment,
    /// /dev/null as its standard streams and no other descriptor of the test process; its process
    /// ID. For servers that close every descriptor they inherit as they start (pulseaudio):
    /// Foundation's `Process` takes that for the child's exit and answers with a blocking
    /// `waitpid` on its one monitoring thread, so no other child of the test process would be
    /// reaped until the server ends. The caller reaps it (`waitpid`).
    static func spawnServer(_ arguments: [String], environment: [String: String]) throws -> pid_t {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        // Nothing else of the test process: a server that kept another child's pipe open (dbus-daemon
        // does not close what it inherits) would hide that child's end from its reader, and from
        // Foundation's `Process`, whose `waitUntilExit` then spins for ever (seen in make test).
        // (glibc 2.34's posix_spawn_file_actions_addclosefrom_np, which Swift's Glibc module does
        // not declare.)
        typealias CloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addclosefrom_np") else {
            throw ChildProcessError.spawnFailed(arguments[0], "this C library cannot close a child's inherited descriptors (glibc 2.34 or newer can)")
        }
        _ = unsafeBitCast(symbol, to: CloseFrom.self)(&actions, 3)
        let argv = arguments.map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { (argv + envp).forEach { free($0) } }
        var pid: pid_t = 0
        let status = posix_spawn(&pid, arguments[0], &actions, nil, argv, envp)
        guard status == 0 else { throw ChildProcessError.spawnFailed(arguments[0], String(cString: strerror(status))) }
        return pid
    }

    /// Runs `executable` to its end off the cooperative pool and returns its exit status, standard
    /// output and standard error. A sanitizer build that fails to start (ThreadSanitizer's
    /// "unexpected memory mapping", an address-space layout it cannot use, exit status 66) is
    /// run once more; a sanitizer *report* is not retried: it is a finding.
    static func runToEnd(_ executable: URL, _ arguments: [String], environment: [String: String]? = nil) async throws -> (status: Int32, output: String, errors: String) {
        var attempt = 0
        while true {
            attempt += 1
            let errorsFile = FileManager.default.temporaryDirectory.appendingPathComponent("playerkit-child-\(UUID().uuidString).err")
            _ = FileManager.default.createFile(atPath: errorsFile.path, contents: nil)
            defer { try? FileManager.default.removeItem(at: errorsFile) }
            let process = makeProcess(executable, arguments, environment: environment)
            let output = Pipe()
            process.standardOutput = output
            process.standardError = try FileHandle(forWritingTo: errorsFile)
            try process.run()
            let reader = output.fileHandleForReading
            let data = await withCheckedContinuation { (continuation: CheckedContinuation<Data, Never>) in
                Thread {
                    let data = reader.readDataToEndOfFile()
                    process.waitUntilExit()
                    continuation.resume(returning: data)
                }.start()
            }
            let errors = (try? String(contentsOf: errorsFile, encoding: .utf8)) ?? ""
            if process.terminationStatus == 66, errors.contains("unexpected memory mapping"), attempt < 3 { continue }
            return (process.terminationStatus, String(decoding: data, as: UTF8.self), errors)
        }
    }

    /// Waits, off the cooperative pool, until `process` has exited.
    static func waitForExit(_ process: Process) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            Thread {
                process.waitUntilExit()
                continuation.resume()
            }.start()
        }
    }
}

enum ChildProcessError: Error, CustomStringConvertible {
    case notBuilt(String)
    case spawnFailed(String, String)

    var description: String {
        switch self {
        case .notBuilt(let name): return "\(name) is not built: run `swift build` first"
        case .spawnFailed(let program, let reason): return "cannot start \(program): \(reason)"
        }
    }
}

/// Runs blocking work (starting Xvfb, running an X client, waiting for a process) on a thread
/// of its own and awaits it, so the cooperative thread pool (as many threads as cores) stays
/// free for the other tests. `body` must not use `#expect`: it runs outside the test's task.
func offPool<Value: Sendable>(_ body: @escaping @Sendable () throws -> Value) async throws -> Value {
    try await withCheckedThrowingContinuation { continuation in
        Thread {
            continuation.resume(with: Result { try body() })
        }.start()
    }
}

/// An example's `--json` output, one object per line; checks that every line has the common
/// fields `player`, `event` and `t`.
func exampleJSONLines(_ output: String) throws -> [[String: Any]] {
    let objects = try output.split(separator: "\n").map {
        try #require(JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any], "not a JSON object: \($0)")
    }
    for object in objects {
        #expect(object["player"] is String && object["event"] is String && object["t"] is Double, "\(object)")
    }
    return objects
}
