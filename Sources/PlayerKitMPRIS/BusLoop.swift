import CSDBus
import Foundation
import Logging
import PlayerKitCore
import PlayerKitSupport

/// Which MPRIS entry a connection serves: a player's own name, or the app's name (the
/// media-keys player).
enum EntryKey: Hashable, Sendable, CustomStringConvertible {
    case player(PlayerID)
    case app

    var description: String {
        switch self {
        case .player(let id): return "player \(id)"
        case .app: return "the app's entry"
        }
    }
}

/// The side of an ``MPRISService`` that talks to the bus: one thread that owns every sd-bus
/// connection (sd-bus connections must not be used by two threads at once), one connection per
/// MPRIS entry (each entry needs its own `/org/mpris/MediaPlayer2` object) and one for the
/// service's own calls.
///
/// The thread waits in `poll` on its connections and on an eventfd that other threads write to
/// when they hand it work (properties to announce, names to add or drop), at most until the
/// nearest of sd-bus's timeouts or the next reconnection attempt. Desktop clients' calls run on
/// it: each reads the service's state under the service's lock for one step and answers; the
/// player is driven with `send`, which never waits. Nothing here waits without a bound, and
/// nothing waits on Swift's cooperative pool.
///
/// When the bus goes away, every connection is closed and the thread tries again after
/// ``MPRISConfiguration/initialReconnectDelay``, doubling the wait after each failure up to
/// ``MPRISConfiguration/maximumReconnectDelay``; once back, every entry is published again.
final class BusLoop: @unchecked Sendable {
    // @unchecked: everything but `inbox`, `ended`, `owner` and the constants is touched only by
    // the loop's thread.

    /// Work handed to the thread, coalesced until it runs.
    private struct Inbox {
        var changes: [PlayerID: MPRISPlayerModel.Change] = [:]
        var reconcile = false
        var retargetApp = false
        var stop = false
        /// The thread ended and closed the eventfd.
        var ended = false
        var endWaiters: [Int: CheckedContinuation<Void, Never>] = [:]
        var nextWaiter = 0
    }

    /// One connection serving one MPRIS entry. Its address is the user data of its objects and
    /// of its name request, so it lives in ``entries`` until its connection is gone.
    final class Entry {
        let key: EntryKey
        let busName: String
        var bus: OpaquePointer?
        /// The player it shows (fixed for a player's entry; the media-keys player for the app's).
        var target: PlayerID?
        var acquired = false
        unowned let loop: BusLoop

        init(key: EntryKey, busName: String, target: PlayerID?, loop: BusLoop) {
            self.key = key
            self.busName = busName
            self.target = target
            self.loop = loop
        }
    }

    static let objectPath = "/org/mpris/MediaPlayer2"
    static let rootInterface = "org.mpris.MediaPlayer2"
    static let playerInterface = "org.mpris.MediaPlayer2.Player"

    let address: String
    private let configuration: MPRISConfiguration
    private let ownerReference = Locked(WeakReference<MPRISService>(nil))
    /// The service, while it lives.
    private var owner: WeakReference<MPRISService> { ownerReference.withLock { $0 } }
    private let logger: Logger
    private let inbox = Locked(Inbox())
    private let wakeDescriptor: Int32

    // The thread's own.
    private var control: OpaquePointer?
    private var connected = false
    private var entries: [EntryKey: Entry] = [:]
    private var retryDelay: Duration
    private var nextAttempt: ContinuousClock.Instant? = .now
    /// While the service's connection is being made: when it is given up (sd-bus's own bound on
    /// the handshake is 90 s).
    private var connectDeadline: ContinuousClock.Instant?
    /// How long the bus may take to answer a new connection.
    static let connectTimeout: Duration = .seconds(5)
    private var clients: [String: (processID: Int32?, processName: String?)] = [:]

    init(address: String, configuration: MPRISConfiguration, logger: Logger) throws(MPRISError) {
        self.address = address
        self.configuration = configuration
        self.logger = logger
        retryDelay = configuration.initialReconnectDelay
        let descriptor = playerkit_eventfd()
        guard descriptor >= 0 else {
            throw .busUnavailable(address: address, reason: "no eventfd: \(String(cString: strerror(errno)))")
        }
        wakeDescriptor = descriptor
    }

