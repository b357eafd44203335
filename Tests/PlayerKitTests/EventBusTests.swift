@testable import PlayerKitCore
import Dispatch
import Foundation
import Testing
import PlayerKit
import PlayerKitSupport

/// Collects what a queue subscription receives.
final class SubscriberLog: Sendable {
    private let storage = Locked<[PlayerEventRecord]>([])
    var records: [PlayerEventRecord] { storage.withLock { $0 } }
    var count: Int { storage.withLock { $0.count } }
    func append(_ record: PlayerEventRecord) { storage.withLock { $0.append(record) } }
}

@Suite("Event bus", .timeLimit(.minutes(4)))
struct EventBusTests {
    private func configuration(bus: PlayerEventBus, positionInterval: Duration = .milliseconds(100)) -> PlayerConfiguration {
        var configuration = Fixtures.headless
        configuration.eventBus = bus
        configuration.positionUpdateInterval = positionInterval
        return configuration
    }

    /// Drains a stream into a log on a task of its own.
    private func collect(_ stream: EventStream<PlayerEventRecord>, into log: SubscriberLog) -> Task<Void, Never> {
        Task {
            for await record in stream { log.append(record) }
        }
    }

    @Test("eight players, every channel: nothing under the wrong ID, the same order everywhere")
    func eightPlayersAllChannels() async throws {
        let bus = PlayerEventBus(label: "eight")
        let center = NotificationCenter()
        bus.startPostingNotifications(to: center)
        let ids = (0..<8).map { Fixtures.uniqueID("bus\($0)") }

        // Subscribers first: they exist before their players.
        var queueLogs: [PlayerID: SubscriberLog] = [:]
        var streamLogs: [PlayerID: SubscriberLog] = [:]
        var tokens: [PlayerSubscription] = []
        var readers: [Task<Void, Never>] = []
        let notified = SubscriberLog()
        let observer = center.addObserver(forName: nil, object: nil, queue: nil) { note in
            if let record = note.userInfo?[PlayerNotification.recordKey] as? PlayerEventRecord {
                #expect(PlayerNotification.name(for: record.event.kind) == note.name)
                #expect(note.name.rawValue == "PlayerKit.\(record.event.kind)")
                notified.append(record)
            }
        }
        defer { center.removeObserver(observer) }
        for id in ids {
            let queueLog = SubscriberLog()
            queueLogs[id] = queueLog
            tokens.append(bus.subscribe(to: .player(id)) { queueLog.append($0) })
            let streamLog = SubscriberLog()
            streamLogs[id] = streamLog
            readers.append(collect(bus.events(for: id), into: streamLog))
        }
        let everything = SubscriberLog()
        tokens.append(bus.subscribe { everything.append($0) })
        let immediate = SubscriberLog()
        tokens.append(bus.subscribe(delivery: .immediate) { immediate.append($0) })

        var players: [(Player, EventRecorder)] = []
        for (index, id) in ids.enumerated() {
            let (player, recorder) = try await Fixtures.player(id: id, configuration: configuration(bus: bus))
            try await player.perform(.setLoop(.forever))
            players.append((player, recorder))
            _ = index
        }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for (index, (player, _)) in players.enumerated() {
                group.addTask { try await player.load(.file(index.isMultiple(of: 2) ? Fixtures.clipA : Fixtures.clipB)) }
            }
            try await group.waitForAll()
        }
        for (_, recorder) in players {
            #expect(await recorder.waitFor { if case .positionChanged(let p) = $0.event { return p > 0.3 }; return false } != nil)
        }
        for (player, _) in players { await player.shutdown() }
        // Every channel has seen the last event of every player.
        for (player, recorder) in players {
            #expect(await recorder.waitFor { $0.event == .shutDown } != nil)
            let id = player.id
            for log in [queueLogs[id]!, streamLogs[id]!] {
                #expect(await eventually { log.records.last?.event == .shutDown }, "\(id)")
            }
        }
        #expect(await eventually { notified.records.filter { $0.event == .shutDown }.count == 8 })
        #expect(await eventually { everything.records.filter { $0.event == .shutDown }.count == 8 })

