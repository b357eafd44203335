import PlayerKitSupport

/// The playback position as the event pump last saw it, for stamping rendered frames with
/// their media time. The pump notes every `time-pos` change; a render thread may wait (briefly,
/// on this lock, never on mpv, for at most the timeout it gives, on the monotonic clock) for the
/// change that belongs to the frame it just rendered.
final class FrameClock: @unchecked Sendable {
    // @unchecked: every field is read and written under `condition`.
    private let condition = MonotonicCondition()
    private var position: Double?
    private var updates: UInt64 = 0

    /// The latest position and how many changes were noted so far.
    struct Reading: Sendable {
        var position: Double?
        var updates: UInt64
    }

    /// Called by the pump for each `time-pos` change.
    func note(_ value: Double?) {
        condition.lock()
        position = value
        updates &+= 1
        condition.broadcast()
        condition.unlock()
    }

    /// The current reading.
    func read() -> Reading {
        condition.lock()
        defer { condition.unlock() }
        return Reading(position: position, updates: updates)
    }

    /// Waits until a change after `seen` arrives, or `timeout` passes (measured on the monotonic
    /// clock); returns the reading then.
    func waitForChange(after seen: UInt64, timeout: Duration) -> Reading {
        let deadline = ContinuousClock.now + timeout
        condition.lock()
        defer { condition.unlock() }
        while updates == seen {
            if !condition.wait(until: deadline) { break }
        }
        return Reading(position: position, updates: updates)
    }
}
