import Dispatch
import Foundation
import Testing
import PlayerKit
import PlayerKitCache
import PlayerKitSupport

/// A provider whose `open` does not return until the test lets it go (or a minute passes):
/// what a stream provider stuck on a transfer looks like to mpv. mpv cannot interrupt an
/// `open`, so the item never loads or fails, and mpv cannot destroy the core meanwhile.
final class BlockingOpenProvider: MediaStreamProvider, @unchecked Sendable {
    // @unchecked: only semaphores and a Locked counter.
    let scheme: String
    /// Signalled each time mpv enters `open`.
    let entered = DispatchSemaphore(value: 0)
    private let release = DispatchSemaphore(value: 0)
    let opens = Locked(0)

    init(scheme: String = "pkblock") {
        self.scheme = scheme
    }

    func open(_ url: String, player: PlayerID) throws(MediaStreamError) -> any MediaByteStream {
        opens.withLock { $0 += 1 }
        entered.signal()
        // Bounded too: a test that forgets to let go does not keep mpv's thread for ever.
        _ = release.wait(timeout: .now() + .seconds(60))
        release.signal()  // once let go, every later open returns at once
        throw .notFound(url: url)
    }

    /// Lets every `open`, now and later, return (with `notFound`).
    func letGo() { release.signal() }

    /// Waits (off the cooperative pool) until mpv has entered `open`, at most `timeout`.
    func waitUntilEntered(timeout: Duration = .seconds(15)) async throws -> Bool {
        let entered = entered
        return try await offPool {
            entered.wait(timeout: .now() + .milliseconds(Int(timeout.inSeconds * 1000))) == .success
        }
    }
}

/// Runs `body` and returns its result, or nil when `limit` passes first: how a test tells "it
/// returned in time" from "it hung" without hanging itself. The body runs in a task of its own,
/// cancelled and left to end on its own when the time is up (a task group would wait for it).
func within<Value: Sendable>(_ limit: Duration, _ body: @escaping @Sendable () async -> Value) async -> Value? {
    let waiter = Locked<CheckedContinuation<Value?, Never>?>(nil)
    let finish = { @Sendable (value: Value?) in waiter.withLock { $0.take() }?.resume(returning: value) }
    return await withCheckedContinuation { (continuation: CheckedContinuation<Value?, Never>) in
        waiter.withLock { $0 = continuation }
        let work = Task { finish(await body()) }
        Task {
            try? await Task.sleep(for: limit)
            work.cancel()
            finish(nil)
        }
    }
}

/// `within` for a blocking call: runs it on a thread of its own, so a call that blocks holds
/// neither the test nor the cooperative pool; nil when it has not returned within `limit`.
func blockingWithin<Value: Sendable>(_ limit: Duration, _ body: @escaping @Sendable () -> Value) async -> Value? {
    let result = Locked<Value?>(nil)
    let done = DispatchSemaphore(value: 0)
    Thread {
        let value = body()
        result.withLock { $0 = value }
        done.signal()
    }.start()
    let finished = (try? await offPool {
        done.wait(timeout: .now() + .milliseconds(Int(limit.inSeconds * 1000))) == .success
    }) ?? false
    return finished ? result.withLock { $0 } : nil
}

@Suite("Every wait is bounded", .timeLimit(.minutes(4)), .tags(.waitPass))
struct WaitBoundTests {
    static func configuration(_ provider: BlockingOpenProvider) -> PlayerConfiguration {
        var configuration = Fixtures.headless
        configuration.streamProviders = [provider]
        return configuration
    }

    @Test("a load whose item never opens ends with a typed timeout at loadTimeout, stops the item, and the player stays usable")
    func loadTimesOut() async throws {
        let provider = BlockingOpenProvider()
        defer { provider.letGo() }
        var configuration = Self.configuration(provider)
        configuration.loadTimeout = .seconds(1)
        let (player, _) = try await Fixtures.player(configuration: configuration)
        let started = ContinuousClock.now
        let outcome = await within(.seconds(8)) { () -> Result<MediaInfo, PlayerError> in
            do throws(PlayerError) { return .success(try await player.load("pkblock://stuck")) } catch { return .failure(error) }
        }
        let elapsed = ContinuousClock.now - started
        #expect(provider.opens.withLock { $0 } >= 1, "mpv never reached the provider's open")
        switch outcome {
        case .failure(.timedOut(let operation, let after))?:
            #expect(after == .seconds(1) && operation.contains("pkblock://stuck"), "\(operation)")
            #expect(elapsed >= .milliseconds(950) && elapsed < .seconds(5), "\(elapsed)")
        default:
            Issue.record("the load did not end with timedOut within 8 s: \(String(describing: outcome)) after \(elapsed)")
        }
        // Commands are answered while the item is stuck opening: mpv answers them between its
        // checks on the opening thread.
        let volume = await within(.seconds(5)) { await Self.outcome { () async throws(PlayerError) in try await player.perform(.setVolume(40)) } }
        #expect(volume.map { (try? $0.get()) != nil } == true, "setVolume did not return while the item was opening")
        // Once the provider lets go, the player loads the next item as usual.
        provider.letGo()
        let next = await within(.seconds(15)) { (try? await player.load(MediaSource(Fixtures.clipA), startPaused: true)) != nil }
        #expect(next == true)
        await player.shutdown()
    }

