import Foundation

/// Syncplay's protocol, as `syncplay-server` 1.6.9 speaks it: one JSON object per line, each key
/// a command (`Hello`, `Set`, `List`, `State`, `Error`, `Chat`, `TLS`). Only what PlayerKit uses
/// is read; the rest of a message is ignored, as Syncplay's own client does.
enum SyncplayWire {
    /// The version the greeting announces ("1.2.255" lets 1.2 servers talk to newer clients,
    /// as Syncplay's client does) and the real one, the server's own protocol level.
    static let compatibilityVersion = "1.2.255"
    static let realVersion = "1.6.9"

    /// The play state a `State` message carries.
    struct PlayState: Sendable, Hashable {
        var position: Double
        var paused: Bool
        var doSeek: Bool
        /// Who set it (the server's messages only).
        var setBy: String?
    }

    /// The ping fields of a `State` message.
    struct Ping: Sendable, Hashable {
        /// The server's timestamp, to be echoed back (server to client).
        var latencyCalculation: Double?
        /// The server's last round trip (server to client).
        var serverRtt: Double?
        /// The client's timestamp, echoed by the server plus its processing time.
        var clientLatencyCalculation: Double?
    }

    /// A `State` message from the server.
    struct ServerState: Sendable, Hashable {
        var playState: PlayState?
        var ping: Ping
        var ignoringServer: Int?
        var ignoringClient: Int?
    }

    /// One file as Syncplay describes it.
    struct FileInfo: Sendable, Hashable {
        var name: String
        var duration: Double
        var size: Double
    }

    /// What a line from the server says, command by command.
    enum ServerMessage: Sendable, Hashable {
        /// The greeting's answer: the name the server gave us (it may add a suffix), the room.
        case hello(username: String, room: String, version: String, motd: String?)
        case state(ServerState)
        case userJoined(name: String, room: String)
        case userLeft(name: String, room: String)
        case userFile(name: String, room: String, file: FileInfo)
        case ready(name: String, isReady: Bool)
        /// The users of the rooms we can see: room name to user names.
        case list([String: [String]])
        case error(message: String)
        case chat(name: String, message: String)
        case tls(accepted: Bool)
    }

    /// Reads one line from the server.
    /// - Throws: ``RoomError/malformedMessage(line:reason:)`` naming the line and what is wrong.
    static func decode(_ line: String) throws(RoomError) -> [ServerMessage] {
        let value: JSONValue
        do {
            value = try JSONDecoder().decode(JSONValue.self, from: Data(line.utf8))
        } catch {
            throw .malformedMessage(line: line, reason: "not JSON")
        }
        guard let object = value.objectValue else { throw .malformedMessage(line: line, reason: "not a JSON object") }
        var messages: [ServerMessage] = []
        for (command, body) in object.sorted(by: { $0.key < $1.key }) {
            var reader = FieldReader(line: line, path: command)
            switch command {
            case "Hello":
                let hello = try reader.object(body)
                let room = try reader.object(hello["room"], at: "room")
                messages.append(.hello(
                    username: try reader.string(hello["username"], at: "username"),
                    room: try reader.string(room["name"], at: "room.name"),
                    version: try reader.string(hello["realversion"] ?? hello["version"], at: "version"),
                    motd: hello["motd"]?.stringValue))
            case "State":
                messages.append(.state(try decodeState(body, reader: &reader)))
            case "Set":
                messages += try decodeSet(body, reader: &reader)
            case "List":
                var rooms: [String: [String]] = [:]
                for (room, users) in try reader.object(body) {
                    rooms[room] = try reader.object(users, at: room).keys.sorted()
                }
                messages.append(.list(rooms))
            case "Error":
                let error = try reader.object(body)
                messages.append(.error(message: try reader.string(error["message"], at: "message")))
            case "Chat":
                let chat = try reader.object(body)
                messages.append(.chat(name: try reader.string(chat["username"], at: "username"),
                                      message: try reader.string(chat["message"], at: "message")))
            case "TLS":
                let tls = try reader.object(body)
                messages.append(.tls(accepted: try reader.string(tls["startTLS"], at: "startTLS") == "true"))
            default:
                // Syncplay's own client drops the connection on an unknown command; a newer
                // server may add commands, so PlayerKit skips them.
                continue
            }
        }
        return messages
    }

