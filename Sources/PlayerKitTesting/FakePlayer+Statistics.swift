import PlayerKitCore

// Statistics a test sets: read back, and published on the fake's clock while observed.
extension FakePlayer {
    /// Sets the statistics the fake reports: what ``statistics(timeout:)`` returns and what each
    /// ``/PlayerKitCore/PlayerEvent/statisticsUpdated(_:)`` carries from the next sample on.
    /// (The fake counts nothing itself: a test sets the figures its code should see.)
    public func setStatistics(_ statistics: PlaybackStatistics) {
        change { state, _ in
            state.statistics = statistics
            return nil
        }
    }

    /// The statistics last set with ``setStatistics(_:)`` (none known at first), at once.
    /// - Throws: ``/PlayerKitCore/PlayerError/playerShutDown(_:)`` once shut down.
    public func statistics(timeout: Duration) async throws(PlayerError) -> PlaybackStatistics {
        let read = model.withLock { state in state.isShutDown ? nil : state.statistics }
        guard let read else { throw .playerShutDown(id) }
        return read
    }

    /// Publishes ``/PlayerKitCore/PlayerEvent/statisticsUpdated(_:)`` with the statistics set,
    /// every `interval` of clock time while the observation lives (the shortest interval of
    /// those observing), as a real player does.
    /// - Throws: ``/PlayerKitCore/PlayerError/invalidArgument(name:value:reason:)`` for an
    ///   interval under 50 ms or over a day; ``/PlayerKitCore/PlayerError/playerShutDown(_:)``.
    public func observeStatistics(every interval: Duration) throws(PlayerError) -> PropertyObservation {
        guard PlaybackStatistics.observableIntervals.contains(interval) else { throw PlaybackStatistics.intervalRefused(interval) }
        let token = model.withLock { state -> UInt64? in
            guard !state.isShutDown else { return nil }
            state.lastStatisticsToken += 1
            state.statisticsObservations[state.lastStatisticsToken] = interval
            return state.lastStatisticsToken
        }
        guard let token else { throw .playerShutDown(id) }
        scheduleStatisticsSample()
        return PropertyObservation { [weak self] in
            guard let self else { return }
            model.withLock { state in
                state.statisticsObservations[token] = nil
                if state.statisticsObservations.isEmpty { _ = state.statisticsTimer?.cancel() }
            }
            scheduleStatisticsSample()
        }
    }

    /// Schedules the next sample at the shortest observed interval from now (replacing the one
    /// scheduled), or none when nobody observes.
    private func scheduleStatisticsSample() {
        let interval = model.withLock { state -> Duration? in
            _ = state.statisticsTimer?.cancel()
            state.statisticsTimer = nil
            return state.isShutDown ? nil : state.statisticsObservations.values.min()
        }
        guard let interval else { return }
        let timer = clock.schedule(at: clock.now.advanced(by: interval)) { [weak self] in self?.sampleStatistics() }
        model.withLock { $0.statisticsTimer = timer }
    }

    private func sampleStatistics() {
        change { state, events in
            guard !state.isShutDown, !state.statisticsObservations.isEmpty else { return nil }
            events.append(.statisticsUpdated(state.statistics))
            return nil
        }
        scheduleStatisticsSample()
    }
}
