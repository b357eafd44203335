internal import CFFmpeg
internal import CFFmpegLog
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

/// FFmpeg's log lines of an analysis's threads, to swift-log under `PlayerKit.analysis` (its
/// warnings at debug level, its errors at info: a damaged packet an analysis skips is not the
/// app's error) rather than to standard error.
///
/// FFmpeg's log callback is one for the process, and PlayerKit's players read FFmpeg's lines
/// (a load error's reason, a live source's loss), so an analysis never takes it: it claims the
/// thread it decodes on from `CFFmpegLog`, the callback's one owner. The lines of FFmpeg's own
/// worker threads go where the process's other unclaimed lines go (PlayerKitCore's
/// `PlayerKit.ffmpeg` logger once a player exists; here before that).
enum AnalysisLog {
    static let logger = Logger(label: "PlayerKit.analysis")

    /// Logs one whole line (called on the thread that logged it, with no lock held).
    private static let sink: playerkit_ffmpeg_log_sink = { level, _, line in
        guard let line else { return }
        let text = String(cString: line).trimmingCharacters(in: .whitespacesAndNewlines)
        guard !text.isEmpty else { return }
        AnalysisLog.logger.log(level: level <= AV_LOG_ERROR ? .info : .debug, "\(text)", metadata: ["source": "ffmpeg"])
    }

    /// Claims the calling thread's FFmpeg lines (an analysis's own thread, before it opens a
    /// file); its warnings and errors come here.
    static func claimThisThread() {
        _ = playerkit_ffmpeg_log_claim_thread(sink, AV_LOG_WARNING, sink)
    }
}
