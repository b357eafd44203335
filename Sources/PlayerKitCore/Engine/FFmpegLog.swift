internal import CFFmpegLog
internal import CMPV
import Dispatch
import Foundation
import Logging
import PlayerKitSupport

/// FFmpeg's log, process-wide, each line handed to the player whose thread wrote it
/// (``FFmpegLineAttribution``), or to nobody.
///
/// libmpv gives FFmpeg's log to the first core of the process (mpv's `init_libav`) and, when that
/// core is destroyed, to standard error until the next core starts. So PlayerKit starts, before
/// the process's first player core, one core of its own that never plays and lives as long as
/// the process: it keeps mpv's hands off FFmpeg's log (mpv sets FFmpeg's callback only when no
/// core has it, and puts FFmpeg's default back only when that core goes). Then PlayerKit takes
/// FFmpeg's callback (the C part, `CFFmpegLog`): each whole line goes, on the thread that wrote
/// it, to the sink of the player it is credited to (the player's pump reads it, in
/// ``PlayerCore``), or, when it is nobody's, to the logger labelled `PlayerKit.ffmpeg` (warnings
/// and errors, without a `player`), from a queue of its own so no app code runs on FFmpeg's
/// threads.
///
/// The sink runs on FFmpeg's thread with no PlayerKit lock held; it only queues the line and
/// wakes the pump. Nothing here calls mpv from the callback.
final class FFmpegLog: Sendable {
    /// One whole line: mpv's level for it (as mpv maps FFmpeg's levels), mpv's module name for
    /// it (`ffmpeg`, `ffmpeg/demuxer`, `ffmpeg/video`, `ffmpeg/audio`), its text, and when it was
    /// written (on the monotonic clock).
    struct Line: Sendable, Equatable {
        let level: MPVEvent.LogLevel
        let module: String
        let text: String
        let time: ContinuousClock.Instant

        /// Whether it is a warning or an error (a player's model reads those whatever its level).
        var isSevere: Bool { level == .warn || level == .error || level == .fatal }
        /// Whether it says FFmpeg starts a request ("Opening 'URL' for reading"): the model times
        /// a request that fails with no reason from it.
        var startsRequest: Bool { text.contains("Opening '") }
    }

    static let shared = FFmpegLog()

    private struct Registration: Sendable {
        let levels: Set<MPVEvent.LogLevel>
        let sink: @Sendable (Line) -> Void
    }

    private let attribution = Locked(FFmpegLineAttribution())
    private let registrations = Locked<[FFmpegLineAttribution.Token: Registration]>([:])
    /// Each thread's claim (a token; none: unclaimed). A thread's value ends with the thread.
    private let threadKey: pthread_key_t
    private let processQueue = DispatchQueue(label: "PlayerKit.ffmpeg")
    private let processLogger = Logger(label: "PlayerKit.ffmpeg")

    private init() {
        var key = pthread_key_t()
        pthread_key_create(&key, nil)
        threadKey = key
    }

    /// Whether PlayerKit holds FFmpeg's log (its own core started and its callback installed).
    /// Evaluated once, by the process's first core creation, under the creation lock: false when
    /// the core or the callback could not be had (FFmpeg's lines then go where mpv sends them).
    static let installed: Bool = shared.install()

    /// The core that keeps FFmpeg's log away from mpv (its address): never destroyed.
    private let holder = Locked<UInt>(0)

    private func install() -> Bool {
        setlocale(LC_NUMERIC, "C")
        guard let core = mpv_create() else { return false }
        let options = [
            ("config", "no"), ("load-scripts", "no"), ("ytdl", "no"), ("osc", "no"), ("terminal", "no"),
            ("input-default-bindings", "no"), ("input-vo-keyboard", "no"), ("input-terminal", "no"),
            ("load-stats-overlay", "no"), ("load-osd-console", "no"), ("load-auto-profiles", "no"),
            ("idle", "yes"), ("vo", "null"), ("ao", "null"), ("vid", "no"), ("aid", "no"), ("sid", "no"),
        ]
        for (name, value) in options { mpv_set_option_string(core, name, value) }
        guard mpv_initialize(core) >= 0 else {
            mpv_terminate_destroy(core)
            return false
        }
        holder.withLock { $0 = UInt(bitPattern: Int(bitPattern: UnsafeRawPointer(core))) }
        return playerkit_ffmpeg_log_install(ffmpegLineSink, Self.callbackLevel(for: [])) == 0
    }

