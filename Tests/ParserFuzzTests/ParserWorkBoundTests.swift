import Foundation
@testable import PlayerKitHLS
import Testing

/// A parser's work is bounded by the bytes it reads, not by the counts those bytes claim: timing
/// assertions (run one at a time, in make test's serial pass), each with a margin of a thousand
/// times what the bound allows.
@Suite("Parsers' work bounded by their input (timing)", .serialized, .timeLimit(.minutes(2)), .tags(.timingPass))
struct ParserWorkBoundTests {
    @Test("an edit list that claims 4,294,967,295 entries and holds none is read in well under a second")
    func editListClaimingEveryEntry() throws {
        let editList = MP4Bytes.editList([], version: 1, claimedCount: UInt32.max)
        let initSection = MP4Bytes.initSection(trackID: 1, timescale: 90_000, movieTimescale: 1000, editList: editList)
        let fragment = MP4Bytes.fragment(trackID: 1, decodeTime: 90_000)
        let clock = ContinuousClock()
        var time: Double?
        let elapsed = clock.measure {
            time = SegmentTimestamps.firstVideoTime(segment: Data(fragment), initSection: Data(initSection))
        }
        // Before the fix the loop ran once per claimed entry: about 23 s in a debug build.
        #expect(elapsed < .milliseconds(500), "took \(elapsed)")
        #expect(time == 1)
    }
}
