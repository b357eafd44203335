import PlayerKitSupport

/// What this libmpv can do: its URL protocols and command names, read once per process from
/// the first core (`protocol-list`, `command-list`) and used to reject bad input with a
/// precise error before it reaches mpv.
struct MPVCatalog: Sendable {
    let protocols: Set<String>
    let commands: Set<String>
    /// mpv's top-level property names (`property-list`), for checking a name before observing it.
    let properties: Set<String>

    private static let cached = Locked<MPVCatalog?>(nil)

    /// The catalog, read through `handle` the first time.
    static func shared(using handle: MPVHandle) throws(PlayerError) -> MPVCatalog {
        if let catalog = cached.withLock({ $0 }) { return catalog }
        let protocols = try handle.property("protocol-list").arrayValue?.compactMap(\.stringValue) ?? []
        let commands = try handle.property("command-list").arrayValue?.compactMap { $0["name"]?.stringValue } ?? []
        let properties = try handle.property("property-list").arrayValue?.compactMap(\.stringValue) ?? []
        let catalog = MPVCatalog(protocols: Set(protocols.map { $0.lowercased() }), commands: Set(commands), properties: Set(properties))
        cached.withLock { $0 = catalog }
        return catalog
    }

    /// Words mpv accepts before a command name (input.rst, "Input Command Prefixes").
    static let commandPrefixes: Set<String> = [
        "osd-auto", "no-osd", "osd-bar", "osd-msg", "osd-msg-bar", "raw", "expand-properties",
        "repeatable", "async", "sync",
    ]
}
