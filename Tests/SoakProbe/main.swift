// A soak with random operations on up to 32 players, checking invariants as it goes.
//
//   SoakProbe --seconds 60 [--seed N] [--tasks 8] [--players 32] [--arenas N] [--backward]
//             [--pitch-correction]
//
// Playback direction changes go forward only unless --backward is given: libmpv 0.35's backward
// playback damages its own memory (a heap overflow on its playback thread under AddressSanitizer,
// assertions in loadfile.c and ta.c), reproduced with a plain C client (Reliability.md).
// Players keep the pitch at speeds other than 1 only with --pitch-correction: libmpv 0.35's
// `scaletempo2` filter, which mpv inserts for it, writes past its buffer (a plain C client
// reproduces it, Scripts/libmpv-repro/tempo.c), and the damage ends the process now and then
// (glibc's "malloc(): invalid next size" on mpv's playback thread). The soak tests PlayerKit:
// speed changes stay in, with `PlayerConfiguration.pitchCorrection` off (Reliability.md).
//
// Many tasks issue random calls (create with random or custom IDs, load good, bad and network
// sources, seek, pause, play, speed, stop, release, shutdown, subscribe, cancel a load, claim
// fullscreen, form and dissolve sync groups) while a monitor checks: every player's event
// sequence numbers are gapless from 1, every state change is one the documentation lists and
// starts where the last one ended, every error is a typed one, no call is stuck (a watchdog),
// and resident memory stays bounded. Prints the seed first, so a failing run can be replayed;
// ends with a JSON summary. Exit status 0 when every invariant held, 1 when one broke, 3 when
// the watchdog fired.
import PlayerKitSupport
import ExampleSupport
import Foundation
import PlayerKit
import PlayerKitTesting

// MARK: Options

