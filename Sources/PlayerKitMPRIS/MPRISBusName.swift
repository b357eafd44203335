import PlayerKitCore

/// The D-Bus names PlayerKit's MPRIS service uses, and how a ``/PlayerKitCore/PlayerID`` becomes
/// part of one.
///
/// A published player is named `org.mpris.MediaPlayer2.<app>.instance_<ID>` (MPRIS's rule for
/// several instances of one player: a dot and an instance element after the app's name), the
/// player the app marks for media keys also `org.mpris.MediaPlayer2.<app>`
/// (``MPRISService/mediaKeysPlayer``). Clients such as `playerctl` show the part after
/// `org.mpris.MediaPlayer2.`: `playerctl --player=myapp.instance_main play-pause`.
///
/// **Escaping.** A D-Bus name element may hold only ASCII letters, digits, `_` and `-`, so the
/// ID is escaped: letters, digits and `-` stay as they are; every other byte of the ID's UTF-8
/// (`_` itself included) becomes `_` and two lowercase hex digits. `main` stays `main`,
/// `feed-3` stays `feed-3`, `camera 1` becomes `camera_201`, `a_b` becomes `a_5fb`, `é` becomes
/// `_c3_a9`. Distinct IDs give distinct names, and ``playerID(fromInstance:app:)`` reverses it.
/// A whole name may be at most 255 bytes; a longer one is
/// ``MPRISError/busNameTooLong(_:busName:)``.
enum MPRISBusName {
    /// What every MPRIS name begins with.
    static let prefix = "org.mpris.MediaPlayer2."
    /// The element before the escaped ID in a player's name.
    static let instancePrefix = "instance_"
    /// D-Bus's limit on a name's length, in bytes.
    static let maximumLength = 255

    /// `id` escaped for a D-Bus name element (see the type's "Escaping").
    static func escape(_ id: PlayerID) -> String {
        var escaped = ""
        for byte in id.rawValue.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                 UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"):
                escaped.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                escaped += "_" + (byte < 16 ? "0" : "") + String(byte, radix: 16)
            }
        }
        return escaped
    }

    /// The ID an escaped element stands for, or nil when `element` is not one ``escape(_:)``
    /// makes.
    static func unescape(_ element: String) -> PlayerID? {
        var bytes: [UInt8] = []
        var characters = Array(element.utf8)[...]
        while let byte = characters.popFirst() {
            if byte == UInt8(ascii: "_") {
                guard characters.count >= 2,
                      let value = UInt8(String(decoding: characters.prefix(2), as: UTF8.self), radix: 16) else { return nil }
                bytes.append(value)
                characters = characters.dropFirst(2)
            } else {
                bytes.append(byte)
            }
        }
        guard let text = String(validating: bytes, as: UTF8.self) else { return nil }
        return try? PlayerID(validating: text)
    }

    /// The name of the MPRIS entry of player `id` in app `app`:
    /// `org.mpris.MediaPlayer2.<app>.instance_<escaped ID>`.
    /// - Throws: ``MPRISError/invalidAppName(_:reason:)`` for an app name that is not one D-Bus
    ///   element; ``MPRISError/busNameTooLong(_:busName:)`` when the name is over 255 bytes.
    static func forPlayer(_ id: PlayerID, app: String) throws(MPRISError) -> String {
        try checkAppName(app)
        let name = prefix + app + "." + instancePrefix + escape(id)
        guard name.utf8.count <= maximumLength else { throw .busNameTooLong(id, busName: name) }
        return name
    }

    /// The app's own name, `org.mpris.MediaPlayer2.<app>`: where the media-keys player is
    /// published.
    /// - Throws: ``MPRISError/invalidAppName(_:reason:)``.
    static func forApp(_ app: String) throws(MPRISError) -> String {
        try checkAppName(app)
        return prefix + app
    }

    /// The player an MPRIS name of app `app` names, or nil when it is not a player's name.
    static func playerID(fromInstance name: String, app: String) -> PlayerID? {
        let head = prefix + app + "." + instancePrefix
        guard name.hasPrefix(head) else { return nil }
        return unescape(String(name.dropFirst(head.count)))
    }

    /// Checks that `app` is one D-Bus name element: ASCII letters, digits and `_`, not starting
    /// with a digit, 1 to 100 bytes (a `-` is legal in D-Bus names but not in the object paths
    /// and interface names desktops derive from them).
    /// - Throws: ``MPRISError/invalidAppName(_:reason:)`` naming what is wrong.
    static func checkAppName(_ app: String) throws(MPRISError) {
        guard !app.isEmpty else { throw .invalidAppName(app, reason: "must not be empty") }
        guard app.utf8.count <= 100 else { throw .invalidAppName(app, reason: "must be at most 100 bytes") }
        for byte in app.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                 UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "_"):
                continue
            default:
                throw .invalidAppName(app, reason: "may hold only ASCII letters, digits and _ (one D-Bus name element)")
            }
        }
        if let first = app.utf8.first, first >= UInt8(ascii: "0"), first <= UInt8(ascii: "9") {
            throw .invalidAppName(app, reason: "must not start with a digit")
        }
    }
}
