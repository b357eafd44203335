// Plays a folder of corrupted media (Scripts/make-corpus.py) through 8 players in this one
// process and prints one JSON line per file, then a summary with the resident memory before
// and after. A crash ends the process, which the test sees. Usage:
//   CorpusProbe <corpus folder> <a good clip, for the warm-up> [--arenas N] [--passes N (2)]
import Foundation
import PlayerKit
import PlayerKitSupport
import ExampleSupport

struct Outcome: Encodable {
    let file: String
    let outcome: String
    let detail: String
    let player: Int
}

struct Summary: Encodable {
    let summary = true
    let files: Int
    let played: Int
    let loaded: Int
    let failed: Int
    /// After the warm-up (every player played a good clip once), idle.
    let baselineBytes: Int
    let peakBytes: Int
    /// Idle after the first and the second pass over the corpus.
    let afterFirstPassBytes: Int
    let finalBytes: Int
    /// Whether `--arenas` took effect (false under a sanitizer's allocator, or without it).
    let arenasLimited: Bool
}

let arguments = CommandLine.arguments
guard arguments.count >= 3 else {
    FileHandle.standardError.write(Data("usage: CorpusProbe <corpus folder> <good clip> [--arenas N]\n".utf8))
    exit(2)
}
// The arena bound, when asked for. An allocator that is not glibc's own (AddressSanitizer's,
// under `make test-asan`) refuses it: the run goes on, and the summary says memory figures are
// not the bounded glibc heap's.
var arenasLimited = false
if let index = arguments.firstIndex(of: "--arenas"), index + 1 < arguments.count, let count = Int(arguments[index + 1]) {
    do {
        try ProcessMemory.limitMallocArenas(to: count)
        arenasLimited = true
    } catch {
        FileHandle.standardError.write(Data("CorpusProbe: \(error); memory figures are not glibc's bounded heap\n".utf8))
    }
}
let folder = URL(fileURLWithPath: arguments[1])
let files = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { !$0.hasSuffix(".json") }.sorted()
// A counter, not `Void`: ThreadSanitizer reported an access race on a lock around a zero-sized value.
let output = Locked<Int>(0)
func emit<Value: Encodable>(_ value: Value) {
    let data = try! JSONEncoder().encode(value)
    output.withLock { lines in
        FileHandle.standardOutput.write(data + Data("\n".utf8))
        lines += 1
    }
}

var configuration = PlayerConfiguration(videoOutput: .none, audioOutput: .none)
configuration.positionUpdateInterval = .milliseconds(100)
configuration.mpvLogLevel = .none
let players = try (0..<8).map { try Player(id: PlayerID(stringLiteral: "corpus-\($0)"), configuration: configuration) }

/// Plays `source` until 0.3 s of it played, it ended or failed, or 5 s passed (a loaded machine
/// can take more than 1.5 s to show progress); then releases it.
func playBriefly(_ player: Player, _ source: MediaSource) async -> (String, String) {
    let events = player.events(kinds: [.mediaLoaded, .positionChanged, .itemEnded], bufferLimit: 256)
    defer { events.cancel() }
    let load = Task { try await player.load(source) }
    let timer = Task {
        try await Task.sleep(for: .seconds(5))
        load.cancel()
    }
    let result = await load.result
    timer.cancel()
    switch result {
    case .failure(let error as PlayerError):
        player.releaseMedia()
        return ("failed", "\(error)")
    case .failure(let error):
        player.releaseMedia()
        return ("untyped", "\(error)")
    case .success:
        // The stream may still hold the previous item's last events: count only what follows
        // this item's mediaLoaded.
        let current = Locked(false)
        let record = await events.first(timeout: .seconds(5)) { record in
            switch record.event {
            case .mediaLoaded:
                current.withLock { $0 = true }
                return false
            case .positionChanged(let position): return current.withLock { $0 } && position >= 0.3
            case .itemEnded: return current.withLock { $0 }
            default: return false
            }
        }
        player.releaseMedia()
        switch record?.event {
        case .positionChanged?: return ("played", "")
        case .itemEnded(.error(let error))?: return ("failed", "ended: \(error)")
        case .itemEnded(let reason)?: return ("played", "ended: \(reason)")
        default: return ("loaded", "no progress in 5 s")
        }
    }
}

// Warm up: every player plays a good clip once, so the baseline holds what a used player keeps.
await withTaskGroup(of: Void.self) { group in
    for player in players {
        group.addTask { _ = await playBriefly(player, .file(arguments[2])) }
    }
}
try await Task.sleep(for: .milliseconds(500))
ProcessMemory.releaseFreedMemory()
let baseline = ProcessMemory.residentBytes ?? 0

/// One pass over the corpus, 8 players at once; returns the outcome counts and the peak memory.
func pass(_ number: Int) async -> ([String: Int], Int) {
    let next = Locked(0)
    let counts = Locked([String: Int]())
    let peak = Locked(0)
    await withTaskGroup(of: Void.self) { group in
        for (playerNumber, player) in players.enumerated() {
            group.addTask {
                while true {
                    let index = next.withLock { index -> Int in
                        defer { index += 1 }
                        return index
                    }
                    guard index < files.count else { return }
                    let file = files[index]
                    let (outcome, detail) = await playBriefly(player, .file(folder.appendingPathComponent(file).path))
                    counts.withLock { $0[outcome, default: 0] += 1 }
                    peak.withLock { $0 = max($0, ProcessMemory.residentBytes ?? 0) }
                    if number == 1 { emit(Outcome(file: file, outcome: outcome, detail: detail, player: playerNumber)) }
                }
            }
        }
    }
    return (counts.withLock { $0 }, peak.withLock { $0 })
}

/// Resident memory once every player is idle: mpv finished unloading, freed memory handed back.
func settled() async -> Int {
    try? await Task.sleep(for: .milliseconds(800))
    ProcessMemory.releaseFreedMemory()
    return ProcessMemory.residentBytes ?? 0
}

// Pass 1 goes through every decoder and demuxer path once (their one-time tables and caches);
// pass 2 must end where pass 1 did: nothing grows per file.
let (totals, firstPeak) = await pass(1)
let afterFirst = await settled()
var secondPeak = 0
var afterSecond = 0
let passes = arguments.firstIndex(of: "--passes").flatMap { Int(arguments[$0 + 1]) } ?? 2
for number in 2...max(2, passes) {
    secondPeak = max(secondPeak, await pass(number).1)
    afterSecond = await settled()
    FileHandle.standardError.write(Data("CorpusProbe: after pass \(number): \(afterSecond) bytes\n".utf8))
}
emit(Summary(
    files: files.count, played: totals["played"] ?? 0, loaded: totals["loaded"] ?? 0, failed: totals["failed"] ?? 0,
    baselineBytes: baseline, peakBytes: max(firstPeak, secondPeak), afterFirstPassBytes: afterFirst, finalBytes: afterSecond,
    arenasLimited: arenasLimited))
for player in players { await player.shutdown() }
