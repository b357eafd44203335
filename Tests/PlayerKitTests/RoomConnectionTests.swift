import Foundation
import Glibc
import PlayerKitSupport
import Testing
@testable import PlayerKitRooms

/// The room client's connection answers every request it was handed, also those handed over
/// together with a close: a send waiting behind a close that ends the connection is answered
/// with the connection's end, not dropped (a dropped answer leaves its caller suspended for
/// ever: `RoomClientTests` once hung 240 s on it, with Swift's "leaked its continuation").
@Suite("Room connection: every request answered", .timeLimit(.minutes(1)))
struct RoomConnectionTests {
    @Test("a send handed over right after close() returns, with connectionFailed, within a second")
    func sendBehindClose() async throws {
        let listener = try LoopbackListener()
        defer { listener.stop() }
        for attempt in 0..<20 {
            let connection = try await RoomConnection.open(host: "127.0.0.1", port: listener.port, timeout: .seconds(5))
            let outcome = Locked<RoomError??>(nil)
            connection.close()
            let task = Task {
                do throws(RoomError) {
                    try await connection.send("{}", operation: .joining, limit: .seconds(30))
                    outcome.withLock { $0 = .some(nil) }
                } catch {
                    outcome.withLock { $0 = .some(error) }
                }
            }
            let answered = await eventually(timeout: .seconds(1)) { outcome.withLock { $0 != nil } }
            #expect(answered, "attempt \(attempt): the send was never answered")
            guard answered else { return }  // its task stays suspended: the bug this test is for
            await task.value
            let error = outcome.withLock { $0 } ?? nil
            #expect(error == .connectionFailed(server: "127.0.0.1:\(listener.port)", reason: "the connection is closed"),
                    "attempt \(attempt): \(String(describing: error))")
        }
    }
}

/// A listening loopback socket that never accepts: the kernel completes connections into its
/// backlog, and a client's lines go nowhere.
private final class LoopbackListener: Sendable {
    let port: Int
    private let socket: Int32

    init() throws {
        let listener = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard listener >= 0 else { throw SyncplayServerError.didNotStart("socket") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, length) } }
        let named = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listener, $0, &length) } }
        guard bound == 0, named == 0, listen(listener, 64) == 0 else {
            close(listener)
            throw SyncplayServerError.didNotStart("listen")
        }
        socket = listener
        port = Int(UInt16(bigEndian: address.sin_port))
    }

    func stop() {
        close(socket)
    }
}