    private static func decodeState(_ body: JSONValue, reader: inout FieldReader) throws(RoomError) -> ServerState {
        let state = try reader.object(body)
        var result = ServerState(ping: Ping())
        if let playstate = state["playstate"] {
            let fields = try reader.object(playstate, at: "playstate")
            let position = try reader.number(fields["position"] ?? .number(0), at: "playstate.position")
            guard position.isFinite, position >= 0 else {
                throw .malformedMessage(line: reader.line, reason: "State.playstate.position \(position) is not a position")
            }
            result.playState = PlayState(
                position: position,
                paused: try reader.bool(fields["paused"], at: "playstate.paused"),
                doSeek: fields["doSeek"]?.boolValue ?? false,
                setBy: fields["setBy"]?.stringValue)
        }
        if let ping = state["ping"] {
            let fields = try reader.object(ping, at: "ping")
            result.ping = Ping(
                latencyCalculation: try reader.optionalNumber(fields["latencyCalculation"], at: "ping.latencyCalculation"),
                serverRtt: try reader.optionalNumber(fields["serverRtt"], at: "ping.serverRtt"),
                clientLatencyCalculation: try reader.optionalNumber(fields["clientLatencyCalculation"], at: "ping.clientLatencyCalculation"))
        }
        if let ignoring = state["ignoringOnTheFly"]?.objectValue {
            result.ignoringServer = try reader.count(ignoring["server"], at: "ignoringOnTheFly.server")
            result.ignoringClient = try reader.count(ignoring["client"], at: "ignoringOnTheFly.client")
        }
        return result
    }

    private static func decodeSet(_ body: JSONValue, reader: inout FieldReader) throws(RoomError) -> [ServerMessage] {
        var messages: [ServerMessage] = []
        for (setting, value) in try reader.object(body).sorted(by: { $0.key < $1.key }) {
            switch setting {
            case "user":
                for (name, fields) in try reader.object(value, at: "user") {
                    let user = try reader.object(fields, at: "user.\(name)")
                    let room = user["room"]?["name"]?.stringValue ?? ""
                    if let event = user["event"]?.objectValue {
                        if event["joined"] != nil { messages.append(.userJoined(name: name, room: room)) }
                        if event["left"] != nil { messages.append(.userLeft(name: name, room: room)) }
                    } else if let file = user["file"]?.objectValue, let fileName = file["name"]?.stringValue {
                        messages.append(.userFile(name: name, room: room, file: FileInfo(
                            name: fileName, duration: file["duration"]?.numberValue ?? 0, size: file["size"]?.numberValue ?? 0)))
                    }
                }
            case "ready":
                let ready = try reader.object(value, at: "ready")
                if let name = ready["username"]?.stringValue, let isReady = ready["isReady"]?.boolValue {
                    messages.append(.ready(name: name, isReady: isReady))
                }
            default:
                continue  // playlists, managed rooms, features: not used by PlayerKit
            }
        }
        return messages
    }

    /// Reads typed fields, naming the field in its error.
    private struct FieldReader {
        let line: String
        let path: String

        func fail(_ field: String?, _ problem: String) -> RoomError {
            .malformedMessage(line: line, reason: "\(path)\(field.map { ".\($0)" } ?? "") \(problem)")
        }
        func object(_ value: JSONValue?, at field: String? = nil) throws(RoomError) -> [String: JSONValue] {
            guard let value else { throw fail(field, "is missing") }
            guard let object = value.objectValue else { throw fail(field, "is not an object") }
            return object
        }
        func string(_ value: JSONValue?, at field: String) throws(RoomError) -> String {
            guard let value else { throw fail(field, "is missing") }
            guard let string = value.stringValue else { throw fail(field, "is not a string") }
            return string
        }
        func number(_ value: JSONValue?, at field: String) throws(RoomError) -> Double {
            guard let value else { throw fail(field, "is missing") }
            guard let number = value.numberValue, number.isFinite else { throw fail(field, "is not a finite number") }
            return number
        }
        func optionalNumber(_ value: JSONValue?, at field: String) throws(RoomError) -> Double? {
            guard let value, !value.isNull else { return nil }
            return try number(value, at: field)
        }
        /// An optional counter: a whole number from 0 to Int32's largest (Syncplay's are small).
        func count(_ value: JSONValue?, at field: String) throws(RoomError) -> Int? {
            guard let value, !value.isNull else { return nil }
            let number = try self.number(value, at: field)
            guard number >= 0, number <= Double(Int32.max), number.rounded() == number else {
                throw .malformedMessage(line: line, reason: "\(path).\(field) \(number) is not a count")
            }
            return Int(number)
        }
        func bool(_ value: JSONValue?, at field: String) throws(RoomError) -> Bool {
            guard let value else { throw fail(field, "is missing") }
            guard let bool = value.boolValue else { throw fail(field, "is not true or false") }
            return bool
        }
    }

