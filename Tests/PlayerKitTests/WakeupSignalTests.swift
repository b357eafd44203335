import Dispatch
import Glibc
@testable import PlayerKitCore
import PlayerKitSupport
import Testing

/// The pump's wakeup signal hands mpv's wakeups to one drain at a time. A closure kept in a
/// `Locked` directly and read with `withLock { $0 }` comes out wrapped in two more
/// reabstraction thunks each time (the inout write-back stores the wrapped one): every drain
/// then ran through a chain that grew by two thunks per wakeup, so a player's event pump cost
/// more the longer it played (a 4-angle multi-view, 11 s in: over 127 thunk frames under each
/// drain in `perf`, and 14% of the process's samples in them).
@Suite("Wakeup signal", .timeLimit(.minutes(1)))
struct WakeupSignalTests {
    @Test("a drain runs at the same stack depth at its 2,000th wakeup as at its first: the drain closure is not re-wrapped at each wakeup")
    func drainStaysAtItsDepth() {
        let signal = WakeupSignal(queue: DispatchQueue(label: "playerkit.test.wakeup"))
        // Where each drain ran: its thread, and the address of a local in its stack.
        let depths = Locked<[(thread: UInt, address: Int)]>([])
        let ran = DispatchSemaphore(value: 0)
        signal.setDrain { [weak signal] in
            signal?.rearm()
            depths.withLock { $0.append((UInt(pthread_self()), stackAddress())) }
            ran.signal()
        }
        for _ in 0..<2000 {
            signal.fire()
            guard ran.wait(timeout: .now() + 5) == .success else {
                Issue.record("a drain did not run within 5 s")
                return
            }
        }
        let all = depths.withLock { $0 }
        #expect(all.count == 2000)
        // On each worker thread that ran drains, they ran at one depth (two thunk frames per
        // wakeup put the 2,000th drain 128 kB deeper than the first).
        let byThread = Dictionary(grouping: all, by: \.thread).values.filter { $0.count > 1 }
        #expect(!byThread.isEmpty)
        for runs in byThread {
            let addresses = runs.map(\.address)
            let spread = (addresses.max() ?? 0) - (addresses.min() ?? 0)
            #expect(spread < 4096, "\(runs.count) drains on one thread ran \(spread) bytes apart in its stack")
        }
    }
}

/// The address of a local variable of this call: how deep in its thread's stack it runs.
@inline(never)
private func stackAddress() -> Int {
    var marker = 0
    return withUnsafeMutablePointer(to: &marker) { Int(bitPattern: $0) }
}