        for (player, recorder) in players {
            let id = player.id
            let delegateSeen = recorder.records
            #expect(delegateSeen.first?.event == .created && delegateSeen.first?.sequenceNumber == 1)
            #expect(delegateSeen.allSatisfy { $0.playerID == id })
            #expect(delegateSeen.map(\.sequenceNumber) == Array(1...UInt64(delegateSeen.count)))
            // The same events, in the same order, on every channel.
            let reference = delegateSeen.map { "\($0.sequenceNumber) \($0.event)" }
            for (channel, seen) in [
                ("queue", queueLogs[id]!.records), ("stream", streamLogs[id]!.records),
                ("all-players", everything.records.filter { $0.playerID == id }),
                ("immediate", immediate.records.filter { $0.playerID == id }),
            ] {
                #expect(seen.allSatisfy { $0.playerID == id }, "\(channel)")
                #expect(seen.map { "\($0.sequenceNumber) \($0.event)" } == reference, "\(channel) of \(id)")
            }
            let posted = notified.records.filter { $0.playerID == id }
            #expect(posted.map { "\($0.sequenceNumber) \($0.event)" }
                == delegateSeen.map { "\($0.sequenceNumber) \($0.event)" })
        }
        #expect(streamLogs.values.allSatisfy { $0.records.allSatisfy { $0.droppedBefore == 0 } })
        readers.forEach { $0.cancel() }
        tokens.forEach { $0.cancel() }
    }

    @Test("a selection of IDs: the IDs, duplicates once, no others")
    func selectionOfIDs() {
        let ids: [PlayerID] = ["left", "right", "left"]
        let selection = PlayerSelection.players(Set(ids))
        #expect(selection == .players(["left", "right"]))
        #expect(selection.contains("left") && selection.contains("right") && !selection.contains("center"))
        let none = PlayerSelection.players([])
        #expect(!none.contains("left"))
    }

    @Test("kind filters and the notification switch")
    func kindsAndNotificationSwitch() async throws {
        let bus = PlayerEventBus(label: "kinds")
        let center = NotificationCenter()
        let states = SubscriberLog()
        let token = bus.subscribe(kinds: [.stateChanged]) { states.append($0) }
        defer { token.cancel() }
        let notified = SubscriberLog()
        let observer = center.addObserver(forName: PlayerNotification.name(for: .stateChanged), object: nil, queue: nil) { note in
            if let record = note.userInfo?[PlayerNotification.recordKey] as? PlayerEventRecord { notified.append(record) }
        }
        defer { center.removeObserver(observer) }
        #expect(!bus.isPostingNotifications)

        let (player, recorder) = try await Fixtures.player(configuration: configuration(bus: bus))
        defer { Task { await player.shutdown() } }
        try await player.perform(.setLoop(.forever))  // the item must not end before the pause below, however slow the run
        try await player.load(.file(Fixtures.clipA), startPaused: true)
        #expect(await eventually { states.records.contains { $0.event == .stateChanged(from: .loading, to: .ready) } })
        // Off by default: no bridge, so nothing is queued to be posted later either.
        #expect(bus.notificationBridge == nil)
        #expect(notified.count == 0)

        bus.startPostingNotifications(to: center)
        #expect(bus.isPostingNotifications)
        let bridge = try #require(bus.notificationBridge)
        // Subscribed after the bridge, so the bus hands each batch to the bridge first: once this
        // has seen an event, a bridge still subscribed has it queued.
        let after = SubscriberLog()
        let marker = bus.subscribe(kinds: [.stateChanged], delivery: .immediate) { after.append($0) }
        defer { marker.cancel() }
        try await player.play()
        #expect(await eventually { notified.records.contains { $0.event == .stateChanged(from: .ready, to: .playing) } })
        bus.stopPostingNotifications()
        let before = notified.count
        try await player.pause()
        #expect(await recorder.waitForState(.paused))
        #expect(await eventually { after.records.contains { $0.event == .stateChanged(from: .playing, to: .paused) } })
        // Whatever the bridge was handed has been posted by now: the pause was not.
        bridge.waitUntilDelivered()
        #expect(notified.count == before)
        #expect(!notified.records.contains { $0.event == .stateChanged(from: .playing, to: .paused) })
        #expect(states.records.allSatisfy { $0.event.kind == .stateChanged })
    }

    @Test("a subscriber before its player, and across a replacement with the same ID")
    func subscriberBeforePlayerAndReplacement() async throws {
        let bus = PlayerEventBus(label: "early")
        let id = Fixtures.uniqueID("later")
        let log = SubscriberLog()
        let stream = bus.events(for: id)
        let streamLog = SubscriberLog()
        let reader = collect(stream, into: streamLog)
        let token = bus.subscribe(to: .player(id)) { log.append($0) }
        defer { token.cancel(); reader.cancel() }
        #expect(log.count == 0)

        let first = try await Player.create(id: id, configuration: configuration(bus: bus))
        try await first.load(.file(Fixtures.clipA), startPaused: true)
        await first.shutdown()
        let second = try await Player.create(id: id, configuration: configuration(bus: bus))
        try await second.load(.file(Fixtures.clipB), startPaused: true)
        #expect(await eventually { log.records.filter { if case .mediaLoaded = $0.event { return true }; return false }.count == 2 })
        await second.shutdown()
        #expect(await eventually { log.records.filter { $0.event == .shutDown }.count == 2 })
        let kinds = log.records.map(\.event.kind)
        #expect(kinds.filter { $0 == .created }.count == 2)
        #expect(kinds.first == .created && kinds.last == .shutDown)
        #expect(log.records.allSatisfy { $0.playerID == id })
        #expect(await eventually { streamLog.count == log.count })
    }

    @Test("the delegate is a subscription on the bus: the records a bus subscriber gets, in order, up to its player's shutDown; a later player with the ID is not heard")
    func delegateIsABusAdapter() async throws {
        let bus = PlayerEventBus(label: "delegate-adapter")
        let id = Fixtures.uniqueID("adapted")
        let log = SubscriberLog()
        let token = bus.subscribe(to: .player(id)) { log.append($0) }
        defer { token.cancel() }
        let (first, recorder) = try await Fixtures.player(id: id, configuration: configuration(bus: bus))
        try await first.load(.file(Fixtures.clipA), startPaused: true)
        try await first.perform(.setVolume(50))
        await first.shutdown()
        #expect(await recorder.waitFor { $0.event == .shutDown } != nil)
        let second = try await Player.create(id: id, configuration: configuration(bus: bus))
        try await second.load(.file(Fixtures.clipB), startPaused: true)
        await second.shutdown()
        #expect(await eventually { log.records.filter { $0.event == .shutDown }.count == 2 })
        // The delegate heard the first player's records, each once, as the bus gave them.
        let firstLife = Array(log.records.prefix { $0.event != .shutDown }) + [log.records.first { $0.event == .shutDown }!]
        #expect(recorder.records.map(\.sequenceNumber) == firstLife.map(\.sequenceNumber))
        #expect(recorder.events == firstLife.map(\.event))
        #expect(recorder.events.last == .shutDown && recorder.events.filter { $0 == .created }.count == 1)
    }

    // Cancelling from another thread during delivery, a handler cancelling itself, 16 threads
    // subscribing and cancelling, a slow stream overflowing: EventBusEmitterTests (no mpv).

    @Test("an immediate handler may call back into its player with send; order holds on every channel")
    func immediateHandlerCallsBack() async throws {
        let bus = PlayerEventBus(label: "immediate")
        let id = Fixtures.uniqueID("imm")
        let log = SubscriberLog()
        let queued = SubscriberLog()
        let players = Locked<Player?>(nil)
        let token = bus.subscribe(to: id, delivery: .immediate) { record in
            log.append(record)
            // Straight back into the player from the delivering thread (the pump): a request
            // sent without waiting, and a read-out. No deadlock, and the pump never waits.
            if case .stateChanged(_, .playing) = record.event, let player = players.withLock({ $0 }) {
                try? player.send(.pause)
                _ = player.state
            }
        }
        let other = bus.subscribe(to: id) { queued.append($0) }
        defer { token.cancel(); other.cancel() }
        let (player, recorder) = try await Fixtures.player(id: id, configuration: configuration(bus: bus))
        players.withLock { $0 = player }
        try await player.perform(.setLoop(.forever))
        try await player.load(.file(Fixtures.clipA))
        #expect(await recorder.waitForState(.paused))
        await player.shutdown()
        players.withLock { $0 = nil }
        #expect(await recorder.waitFor { $0.event == .shutDown } != nil)
        #expect(await eventually { queued.records.last?.event == .shutDown })
        let reference = recorder.records.map { "\($0.sequenceNumber) \($0.event)" }
        #expect(log.records.map { "\($0.sequenceNumber) \($0.event)" } == reference)
        #expect(queued.records.map { "\($0.sequenceNumber) \($0.event)" } == reference)
        #expect(reference.count == Int(recorder.records.last?.sequenceNumber ?? 0))
    }

    @Test("a cancelled subscription whose handler holds it is freed: no reference cycle is left")
    func selfHoldingSubscriptionFreed() {
        final class Holder: Sendable { let subscription = Locked<PlayerSubscription?>(nil) }
        let bus = PlayerEventBus(label: "cycle")
        weak var weakHolder: Holder?
        weak var weakSubscription: PlayerSubscription?
        do {
            let holder = Holder()
            // subscription -> its handler -> holder -> subscription: a cycle until cancel.
            let subscription = bus.subscribe { [holder] _ in holder.subscription.withLock { $0 }?.cancel() }
            holder.subscription.withLock { $0 = subscription }
            weakHolder = holder
            weakSubscription = subscription
            subscription.cancel()
        }
        #expect(weakHolder == nil, "the handler's captures outlived cancel()")
        #expect(weakSubscription == nil, "the subscription outlived cancel()")
    }

    @Test("a stream ends when its task is cancelled or it is cancelled")
    func streamLifetime() async throws {
        let bus = PlayerEventBus(label: "lifetime")
        let stream = bus.events()
        #expect(bus.subscriptionCount == 1)
        let reader = Task { () -> Int in
            var count = 0
            for await _ in stream { count += 1 }
            return count
        }
        reader.cancel()
        #expect(await reader.value == 0)
        stream.cancel()
        #expect(bus.subscriptionCount == 0)
        do {
            // A stream that is simply dropped ends its subscription too.
            _ = bus.events(for: "nobody")
        }
        #expect(bus.subscriptionCount == 0)
    }
}

/// Waits until `condition` holds, checking after each scheduling turn, for at most `timeout`.
/// For conditions that depend on queue deliveries that no event reports.
func eventually(timeout: Duration = .seconds(15), _ condition: @Sendable () -> Bool) async -> Bool {
    let deadline = ContinuousClock.now + timeout
    // A cancelled task's sleep throws at once: without the check the loop spun until the deadline.
    while ContinuousClock.now < deadline, !Task.isCancelled {
        if condition() { return true }
        try? await Task.sleep(for: .milliseconds(5))
    }
    return condition()
}

/// ``eventually(timeout:_:)`` for a condition that awaits (a property read from mpv).
func eventually(timeout: Duration = .seconds(15), _ condition: @Sendable () async -> Bool) async -> Bool {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline, !Task.isCancelled {
        if await condition() { return true }
        try? await Task.sleep(for: .milliseconds(5))
    }
    return await condition()
}
