internal import CFFmpeg
import Foundation
import Logging
import PlayerKitSupport

/// Runs an analysis's blocking work (FFmpeg's decoding, the scoring) on a thread of its own,
/// never on Swift's cooperative pool, and returns its result to the awaiting task. Cancelling
/// the task returns ``AnalysisError/cancelled`` at once and asks the work to stop (at its next
/// frame, or its next blocking read through FFmpeg's interrupt callback); its result is dropped.
enum AnalysisThread {
    static func run<Value: Sendable>(
        named name: String, _ work: @escaping @Sendable (FrameDecoder.Interruption) throws(AnalysisError) -> Value
    ) async throws(AnalysisError) -> Value {
        let interruption = FrameDecoder.Interruption()
        // Resumed once: by the work when it ends, or by a cancellation.
        let waiter = Locked<CheckedContinuation<Result<Value, AnalysisError>, Never>?>(nil)
        let take = { @Sendable in
            waiter.withLock { waiting in
                defer { waiting = nil }
                return waiting
            }
        }
        let outcome: Result<Value, AnalysisError> = await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Result<Value, AnalysisError>, Never>) in
                waiter.withLock { $0 = continuation }
                if Task.isCancelled { interruption.requested.withLock { $0 = true } }
                let thread = Thread {
                    let result = Result { () throws(AnalysisError) in try work(interruption) }
                    take()?.resume(returning: result)
                }
                thread.name = name
                thread.start()
            }
        } onCancel: {
            interruption.requested.withLock { $0 = true }
            take()?.resume(returning: .failure(.cancelled))
        }
        return try outcome.get()
    }
}

/// FFmpeg's log lines, to swift-log under `PlayerKit.analysis` (its warnings at debug level, its
/// errors at info: a damaged packet an analysis skips is not the app's error) rather than to
/// standard error.
enum FFmpegLog {
    static let logger = Logger(label: "PlayerKit.analysis")

    /// The forwarder's destination, set once (a `static let` runs its initializer exactly once,
    /// before anyone reads it).
    private static let sink: Void = pk_av_log_set_sink { level, line in
        guard let line else { return }
        let text = String(cString: line).trimmingCharacters(in: .whitespacesAndNewlines)
        guard !text.isEmpty else { return }
        FFmpegLog.logger.log(level: level <= AV_LOG_ERROR ? .info : .debug, "\(text)", metadata: ["source": "ffmpeg"])
    }

    /// Routes FFmpeg's log here (again: libmpv takes the process's one log callback while it has
    /// cores). Called before each file is opened.
    static func route() {
        _ = sink
        pk_av_log_install()
    }
}
