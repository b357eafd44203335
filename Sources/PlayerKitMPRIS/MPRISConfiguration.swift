import Foundation
import PlayerKitCore

/// How an ``MPRISService`` presents the app on the bus.
public struct MPRISConfiguration: Sendable, Hashable {
    /// The app's name on the bus: one D-Bus name element (ASCII letters, digits and `_`, not
    /// starting with a digit), e.g. "compare". Players are named
    /// `org.mpris.MediaPlayer2.<appName>.instance_<ID>`, the ID escaped to D-Bus's rules.
    var appName: String
    /// What desktops show as the player's name (MPRIS's `Identity`), e.g. "PlayerKit Compare".
    /// Each published player shows "<identity> (<ID>)" unless its options give another
    /// (`MPRISPlayerOptions`'s `identity`); the media-keys entry shows this alone.
    var identity: String
    /// The base name of the app's `.desktop` file, without `.desktop` (MPRIS's `DesktopEntry`),
    /// so desktops can show its icon; nil when it has none.
    var desktopEntry: String?
    /// The bus to publish on, as a D-Bus address (`unix:path=/run/user/1000/bus`); nil for the
    /// session bus: `DBUS_SESSION_BUS_ADDRESS`, else `unix:path=$XDG_RUNTIME_DIR/bus`.
    var busAddress: String?
    /// How long the service waits before its first attempt to reconnect after losing the bus;
    /// each failed attempt doubles it, up to ``maximumReconnectDelay`` (default 0.25 s).
    public var initialReconnectDelay: Duration
    /// The longest wait between attempts to reconnect (default 5 s): a bus that stays away
    /// costs one connection attempt per this interval, no more.
    public var maximumReconnectDelay: Duration
    /// The bound on each call the service itself makes on the bus (asking the bus which
    /// process sent a request), default 0.5 s. Requests from the desktop are answered without
    /// waiting on anything.
    var busCallTimeout: Duration

    /// A configuration, its values given here and not read back.
    /// - Parameters:
    ///   - appName: the app's name on the bus: one D-Bus name element (ASCII letters, digits and
    ///     `_`, not starting with a digit), e.g. "compare". Players are named
    ///     `org.mpris.MediaPlayer2.<appName>.instance_<ID>`, the ID escaped to D-Bus's rules.
    ///   - identity: what desktops show as the player's name (MPRIS's `Identity`), e.g.
    ///     "PlayerKit Compare"; each published player shows "<identity> (<ID>)" unless its
    ///     options give another, the media-keys entry this alone.
    ///   - desktopEntry: the base name of the app's `.desktop` file, without `.desktop` (MPRIS's
    ///     `DesktopEntry`), so desktops can show its icon; nil (the default) when it has none.
    ///   - busAddress: the bus to publish on, as a D-Bus address (`unix:path=/run/user/1000/bus`);
    ///     nil (the default) for the session bus: `DBUS_SESSION_BUS_ADDRESS`, else
    ///     `unix:path=$XDG_RUNTIME_DIR/bus`.
    ///   - initialReconnectDelay: see ``initialReconnectDelay`` (default 0.25 s).
    ///   - maximumReconnectDelay: see ``maximumReconnectDelay`` (default 5 s).
    ///   - busCallTimeout: the bound on each call the service itself makes on the bus (asking
    ///     which process sent a request), default 0.5 s.
    public init(
        appName: String, identity: String, desktopEntry: String? = nil, busAddress: String? = nil,
        initialReconnectDelay: Duration = .milliseconds(250), maximumReconnectDelay: Duration = .seconds(5),
        busCallTimeout: Duration = .milliseconds(500)
    ) {
        self.appName = appName
        self.identity = identity
        self.desktopEntry = desktopEntry
        self.busAddress = busAddress
        self.initialReconnectDelay = initialReconnectDelay
        self.maximumReconnectDelay = maximumReconnectDelay
        self.busCallTimeout = busCallTimeout
    }

