import Testing

/// The passes of `make test` (Scripts/test-suite.sh) a suite or test runs in, chosen by tag:
/// untagged, it runs in the parallel pass. A new suite that measures time (a bound on a wait,
/// frames counted, a spread) takes ``timingPass``, or it runs next to hundreds of others and
/// its figures measure the crowd.
extension Tag {
    /// Timing assertions and the tests that need the machine to themselves: run one at a time,
    /// after every other pass.
    @Tag static var timingPass: Self
    /// The light live-origin tests: each waits on a live origin's wall clock; they run together
    /// in a pass of their own.
    @Tag static var livePass: Self
    /// Waits measured against their bounds on loopback servers (network faults, hostile
    /// origins, a room server's silences and TLS, a load or shutdown that never ends), and the
    /// tests that wait on a server or a clip with generous bounds (players following a room, the
    /// clip sequencer's edits): one at a time, in a lane of their own beside the timing pass.
    /// They wait far more than they compute, so one of them beside one timing test disturbs
    /// neither.
    @Tag static var waitPass: Self
    /// Heavy tests that measure no time (the cache model's seeded runs, the corrupted-media
    /// corpus, the soak): together, right after the parallel pass.
    @Tag static var heavyPass: Self
}