    // MARK: Client to server

    /// The server password as Syncplay sends it: the MD5 hex digest of its UTF-8 bytes (the
    /// protocol's choice; it hides the password from logs, not from anyone on the path: use TLS).
    static func passwordHash(_ password: String) -> String {
        MD5.hexDigest(Array(password.utf8))
    }

    /// The greeting: who we are, the room, and (MD5 hex, as Syncplay sends it) the server password.
    static func hello(username: String, room: String, passwordHash: String?) -> String {
        var hello: [String: JSONValue] = [
            "username": .string(username),
            "room": .object(["name": .string(room)]),
            "version": .string(compatibilityVersion),
            "realversion": .string(realVersion),
            "features": .object([
                "sharedPlaylists": .bool(false), "chat": .bool(false), "featureList": .bool(true),
                "readiness": .bool(true), "managedRooms": .bool(false),
            ]),
        ]
        if let passwordHash { hello["password"] = .string(passwordHash) }
        return encode(["Hello": .object(hello)])
    }

    /// Asks for the members of the rooms we can see.
    static func list() -> String { #"{"List":null}"# }

    /// Asks the server to switch to TLS before the greeting.
    static func startTLS() -> String { encode(["TLS": .object(["startTLS": .string("send")])]) }

    /// The file this client plays, so the room shows it.
    static func file(_ file: FileInfo) -> String {
        encode(["Set": .object(["file": .object([
            "name": .string(file.name), "duration": .number(file.duration), "size": .number(file.size),
        ])])])
    }

    /// Readiness (a client that is ready to play when the room plays).
    static func ready(_ isReady: Bool) -> String {
        encode(["Set": .object(["ready": .object(["isReady": .bool(isReady), "manuallyInitiated": .bool(false)])])])
    }

    /// A `State` answer: our play state (unless nil), the ping fields, and the on-the-fly counters.
    static func state(playState: PlayState?, latencyCalculation: Double?, clientTimestamp: Double, clientRtt: Double,
                      ignoringServer: Int?, ignoringClient: Int?) -> String {
        var state: [String: JSONValue] = [:]
        if let playState {
            var fields: [String: JSONValue] = ["position": .number(playState.position), "paused": .bool(playState.paused)]
            if playState.doSeek { fields["doSeek"] = .bool(true) }
            state["playstate"] = .object(fields)
        }
        var ping: [String: JSONValue] = ["clientLatencyCalculation": .number(clientTimestamp), "clientRtt": .number(clientRtt)]
        if let latencyCalculation { ping["latencyCalculation"] = .number(latencyCalculation) }
        state["ping"] = .object(ping)
        var ignoring: [String: JSONValue] = [:]
        if let ignoringServer, ignoringServer > 0 { ignoring["server"] = .number(Double(ignoringServer)) }
        if let ignoringClient, ignoringClient > 0 { ignoring["client"] = .number(Double(ignoringClient)) }
        if !ignoring.isEmpty { state["ignoringOnTheFly"] = .object(ignoring) }
        return encode(["State": .object(state)])
    }

    private static func encode(_ object: [String: JSONValue]) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        // Encoding a JSONValue cannot fail (finite numbers only reach here).
        let data = (try? encoder.encode(JSONValue.object(object))) ?? Data("{}".utf8)
        return String(decoding: data, as: UTF8.self)
    }
}