    /// Starts the thread, for `owner` (held weakly).
    func start(owner: MPRISService) {
        ownerReference.withLock { $0 = WeakReference(owner) }
        let thread = Thread { [self] in
            // A client that closes its end must not kill the process with SIGPIPE.
            var pipeSignal = sigset_t()
            sigemptyset(&pipeSignal)
            sigaddset(&pipeSignal, SIGPIPE)
            pthread_sigmask(SIG_BLOCK, &pipeSignal, nil)
            run()
        }
        thread.name = "PlayerKit.mpris"
        thread.start()
    }

    // MARK: Handing work to the thread (any thread)

    /// Announces what changed about player `id` on every entry that shows it.
    func announce(_ change: MPRISPlayerModel.Change, of id: PlayerID) {
        guard !change.isEmpty else { return }
        post { inbox in
            var merged = inbox.changes[id] ?? MPRISPlayerModel.Change()
            merged.player.formUnion(change.player)
            merged.root.formUnion(change.root)
            if let seeked = change.seeked { merged.seeked = seeked }
            inbox.changes[id] = merged
        }
    }

    /// Brings the entries on the bus in line with the service's (players published, shown,
    /// removed).
    func reconcile() { post { $0.reconcile = true } }

    /// The media-keys player changed: the app's entry shows another player.
    func retargetApp() { post { $0.retargetApp = true } }