let arguments = CommandLine.arguments
// glibc writes a fatal error of its own (a heap found corrupt, say) to /dev/tty when it can
// open it, where the test harness never sees it: on standard error instead.
setenv("LIBC_FATAL_STDERR_", "1", 1)
func option(_ name: String) -> String? {
    arguments.firstIndex(of: name).flatMap { $0 + 1 < arguments.count ? arguments[$0 + 1] : nil }
}
let seconds = Double(option("--seconds") ?? "60") ?? 60
let seed = UInt64(option("--seed") ?? "") ?? UInt64.random(in: 1...UInt64(UInt32.max))
let taskCount = Int(option("--tasks") ?? "8") ?? 8
let maximumPlayers = Int(option("--players") ?? "32") ?? 32
let includesBackward = arguments.contains("--backward")
let keepsPitch = arguments.contains("--pitch-correction")
// The documented bound on glibc's arenas (ProcessMemory.limitMallocArenas), when asked for.
// (An allocator that is not glibc's, AddressSanitizer's, refuses it: the soak goes on.)
if let arenas = option("--arenas").flatMap(Int.init) {
    do { try ProcessMemory.limitMallocArenas(to: arenas) } catch { print("soak: \(error); going on without the bound") }
}
// Churn instead of the soak: `--churn N --media FILE [--ready-cores N]` creates a player, plays FILE to its first
// frame and shuts it down, N times one after another, and prints resident memory before the
// first cycle, after every 10th and after the last (freed memory handed back before each
// reading), and glibc's arena count before the first player and at the end, as JSON.
if let churn = option("--churn").flatMap(Int.init), let media = option("--media") {
    ProcessMemory.releaseFreedMemory()
    let arenasBefore = ProcessMemory.arenaCount ?? -1
    var readings: [String: Int] = ["start": ProcessMemory.residentBytes ?? 0]
    var headless = PlayerConfiguration(videoOutput: .none, audioOutput: .none)
    if let readyCores = option("--ready-cores").flatMap(Int.init) { headless.readyCores = readyCores }
    for index in 0..<churn {
        let player = try await Player.create(configuration: headless)
        let firstFrame = player.events(kinds: [.firstFrame])
        Task { _ = try? await player.load(MediaSource(media)) }
        for await _ in firstFrame { break }
        firstFrame.cancel()
        await player.shutdown()
        if (index + 1) % 10 == 0 || index == churn - 1 {
            ProcessMemory.releaseFreedMemory()
            readings[index == churn - 1 ? "end" : "after\(index + 1)"] = ProcessMemory.residentBytes ?? 0
        }
    }
    let summary: [String: Any] = ["resident": readings, "arenasBefore": arenasBefore, "arenasAfter": ProcessMemory.arenaCount ?? -1,
                                  "arenaMaxSet": ProcessInfo.processInfo.environment["MALLOC_ARENA_MAX"] ?? ""]
    print(String(decoding: try JSONSerialization.data(withJSONObject: summary, options: [.sortedKeys]), as: UTF8.self))
    exit(0)
}
// FFmpeg's own messages after the app made its cores ready: `--ffmpeg-log --media FILE` makes
// the cores ready (Player.prepareReadyCores, which warms the first load up on a throwaway
// core), then plays FILE through a stream provider of the app's (mpv's custom streams make
// FFmpeg warn that no protocol name was given) to its first frame, and shuts down. FFmpeg's
// messages go to the log of the process's first live mpv core, and to standard error when that
// core is gone: the test reads standard error.
if arguments.contains("--ffmpeg-log"), let media = option("--media") {
    final class FileBytes: MediaStreamProvider, MediaByteStream, @unchecked Sendable {
        // @unchecked: `offset` is touched only by mpv's one reader of the stream.
        let scheme = "probebytes"
        let data: Data
        var offset = 0
        init(_ data: Data) { self.data = data }
        func open(_ url: String, player: PlayerID) throws(MediaStreamError) -> any MediaByteStream { FileBytes(data) }
        func read(into buffer: UnsafeMutableRawBufferPointer) throws(MediaStreamError) -> Int {
            let count = min(buffer.count, data.count - offset)
            guard count > 0 else { return 0 }
            data.withUnsafeBytes { buffer.baseAddress!.copyMemory(from: $0.baseAddress!.advanced(by: offset), byteCount: count) }
            offset += count
            return count
        }
        func seek(to offset: Int64) throws(MediaStreamError) -> Int64 {
            self.offset = Int(max(0, min(offset, Int64(data.count))))
            return Int64(self.offset)
        }
        var size: Int64? { Int64(data.count) }
        func cancel() {}
        func close() {}
    }
    // Bounded: a first frame that never comes ends the probe with status 3.
    Task {
        try? await Task.sleep(for: .seconds(30))
        print("ffmpeg-log: no first frame after 30 s")
        exit(3)
    }
    var configuration = PlayerConfiguration(videoOutput: .none, audioOutput: .none)
    configuration.streamProviders = [FileBytes(try Data(contentsOf: URL(fileURLWithPath: media)))]
    try await Player.prepareReadyCores(for: configuration)
    let player = try await Player.create(configuration: configuration)
    let firstFrame = player.events(kinds: [.firstFrame])
    Task { _ = try? await player.load(MediaSource("probebytes://clip")) }
    for await _ in firstFrame { break }
    firstFrame.cancel()
    await player.shutdown()
    print("{\"firstFrame\": true}")
    exit(0)
}
let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
print("soak: seed \(seed), \(seconds) s, \(taskCount) tasks, up to \(maximumPlayers) players\(includesBackward ? ", backward playback" : "")\(keepsPitch ? ", pitch correction" : "") (replay: --seed \(seed))")


// MARK: Invariants

/// What the monitor learned, and what broke.
struct Ledger: Sendable {
    var violations: [String] = []
    var operations: [String: Int] = [:]
    var errors: [String: Int] = [:]
    var events = 0
    var lastSequence: [PlayerID: UInt64] = [:]
    var lastState: [PlayerID: PlayerState] = [:]
    var created = 0
    var peakResidentBytes = 0
    var residentSamples: [Int] = []

