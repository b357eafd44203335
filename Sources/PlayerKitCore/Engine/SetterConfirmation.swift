/// Which of a player's read-outs a setter changed and mpv has not confirmed yet: one of
/// `PlaybackModel`'s sub-machines, pure, with one job. A setter's value shows in the read-out at
/// once; mpv's answer to the set, or a read of the property asked once the set is answered,
/// confirms it (`PlaybackModel.noteSet` says which). Until then, mpv's observations of that
/// property are older than the set, and are ignored. mpv reports a property again only when it
/// differs from what it last reported, so a read's answer that differs from that report is
/// followed by another read, until an answer and mpv's report agree.
struct SetterConfirmation: Sendable {
    /// Properties a setter changed whose confirming read is in flight: name -> reply ID.
    private var confirming: [String: UInt64] = [:]
    /// Confirming reads in flight: reply ID -> property name.
    private var requests: [UInt64: String] = [:]
    /// What mpv last reported of each observed property.
    private var lastReported: [String: MPVValue] = [:]
    /// The value each set confirmed by its answer set: request ID -> value.
    private var setValues: [UInt64: MPVValue] = [:]
    /// Properties whose set mpv answered, with a value unlike its last report, that mpv has not
    /// reported since: it reports the value once it reads the property again after the set,
    /// unless something set it back first (``unreported``).
    private var awaitingReport: Set<String> = []

    /// The confirming reads in flight (their reply IDs).
    var pendingRequests: Set<UInt64> { Set(requests.keys) }

    /// Whether `name`'s confirming read is in flight: an observation of it is stale.
    func isConfirming(_ name: String) -> Bool { confirming[name] != nil }

    /// mpv reported `value` for `name`.
    mutating func reported(_ name: String, _ value: MPVValue) {
        lastReported[name] = value
        awaitingReport.remove(name)
    }

    /// A confirmation of `name` is asked with reply ID `request` (a read, or, with `setValue`,
    /// the answer to the set of that value); one asked before is superseded (its answer, when it
    /// comes, is no confirmation).
    mutating func confirm(_ name: String, request: UInt64, setValue: MPVValue? = nil) {
        if let superseded = confirming[name] {
            requests[superseded] = nil
            setValues[superseded] = nil
        }
        confirming[name] = request
        requests[request] = name
        setValues[request] = setValue
    }

    /// The properties whose last set mpv has not confirmed by a report yet and that a set's
    /// answer was to confirm: in flight, or answered with no report since. A command the player
    /// knows nothing of (an app's own) may set one of them back before mpv reads it again, and mpv
    /// then reports nothing: after such a command they are confirmed by reads instead.
    var unreported: Set<String> {
        awaitingReport.union(setValues.keys.compactMap { requests[$0] })
    }

    /// The answer to reply ID `request`, if it is a confirming read: the property it confirms, and
    /// whether to read it again (`value` differs from mpv's last report, so mpv may never report
    /// it). `succeeded`: mpv gave a value.
    mutating func answered(_ request: UInt64, value: MPVValue, succeeded: Bool) -> (name: String, readAgain: Bool)? {
        guard let name = requests.removeValue(forKey: request) else { return nil }
        confirming[name] = nil
        setValues[request] = nil
        // The read (and any read again) confirms it from here.
        awaitingReport.remove(name)
        let readAgain = succeeded && lastReported[name].map { $0 != value } == true
        return (name, readAgain)
    }

    /// The set that `request` stands for was carried out (its answer confirms it, no read is
    /// asked): observations of its property are newer than the set from now on. Nothing when a
    /// newer set superseded it.
    mutating func settled(_ request: UInt64) {
        let value = setValues.removeValue(forKey: request)
        guard let name = requests.removeValue(forKey: request), confirming[name] == request else { return }
        confirming[name] = nil
        if let value, lastReported[name] != value { awaitingReport.insert(name) }
    }

    /// Reads whose answers were lost (mpv's event queue overflowed): forgotten, so nothing waits
    /// for them.
    mutating func forget(_ lost: Set<UInt64>) {
        for request in lost {
            setValues[request] = nil
            if let name = requests.removeValue(forKey: request), confirming[name] == request { confirming[name] = nil }
        }
    }
}
