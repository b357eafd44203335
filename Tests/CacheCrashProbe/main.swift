// Precaches one URL through a media cache, printing the cached bytes as they grow, until it
// is killed: the test kills it with SIGKILL in the middle of the download and checks that the
// next cache opened on the folder repairs the entry and plays it correctly.
// Usage: CacheCrashProbe <cache folder> <url> <key>
import Foundation
import PlayerKitCache

let arguments = CommandLine.arguments
guard arguments.count == 4, let url = URL(string: arguments[2]) else {
    FileHandle.standardError.write(Data("usage: CacheCrashProbe <cache folder> <url> <key>\n".utf8))
    exit(2)
}
do {
    let cache = try MediaCache(configuration: MediaCache.Configuration(directory: URL(fileURLWithPath: arguments[1])))
    let source = try cache.source(for: url, key: arguments[3])
    let progress = Task {
        for await event in cache.events() {
            if case .progress(_, let cached, _) = event {
                FileHandle.standardOutput.write(Data("cached \(cached)\n".utf8))
            }
        }
    }
    try await cache.precache(source, .all)
    FileHandle.standardOutput.write(Data("complete\n".utf8))
    progress.cancel()
    await cache.shutdown()
} catch {
    FileHandle.standardError.write(Data("CacheCrashProbe: \(error)\n".utf8))
    exit(1)
}