    /// The address of the session bus, as the service finds it when ``busAddress`` is nil.
    static var sessionBusAddress: String {
        let environment = ProcessInfo.processInfo.environment
        if let address = environment["DBUS_SESSION_BUS_ADDRESS"], !address.isEmpty { return address }
        let runtime = environment["XDG_RUNTIME_DIR"] ?? "/run/user/\(getuid())"
        return "unix:path=\(runtime)/bus"
    }

    /// Checks every field.
    /// - Throws: ``MPRISError/invalidAppName(_:reason:)``, ``MPRISError/invalidArgument(name:value:reason:)``.
    func validate() throws(MPRISError) {
        try MPRISBusName.checkAppName(appName)
        guard !identity.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty else {
            throw .invalidArgument(name: "identity", value: "\"\(identity)\"", reason: "must not be empty")
        }
        if let busAddress, busAddress.isEmpty {
            throw .invalidArgument(name: "bus address", value: "\"\"", reason: "must not be empty (nil is the session bus)")
        }
        for (name, value) in [("initial reconnect delay", initialReconnectDelay), ("maximum reconnect delay", maximumReconnectDelay),
                              ("bus call timeout", busCallTimeout)] where value <= .zero {
            throw .invalidArgument(name: name, value: "\(value)", reason: "must be positive")
        }
        guard maximumReconnectDelay >= initialReconnectDelay else {
            throw .invalidArgument(name: "maximum reconnect delay", value: "\(maximumReconnectDelay)",
                                   reason: "must be at least the initial delay (\(initialReconnectDelay))")
        }
    }
}

/// How one published player appears and what the desktop may do to it.
public struct MPRISPlayerOptions: Sendable, Hashable {
    /// What desktops show as this player's name; nil: "<identity> (<ID>)".
    var identity: String?
    /// What the desktop may do (default ``MPRISControls/standard``). Requests outside them are
    /// refused with a D-Bus error and reported as ``MPRISOutcome/refused(_:)``.
    public var controls: MPRISControls
    /// The controls the app carries out itself (default none): an allowed request for one of
    /// them is checked as usual, then answered as accepted and reported as
    /// ``MPRISOutcome/forwardedToApp(_:)`` with the command PlayerKit would have given the
    /// player, which is left alone. For an app whose players move together (a `SyncGroup`:
    /// a desktop's Pause pauses the group), or that asks the user first. `Raise` and `Quit` are
    /// always the app's.
    var appHandles: MPRISControls
    /// Whether the player is on the bus under its own name (default true). A hidden player can
    /// still be the media-keys player, under the app's name.
    public var isVisible: Bool
    /// The artwork desktops show for the current item (MPRIS's `mpris:artUrl`), e.g. a poster's
    /// `file://` URL from a `PosterMaker`; nil for none. It stays until changed
    /// (``MPRISService/setOptions(_:for:)``): set it again for each item.
    public var artworkURL: URL?

    /// Options; `identity` and `appHandles` are given here, not read back.
    /// - Parameters:
    ///   - identity: what desktops show as this player's name; nil (the default):
    ///     "<identity> (<ID>)", the configuration's identity and the player's ID.
    ///   - controls: see ``controls`` (default ``MPRISControls/standard``).
    ///   - appHandles: the controls the app carries out itself (default none): an allowed request
    ///     for one of them is checked as usual, then answered as accepted and reported as
    ///     ``MPRISOutcome/forwardedToApp(_:)`` with the command PlayerKit would have given the
    ///     player, which is left alone. For an app whose players move together (a `SyncGroup`:
    ///     a desktop's Pause pauses the group), or that asks the user first. `Raise` and `Quit`
    ///     are always the app's.
    ///   - isVisible: see ``isVisible`` (default true).
    ///   - artworkURL: see ``artworkURL`` (default none).
    public init(identity: String? = nil, controls: MPRISControls = .standard, appHandles: MPRISControls = [],
                isVisible: Bool = true, artworkURL: URL? = nil) {
        self.identity = identity
        self.controls = controls
        self.appHandles = appHandles
        self.isVisible = isVisible
        self.artworkURL = artworkURL
    }
}