    mutating func violation(_ text: String) {
        if violations.count < 50 { violations.append(text) }
    }
}
let ledger = Guarded(Ledger())
/// Volume sets started per player, so the read-out check knows when another task set it too.
struct VolumeSets: Sendable {
    var next = 0
    var active: [ObjectIdentifier: Set<Int>] = [:]
    var overlapped: Set<Int> = []
}
let volumeSets = Guarded(VolumeSets())

/// The transitions PlayerState's documentation lists.
func documented(_ from: PlayerState, _ to: PlayerState) -> Bool {
    switch (from, to) {
    case (_, .loading): return true
    case (.loading, .ready), (.loading, .playing): return true
    case (.ready, .playing), (.paused, .playing): return true
    case (.playing, .paused): return true
    case (.playing, .buffering), (.paused, .buffering), (.ready, .buffering): return true
    case (.buffering, .playing), (.buffering, .paused), (.buffering, .ready): return true
    case (.loading, .ended), (.ready, .ended), (.playing, .ended), (.paused, .ended), (.buffering, .ended): return true
    case (let state, .idle): return state != .idle
    case (let state, .failed): return state != .idle && state != .failed
    default: return false
    }
}

// Every event of every player, in each player's order (a serial queue subscription).
let bus = PlayerEventBus(label: "soak")
let monitor = bus.subscribe(to: .all) { record in
    ledger.withLock { ledger in
        ledger.events += 1
        let id = record.playerID
        if record.event == .created {
            if record.sequenceNumber != 1 { ledger.violation("\(id): created with sequence number \(record.sequenceNumber)") }
            ledger.lastState[id] = .idle
        } else if let last = ledger.lastSequence[id], record.sequenceNumber != last + 1 {
            ledger.violation("\(id): sequence number \(record.sequenceNumber) after \(last) (\(record.event))")
        }
        ledger.lastSequence[id] = record.sequenceNumber
        if case .stateChanged(let from, let to) = record.event {
            if let last = ledger.lastState[id], last != from { ledger.violation("\(id): stateChanged from \(from), but the last state was \(last)") }
            if !documented(from, to) { ledger.violation("\(id): undocumented transition \(from) -> \(to)") }
            ledger.lastState[id] = to
        }
        if case .eventsLost(let snapshot) = record.event { ledger.lastState[id] = snapshot.state }
        if record.event == .shutDown {
            ledger.lastSequence[id] = nil
            ledger.lastState[id] = nil
        }
    }
}

/// Calls in flight, for the watchdog: token -> (what, since).
let inFlight = Guarded([Int: (String, ContinuousClock.Instant)]())
let nextToken = Guarded(0)
func tracked<Value>(_ what: String, _ body: () async throws -> Value) async rethrows -> Value {
    let token = nextToken.withLock { token -> Int in
        token += 1
        return token
    }
    inFlight.withLock { $0[token] = (what, .now) }
    defer { inFlight.withLock { $0[token] = nil } }
    ledger.withLock { $0.operations[what.components(separatedBy: " ").first ?? what, default: 0] += 1 }
    return try await body()
}

/// An enum value's case name ("loadFailed").
func caseName(_ value: Any) -> String {
    Mirror(reflecting: value).children.first?.label ?? String(describing: value)
}

func note(_ error: any Error, in operation: String) {
    let name: String
    switch error {
    case let error as PlayerError: name = "PlayerError." + caseName(error)
    case let error as FullscreenPolicyError: name = "FullscreenPolicyError." + caseName(error)
    case is CancellationError: name = "CancellationError"
    default:
        name = "untyped"
        ledger.withLock { $0.violation("\(operation): an error of no documented type: \(type(of: error)) \(error)") }
    }
    ledger.withLock { $0.errors[name, default: 0] += 1 }
}

// MARK: The world

