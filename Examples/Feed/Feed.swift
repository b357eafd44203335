import ArgumentParser
import Dispatch
import Foundation
import ExampleSupport
import PlayerKit
import PlayerKitCache

/// A feed of ten items and a scripted scroll: prints which item plays and why, through an
/// `AutoplayCoordinator` with a decoder budget of three. With `--server`, the ten shipped clips
/// come from a loopback HTTP server the example starts, through a `MediaCache` shared by every
/// player; it scrolls through them twice and prints, per item and pass, the bytes fetched from
/// the network and read from the cache (the second pass fetches none). With `--posters DIR`, it
/// first makes every item's poster (its first non-black frame, 320x180 at most) with a
/// `PosterMaker` of two players (through the cache with `--server`), saved as PNG files in DIR.
@main
struct Feed: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "playerkit-feed",
        abstract: "Scroll a feed of ten items; the most visible one plays once scrolling stops.")

    @OptionGroup var logging: LoggingOptions

    @Flag(help: "Print one JSON object per line: player, event (play, pause, release, prepare), t, and value (the reason).")
    var json = false

    @Option(help: "Decoder budget: items holding media at once.")
    var decoders = 3

    @Option(help: "Seconds without scrolling before the coordinator decides.")
    var settle = 0.3

    @Flag(help: "Serve the ten shipped clips from a loopback HTTP server through a media cache; scroll through them twice.")
    var server = false

    @Option(help: "With --server: the server's rate in bytes per second (default 2000000; with --fling 20000).")
    var rate: Int?

    @Flag(help: "With --server: one fast fling down the ten items over a slow server instead of the two passes; items leave while they download, and the output shows the bytes that cancelling their downloads saved.")
    var fling = false

    @Option(help: "With --server: the cache folder (default: a new temporary folder, removed at the end).")
    var cacheDir: String?

    @Option(help: "Make every item's poster first (its first non-black frame) and save them as PNG files in this folder.")
    var posters: String?

    @Flag(help: "Show the feed in an SDL window: each item's poster (with --posters) at its place in the scrolled list, the playing item framed in green.")
    var window = false

    @Option(help: "Seconds the feed rests at its top, item 0 playing, before the script scrolls (plus --settle).")
    var restAtTop = 1.0

    func validate() throws {
        guard decoders >= 1 else { throw ValidationError("--decoders must be 1 or more, got \(decoders)") }
        guard settle >= 0, settle.isFinite else { throw ValidationError("--settle must be 0 or more, got \(settle)") }
        guard restAtTop >= 0, restAtTop.isFinite else { throw ValidationError("--rest-at-top must be 0 or more, got \(restAtTop)") }
        if let rate { guard rate >= 1000 else { throw ValidationError("--rate must be 1000 bytes per second or more, got \(rate)") } }
        guard !fling || server else { throw ValidationError("--fling needs --server (it cancels downloads)") }
        if let posters {
            var isFolder: ObjCBool = false
            guard FileManager.default.fileExists(atPath: posters, isDirectory: &isFolder), isFolder.boolValue else {
                throw ValidationError("--posters must be an existing folder, got \(posters)")
            }
        }
    }

    /// `--posters`: every item's poster, two at a time, saved in the folder; one line each.
    static func makePosters(_ items: [(id: String, source: MediaSource)], into folder: String, streamProviders: [any MediaStreamProvider],
                            view: FeedView?, json: Bool, start: ContinuousClock.Instant) async throws {
        let maker = try PosterMaker(configuration: .init(width: 320, height: 180, concurrency: 2), streamProviders: streamProviders)
        // Each item's PNG file, by index: a result names its request by index in the batch.
        let files = items.map { URL(fileURLWithPath: folder).appendingPathComponent("\($0.id).png") }
        let requests = items.indices.map { index in
            PosterRequest(source: items[index].source, moment: .firstNonBlackFrame(), pngFile: files[index])
        }
        for await result in maker.posters(for: requests) {
            let item = items[result.index].id
            var line = JSONEventLine(player: item, event: "poster", t: ExampleSupport.seconds(since: start))
            switch result.outcome {
            case .success(let poster):
                view?.poster(poster.frame, of: result.index)
                line.value = files[result.index].path
                ExampleSupport.printLine(json ? line.json : String(
                    format: "%7.2f  %@ poster: %dx%d, frame at %.3f s, %@", line.t, item, poster.frame.info.format.width, poster.frame.info.format.height,
                    poster.time, files[result.index].path))
            case .failure(let error):
                line.value = "\(error)"
                ExampleSupport.printLine(json ? line.json : String(format: "%7.2f  %@ no poster: %@", line.t, item, "\(error)"))
            }
        }
        await maker.shutdown()
        if let view {
            // The window shows the posters from its next drawing on.
            let shown = await view.drawnWithPosters.wait(for: 1, timeout: .seconds(5))
            var line = JSONEventLine(player: "feed", event: "window", t: ExampleSupport.seconds(since: start))
            line.value = shown ? "\(FeedView.itemWidth)x\(FeedView.height), posters shown" : "no poster drawn within 5 s"
            ExampleSupport.printLine(json ? line.json : String(format: "%7.2f  -- the window: %@", line.t, line.value ?? ""))
        }
    }

    /// `--window`: the view, open; nil without `--window`. Fails the program when it cannot open.
    func openView() async throws -> FeedView? {
        guard window else { return nil }
        let view = FeedView(items: 10)
        if let failure = await view.start() {
            FileHandle.standardError.write(Data("playerkit-feed: cannot open the window: \(failure)\n".utf8))
            throw ExitCode(1)
        }
        return view
    }

    /// The playing item framed in the view, from the coordinator's decisions.
    static func show(_ decision: AutoplayCoordinator.Decision, in view: FeedView?) {
        guard let view else { return }
        switch decision.action {
        case .play: view.playing(decision.item)
        case .pause, .release: view.state.withLock { if $0.playing == decision.item { $0.playing = nil } }
        default: break
        }
    }

    /// The ten shipped clips the `--server` mode serves.
    static let served = [
        "clip-a.mp4", "clip-b.mp4", "background-1.mp4", "background-2.mp4", "background-3.mp4",
        "tile-1.mp4", "tile-2.mp4", "tile-3.mp4", "tile-4.mp4", "sequence-1.mp4",
    ]

    /// The viewport is 1.2 item heights tall; `offset` is its top, in item heights.
    static func visibility(of item: Int, at offset: Double) -> Double {
        let top = Double(item), bottom = top + 1
        return max(0, min(bottom, offset + 1.2) - max(top, offset))
    }

    func run() async throws {
        logging.bootstrap()
        _ = Interruption.shared  // Ctrl-C ends the scroll and shuts the players down
        if server {
            try await runWithServer()
            return
        }
        let start = ContinuousClock.now
        let json = self.json
        // The cells' players are made ten in a row: two cores are kept ready for them, and made
        // ready while the window comes up, so even the first cell's player takes one.
        var cellConfiguration = logging.applied(to: PlayerConfiguration(videoOutput: .none, audioOutput: .none))
        cellConfiguration.readyCores = 2
        async let coresReady: Void = Player.prepareReadyCores(for: cellConfiguration)
        let view = try await openView()
        try await coresReady
        let budget = try DecoderBudget(limit: decoders)
        var settings = AutoplayCoordinator.Settings()
        settings.settleDelay = .milliseconds(Int(settle * 1000))
        let coordinator = try AutoplayCoordinator(settings: settings, budget: budget)
        // The coordinator publishes each decision on its item's player: one subscription to
        // every player hears the whole feed's.
        let decisions = PlayerEventBus.shared.subscribe(to: .all, kinds: [.autoplayDecision], delivery: .immediate) { record in
            guard case .decision(let decision)? = record.event.feature(AutoplayEvent.self) else { return }
            Self.show(decision, in: view)
            let t = ExampleSupport.seconds(since: start)
            if json {
                var line = JSONEventLine(player: decision.item, event: decision.action.rawValue, t: t)
                line.value = decision.reason
                ExampleSupport.printLine(line.json)
            } else {
                ExampleSupport.printLine(String(format: "%7.2f  %@", t, decision.description))
            }
        }
        defer { decisions.cancel() }
        if let posters {
            let items = (0..<10).map { index in
                ("item-\(index)", MediaSource(ExampleSupport.shippedMedia(index % 2 == 0 ? "clip-a.mp4" : "clip-b.mp4")))
            }
            try await Self.makePosters(items, into: posters, streamProviders: [], view: view, json: json, start: start)
        }
        var players: [Player] = []
        for index in 0..<10 {
            let player = try await Player.create(id: PlayerID(stringLiteral: "item-\(index)"), configuration: cellConfiguration)
            try await player.perform(.setLoop(.forever))
            try coordinator.add(player.id.rawValue, player: player,
                                source: MediaSource(ExampleSupport.shippedMedia(index % 2 == 0 ? "clip-a.mp4" : "clip-b.mp4")))
            players.append(player)
        }

        @Sendable func scroll(to offset: Double) throws {
            view?.scrolled(to: offset)
            for index in 0..<10 { try coordinator.reportVisibility(min(1, Self.visibility(of: index, at: offset)), of: "item-\(index)") }
        }
        @Sendable func note(_ text: String) {
            if !json { ExampleSupport.printLine(String(format: "%7.2f  -- %@", ExampleSupport.seconds(since: start), text)) }
        }
        // The script: (what, from, to, seconds of scrolling, seconds to rest after).
        let script: [(String, Double, Double, Double, Double)] = [
            ("the feed opens at the top", 0, 0, 0, restAtTop),
            ("a fast fling down to item 4", 0, 4, 1.0, 1.0),
            ("a slow drag to between items 6 and 7", 4, 6.45, 1.0, 1.0),
            ("settle on item 7", 6.45, 7, 0.3, 1.0),
            ("a fast fling back up to item 1", 7, 1, 0.8, 1.0),
        ]
        let settle = self.settle, threshold = settings.threshold
        let interrupted = try await Interruption.shared.run {
            for (what, from, to, seconds, rest) in script {
                note(what)
                let steps = max(1, Int(seconds / 0.05))
                for step in 1...steps {
                    try scroll(to: from + (to - from) * Double(step) / Double(steps))
                    if seconds > 0 { try await Task.sleep(for: .milliseconds(50)) }
                }
                try await Task.sleep(for: .seconds(rest + settle))
                note("playing: \(coordinator.playingItem ?? "nothing (no item at or above \(threshold) visible)")")
            }
        }
        note("\(interrupted ? "interrupted" : "done"); playing: \(coordinator.playingItem ?? "none"), holding decoders: \(budget.snapshot.holders.map(\.rawValue).joined(separator: ", "))")
        await view?.close()
        for player in players { await player.shutdown() }
    }

    /// `--server`: the feed over HTTP through a media cache, scrolled twice.
    func runWithServer() async throws {
        let start = ContinuousClock.now
        let json = self.json
        @Sendable func say(_ line: JSONEventLine, _ text: String) {
            ExampleSupport.printLine(json ? line.json : String(format: "%7.2f  %@", line.t, text))
        }
        // The server: the ten clips, from memory, at --rate bytes per second.
        var files: [String: Data] = [:]
        for name in Self.served { files[name] = try Data(contentsOf: URL(fileURLWithPath: ExampleSupport.shippedMedia(name))) }
        let bytesPerSecond = rate ?? (fling ? 20_000 : 2_000_000)
        let origin = LoopbackMediaServer(files: files, bytesPerSecond: bytesPerSecond)
        try origin.start()
        // The cache every player reads through.
        let temporary = cacheDir == nil
        let folder = cacheDir.map { URL(fileURLWithPath: $0) }
            ?? FileManager.default.temporaryDirectory.appendingPathComponent("playerkit-feed-\(UUID().uuidString)")
        let cache = try MediaCache(configuration: MediaCache.Configuration(directory: folder))
        var playerConfiguration = logging.applied(to: PlayerConfiguration(videoOutput: .none, audioOutput: .none))
        playerConfiguration.streamProviders = [cache.streamProvider]
        let view = try await openView()

        if let posters {
            let items = try Self.served.enumerated().map { index, name in ("item-\(index)", try cache.source(for: origin.url(name), key: name)) }
            try await Self.makePosters(items, into: posters, streamProviders: [cache.streamProvider], view: view, json: json, start: start)
        }
        let budget = try DecoderBudget(limit: decoders)
        var settings = AutoplayCoordinator.Settings()
        settings.settleDelay = .milliseconds(Int(settle * 1000))
        settings.precacheDistance = 1
        settings.precacheAmount = .all
        let coordinator = try AutoplayCoordinator(settings: settings, budget: budget, cache: cache)
        let decisions = PlayerEventBus.shared.subscribe(to: .all, kinds: [.autoplayDecision], delivery: .immediate) { record in
            guard case .decision(let decision)? = record.event.feature(AutoplayEvent.self) else { return }
            Self.show(decision, in: view)
            var line = JSONEventLine(player: decision.item, event: decision.action.rawValue, t: ExampleSupport.seconds(since: start))
            line.value = decision.reason
            say(line, decision.description)
        }
        defer { decisions.cancel() }
        var players: [Player] = []
        for (index, name) in Self.served.enumerated() {
            let player = try await Player.create(id: PlayerID(stringLiteral: "item-\(index)"), configuration: playerConfiguration)
            try await player.perform(.setLoop(.forever))
            try coordinator.add(player.id.rawValue, player: player, source: try cache.source(for: origin.url(name), key: name))
            players.append(player)
        }
        @Sendable func scroll(to offset: Double) throws {
            view?.scrolled(to: offset)
            for index in 0..<10 { try coordinator.reportVisibility(min(1, Self.visibility(of: index, at: offset)), of: "item-\(index)") }
        }
        let settle = self.settle
        if fling {
            try await Self.fling(
                scroll: scroll, cache: cache, origin: origin, rate: bytesPerSecond, files: files, settle: settle, say: say, start: start)
        } else {
        // Two passes, top to bottom: each item in turn comes into view and plays a moment.
        try await Interruption.shared.run {
            var offset = 0.0
            for pass in 1...2 {
                origin.resetCounts()
                let entries = cache.entries
                let servedBefore = Dictionary(uniqueKeysWithValues: Self.served.map { name in (name, entries.first { $0.key == name }?.bytesServedFromCache ?? 0) })
                var line = JSONEventLine(player: "feed", event: "pass", t: ExampleSupport.seconds(since: start))
                line.pass = pass
                say(line, "-- pass \(pass): scrolling through the ten items")
                for item in 0..<10 {
                    let target = Double(item)
                    let steps = 6
                    for step in 1...steps {
                        try scroll(to: offset + (target - offset) * Double(step) / Double(steps))
                        try await Task.sleep(for: .milliseconds(25))
                    }
                    offset = target
                    try await Task.sleep(for: .seconds(settle + 0.5))
                }
                // Leave the last item: back to the top, where the next pass starts.
                try scroll(to: 0)
                offset = 0
                try await Task.sleep(for: .seconds(settle + 0.5))
                var totalNetwork: Int64 = 0
                for (index, name) in Self.served.enumerated() {
                    let network = origin.counts(name).bodyBytes
                    let cached = (cache.entries.first { $0.key == name }?.bytesServedFromCache ?? 0) - (servedBefore[name] ?? 0)
                    totalNetwork += network
                    var line = JSONEventLine(player: "item-\(index)", event: "cacheUsage", t: ExampleSupport.seconds(since: start))
                    line.pass = pass
                    line.networkBytes = network
                    line.cacheBytes = cached
                    line.value = name
                    say(line, "   pass \(pass) item-\(index) (\(name)): \(network) bytes from the network, \(cached) from the cache")
                }
                var summary = JSONEventLine(player: "feed", event: "passDone", t: ExampleSupport.seconds(since: start))
                summary.pass = pass
                summary.networkBytes = totalNetwork
                say(summary, "-- pass \(pass) done: \(totalNetwork) bytes from the network in all")
            }
        }
        }
        await view?.close()
        for player in players { await player.shutdown() }
        await cache.shutdown()
        origin.stop()
        if temporary { try? FileManager.default.removeItem(at: folder) }
    }

    /// `--fling`: down the ten items fast over a slow server, resting only long enough on each
    /// for the coordinator to settle, start it and precache its neighbour. Each item leaves while
    /// its download runs; the cache cancels a download nobody reads or precaches any more and
    /// reports what it kept. Prints each cancel with the bytes it saved, then the total, which
    /// the server's own count of the bytes it sent confirms.
    static func fling(
        scroll: @escaping @Sendable (Double) throws -> Void, cache: MediaCache, origin: LoopbackMediaServer, rate: Int, files: [String: Data],
        settle: Double, say: @escaping @Sendable (JSONEventLine, String) -> Void, start: ContinuousClock.Instant
    ) async throws {
        let sizes = files.mapValues { Int64($0.count) }
        // The cache's events, read as they come: every cancelled download, with what it kept.
        let events = cache.events()
        let listener = Task {
            for await event in events {
                guard case .cancelled(let key, let cached) = event, let size = sizes[key] else { continue }
                let index = served.firstIndex(of: key) ?? -1
                var line = JSONEventLine(player: "item-\(index)", event: "downloadCancelled", t: ExampleSupport.seconds(since: start))
                line.value = key
                line.cacheBytes = cached
                line.sizeBytes = size
                line.savedBytes = max(0, size - cached)
                say(line, "   item-\(index) (\(key)) left after \(cached) of \(size) bytes: cancelling saved \(max(0, size - cached)) bytes")
            }
        }
        var line = JSONEventLine(player: "feed", event: "fling", t: ExampleSupport.seconds(since: start))
        line.value = "\(rate) bytes/s"
        say(line, "-- a fast fling down the ten items, the server sending \(rate) bytes/s")
        try await Interruption.shared.run {
            var offset = 0.0
            for item in 0..<10 {
                for step in 1...3 {
                    try scroll(offset + (Double(item) - offset) * Double(step) / 3)
                    try await Task.sleep(for: .milliseconds(25))
                }
                offset = Double(item)
                try await Task.sleep(for: .seconds(settle + 0.2))
            }
            // The fling ends on the last item, which may finish its download.
            try await Task.sleep(for: .seconds(1))
        }
        // What the server really sent: the savings, counted at the other end.
        let total = sizes.values.reduce(0, +)
        let sent = origin.totalBodyBytes
        listener.cancel()
        var summary = JSONEventLine(player: "feed", event: "flingDone", t: ExampleSupport.seconds(since: start))
        summary.sizeBytes = total
        summary.networkBytes = sent
        summary.savedBytes = max(0, total - sent)
        say(summary, "-- fling done: the server sent \(sent) of the items' \(total) bytes; cancelling saved \(max(0, total - sent)) bytes (\(total > 0 ? Int((Double(max(0, total - sent)) / Double(total) * 100).rounded()) : 0)%)")
    }
}
