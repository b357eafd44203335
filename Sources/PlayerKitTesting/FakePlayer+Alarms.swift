import PlayerKitCore

// Alarms and loudness a test raises and sets: published on the fake's clock while watched or
// observed, as a real player publishes what its detectors and meter find.
extension FakePlayer {
    /// Records a watch with `thresholds` (``alarmThresholds`` reads the latest live one's);
    /// the fake detects nothing itself: a test raises the alarms its code should hear with
    /// ``raiseAlarm(_:start:)``. Ending the last watch clears the alarms still raised, as a real
    /// player does.
    /// - Throws: ``/PlayerKitCore/PlayerError/invalidArgument(name:value:reason:)`` naming a
    ///   value out of its range; ``/PlayerKitCore/PlayerError/playerShutDown(_:)``.
    public func watchAlarms(_ thresholds: AlarmThresholds) async throws(PlayerError) -> PropertyObservation {
        try thresholds.check()
        let token = model.withLock { state -> UInt64? in
            guard !state.isShutDown else { return nil }
            state.lastStatisticsToken += 1
            state.alarmWatches.append((state.lastStatisticsToken, thresholds))
            return state.lastStatisticsToken
        }
        guard let token else { throw .playerShutDown(id) }
        return PropertyObservation { [weak self] in
            let position = self?.snapshot.position
            self?.change { state, events in
                state.alarmWatches.removeAll { $0.token == token }
                guard state.alarmWatches.isEmpty, !state.isShutDown else { return nil }
                for kind in AlarmKind.allCases {
                    guard let start = state.raisedAlarms.removeValue(forKey: kind) else { continue }
                    events.append(.alarmCleared(Alarm(kind: kind, start: start, end: max(start, position ?? start))))
                }
                return nil
            }
        }
    }

    /// The thresholds of the latest live watch (``watchAlarms(_:)``); nil when nothing watches.
    public var alarmThresholds: AlarmThresholds? { model.withLock { $0.alarmWatches.last?.thresholds } }

    /// Publishes ``/PlayerKitCore/PlayerEvent/alarmRaised(_:)`` for `kind`, starting at `start`
    /// (default: the position now, less the watched threshold, as a real player's fault began
    /// that long before its alarm). Nothing while no watch lives, for a kind it does not watch,
    /// or for a kind already raised.
    /// - Returns: the alarm raised, or nil.
    @discardableResult
    public func raiseAlarm(_ kind: AlarmKind, start: Double? = nil) -> Alarm? {
        let position = snapshot.position ?? 0
        var raised: Alarm?
        change { state, events in
            let thresholds = state.alarmWatches.last?.thresholds
            let watched: Duration?? = switch kind {
            case .freeze: thresholds?.freeze
            case .black: thresholds?.black
            case .silence: thresholds?.silence
            }
            guard !state.isShutDown, let threshold = watched ?? nil, state.raisedAlarms[kind] == nil else { return nil }
            let seconds = Double(threshold.components.seconds) + Double(threshold.components.attoseconds) / 1e18
            let alarm = Alarm(kind: kind, start: start ?? max(0, position - seconds))
            state.raisedAlarms[kind] = alarm.start
            events.append(.alarmRaised(alarm))
            raised = alarm
            return nil
        }
        return raised
    }

    /// Publishes ``/PlayerKitCore/PlayerEvent/alarmCleared(_:)`` for the raised alarm of
    /// `kind`, ending at `end` (default: the position now). Nothing when none is raised.
    /// - Returns: the alarm cleared, or nil.
    @discardableResult
    public func clearAlarm(_ kind: AlarmKind, end: Double? = nil) -> Alarm? {
        let position = snapshot.position ?? 0
        var cleared: Alarm?
        change { state, events in
            guard !state.isShutDown, let start = state.raisedAlarms.removeValue(forKey: kind) else { return nil }
            let alarm = Alarm(kind: kind, start: start, end: max(start, end ?? position))
            events.append(.alarmCleared(alarm))
            cleared = alarm
            return nil
        }
        return cleared
    }

    /// Sets the loudness each ``/PlayerKitCore/PlayerEvent/loudnessUpdated(_:)`` carries from
    /// the next sample on (nil: not measured yet, and no event).
    public func setLoudness(_ loudness: Loudness?) {
        change { state, _ in
            state.loudness = loudness
            return nil
        }
    }

    /// Publishes ``/PlayerKitCore/PlayerEvent/loudnessUpdated(_:)`` with the loudness set, every
    /// `interval` of clock time while the observation lives (the shortest interval of those
    /// observing), as a real player does.
    /// - Throws: ``/PlayerKitCore/PlayerError/invalidArgument(name:value:reason:)`` for an
    ///   interval under 100 ms or over a day; ``/PlayerKitCore/PlayerError/playerShutDown(_:)``.
    public func observeLoudness(every interval: Duration) async throws(PlayerError) -> PropertyObservation {
        guard Loudness.observableIntervals.contains(interval) else { throw Loudness.intervalRefused(interval) }
        let token = model.withLock { state -> UInt64? in
            guard !state.isShutDown else { return nil }
            state.lastStatisticsToken += 1
            state.loudnessObservations[state.lastStatisticsToken] = interval
            return state.lastStatisticsToken
        }
        guard let token else { throw .playerShutDown(id) }
        scheduleLoudnessSample()
        return PropertyObservation { [weak self] in
            guard let self else { return }
            model.withLock { state in
                state.loudnessObservations[token] = nil
                if state.loudnessObservations.isEmpty { _ = state.loudnessTimer?.cancel() }
            }
            scheduleLoudnessSample()
        }
    }

    private func scheduleLoudnessSample() {
        let interval = model.withLock { state -> Duration? in
            _ = state.loudnessTimer?.cancel()
            state.loudnessTimer = nil
            return state.isShutDown ? nil : state.loudnessObservations.values.min()
        }
        guard let interval else { return }
        let timer = clock.schedule(at: clock.now.advanced(by: interval)) { [weak self] in self?.sampleLoudness() }
        model.withLock { $0.loudnessTimer = timer }
    }

    private func sampleLoudness() {
        change { state, events in
            guard !state.isShutDown, !state.loudnessObservations.isEmpty, let loudness = state.loudness else { return nil }
            events.append(.loudnessUpdated(loudness))
            return nil
        }
        scheduleLoudnessSample()
    }
}