let server = LoopbackMediaServer(files: [
    "clip-a.mp4": try Data(contentsOf: repository.appendingPathComponent("Media/clip-a.mp4")),
    "stall.mp4": Data(repeating: 0, count: 1000),
], bytesPerSecond: 400_000)
server.setFault(.stall, for: "stall.mp4")
try server.start()

let sources: [MediaSource] = [
    .file(repository.appendingPathComponent("Media/clip-a.mp4").path),
    .file(repository.appendingPathComponent("Media/clip-b.mp4").path),
    .file(repository.appendingPathComponent("Tests/Fixtures/short-a.mp4").path),
    .file(repository.appendingPathComponent("Tests/Fixtures/random-bytes.mp4").path),
    .file(repository.appendingPathComponent("Tests/Fixtures/truncated.mp4").path),
    .file("/nonexistent/soak.mp4"),
    MediaSource(server.url("clip-a.mp4").absoluteString),
    MediaSource(server.url("stall.mp4").absoluteString),
    MediaSource(server.url("missing.mp4").absoluteString),
]

final class World: @unchecked Sendable {
    // @unchecked: `players` is only touched under `lock`.
    private let lock = NSLock()
    private var players: [Player] = []
    private var groups: [SyncGroup] = []

    func add(_ player: Player) -> Bool {
        lock.lock()
        defer { lock.unlock() }
        guard players.count < maximumPlayers else { return false }
        players.append(player)
        return true
    }

    func remove(_ player: Player) {
        lock.lock()
        players.removeAll { $0 === player }
        lock.unlock()
    }

    func any(_ generator: inout SeededGenerator) -> Player? {
        lock.lock()
        defer { lock.unlock() }
        return players.randomElement(using: &generator)
    }

    func some(_ count: Int, _ generator: inout SeededGenerator) -> [Player] {
        lock.lock()
        defer { lock.unlock() }
        return Array(players.shuffled(using: &generator).prefix(count))
    }

    var count: Int {
        lock.lock()
        defer { lock.unlock() }
        return players.count
    }

    func addGroup(_ group: SyncGroup) {
        lock.lock()
        groups.append(group)
        lock.unlock()
    }

    func takeGroup(_ generator: inout SeededGenerator) -> SyncGroup? {
        lock.lock()
        defer { lock.unlock() }
        guard !groups.isEmpty else { return nil }
        return groups.remove(at: Int.random(in: 0..<groups.count, using: &generator))
    }

    func everything() -> ([Player], [SyncGroup]) {
        lock.lock()
        defer { lock.unlock() }
        return (players, groups)
    }
}
let world = World()
let fullscreen = FullscreenPolicy()
var configuration = PlayerConfiguration(videoOutput: .none, audioOutput: .none)
configuration.positionUpdateInterval = .milliseconds(100)
configuration.eventBus = bus
configuration.mpvLogLevel = .none
configuration.networkTimeout = .seconds(3)
configuration.pitchCorrection = keepsPitch
// A player without an audio output keeps no pitch (nobody hears it): with --pitch-correction
// the players choose mpv's null output themselves, which counts as heard.
if keepsPitch { configuration.extraOptions["ao"] = "null" }
let playerConfiguration = configuration

// MARK: Operations

