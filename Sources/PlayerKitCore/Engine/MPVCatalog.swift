import PlayerKitSupport

/// What this libmpv can do: its URL protocols and command names, read once per process from
/// the first core (`protocol-list`, `command-list`) and used to reject bad input with a
/// precise error before it reaches mpv.
struct MPVCatalog: Sendable, Equatable {
    let protocols: Set<String>
    let commands: Set<String>
    /// mpv's top-level property names (`property-list`), for checking a name before observing it.
    let properties: Set<String>

    private static let cached = Locked<MPVCatalog?>(nil)

    /// The catalog, read through `handle` the first time, unless the process's warm-up read it
    /// already (``DecoderWarmUp``, with ``remember(_:)``).
    static func shared(using handle: MPVHandle) throws(PlayerError) -> MPVCatalog {
        if let catalog = cached.withLock({ $0 }) { return catalog }
        var lists: [String: MPVValue] = [:]
        for name in listProperties { lists[name] = try handle.property(name) }
        let catalog = MPVCatalog(lists: lists)
        cached.withLock { $0 = catalog }
        return catalog
    }

    /// The properties it is read from.
    static let listProperties = ["protocol-list", "command-list", "property-list"]

    /// The catalog of the values of ``listProperties``, by name.
    init(lists: [String: MPVValue]) {
        protocols = Set((lists["protocol-list"]?.arrayValue?.compactMap(\.stringValue) ?? []).map { $0.lowercased() })
        commands = Set(lists["command-list"]?.arrayValue?.compactMap { $0["name"]?.stringValue } ?? [])
        properties = Set(lists["property-list"]?.arrayValue?.compactMap(\.stringValue) ?? [])
    }

    /// Keeps `catalog` as the process's, unless one is kept already: read by the warm-up from its
    /// core, so that the first player does not wait for three reads of its own.
    static func remember(_ catalog: MPVCatalog) {
        cached.withLock { cached in
            if cached == nil { cached = catalog }
        }
    }

    /// Whether the process's catalog has been read (for tests).
    static var isKnown: Bool { cached.withLock { $0 != nil } }

    /// Forgets the process's catalog: the next player reads it again (for tests).
    static func forgetForTests() {
        cached.withLock { $0 = nil }
    }

    /// Words mpv accepts before a command name (input.rst, "Input Command Prefixes").
    static let commandPrefixes: Set<String> = [
        "osd-auto", "no-osd", "osd-bar", "osd-msg", "osd-msg-bar", "raw", "expand-properties",
        "repeatable", "async", "sync",
    ]
}