    /// Registers a player whose sink takes its lines at `levels` (and its warnings, errors and
    /// request starts in any case: they say why an item failed). Returns its token.
    func register(levels: Set<MPVEvent.LogLevel>, sink: @escaping @Sendable (Line) -> Void) -> FFmpegLineAttribution.Token {
        let token = attribution.withLock { $0.register() }
        let all = registrations.withLock { registrations -> [Set<MPVEvent.LogLevel>] in
            registrations[token] = Registration(levels: levels, sink: sink)
            return registrations.values.map(\.levels)
        }
        playerkit_ffmpeg_log_set_max_level(Self.callbackLevel(for: all))
        return token
    }

    /// The player is gone: its lines are nobody's from now on.
    func unregister(_ token: FFmpegLineAttribution.Token) {
        attribution.withLock { $0.unregister(token) }
        let all = registrations.withLock { registrations -> [Set<MPVEvent.LogLevel>] in
            registrations[token] = nil
            return registrations.values.map(\.levels)
        }
        playerkit_ffmpeg_log_set_max_level(Self.callbackLevel(for: all))
    }

    /// The player loads `source`, and is opening it until ``noteOpened(_:)``.
    func noteLoading(_ source: String, for token: FFmpegLineAttribution.Token) {
        attribution.withLock { attribution in
            attribution.noteSource(source, for: token)
            attribution.noteOpening(source, for: token)
        }
    }

    /// The player has `source` in its playlist (an appended entry).
    func noteSource(_ source: String, for token: FFmpegLineAttribution.Token) {
        attribution.withLock { $0.noteSource(source, for: token) }
    }

    /// The player's open ended (its item loaded or failed).
    func noteOpened(_ token: FFmpegLineAttribution.Token) {
        attribution.withLock { $0.noteOpening(nil, for: token) }
    }

    /// The level above which FFmpeg's callback drops lines unformatted: FFmpeg's verbose lines
    /// always (they name the URLs a thread opens, which claims it), its debug and trace lines
    /// only when a player logs mpv's trace level (mpv logs FFmpeg's verbose lines at its debug).
    static func callbackLevel(for levels: [Set<MPVEvent.LogLevel>]) -> Int32 {
        levels.contains { $0.contains(.trace) } ? 56 : 40
    }

    /// mpv's level for an FFmpeg level (mpv's `av_log_level_to_mp_level`).
    static func level(ffmpeg level: Int32) -> MPVEvent.LogLevel {
        switch level {
        case 41...: .trace
        case 33...: .debug
        case 25...: .verbose
        case 17...: .warn
        case 9...: .error
        default: .fatal
        }
    }

    /// A whole line, on the thread that wrote it.
    fileprivate func route(ffmpegLevel: Int32, category: String, text: String) {
        let claim = UInt(bitPattern: pthread_getspecific(threadKey))
        let current: FFmpegLineAttribution.Token? = claim == 0 ? nil : claim
        let owner = attribution.withLock { $0.claim(current: current, text: text) }
        if owner != current {
            pthread_setspecific(threadKey, owner.flatMap { UnsafeRawPointer(bitPattern: $0) })
        }
        let line = Line(level: Self.level(ffmpeg: ffmpegLevel), module: category.isEmpty ? "ffmpeg" : "ffmpeg/\(category)", text: text,
                        time: .now)
        if let owner, let registration = registrations.withLock({ $0[owner] }) {
            if line.isSevere || line.startsRequest || registration.levels.contains(line.level) { registration.sink(line) }
            return
        }
        guard line.isSevere else { return }
        let logger = processLogger
        processQueue.async {
            let message: Logger.Message = "[\(line.module)] \(line.text)"
            let metadata: Logger.Metadata = ["module": "\(line.module)"]
            switch line.level {
            case .fatal: logger.critical(message, metadata: metadata)
            case .error: logger.error(message, metadata: metadata)
            default: logger.warning(message, metadata: metadata)
            }
        }
    }
}

/// FFmpeg's whole lines, from `CFFmpegLog`'s callback.
private func ffmpegLineSink(_ level: Int32, _ category: UnsafePointer<CChar>?, _ text: UnsafePointer<CChar>?) {
    guard let text else { return }
    FFmpegLog.shared.route(ffmpegLevel: level, category: category.map { String(cString: $0) } ?? "", text: String(cString: text))
}
