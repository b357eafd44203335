/// The current item's watchdog: one of `PlaybackModel`'s sub-machines, pure, with one job. It gives
/// up an item that waits for the network longer than the app allows
/// (``PlayerConfiguration/bufferingTimeout``), and tells a stream cut short from one that finished
/// (mpv reports both as an ordinary end of file).
struct ItemWatchdog: Sendable {
    /// How long buffering may last before the item is given up; nil: for ever.
    let bufferingTimeout: Duration?
    /// When the current spell of buffering began, as the poll ticks saw it.
    private(set) var bufferingSince: ContinuousClock.Instant?
    /// The error the current item ends with once the stop asked for by a buffering timeout comes.
    private(set) var givenUp: PlayerError?
    /// The time of the last packet the demuxer read (`demuxer-cache-time`), when polled.
    private var demuxedUntil: Double?

    init(bufferingTimeout: Duration?) {
        self.bufferingTimeout = bufferingTimeout
    }

    /// A new item started: nothing is known of it.
    mutating func itemStarted() {
        bufferingSince = nil
        givenUp = nil
        demuxedUntil = nil
    }

    /// The demuxer read a packet up to `time` (seconds of media).
    mutating func noteDemuxed(until time: Double) {
        demuxedUntil = max(demuxedUntil ?? 0, time)
    }

    /// A poll tick at `now` in `state`. Returns the error to give the item up with, once, when it
    /// has been buffering for ``bufferingTimeout``: the caller stops the item, and its end is
    /// that error (``takeGivenUp()``).
    mutating func tick(now: ContinuousClock.Instant, state: PlayerState, source: @autoclosure () -> String,
                       position: Double?) -> PlayerError? {
        guard let bufferingTimeout, state == .buffering, givenUp == nil else {
            if state != .buffering { bufferingSince = nil }
            return nil
        }
        guard let since = bufferingSince else {
            bufferingSince = now
            return nil
        }
        guard now - since >= bufferingTimeout else { return nil }
        givenUp = .bufferingTimedOut(source: source(), position: position, after: bufferingTimeout)
        return givenUp
    }

    /// The error of the stop a buffering timeout asked for, taken.
    mutating func takeGivenUp() -> PlayerError? {
        defer { givenUp = nil }
        return givenUp
    }

    /// ``ItemEndReason/truncated(position:duration:)`` when an item that reached its end of file
    /// got well short of its `duration`: neither `position` nor the last packet read came within a
    /// second (and 5 %) of it, plus what one position interval (`positionInterval` seconds at
    /// `speed`) can hide. Nil when it finished, or when nothing can tell (no duration or position).
    func truncation(duration: Double?, position: Double?, positionInterval: Double, speed: Double?) -> ItemEndReason? {
        guard let duration, duration > 0, let position else { return nil }
        let reached = max(position, demuxedUntil ?? 0)
        let slack = max(1, duration * 0.05) + positionInterval * max(speed ?? 1, 1)
        guard duration - reached > slack else { return nil }
        return .truncated(position: position, duration: duration)
    }
}
