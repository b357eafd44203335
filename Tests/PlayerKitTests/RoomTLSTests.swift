import Foundation
import Testing
@testable import PlayerKitRooms

/// Syncplay's STARTTLS against the real `syncplay-server --tls`, with a certificate authority and
/// a server certificate for localhost that the test makes with openssl.
@Suite("Rooms: TLS", .timeLimit(.minutes(4)), .tags(.waitPass))
struct RoomTLSTests {
    /// A throwaway certificate authority and a certificate for localhost / 127.0.0.1 it signed, in
    /// the layout `syncplay-server --tls` reads (cert.pem, privkey.pem, chain.pem).
    private static func makeCertificates(in directory: URL) throws {
        guard let openssl = VirtualDisplay.which("openssl") else { throw SyncplayServerError.notInstalled }
        let run = { (arguments: [String]) throws in
            let (status, output) = try ChildProcess.run(URL(fileURLWithPath: openssl), arguments)
            guard status == 0 else { throw SyncplayServerError.didNotStart("openssl \(arguments.first ?? ""): \(output)") }
        }
        let path = { (name: String) in directory.appendingPathComponent(name).path }
        try "subjectAltName=DNS:localhost,IP:127.0.0.1\n".write(toFile: path("san.cnf"), atomically: true, encoding: .utf8)
        try run(["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", path("ca.key"), "-out", path("ca.pem"),
                 "-days", "2", "-subj", "/CN=PlayerKit test CA"])
        try run(["req", "-newkey", "rsa:2048", "-nodes", "-keyout", path("privkey.pem"), "-out", path("server.csr"),
                 "-subj", "/CN=localhost"])
        try run(["x509", "-req", "-in", path("server.csr"), "-CA", path("ca.pem"), "-CAkey", path("ca.key"),
                 "-CAcreateserial", "-out", path("cert.pem"), "-days", "2", "-extfile", path("san.cnf")])
        try FileManager.default.copyItem(atPath: path("ca.pem"), toPath: path("chain.pem"))
    }

    @Test("a server that offers TLS: the room is joined over TLS with its certificate checked; an untrusted certificate and a plain server under the default (tlsRequired) is a typed error saying how to opt out; tlsIfOffered's fallback is announced")
    func startTLS() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("playerkit-tls-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        try Self.makeCertificates(in: directory)
        let server = try await SyncplayServer.start(tlsDirectory: directory.path)
        defer { server.stop() }

        var configuration = RoomClient.Configuration(host: "localhost", port: server.port, room: "secure", name: "left")
        #expect(configuration.security == .tlsRequired)            // the default
        configuration.trustedCertificatesFile = directory.appendingPathComponent("ca.pem").path
        configuration.reconnectDelay = nil
        // A TLS handshake with a loaded machine's Python server.
        configuration.tlsTimeout = .seconds(20)
        configuration.joinTimeout = .seconds(20)
        let client = try RoomClient(configuration)
        try await client.join()
        #expect(client.joinedName == "left" && client.isEncrypted == true)
        // The session works over TLS: the server's states arrive and are answered.
        #expect(await client.roundTrip(waitingUpTo: .seconds(10)) != nil)
        await client.leave()

        // The same server, its certificate not trusted: the handshake fails, by name.
        var untrusted = configuration
        untrusted.trustedCertificatesFile = nil
        let refused = try RoomClient(untrusted)
        let error = await joinError(refused)
        guard case .connectionFailed(let name, let reason) = error else {
            Issue.record("expected connectionFailed, got \(String(describing: error))")
            return
        }
        #expect(name == "localhost:\(server.port)")
        #expect(reason.localizedCaseInsensitiveContains("certificate") || reason.localizedCaseInsensitiveContains("handshake"), "\(reason)")

        // A server without TLS: the default refuses it, by name, saying how to opt out.
        let plainServer = try await SyncplayServer.start()
        defer { plainServer.stop() }
        var plain = configuration
        plain.host = "127.0.0.1"
        plain.port = plainServer.port
        let strict = try RoomClient(plain)
        let strictError = await joinError(strict)
        #expect(strictError == .tlsNotOffered(server: "127.0.0.1:\(plainServer.port)"))
        #expect(strictError?.description.contains("security to .plain") == true, "\(String(describing: strictError))")
        #expect(strict.joinedName == nil)
        // tlsIfOffered joins in the clear, and says so before it is joined.
        plain.security = .tlsIfOffered
        let lenient = try RoomClient(plain)
        let events = lenient.events()
        try await lenient.join()
        #expect(lenient.joinedName == "left" && lenient.isEncrypted == false)
        var seen: [RoomEvent] = []
        for await event in events {
            seen.append(event)
            if case .joined = event { break }
        }
        #expect(seen.first == .encryptionUnavailable(server: "127.0.0.1:\(plainServer.port)"), "\(seen)")
        await lenient.leave()
        // .plain is plain, as asked.
        plain.security = .plain
        let asked = try RoomClient(plain)
        try await asked.join()
        #expect(asked.isEncrypted == false)
        await asked.leave()
    }

    private func joinError(_ client: RoomClient) async -> RoomError? {
        do {
            try await client.join()
            await client.leave()
            return nil
        } catch {
            return error
        }
    }
}
