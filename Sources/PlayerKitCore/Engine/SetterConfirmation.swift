/// Which of a player's read-outs a setter changed and mpv has not confirmed yet: one of
/// `PlaybackModel`'s sub-machines, pure, with one job. A setter's value shows in the read-out at
/// once; a read of the property, asked right after the set, confirms it (mpv answers requests in
/// order, so the answer reflects the set). Until it comes, mpv's observations of that property are
/// older than the set, and are ignored. mpv reports a property again only when it differs from
/// what it last reported, so an answer that differs from that report is followed by another read,
/// until an answer and mpv's report agree.
struct SetterConfirmation: Sendable {
    /// Properties a setter changed whose confirming read is in flight: name -> reply ID.
    private var confirming: [String: UInt64] = [:]
    /// Confirming reads in flight: reply ID -> property name.
    private var requests: [UInt64: String] = [:]
    /// What mpv last reported of each observed property.
    private var lastReported: [String: MPVValue] = [:]

    /// The confirming reads in flight (their reply IDs).
    var pendingRequests: Set<UInt64> { Set(requests.keys) }

    /// Whether `name`'s confirming read is in flight: an observation of it is stale.
    func isConfirming(_ name: String) -> Bool { confirming[name] != nil }

    /// mpv reported `value` for `name`.
    mutating func reported(_ name: String, _ value: MPVValue) {
        lastReported[name] = value
    }

    /// A confirming read of `name` is asked with reply ID `request`; one asked before is
    /// superseded (its answer, when it comes, is no confirmation).
    mutating func confirm(_ name: String, request: UInt64) {
        if let superseded = confirming[name] { requests[superseded] = nil }
        confirming[name] = request
        requests[request] = name
    }

    /// The answer to reply ID `request`, if it is a confirming read: the property it confirms, and
    /// whether to read it again (`value` differs from mpv's last report, so mpv may never report
    /// it). `succeeded`: mpv gave a value.
    mutating func answered(_ request: UInt64, value: MPVValue, succeeded: Bool) -> (name: String, readAgain: Bool)? {
        guard let name = requests.removeValue(forKey: request) else { return nil }
        confirming[name] = nil
        let readAgain = succeeded && lastReported[name].map { $0 != value } == true
        return (name, readAgain)
    }

    /// Reads whose answers were lost (mpv's event queue overflowed): forgotten, so nothing waits
    /// for them.
    mutating func forget(_ lost: Set<UInt64>) {
        for request in lost {
            if let name = requests.removeValue(forKey: request), confirming[name] == request { confirming[name] = nil }
        }
    }
}