    @Test("a bad loadTimeout or shutdownTimeout is refused, naming the value")
    func badTimeouts() async throws {
        for (name, change) in [
            ("loadTimeout", { (c: inout PlayerConfiguration) in c.loadTimeout = .zero }),
            ("shutdownTimeout", { (c: inout PlayerConfiguration) in c.shutdownTimeout = .seconds(-1) }),
            ("loadTimeout", { (c: inout PlayerConfiguration) in c.loadTimeout = .seconds(86_401) }),
        ] as [(String, (inout PlayerConfiguration) -> Void)] {
            var configuration = Fixtures.headless
            change(&configuration)
            do throws(PlayerError) {
                let player = try await Player.create(configuration: configuration)
                Issue.record("accepted a bad \(name)")
                Task { await player.shutdown() }
            } catch {
                guard case .invalidArgument(let argument, _, _) = error else {
                    Issue.record("\(error)")
                    continue
                }
                #expect(argument == name)
            }
        }
    }

    @Test("shutdown returns at shutdownTimeout while mpv cannot let go; calls made meanwhile fail at once; the core goes later")
    func shutdownIsBounded() async throws {
        let provider = BlockingOpenProvider()
        defer { provider.letGo() }
        var configuration = Self.configuration(provider)
        configuration.shutdownTimeout = .seconds(1)
        let id = Fixtures.uniqueID("bounded-shutdown")
        let (player, events) = try await Fixtures.player(id: id, configuration: configuration)
        let load = Task { try? await player.load("pkblock://stuck") }
        #expect(try await provider.waitUntilEntered(), "mpv never reached the provider's open")

        let started = ContinuousClock.now
        let returned = await within(.seconds(8)) { await player.shutdown(); return true }
        let elapsed = ContinuousClock.now - started
        #expect(returned == true, "shutdown did not return within 8 s while mpv was stuck")
        #expect(elapsed < .seconds(5), "\(elapsed)")
        #expect(player.isShutDown)
        // A command made while mpv is still destroying the core fails at once; it does not wait
        // for the destruction.
        let play = await within(.seconds(3)) { await Self.outcome { () async throws(PlayerError) in try await player.play() } }
        switch play {
        case .failure(.playerShutDown(let failed))?: #expect(failed == id)
        default: Issue.record("play() during the core's destruction: \(String(describing: play)) (nil: still blocked after 3 s)")
        }
        let property = await within(.seconds(3)) { await Self.outcome { () async throws(PlayerError) in _ = try await player.property("volume") } }
        #expect(property.map { if case .failure(.playerShutDown) = $0 { return true }; return false } == true, "\(String(describing: property))")
        // The ID is free for a new player already.
        let successor = await blockingWithin(.seconds(5)) { try? Player(id: id, configuration: Fixtures.headless) } ?? nil
        #expect(successor != nil, "the ID was not free after shutdown returned")
        if let successor { await successor.shutdown() }

        // Once mpv lets go, the core is destroyed and the last event says so; the load ends.
        provider.letGo()
        #expect(await events.waitFor { $0.event == .shutDown } != nil)
        #expect(await within(.seconds(15)) { _ = await load.value; return true } == true)
    }
}

@Suite("MonotonicCondition", .timeLimit(.minutes(4)), .tags(.timingPass))
struct MonotonicConditionTests {
    @Test("a timed wait ends at its deadline, measured on the monotonic clock; a signal ends it early")
    func timedWait() async throws {
        let condition = MonotonicCondition()
        let (timedOut, elapsed) = try await offPool { () -> (Bool, Duration) in
            let started = ContinuousClock.now
            condition.lock()
            let signalled = condition.wait(timeout: .milliseconds(200))
            condition.unlock()
            return (!signalled, ContinuousClock.now - started)
        }
        #expect(timedOut && elapsed >= .milliseconds(200) && elapsed < .seconds(2), "\(elapsed)")

        // A deadline already passed returns at once.
        let past = try await offPool { () -> Bool in
            condition.withLock { condition.wait(until: ContinuousClock.now - .seconds(1)) }
        }
        #expect(!past)

        let flag = Locked(false)
        let woke = DispatchSemaphore(value: 0)
        let waitedFor = Locked<Duration?>(nil)
        Thread {
            let started = ContinuousClock.now
            condition.lock()
            while !flag.withLock({ $0 }) {
                if !condition.wait(timeout: .seconds(30)) { break }
            }
            condition.unlock()
            waitedFor.withLock { $0 = ContinuousClock.now - started }
            woke.signal()
        }.start()
        try await Task.sleep(for: .milliseconds(50))
        condition.withLock {
            flag.withLock { $0 = true }
            condition.broadcast()
        }
        let ended = try await offPool { woke.wait(timeout: .now() + .seconds(10)) == .success }
        #expect(ended && (waitedFor.withLock { $0 } ?? .seconds(99)) < .seconds(10))
    }
}

extension WaitBoundTests {
    /// What `body` threw, or success.
    static func outcome(_ body: @Sendable () async throws(PlayerError) -> Void) async -> Result<Void, PlayerError> {
        do throws(PlayerError) {
            try await body()
            return .success(())
        } catch {
            return .failure(error)
        }
    }
}