    /// Ends the thread: every connection is closed (their names leave the bus). Returns once it
    /// ended, or after `timeout` (on the monotonic clock) with the thread still finishing.
    func stop(timeout: Duration) async {
        post { $0.stop = true }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let waiter = inbox.withLock { inbox -> Int? in
                if inbox.ended { return nil }
                inbox.nextWaiter += 1
                inbox.endWaiters[inbox.nextWaiter] = continuation
                return inbox.nextWaiter
            }
            guard let waiter else { return continuation.resume() }
            DispatchQueue.global().asyncAfter(deadline: .now() + timeout.dispatchInterval) { [inbox] in
                inbox.withLock { $0.endWaiters.removeValue(forKey: waiter) }?.resume()
            }
        }
    }

    /// Ends the thread without waiting (the service was dropped).
    func stopSoon() {
        post { $0.stop = true }
    }

    private func post(_ change: (inout Inbox) -> Void) {
        let ended = inbox.withLock { inbox -> Bool in
            change(&inbox)
            return inbox.ended
        }
        if !ended { wake() }
    }

    /// Wakes the thread; never blocks (the eventfd is non-blocking and only counts).
    private func wake() {
        var one: UInt64 = 1
        _ = withUnsafeBytes(of: &one) { write(wakeDescriptor, $0.baseAddress, 8) }
    }

    // MARK: The thread

    private func run() {
        while true {
            let work = inbox.withLock { inbox -> Inbox in
                defer {
                    inbox.changes = [:]
                    inbox.reconcile = false
                    inbox.retargetApp = false
                }
                return inbox
            }
            if work.stop { break }
            let now = ContinuousClock.now
            if !connected, control == nil, let attempt = nextAttempt, attempt <= now { connect() }
            if control != nil, !connected, let deadline = connectDeadline, now > deadline {
                lose(reason: "the bus did not answer a new connection within \(Self.connectTimeout)")
            }
            if let control, !connected, sd_bus_is_ready(control) > 0 {
                connected = true
                connectDeadline = nil
                retryDelay = configuration.initialReconnectDelay
                logger.info("connected to the bus", metadata: ["address": "\(address)"])
                owner.object?.busConnected(address: address)
                reconcileEntries()
            }
            if connected {
                if work.reconcile { reconcileEntries() }
                // The players' changes first, the app's new player last: clients that follow the
                // most recent announcement (playerctld) then turn to the media-keys player.
                for (id, change) in work.changes { emit(change, of: id) }
                if work.retargetApp { retargetAppEntry() }
            }
            if let failure = processAll() {
                lose(reason: failure)
            }
            waitForWork()
        }
        closeAll(reason: .serviceShutDown)
        if let control { _ = sd_bus_close_unref(control) }
        control = nil
        let waiters = inbox.withLock { inbox -> [CheckedContinuation<Void, Never>] in
            inbox.ended = true
            defer { inbox.endWaiters = [:] }
            return Array(inbox.endWaiters.values)
        }
        Glibc.close(wakeDescriptor)
        for waiter in waiters { waiter.resume() }
    }

    /// Opens the service's own connection; on failure, schedules the next attempt.
    private func connect() {
        switch open(description: "PlayerKit MPRIS") {
        case .success(let bus):
            control = bus
            nextAttempt = nil
            connectDeadline = .now + Self.connectTimeout
        case .failure(let failure):
            scheduleRetry(reason: failure.text)
        }
    }

    private func scheduleRetry(reason: String) {
        let delay = retryDelay
        nextAttempt = .now + delay
        retryDelay = min(retryDelay * 2, configuration.maximumReconnectDelay)
        logger.info("no bus", metadata: ["address": "\(address)", "reason": "\(reason)", "retry in": "\(delay)"])
        owner.object?.busDisconnected(reason: reason, retryAfter: delay)
    }

    /// The bus went away: every connection is closed, and the service tries again later.
    private func lose(reason: String) {
        closeAll(reason: .busLost)
        if let control { _ = sd_bus_close_unref(control) }
        control = nil
        connected = false
        connectDeadline = nil
        retryDelay = configuration.initialReconnectDelay
        scheduleRetry(reason: reason)
    }

    /// A new client connection to ``address``, started (sd-bus finishes connecting as it is
    /// processed), or why it could not be made.
    private func open(description: String) -> Result<OpaquePointer, Failure> {
        var bus: OpaquePointer?
        var status = sd_bus_new(&bus)
        guard status >= 0, let bus else { return .failure(Failure(text: "sd_bus_new: \(Self.errorText(status))")) }
        _ = sd_bus_set_description(bus, description)
        status = sd_bus_set_address(bus, address)
        if status >= 0 { status = sd_bus_set_bus_client(bus, 1) }
        if status >= 0 { status = sd_bus_set_method_call_timeout(bus, UInt64(Self.microseconds(configuration.busCallTimeout))) }
        if status >= 0 { status = sd_bus_start(bus) }
        guard status >= 0 else {
            _ = sd_bus_close_unref(bus)
            return .failure(Failure(text: "cannot connect to \(address): \(Self.errorText(status))"))
        }
        return .success(bus)
    }

    struct Failure: Error {
        var text: String
    }

    /// Runs everything each connection has to do (incoming calls, replies, sending); returns
    /// why the bus was lost, if it was.
    private func processAll() -> String? {
        var buses: [(OpaquePointer, Entry?)] = control.map { [($0, nil)] } ?? []
        buses += entries.values.compactMap { entry in entry.bus.map { ($0, entry) } }
        for (bus, entry) in buses {
            // Bounded, so one busy connection cannot starve the others or the inbox.
            for _ in 0..<256 {
                let status = sd_bus_process(bus, nil)
                if status == 0 { break }
                if status < 0 {
                    return entry.map { "\($0.busName): \(Self.errorText(status))" } ?? Self.errorText(status)
                }
            }
            if sd_bus_is_open(bus) <= 0 { return "the bus closed the connection" }
        }
        return nil
    }

    /// Waits in `poll` for a connection or the eventfd, at most until the nearest timeout.
    private func waitForWork() {
        var descriptors = [pollfd(fd: wakeDescriptor, events: Int16(POLLIN), revents: 0)]
        var deadline = ContinuousClock.now + .seconds(1)
        if let attempt = nextAttempt, control == nil { deadline = min(deadline, attempt) }
        if let connecting = connectDeadline, !connected { deadline = min(deadline, connecting) }
        var buses: [OpaquePointer] = control.map { [$0] } ?? []
        buses += entries.values.compactMap(\.bus)
        let nowMicroseconds = Self.monotonicMicroseconds()
        for bus in buses {
            let descriptor = sd_bus_get_fd(bus)
            let events = sd_bus_get_events(bus)
            guard descriptor >= 0, events >= 0 else { continue }
            descriptors.append(pollfd(fd: descriptor, events: Int16(events), revents: 0))
            var timeout: UInt64 = 0
            if sd_bus_get_timeout(bus, &timeout) >= 0, timeout != UInt64.max {
                let left = timeout > nowMicroseconds ? timeout - nowMicroseconds : 0
                deadline = min(deadline, .now + .microseconds(Int64(min(left, 1_000_000))))
            }
        }
        let left = deadline - .now
        let milliseconds = max(0, Int32((Double(left.components.seconds) * 1000 + Double(left.components.attoseconds) / 1e15).rounded(.up)))
        _ = poll(&descriptors, nfds_t(descriptors.count), milliseconds)
        var count: UInt64 = 0
        _ = withUnsafeMutableBytes(of: &count) { read(wakeDescriptor, $0.baseAddress, 8) }
    }

    // MARK: Entries

    /// Opens a connection for each entry the service wants on the bus that has none, and
    /// closes those it no longer wants.
    private func reconcileEntries() {
        guard let service = owner.object else { return }
        let desired = service.desiredEntries()
        for (key, entry) in entries where desired[key]?.busName != entry.busName {
            close(entry, reason: service.departureReason(of: key, target: entry.target))
        }
        for (key, wanted) in desired where entries[key] == nil {
            openEntry(key: key, busName: wanted.busName, target: wanted.target)
        }
    }

    private func openEntry(key: EntryKey, busName: String, target: PlayerID?) {
        guard let tables = VTables.shared, case .success(let bus) = open(description: busName) else {
            // Out of memory, or the bus is going away (processing will tell).
            return
        }
        let entry = Entry(key: key, busName: busName, target: target, loop: self)
        entry.bus = bus
        entries[key] = entry
        let context = Unmanaged.passUnretained(entry).toOpaque()
        var status = sd_bus_add_object_vtable(bus, nil, Self.objectPath, Self.rootInterface, tables.root, context)
        if status >= 0 {
            status = sd_bus_add_object_vtable(bus, nil, Self.objectPath, Self.playerInterface, tables.player, context)
        }
        if status >= 0 {
            status = sd_bus_request_name_async(bus, nil, busName, 0, { message, userdata, _ in
                guard let userdata else { return 0 }
                Unmanaged<BusLoop.Entry>.fromOpaque(userdata).takeUnretainedValue().loop.nameReply(message, for: userdata)
                return 0
            }, context)
        }
        if status < 0 {
            logger.warning("cannot publish", metadata: ["name": "\(busName)", "error": "\(Self.errorText(status))"])
        }
    }

    /// The bus's answer to a name request.
    private func nameReply(_ message: OpaquePointer?, for context: UnsafeMutableRawPointer) {
        let entry = Unmanaged<Entry>.fromOpaque(context).takeUnretainedValue()
        guard entries[entry.key] === entry else { return }
        var result: UInt32 = 0
        let failed = message == nil || sd_bus_message_is_method_error(message, nil) > 0
            || sd_bus_message_read_basic(message, Self.type("u"), &result) < 0
        // 1: the primary owner; 4: already the owner.
        if !failed, result == 1 || result == 4 {
            entry.acquired = true
            logger.debug("published", metadata: ["name": "\(entry.busName)"])
            if let target = entry.target { owner.object?.report(.published(busName: entry.busName), to: target) }
        } else {
            logger.warning("name taken", metadata: ["name": "\(entry.busName)"])
            if let target = entry.target { owner.object?.report(.unpublished(busName: entry.busName, reason: .nameTaken), to: target) }
        }
    }

    private func close(_ entry: Entry, reason: MPRISUnpublishReason) {
        if let bus = entry.bus { _ = sd_bus_close_unref(bus) }
        entry.bus = nil
        entries[entry.key] = nil
        if entry.acquired, let target = entry.target {
            owner.object?.report(.unpublished(busName: entry.busName, reason: reason), to: target)
        }
    }

    private func closeAll(reason: MPRISUnpublishReason) {
        for entry in Array(entries.values) { close(entry, reason: reason) }
    }

    /// The app's entry shows the new media-keys player: both players hear it, and clients get
    /// every property anew.
    private func retargetAppEntry() {
        guard let entry = entries[.app], let service = owner.object else { return }
        let target = service.desiredEntries()[.app]?.target
        guard target != entry.target else { return }
        if entry.acquired, let old = entry.target { service.report(.unpublished(busName: entry.busName, reason: .hidden), to: old) }
        entry.target = target
        if entry.acquired, let target { service.report(.published(busName: entry.busName), to: target) }
        emitProperties(on: entry, player: MPRISService.announcedPlayerProperties, root: MPRISService.announcedRootProperties)
    }

    /// Announces `change` on every entry that shows player `id`.
    private func emit(_ change: MPRISPlayerModel.Change, of id: PlayerID) {
        // The app's entry last (see `run`).
        let showing = entries.values.filter { $0.target == id && $0.acquired }.sorted { $1.key == .app && $0.key != .app }
        for entry in showing {
            emitProperties(on: entry, player: change.player, root: change.root)
            if let seeked = change.seeked, let bus = entry.bus {
                var signal: OpaquePointer?
                guard sd_bus_message_new_signal(bus, &signal, Self.objectPath, Self.playerInterface, "Seeked") >= 0, let signal else { continue }
                var microseconds = MPRISPlayerModel.microseconds(seeked)
                if sd_bus_message_append_basic(signal, Self.type("x"), &microseconds) >= 0 {
                    _ = sd_bus_send(bus, signal, nil)
                }
                _ = sd_bus_message_unref(signal)
            }
        }
    }

    /// `PropertiesChanged` for these properties (sd-bus reads their values through the getters).
    private func emitProperties(on entry: Entry, player: Set<String>, root: Set<String>) {
        guard let bus = entry.bus else { return }
        for (interface, names) in [(Self.playerInterface, player), (Self.rootInterface, root)] where !names.isEmpty {
            var strings = names.sorted().map { strdup($0) }
            strings.append(nil)
            let status = sd_bus_emit_properties_changed_strv(bus, Self.objectPath, interface, &strings)
            for string in strings { free(string) }
            if status < 0 {
                logger.debug("PropertiesChanged not sent", metadata: ["name": "\(entry.busName)", "error": "\(Self.errorText(status))"])
            }
        }
    }

    // MARK: Clients' calls (on the thread, from sd-bus's callbacks)

    /// The client that sent `message`, with its process when the bus tells it (asked once per
    /// client, on the service's own connection, bounded by ``MPRISConfiguration/busCallTimeout``).
    func client(of message: OpaquePointer?, sentTo entry: Entry) -> MPRISClient {
        let sender = sd_bus_message_get_sender(message).map { String(cString: $0) } ?? "?"
        if clients[sender] == nil, let control {
            var creds: OpaquePointer?
            var processID: pid_t = 0
            var known: (Int32?, String?) = (nil, nil)
            if sd_bus_get_name_creds(control, sender, playerkit_creds_pid(), &creds) >= 0, let creds {
                if sd_bus_creds_get_pid(creds, &processID) >= 0 {
                    let name = (try? String(contentsOfFile: "/proc/\(processID)/comm", encoding: .utf8))?
                        .trimmingCharacters(in: .whitespacesAndNewlines)
                    known = (processID, name)
                }
                _ = sd_bus_creds_unref(creds)
            }
            if clients.count >= 128 { clients.removeAll() }
            clients[sender] = known
        }
        let known = clients[sender]
        return MPRISClient(busName: sender, processID: known?.processID ?? nil, processName: known?.processName ?? nil, sentTo: entry.busName)
    }

    /// A method call on an entry's object.
    func handleMethod(_ message: OpaquePointer?, entry: Entry, error: UnsafeMutablePointer<sd_bus_error>?) -> Int32 {
        let member = sd_bus_message_get_member(message).map { String(cString: $0) } ?? ""
        let request: MPRISRequest
        switch member {
        case "Play": request = .play
        case "Pause": request = .pause
        case "PlayPause": request = .playPause
        case "Stop": request = .stop
        case "Next": request = .next
        case "Previous": request = .previous
        case "Raise": request = .raise
        case "Quit": request = .quit
        case "Seek":
            var offset: Int64 = 0
            guard sd_bus_message_read_basic(message, Self.type("x"), &offset) >= 0 else { return invalidArguments(error) }
            request = .seek(by: Double(offset) / 1_000_000)
        case "SetPosition":
            var track: UnsafePointer<CChar>?
            var position: Int64 = 0
            guard sd_bus_message_read_basic(message, Self.type("o"), &track) >= 0, let track,
                  sd_bus_message_read_basic(message, Self.type("x"), &position) >= 0 else { return invalidArguments(error) }
            request = .setPosition(Double(position) / 1_000_000, trackID: String(cString: track))
        case "OpenUri":
            var uri: UnsafePointer<CChar>?
            guard sd_bus_message_read_basic(message, Self.type("s"), &uri) >= 0, let uri else { return invalidArguments(error) }
            request = .openURI(String(cString: uri))
        default:
            return Self.fail(error, name: "org.freedesktop.DBus.Error.UnknownMethod", message: "no method \(member)")
        }
        if let refusal = decide(request, message: message, entry: entry) {
            return Self.fail(error, name: refusal.dbusName, message: refusal.description)
        }
        var reply: OpaquePointer?
        guard sd_bus_message_new_method_return(message, &reply) >= 0, let reply else { return -ENOMEM }
        let status = sd_bus_send(nil, reply, nil)
        _ = sd_bus_message_unref(reply)
        return status < 0 ? status : 1
    }

    /// A property set on an entry's object.
    func handleSet(property: String, value: OpaquePointer?, entry: Entry, error: UnsafeMutablePointer<sd_bus_error>?) -> Int32 {
        let request: MPRISRequest
        switch property {
        case "Volume", "Rate":
            var number = 0.0
            guard sd_bus_message_read_basic(value, Self.type("d"), &number) >= 0 else { return invalidArguments(error) }
            request = property == "Volume" ? .setVolume(number) : .setRate(number)
        case "LoopStatus":
            var status: UnsafePointer<CChar>?
            guard sd_bus_message_read_basic(value, Self.type("s"), &status) >= 0, let status else { return invalidArguments(error) }
            request = .setLoopStatus(String(cString: status))
        case "Fullscreen":
            var flag: Int32 = 0
            guard sd_bus_message_read_basic(value, Self.type("b"), &flag) >= 0 else { return invalidArguments(error) }
            request = .setFullscreen(flag != 0)
        default:
            return Self.fail(error, name: "org.freedesktop.DBus.Error.PropertyReadOnly", message: "\(property) is read-only")
        }
        if let refusal = decide(request, message: sd_bus_get_current_message(entry.bus), entry: entry) {
            return Self.fail(error, name: refusal.dbusName, message: refusal.description)
        }
        return 1
    }

    private func decide(_ request: MPRISRequest, message: OpaquePointer?, entry: Entry) -> MPRISRefusal? {
        guard let service = owner.object else { return .noPlayer }
        return service.handle(request, on: entry.key, from: client(of: message, sentTo: entry))
    }

    /// A property read on an entry's object: appends the value to `reply`.
    func handleGet(interface: String, property: String, reply: OpaquePointer?, entry: Entry, error: UnsafeMutablePointer<sd_bus_error>?) -> Int32 {
        guard let value = owner.object?.propertyValue(interface: interface, name: property, entry: entry.key) else {
            return Self.fail(error, name: "org.freedesktop.DBus.Error.UnknownProperty", message: "no property \(property)")
        }
        return Self.append(value, to: reply)
    }

    private func invalidArguments(_ error: UnsafeMutablePointer<sd_bus_error>?) -> Int32 {
        Self.fail(error, name: "org.freedesktop.DBus.Error.InvalidArgs", message: "the arguments do not match the method's signature")
    }

    // MARK: Helpers

    /// Sets `error` (sd-bus sends it as the reply) and returns the negative status sd-bus expects.
    static func fail(_ error: UnsafeMutablePointer<sd_bus_error>?, name: String, message: String) -> Int32 {
        let status = sd_bus_error_set(error, name, message)
        return status < 0 ? status : -EINVAL
    }

    /// Appends `value` to a message.
    static func append(_ value: BusValue, to message: OpaquePointer?) -> Int32 {
        switch value {
        case .string(let text):
            return text.withCString { sd_bus_message_append_basic(message, type("s"), $0) }
        case .objectPath(let path):
            return path.withCString { sd_bus_message_append_basic(message, type("o"), $0) }
        case .bool(let flag):
            var number: Int32 = flag ? 1 : 0
            return sd_bus_message_append_basic(message, type("b"), &number)
        case .double(var number):
            return sd_bus_message_append_basic(message, type("d"), &number)
        case .int64(var number):
            return sd_bus_message_append_basic(message, type("x"), &number)
        case .strings(let texts):
            var status = sd_bus_message_open_container(message, type("a"), "s")
            for text in texts where status >= 0 { status = append(.string(text), to: message) }
            return status < 0 ? status : sd_bus_message_close_container(message)
        case .dictionary(let entries):
            var status = sd_bus_message_open_container(message, type("a"), "{sv}")
            for (key, entryValue) in entries where status >= 0 {
                status = sd_bus_message_open_container(message, type("e"), "sv")
                if status >= 0 { status = append(.string(key), to: message) }
                if status >= 0 { status = sd_bus_message_open_container(message, type("v"), entryValue.signature) }
                if status >= 0 { status = append(entryValue, to: message) }
                if status >= 0 { status = sd_bus_message_close_container(message) }
                if status >= 0 { status = sd_bus_message_close_container(message) }
            }
            return status < 0 ? status : sd_bus_message_close_container(message)
        }
    }

    /// A D-Bus type code as sd-bus takes it.
    static func type(_ code: Unicode.Scalar) -> CChar {
        CChar(truncatingIfNeeded: code.value)
    }

    static func errorText(_ status: Int32) -> String {
        String(cString: strerror(-status))
    }

    static func microseconds(_ duration: Duration) -> Int64 {
        duration.components.seconds * 1_000_000 + duration.components.attoseconds / 1_000_000_000_000
    }

    static func monotonicMicroseconds() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return UInt64(now.tv_sec) * 1_000_000 + UInt64(now.tv_nsec) / 1000
    }
}