/// One random operation.
func step(_ generator: inout SeededGenerator) async {
    let roll = Int.random(in: 0..<100, using: &generator)
    if roll < 8 || world.count == 0 {
        // Create: a random ID, or one of a few custom ones (which may be taken: duplicateID).
        let custom = Bool.random(using: &generator)
        let id: PlayerID? = custom ? PlayerID(stringLiteral: "soak-\(Int.random(in: 0..<40, using: &generator))") : nil
        await tracked("create") {
            do throws(PlayerError) {
                let player = try await Player.create(id: id, configuration: playerConfiguration)
                ledger.withLock { $0.created += 1 }
                if !world.add(player) { await player.shutdown() }
            } catch {
                note(error, in: "create")
            }
        }
        return
    }
    guard let player = world.any(&generator) else { return }
    switch roll {
    case 8..<30:
        let source = sources.randomElement(using: &generator)!
        let paused = Bool.random(using: &generator)
        let cancelAfter = Int.random(in: 0..<4, using: &generator) == 0 ? Int.random(in: 0...300, using: &generator) : nil
        await tracked("load \(source)") {
            let load = Task { try await player.load(source, startPaused: paused) }
            // Every load ends within 10 s: network loads are cut short by a cancellation.
            let timer = Task {
                try await Task.sleep(for: .milliseconds(cancelAfter ?? 10_000))
                load.cancel()
            }
            if case .failure(let error) = await load.result { note(error, in: "load") }
            timer.cancel()
        }
    case 30..<40:
        let position = [Double.nan, -1, 0, 0.5, 1, 2, 3.5, 100].randomElement(using: &generator)!
        await tracked("seek") {
            do throws(PlayerError) { try await player.seek(to: position) } catch { note(error, in: "seek") }
        }
    case 40..<50:
        let pause = Bool.random(using: &generator)
        await tracked(pause ? "pause" : "play") {
            do throws(PlayerError) { if pause { try await player.pause() } else { try await player.play() } } catch { note(error, in: "pause") }
        }
    case 50..<56:
        let speed = [0, 0.25, 0.5, 1, 1.5, 2, 4, 8, Double.infinity].randomElement(using: &generator)!
        await tracked("speed") {
            do throws(PlayerError) { try await player.perform(.setSpeed(speed)) } catch { note(error, in: "speed") }
        }
    case 56..<62:
        let volume: Double = [-5, 0, 50, 100, 130, 200].randomElement(using: &generator)!
        await tracked("volume") {
            // Another task may set the same player's volume meanwhile: check only when no other
            // set of it was in flight at any moment between this set's start and its read-out.
            let key = ObjectIdentifier(player)
            let ticket = volumeSets.withLock { sets -> Int in
                sets.next += 1
                let ticket = sets.next
                sets.active[key, default: []].insert(ticket)
                if let active = sets.active[key], active.count > 1 { sets.overlapped.formUnion(active) }
                return ticket
            }
            do throws(PlayerError) {
                defer {
                    volumeSets.withLock { sets in
                        sets.active[key]?.remove(ticket)
                        sets.overlapped.remove(ticket)
                    }
                }
                try await player.perform(.setVolume(volume))
                let readOut = player.snapshot.volume
                let alone = volumeSets.withLock { !$0.overlapped.contains(ticket) }
                if alone, readOut != volume {
                    ledger.withLock { $0.violation("\(player.id): volume read-out \(String(describing: readOut)) after setVolume(\(volume))") }
                }
            } catch { note(error, in: "volume") }
        }
    case 62..<67:
        await tracked("stop") {
            do throws(PlayerError) { try await player.stop() } catch { note(error, in: "stop") }
        }
    case 67..<72:
        await tracked("release") { player.releaseMedia() }
    case 72..<76:
        await tracked("shutdown") {
            world.remove(player)
            await player.shutdown()
            if !player.isShutDown { ledger.withLock { $0.violation("\(player.id): not shut down after shutdown()") } }
        }
    case 76..<82:
        // Subscribe to a player's events for a while, then cancel.
        let count = Int.random(in: 1...20, using: &generator)
        await tracked("subscribe") {
            let stream = player.events(bufferLimit: 64)
            let reader = Task {
                var seen = 0
                for await _ in stream {
                    seen += 1
                    if seen >= count { break }
                }
            }
            try? await Task.sleep(for: .milliseconds(200))
            stream.cancel()
            await reader.value
        }
    case 82..<88:
        let claim = Bool.random(using: &generator)
        await tracked("fullscreen") {
            do throws(FullscreenPolicyError) {
                if claim { try await fullscreen.claim(player) } else { try await fullscreen.release(player) }
            } catch {
                note(error, in: "fullscreen")
            }
        }
    case 88..<94:
        let members = world.some(Int.random(in: 2...3, using: &generator), &generator)
        await tracked("sync-join") {
            do throws(PlayerError) {
                world.addGroup(try SyncGroup(players: members))
            } catch {
                note(error, in: "sync-join")
            }
        }
    case 94..<98:
        guard let group = world.takeGroup(&generator) else { return }
        await tracked("sync-leave") { group.invalidate() }
    default:
        // Only while nothing plays: libmpv 0.35 trips an assertion (mpv #10782) when `play-dir`
        // changes in the moment an item is being unloaded after its end, which a playing item
        // can reach at any time (Player.setPlaybackDirection's documentation says so).
        let backward = Bool.random(using: &generator)
        let direction: PlaybackDirection = backward && includesBackward ? .backward : .forward
        guard [.idle, .ended, .failed, .ready, .paused].contains(player.state) else { return }
        await tracked("direction") {
            do throws(PlayerError) { try await player.perform(.setPlaybackDirection(direction)) } catch { note(error, in: "direction") }
        }
    }
}

