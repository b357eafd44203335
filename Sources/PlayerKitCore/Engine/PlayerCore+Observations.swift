internal import CMPV
import Dispatch
import Foundation
import Logging
import PlayerKitSupport

// Observation counts: the observations that live while someone uses them (per-frame positions,
// the frame clock, buffered media) and the app's own property observations.
extension PlayerCore {
    /// Asks mpv for every `time-pos` change (one per frame) while at least one user wants it,
    /// so ``PlayerEvent/positionChanged(_:)`` comes per frame and its timestamps time frames.
    /// Balanced calls: `true` adds a user, `false` removes one.
    func observeEveryPosition(_ enabled: Bool) {
        observe("time-pos", id: MPVRequestIDs.everyPositionObservation, users: everyPositionUsers, enabled: enabled)
    }

    /// An observation of `property` under `id` that lives while `users` is above zero:
    /// `enabled` adds a user (the first one starts it), `false` removes one (the last one ends
    /// it). `mpv_observe_property` does not wait for the core.
    func observe(_ property: String, id: UInt64, users: Locked<Int>, enabled: Bool) {
        let change = users.withLock { users -> Bool? in
            users += enabled ? 1 : -1
            if enabled, users == 1 { return true }
            if !enabled, users == 0 { return false }
            return nil
        }
        guard let change else { return }
        _ = handle.ifAlive { raw in
            if change {
                mpv_observe_property(raw, id, property, MPV_FORMAT_NODE)
            } else {
                mpv_unobserve_property(raw, id)
            }
        }
    }

    /// Asks mpv for every change of its demuxer cache's state while at least one user wants
    /// it, reported as ``PlayerEvent/bufferedMediaChanged(_:)``. Balanced calls, as
    /// ``observeEveryPosition(_:)``. `mpv_observe_property` does not wait for the core.
    func observeBufferedMedia(_ enabled: Bool) {
        observe("demuxer-cache-state", id: MPVRequestIDs.bufferedMediaObservation, users: bufferedMediaUsers, enabled: enabled)
    }

    /// From mpv's `demuxer-cache-state`: the position up to which the player has its source in
    /// memory (`cache-end`), and up to which it can seek in it (the furthest end of its
    /// `seekable-ranges`: mpv refuses a seek past it; on a live stream it ends about a segment
    /// before the cache does, at the last segment's first keyframe).
    static func bufferedMedia(from state: MPVValue) -> BufferedMedia {
        guard case .map(let entries) = state else { return BufferedMedia(cachedUntil: nil, seekableUntil: nil) }
        let end = entries.first { $0.key == "cache-end" }?.value.doubleValue
        var seekable: Double?
        if case .array(let ranges)? = entries.first(where: { $0.key == "seekable-ranges" })?.value {
            for case .map(let range) in ranges {
                if let rangeEnd = range.first(where: { $0.key == "end" })?.value.doubleValue { seekable = max(seekable ?? rangeEnd, rangeEnd) }
            }
        }
        return BufferedMedia(cachedUntil: end, seekableUntil: seekable)
    }

    /// Asks mpv for every `time-pos` change while at least one frame output lives, for the
    /// ``frameClock`` only: these changes update no read-out and publish no event, so a frame
    /// output costs no per-frame traffic through the fan-out. Balanced calls, as
    /// ``observeEveryPosition(_:)``. `mpv_observe_property` does not wait for the core.
    func observeFrameClock(_ enabled: Bool) {
        observe("time-pos", id: MPVRequestIDs.frameClockObservation, users: frameClockUsers, enabled: enabled)
    }

    /// Asks mpv for every change of property `name` (a top-level name, or a sub-property such as
    /// `metadata/by-key/title`), reported as ``PlayerEvent/propertyChanged(name:value:)``, the
    /// current value first. Returns the observation's ID for ``endPropertyObservation(_:)``.
    /// `mpv_observe_property` does not wait for the core.
    func observeProperty(_ name: String) throws(PlayerError) -> UInt64 {
        // A shut-down player says so first, whatever the name (as every call on it does).
        guard !isShutDown else { throw .playerShutDown(id) }
        let topLevel = String(name.prefix { $0 != "/" })
        guard !name.isEmpty, catalog.properties.contains(topLevel) else { throw .propertyNotFound(name: name) }
        let observation = appObservations.withLock { observations -> UInt64 in
            let observation = MPVRequestIDs.appObservationBit | observations.next
            observations.next += 1
            observations.live.insert(observation)
            return observation
        }
        let status = handle.ifAlive { mpv_observe_property($0, observation, name, MPV_FORMAT_NODE) }
        guard let status, status >= 0 else {
            appObservations.withLock { _ = $0.live.remove(observation) }
            if status == nil || isShutDown { throw .playerShutDown(id) }
            throw .propertyNotFound(name: name)
        }
        return observation
    }

    /// Ends an observation from ``observeProperty(_:)``. Idempotent; never waits.
    func endPropertyObservation(_ observation: UInt64) {
        guard appObservations.withLock({ $0.live.remove(observation) }) != nil else { return }
        _ = handle.ifAlive { mpv_unobserve_property($0, observation) }
    }
}