/// The two MPRIS interface tables, built once per process (sd-bus keeps pointers to them).
struct VTables: @unchecked Sendable {
    // @unchecked: the tables are written once, before they are shared, and never again.
    let root: UnsafePointer<sd_bus_vtable>
    let player: UnsafePointer<sd_bus_vtable>

    /// nil only when memory ran out.
    static let shared: VTables? = {
        let method: sd_bus_message_handler_t = { message, userdata, error in
            guard let userdata else { return -EINVAL }
            let entry = Unmanaged<BusLoop.Entry>.fromOpaque(userdata).takeUnretainedValue()
            return entry.loop.handleMethod(message, entry: entry, error: error)
        }
        let get: sd_bus_property_get_t = { _, _, interface, property, reply, userdata, error in
            guard let userdata, let interface, let property else { return -EINVAL }
            let entry = Unmanaged<BusLoop.Entry>.fromOpaque(userdata).takeUnretainedValue()
            return entry.loop.handleGet(interface: String(cString: interface), property: String(cString: property),
                                        reply: reply, entry: entry, error: error)
        }
        let set: sd_bus_property_set_t = { _, _, _, property, value, userdata, error in
            guard let userdata, let property else { return -EINVAL }
            let entry = Unmanaged<BusLoop.Entry>.fromOpaque(userdata).takeUnretainedValue()
            return entry.loop.handleSet(property: String(cString: property), value: value, entry: entry, error: error)
        }
        guard let root = playerkit_mpris_root_vtable(method, get, set),
              let player = playerkit_mpris_player_vtable(method, get, set) else { return nil }
        return VTables(root: root, player: player)
    }()
}