// MARK: Run

let watchdogLimit: Duration = .seconds(30)
let started = ContinuousClock.now
let deadline = started + .seconds(seconds)
let baseline = ProcessMemory.residentBytes ?? 0

// The watchdog and the memory sampler.
let watchdog = Thread {
    while ContinuousClock.now < deadline + .seconds(120) {
        Thread.sleep(forTimeInterval: 1)
        let resident = ProcessMemory.residentBytes ?? 0
        ledger.withLock { ledger in
            ledger.peakResidentBytes = max(ledger.peakResidentBytes, resident)
            ledger.residentSamples.append(resident)
        }
        let stuck = inFlight.withLock { $0.values.filter { ContinuousClock.now - $0.1 > watchdogLimit } }
        if let (what, since) = stuck.first {
            print("soak: WATCHDOG: \(what) has not returned after \(ContinuousClock.now - since) (seed \(seed))")
            exit(3)
        }
    }
}
watchdog.start()

await withTaskGroup(of: Void.self) { group in
    for index in 0..<taskCount {
        group.addTask {
            var generator = SeededGenerator(seed: seed &+ UInt64(index) &* 0x1000_0001)
            while ContinuousClock.now < deadline {
                await step(&generator)
            }
        }
    }
}

// Tear everything down; every player must report shutDown.
let (players, groups) = world.everything()
for group in groups { group.invalidate() }
for player in players { await player.shutdown() }
try? await Task.sleep(for: .milliseconds(500))
monitor.cancel()
server.stop()
ProcessMemory.releaseFreedMemory()
let final = ProcessMemory.residentBytes ?? 0
let result = ledger.withLock { $0 }
let open = result.lastSequence.keys.map(\.rawValue).sorted()
var violations = result.violations
if !open.isEmpty { violations.append("players without shutDown at the end: \(open)") }
if result.events == 0 { violations.append("no events at all") }

// Memory over the run: the highest sample of the second half against the first half's.
let samples = result.residentSamples
let half = samples.count / 2
let firstHalfPeak = samples.prefix(half).max() ?? 0
let secondHalfPeak = samples.suffix(from: half).max() ?? 0
let summary: [String: Any] = [
    "firstHalfPeakBytes": firstHalfPeak, "secondHalfPeakBytes": secondHalfPeak,
    "summary": true, "seed": seed, "seconds": seconds, "tasks": taskCount, "playersCreated": result.created,
    "operations": result.operations, "errors": result.errors, "events": result.events,
    "baselineBytes": baseline, "peakBytes": result.peakResidentBytes, "finalBytes": final,
    "violations": violations,
]
let data = try JSONSerialization.data(withJSONObject: summary, options: [.sortedKeys])
print(String(decoding: data, as: UTF8.self))
exit(violations.isEmpty ? 0 : 1)
