import Testing
import PlayerKit
@testable import PlayerKitCore

/// The state machine alone, fed synthetic mpv events (pure logic: no core involved).
@Suite("PlaybackModel", .timeLimit(.minutes(4)))
struct PlaybackModelTests {

    private func events(_ outputs: [PlaybackModel.Output]) -> [PlayerEvent] {
        outputs.compactMap { if case .event(let event) = $0 { return event } else { return nil } }
    }

    @Test("load paused, play, pause, end")
    func happyPath() throws {
        var model = PlaybackModel()
        _ = model.apply(.propertyChanged(observationID: 1, name: "pause", value: .flag(false)))
        _ = model.notePause(true)
        #expect(model.awaitEntry(1, source: "a.mp4").isEmpty)
        #expect(events(model.apply(.startFile(entryID: 1))) == [.stateChanged(from: .idle, to: .loading)])
        let loaded = model.apply(.fileLoaded)
        #expect(events(loaded) == [.stateChanged(from: .loading, to: .ready)])
        guard case .requestProperties(let requests) = loaded.first else {
            Issue.record("no media-info request")
            return
        }
        var resolved: [PlaybackModel.Output] = []
        for request in requests {
            let value: MPVValue = switch request.name {
            case "duration": .double(4)
            case "media-title": .string("Clip")
            case "track-list": .array([.map([("id", .int(1)), ("type", .string("video")), ("selected", .flag(true)),
                                              ("demux-w", .int(320)), ("demux-h", .int(240))])])
            default: .string("/a.mp4")
            }
            resolved += model.apply(.propertyReply(replyID: request.replyID, error: 0, name: request.name, value: value))
        }
        let info = MediaInfo(source: "a.mp4", duration: 4, videoSize: VideoSize(width: 320, height: 240), title: "Clip",
                             tracks: [Track(id: 1, kind: .video, isSelected: true, videoSize: VideoSize(width: 320, height: 240))])
        #expect(resolved == [.event(.durationKnown(4)), .event(.mediaLoaded(info)), .loadResolved(entryID: 1, .success(info))])

        // The first frame goes out at mpv's restart (positions from the item's start: it is
        // where the load's read put it), and its position is read to confirm it.
        let restart = model.apply(.playbackRestart)
        #expect(events(restart) == [.firstFrame])
        let startRead = try #require(firstRead(restart, "time-pos"))
        // (A read mpv cannot answer changes nothing; sourceTimestampsFirstFrame waits for it.)
        #expect(events(model.apply(.propertyReply(replyID: startRead, error: -10, name: "time-pos", value: .none))).isEmpty)
        #expect(events(model.apply(.playbackRestart)).isEmpty)  // once per item
        let played = model.notePause(false)
        #expect(events(played) == [.stateChanged(from: .ready, to: .playing)])
        // An observation mpv made before the set is stale: ignored until mpv's answer to the
        // confirming read (asked for by the set) comes; later observations count again.
        #expect(events(model.apply(.propertyChanged(observationID: 1, name: "pause", value: .flag(true)))).isEmpty)
        #expect(model.isPaused == false)
        var confirming: UInt64?
        for case .requestProperties(let list) in played { confirming = list.first { $0.name == "pause" }?.replyID ?? confirming }
        let confirm = try #require(confirming)
        let answered = model.apply(.propertyReply(replyID: confirm, error: 0, name: "pause", value: .flag(false)))
        #expect(events(answered).isEmpty)
        // mpv last reported `true` (the stale observation), so the model reads again; a newer
        // report while that read is in flight comes with its answer.
        let verify = try #require(readRequest(answered, "pause"))
        #expect(events(model.apply(.propertyChanged(observationID: 1, name: "pause", value: .flag(true)))).isEmpty)
        #expect(events(model.apply(.propertyReply(replyID: verify, error: 0, name: "pause", value: .flag(true))))
            == [.stateChanged(from: .playing, to: .paused)])
        #expect(events(model.apply(.propertyChanged(observationID: 2, name: "paused-for-cache", value: .flag(true))))
            == [.stateChanged(from: .paused, to: .buffering)])
        _ = model.apply(.propertyChanged(observationID: 2, name: "paused-for-cache", value: .flag(false)))
        #expect(events(model.applyDrained(.endFile(entryID: 1, reason: .endOfFile, error: 0)))
            == [.itemEnded(.finished), .stateChanged(from: .paused, to: .ended)])
    }

    /// The first read of `name` the outputs ask for.
    private func firstRead(_ outputs: [PlaybackModel.Output], _ name: String) -> UInt64? {
        for case .requestProperties(let list) in outputs {
            if let request = list.first(where: { $0.name == name }) { return request.replyID }
        }
        return nil
    }

    private func readRequest(_ outputs: [PlaybackModel.Output], _ name: String) -> UInt64? {
        var found: UInt64?
        for case .requestProperties(let list) in outputs { found = list.first { $0.name == name }?.replyID ?? found }
        return found
    }

    @Test("a set that mpv undoes before it reports it is not kept: the model reads again until it agrees with mpv's last report")
    func setUndoneBeforeReported() throws {
        var model = PlaybackModel()
        _ = model.apply(.propertyChanged(observationID: 1, name: "fullscreen", value: .flag(false)))  // mpv's first report
        let set = model.noteSet("fullscreen", .flag(true))
        #expect(events(set) == [.fullscreenStateChanged(true)])
        let confirm = try #require(readRequest(set, "fullscreen"))
        // mpv answered the confirming read while fullscreen was on; then a key (or a command)
        // turned it off again before mpv reported it. mpv reports a property only when it differs
        // from what it last reported (off), so no report will come: the model must ask again.
        let answered = model.apply(.propertyReply(replyID: confirm, error: 0, name: "fullscreen", value: .flag(true)))
        let again = try #require(readRequest(answered, "fullscreen"), "no second read: the read-out would stay on for good")
        #expect(events(model.apply(.propertyReply(replyID: again, error: 0, name: "fullscreen", value: .flag(false))))
            == [.fullscreenStateChanged(false)])
        #expect(model.isFullscreen == false)
        // When mpv's report catches up with a set that stayed, the reads end there.
        let kept = model.noteSet("fullscreen", .flag(true))
        let keptConfirm = try #require(readRequest(kept, "fullscreen"))
        let keptAnswer = model.apply(.propertyReply(replyID: keptConfirm, error: 0, name: "fullscreen", value: .flag(true)))
        let verify = try #require(readRequest(keptAnswer, "fullscreen"))
        _ = model.apply(.propertyChanged(observationID: 1, name: "fullscreen", value: .flag(true)))  // mpv reports it
        let settled = model.apply(.propertyReply(replyID: verify, error: 0, name: "fullscreen", value: .flag(true)))
        #expect(readRequest(settled, "fullscreen") == nil && events(settled).isEmpty && model.isFullscreen == true)
    }

    private func answerConfirmation(_ outputs: [PlaybackModel.Output], _ name: String) -> UInt64? {
        var found: UInt64?
        for case .confirmWithSetAnswer(let list) in outputs { found = list.first { $0.name == name }?.replyID ?? found }
        return found
    }

    @Test("a set of a property only clients change (volume) is confirmed by mpv's answer, without a read: older observations are ignored until it comes, newer ones apply")
    func confirmedBySetAnswer() throws {
        var model = PlaybackModel()
        _ = model.apply(.propertyChanged(observationID: 4, name: "volume", value: .double(100)))  // mpv's first report
        let set = model.noteSet("volume", .double(40))
        #expect(events(set) == [.volumeChanged(40)])
        #expect(readRequest(set, "volume") == nil, "a read was asked for: \(set)")
        let confirmation = try #require(answerConfirmation(set, "volume"))
        // An observation mpv made before the set, read before its answer: stale.
        #expect(events(model.apply(.propertyChanged(observationID: 4, name: "volume", value: .double(100)))).isEmpty)
        #expect(model.volume == 40)
        model.setAnswered([confirmation])
        // What mpv reports after its answer was read after the set: it applies.
        #expect(events(model.apply(.propertyChanged(observationID: 4, name: "volume", value: .double(55)))) == [.volumeChanged(55)])
        #expect(model.volume == 55)
        // A newer set supersedes an older one's confirmation: the older answer settles nothing.
        let first = try #require(answerConfirmation(model.noteSet("volume", .double(10)), "volume"))
        let second = try #require(answerConfirmation(model.noteSet("volume", .double(20)), "volume"))
        model.setAnswered([first])
        #expect(events(model.apply(.propertyChanged(observationID: 4, name: "volume", value: .double(10)))).isEmpty)
        model.setAnswered([second])
        #expect(events(model.apply(.propertyChanged(observationID: 4, name: "volume", value: .double(20)))).isEmpty, "the same value: no change")
        #expect(model.volume == 20)
    }

    @Test("a set mpv refuses is confirmed by a read under the same request: its answer puts mpv's value back")
    func refusedSetIsRead() throws {
        var model = PlaybackModel()
        _ = model.apply(.propertyChanged(observationID: 6, name: "speed", value: .double(1)))
        let set = model.noteSet("speed", .double(3))
        let confirmation = try #require(answerConfirmation(set, "speed"))
        // The engine reads `speed` under the confirmation's ID when mpv refuses the set.
        let answered = model.apply(.propertyReply(replyID: confirmation, error: 0, name: "speed", value: .double(1)))
        #expect(events(answered) == [.speedChanged(1)])
        #expect(readRequest(answered, "speed") == nil, "mpv's value agrees with its last report: no read again")
    }

    @Test("an app's own command after a set confirmed by its answer: the property is read after the command, since the command may have set it back before mpv reported it, and then mpv reports nothing")
    func unknownCommandAfterSet() throws {
        var model = PlaybackModel()
        _ = model.apply(.propertyChanged(observationID: 4, name: "volume", value: .double(100)))  // mpv's first report
        _ = model.apply(.propertyChanged(observationID: 5, name: "mute", value: .flag(false)))
        let set = model.noteSet("volume", .double(40))
        let confirmation = try #require(answerConfirmation(set, "volume"))
        model.setAnswered([confirmation])
        // Answered, not yet reported: a command of the app's (`set volume 100`) may undo it.
        let command = EngineOperation.runCommand(["set", "volume", "100"]).handedOver(to: &model)
        let read = try #require(readRequest(command, "volume"), "no read: the read-out would stay at 40 for good")
        #expect(readRequest(command, "mute") == nil, "mute was not set: nothing to read")
        #expect(events(model.apply(.propertyReply(replyID: read, error: 0, name: "volume", value: .double(100)))) == [.volumeChanged(100)])
        // Once mpv reported a set, a command reads nothing.
        let again = try #require(answerConfirmation(model.noteSet("volume", .double(30)), "volume"))
        model.setAnswered([again])
        _ = model.apply(.propertyChanged(observationID: 4, name: "volume", value: .double(30)))
        #expect(readRequest(EngineOperation.runCommand(["seek", "1"]).handedOver(to: &model), "volume") == nil)
        // A set still in flight when the command goes: read after it too (the set's answer then confirms nothing).
        let inFlight = try #require(answerConfirmation(model.noteSet("volume", .double(20)), "volume"))
        let read2 = try #require(readRequest(EngineOperation.runCommand(["keypress", "9"]).handedOver(to: &model), "volume"))
        model.setAnswered([inFlight])
        #expect(events(model.apply(.propertyChanged(observationID: 4, name: "volume", value: .double(30)))).isEmpty, "stale until the read answers")
        #expect(events(model.apply(.propertyReply(replyID: read2, error: 0, name: "volume", value: .double(19)))) == [.volumeChanged(19)])
    }

    @Test("pause and fullscreen, which mpv or the window system may undo, are still confirmed by a read")
    func readConfirmedProperties() throws {
        var model = PlaybackModel()
        for name in ["pause", "fullscreen"] {
            let set = model.noteSet(name, .flag(true))
            #expect(readRequest(set, name) != nil && answerConfirmation(set, name) == nil, "\(name): \(set)")
        }
    }

    @Test("in the source's own timestamps the first frame waits for its position: a preload that returns on it reads the first frame's position, not the 0 read at the load; positions from the item's start announce it at the restart and move the read-out when the frame was elsewhere")
    func sourceTimestampsFirstFrame() throws {
        var model = PlaybackModel()
        #expect(model.timestampsRebased)
        // PlayerCommand.setTimestampOrigin(.source) sets mpv's rebase-start-time to no.
        _ = model.noteSet(PlaybackModel.timestampOriginProperty, .string("no"))
        #expect(!model.timestampsRebased)
        _ = model.awaitEntry(1, source: "live.ts")
        _ = model.apply(.startFile(entryID: 1))
        _ = model.apply(.fileLoaded)
        let restart = model.apply(.playbackRestart)
        #expect(events(restart).isEmpty)
        #expect(!model.firstFrameShown)
        let read = try #require(firstRead(restart, "time-pos"))
        #expect(events(model.apply(.propertyReply(replyID: read, error: 0, name: "time-pos", value: .double(3600.5))))
            == [.firstFrame, .positionChanged(3600.5)])
        #expect(model.position == 3600.5 && model.firstFrameShown)
        // Back to the item's start: announced at the restart; the read moves the read-out.
        _ = model.noteSet(PlaybackModel.timestampOriginProperty, .flag(true))
        _ = model.awaitEntry(2, source: "b.mp4")
        _ = model.apply(.startFile(entryID: 2))
        _ = model.apply(.fileLoaded)
        let second = model.apply(.playbackRestart)
        #expect(events(second) == [.firstFrame])
        let secondRead = try #require(firstRead(second, "time-pos"))
        #expect(events(model.apply(.propertyReply(replyID: secondRead, error: 0, name: "time-pos", value: .double(0.033))))
            == [.positionChanged(0.033)])
        // Announced once: events lost now do not announce it again.
        _ = model.recoverLostEvents()
        #expect(!events(model.apply(.playbackRestart)).contains(.firstFrame))
    }

    @Test("a position mpv reports after the item was unloaded (a late per-frame time-pos) does not come back into the read-out")
    func lateTimePosAfterUnload() throws {
        var model = PlaybackModel()
        _ = model.awaitEntry(1, source: "a.mp4")
        _ = model.apply(.startFile(entryID: 1))
        _ = model.apply(.fileLoaded)
        _ = model.apply(.playbackRestart)
        _ = model.apply(.propertyChanged(observationID: 99, name: "time-pos", value: .double(0.3)))
        #expect(model.position == 0.3)
        _ = model.applyDrained(.endFile(entryID: 1, reason: .stop, error: 0))
        _ = model.apply(.propertyChanged(observationID: 99, name: "time-pos", value: .double(0.333)))
        #expect(model.position == nil, "a stale position after the unload: \(model.position as Any)")
    }

    @Test("a load error reports error, itemEnded(error), failed, and fails the waiter")
    func loadError() {
        var model = PlaybackModel()
        _ = model.awaitEntry(7, source: "bad.mp4")
        _ = model.apply(.startFile(entryID: 7))
        let outputs = model.applyDrained(.endFile(entryID: 7, reason: .error, error: -17))
        // mpv logs its line for an unrecognized format only after END_FILE: the error has it already.
        let error = PlayerError.loadFailed(source: "bad.mp4", MPVError(
            code: -17, message: "unrecognized file format", logMessages: ["Failed to recognize file format."]))
        #expect(outputs == [
            .event(.error(error)), .event(.itemEnded(.error(error))), .loadResolved(entryID: 7, .failure(error)),
            .event(.stateChanged(from: .loading, to: .failed)),
        ])
    }

    @Test("each failed entry gets its own lines: mpv's late line for an unrecognized format is not the next entry's; lines naming another entry are left out; no line says so")
    func errorLinesPerEntry() {
        func failure(_ outputs: [PlaybackModel.Output]) -> MPVError? {
            for case .event(.error(.loadFailed(_, let error))) in outputs { return error }
            return nil
        }
        var model = PlaybackModel()
        _ = model.awaitEntry(1, source: "/tmp/random.mp4")
        _ = model.apply(.startFile(entryID: 1))
        #expect(failure(model.applyDrained(.endFile(entryID: 1, reason: .error, error: -17)))?.logMessages == ["Failed to recognize file format."])
        // The 404 that follows: mpv's late line for entry 1 comes first, then its own.
        _ = model.awaitEntry(2, source: "http://127.0.0.1:9/missing.mp4")
        _ = model.apply(.startFile(entryID: 2))
        _ = model.apply(.logMessage(level: .error, prefix: "cplayer", text: "Failed to recognize file format.\n"))
        _ = model.apply(.logMessage(level: .error, prefix: "stream", text: "Failed to open http://127.0.0.1:9/missing.mp4.\n"))
        #expect(failure(model.applyDrained(.endFile(entryID: 2, reason: .error, error: -13)))?.logMessages
            == ["Failed to open http://127.0.0.1:9/missing.mp4."])
        // A line naming entry 2, read late, is not entry 3's; entry 3 had none of its own.
        _ = model.awaitEntry(3, source: "/tmp/other.mp4")
        _ = model.apply(.logMessage(level: .error, prefix: "ffmpeg", text: "http: HTTP error 404 for http://127.0.0.1:9/missing.mp4\n"))
        _ = model.apply(.startFile(entryID: 3))
        let none = failure(model.applyDrained(.endFile(entryID: 3, reason: .error, error: -13)))
        #expect(none?.logMessages == ["mpv logged no reason for this failure; its error code says: loading failed"])
        #expect(none?.reason?.isEmpty == false)
        // A second unrecognized entry: its own line again, and its late line is dropped too.
        _ = model.awaitEntry(4, source: "/tmp/random.mp4")
        _ = model.apply(.startFile(entryID: 4))
        #expect(failure(model.applyDrained(.endFile(entryID: 4, reason: .error, error: -17)))?.reason == "Failed to recognize file format.")
        _ = model.apply(.logMessage(level: .error, prefix: "cplayer", text: "Failed to recognize file format.\n"))
        _ = model.awaitEntry(5, source: "/tmp/x.mp4")
        _ = model.apply(.startFile(entryID: 5))
        _ = model.apply(.logMessage(level: .error, prefix: "vd", text: "Could not open codec.\n"))
        #expect(failure(model.applyDrained(.endFile(entryID: 5, reason: .error, error: -13)))?.logMessages == ["Could not open codec."])
        // A hardware device probe's line (FFmpeg logs it with no context, so libmpv hands it to
        // whichever core registered FFmpeg's log: any player's probe in the process) never
        // fails an item (mpv falls back to software decoding): it is not the item's reason.
        // Seen in make test's parallel pass, 2026-11-26: a fresh player's 404 was given
        // "AVHWDeviceContext: Could not dynamically load CUDA" as its reason.
        _ = model.awaitEntry(6, source: "http://127.0.0.1:9/missing.mp4")
        _ = model.apply(.startFile(entryID: 6))
        _ = model.apply(.logMessage(level: .error, prefix: "ffmpeg", text: "AVHWDeviceContext: Could not dynamically load CUDA\n"))
        _ = model.apply(.logMessage(level: .error, prefix: "stream", text: "Failed to open http://127.0.0.1:9/missing.mp4.\n"))
        #expect(failure(model.applyDrained(.endFile(entryID: 6, reason: .error, error: -13)))?.logMessages
            == ["Failed to open http://127.0.0.1:9/missing.mp4."])
    }

    @Test("a failure while playing gets the lines mpv hands out after its END_FILE (a busy pump reads the end first), and the events after it keep their order")
    func errorLinesAfterEnd() {
        func failure(_ outputs: [PlaybackModel.Output]) -> MPVError? {
            for case .event(.error(.playbackFailed(_, let error))) in outputs { return error }
            return nil
        }
        var model = playing(duration: 4)
        // The video output failed to open: mpv queued END_FILE; its log lines come only once
        // its queue is empty, so the pump reads END_FILE (and what followed) first.
        #expect(model.apply(.endFile(entryID: 1, reason: .error, error: -20)).isEmpty)
        #expect(model.apply(.other(name: "idle")).isEmpty)
        _ = model.apply(.logMessage(level: .error, prefix: "vo/x11", text: "couldn't open the X11 display ()!\n"))
        _ = model.apply(.logMessage(level: .error, prefix: "cplayer", text: "Error opening/initializing the selected video_out (--vo) device.\n"))
        let released = model.drained()
        let error = failure(released)
        #expect(error?.logMessages == ["couldn't open the X11 display ()!", "Error opening/initializing the selected video_out (--vo) device."])
        let kinds = events(released).map { event -> String in
            switch event {
            case .error: "error"
            case .itemEnded: "itemEnded"
            case .stateChanged(_, let to): "state \(to)"
            default: "other"
            }
        }
        #expect(kinds.prefix(2) == ["error", "itemEnded"], "\(kinds)")
        #expect(model.drained().isEmpty, "released once")
        // An unrecognized entry whose late line came while its end was held: the line is its
        // own, and is not taken for the next entry's.
        _ = model.awaitEntry(2, source: "/tmp/random.mp4")
        _ = model.apply(.startFile(entryID: 2))
        _ = model.apply(.endFile(entryID: 2, reason: .error, error: -17))
        _ = model.apply(.logMessage(level: .error, prefix: "cplayer", text: "Failed to recognize file format.\n"))
        #expect(model.drained().contains { if case .event(.error(.loadFailed(_, let e))) = $0 { e.logMessages == ["Failed to recognize file format."] } else { false } })
        _ = model.awaitEntry(3, source: "/tmp/x.mp4")
        _ = model.apply(.startFile(entryID: 3))
        _ = model.apply(.logMessage(level: .error, prefix: "cplayer", text: "Failed to recognize file format.\n"))
        #expect(model.applyDrained(.endFile(entryID: 3, reason: .error, error: -17)).contains {
            if case .event(.error(.loadFailed(_, let e))) = $0 { e.logMessages == ["Failed to recognize file format."] } else { false }
        })
    }

    @Test("replace versus stop, and entries passed over")
    func endReasons() {
        var model = PlaybackModel()
        _ = model.apply(.startFile(entryID: 1))
        _ = model.apply(.fileLoaded)
        model.noteReplacing()
        #expect(events(model.applyDrained(.endFile(entryID: 1, reason: .stop, error: 0))).first == .itemEnded(.replaced))
        // Entry 2 was awaited but mpv went straight to entry 3.
        _ = model.awaitEntry(2, source: "two.mp4")
        let skipped = model.apply(.startFile(entryID: 3))
        #expect(skipped.contains(.loadResolved(entryID: 2, .failure(.loadCancelled(source: "two.mp4")))))
        _ = model.apply(.fileLoaded)
        // A refused replacement (no next item) does not turn a later stop into "replaced".
        model.noteReplacing()
        model.noteReplacementFailed()
        #expect(events(model.applyDrained(.endFile(entryID: 3, reason: .stop, error: 0)))
            == [.itemEnded(.stopped), .stateChanged(from: .playing, to: .idle)])
    }

    /// The requests of an output list, by property name.
    private func requests(_ outputs: [PlaybackModel.Output]) -> [String: UInt64] {
        var found: [String: UInt64] = [:]
        for case .requestProperties(let list) in outputs {
            for request in list { found[request.name] = request.replyID }
        }
        return found
    }

    @Test("initial property values set baselines; later changes are events")
    func propertyEvents() {
        var model = PlaybackModel()
        #expect(model.apply(.propertyChanged(observationID: 5, name: "volume", value: .double(100))).isEmpty)
        #expect(events(model.apply(.propertyChanged(observationID: 5, name: "volume", value: .double(50))))
            == [.volumeChanged(50)])
        #expect(model.apply(.propertyChanged(observationID: 5, name: "volume", value: .double(50))).isEmpty)
        #expect(!PlaybackModel.observedProperties(positionInterval: .milliseconds(250)).contains("time-pos"))
        #expect(PlaybackModel.observedProperties(positionInterval: .zero).contains("time-pos"))
    }

    @Test("a player starts windowed: a first fullscreen observation of true is a change, reported (mpv coalesces its initial false with a set made before the pump read it)")
    func firstFullscreenObservation() {
        var model = PlaybackModel()
        #expect(events(model.apply(.propertyChanged(observationID: 9, name: "fullscreen", value: .flag(true))))
            == [.fullscreenStateChanged(true)])
        #expect(model.isFullscreen == true)
        // A first false is the windowed start itself: nothing to report.
        var windowed = PlaybackModel()
        #expect(windowed.apply(.propertyChanged(observationID: 9, name: "fullscreen", value: .flag(false))).isEmpty)
        #expect(events(windowed.apply(.propertyChanged(observationID: 9, name: "fullscreen", value: .flag(true))))
            == [.fullscreenStateChanged(true)])
    }

    @Test("the position is polled once per interval while playing, and read at pause and seek")
    func positionPolling() throws {
        var model = PlaybackModel()
        _ = model.notePause(true)
        _ = model.apply(.startFile(entryID: 1))
        _ = model.apply(.fileLoaded)
        // The first frame goes out and asks for the starting position, announced with its
        // answer; the first poll goes out too.
        let first = model.apply(.playbackRestart)
        #expect(events(first) == [.firstFrame])
        let firstFrameRead = try #require(firstRead(first, "time-pos"))
        let start = requests(first)
        #expect(Set(start.keys) == ["time-pos", "demuxer-cache-duration", "demuxer-cache-time"])
        #expect(start["time-pos"] != firstFrameRead)
        #expect(events(model.apply(.propertyReply(replyID: firstFrameRead, error: 0, name: "time-pos", value: .double(0))))
            == [.positionChanged(0)])
        #expect(events(model.apply(.propertyReply(replyID: start["time-pos"]!, error: 0, name: "time-pos", value: .double(0)))).isEmpty)
        _ = model.apply(.propertyReply(replyID: start["demuxer-cache-duration"]!, error: 0, name: "demuxer-cache-duration", value: .double(3)))
        _ = model.apply(.propertyReply(replyID: start["demuxer-cache-time"]!, error: 0, name: "demuxer-cache-time", value: .double(3)))
        #expect(model.cacheDuration == 3)
        #expect(model.poll().isEmpty)  // ready (paused): nothing moves

        _ = model.notePause(false)
        let tick = requests(model.poll())
        #expect(tick["time-pos"] != nil)
        #expect(model.poll().isEmpty)  // the last answer is still pending
        #expect(events(model.apply(.propertyReply(replyID: tick["time-pos"]!, error: 0, name: "time-pos", value: .double(0.25))))
            == [.positionChanged(0.25)])
        _ = model.apply(.propertyReply(replyID: tick["demuxer-cache-duration"]!, error: 0, name: "demuxer-cache-duration", value: .double(3)))
        _ = model.apply(.propertyReply(replyID: tick["demuxer-cache-time"]!, error: 0, name: "demuxer-cache-time", value: .double(3.25)))

        // Pausing reads where playback stopped.
        let paused = model.notePause(true)
        #expect(events(paused) == [.stateChanged(from: .playing, to: .paused)])
        let stop = requests(paused)
        #expect(events(model.apply(.propertyReply(replyID: stop["time-pos"]!, error: 0, name: "time-pos", value: .double(0.31))))
            == [.positionChanged(0.31)])
        #expect(model.position == 0.31)

        // A seek completes once its landing position is read.
        _ = model.apply(.seek)
        let restart = model.apply(.playbackRestart)
        #expect(events(restart).isEmpty)
        let landing = requests(restart)
        #expect(events(model.apply(.propertyReply(replyID: landing["time-pos"]!, error: 0, name: "time-pos", value: .double(2))))
            == [.seekCompleted(position: 2), .positionChanged(2)])
    }

    @Test("with a zero interval every observed position change is an event")
    func everyPositionChange() {
        var model = PlaybackModel()
        _ = model.apply(.startFile(entryID: 1))
        _ = model.apply(.fileLoaded)
        for position in [0.1, 0.133, 0.166] {
            #expect(events(model.apply(.propertyChanged(observationID: 13, name: "time-pos", value: .double(position))))
                == [.positionChanged(position)])
        }
    }

    /// A model with an item loaded (duration `duration`), playing, positions observed.
    private func playing(duration: Double, bufferingTimeout: Duration? = nil) -> PlaybackModel {
        var model = PlaybackModel(positionInterval: .zero, bufferingTimeout: bufferingTimeout)
        _ = model.apply(.propertyChanged(observationID: 1, name: "pause", value: .flag(false)))
        _ = model.apply(.startFile(entryID: 1))
        _ = model.apply(.fileLoaded)
        _ = model.apply(.propertyChanged(observationID: 3, name: "duration", value: .double(duration)))
        return model
    }

    @Test("an end of file well short of the duration is truncated, with where it got to; near the end it is finished")
    func truncation() {
        var cut = playing(duration: 4)
        _ = cut.apply(.propertyChanged(observationID: 20, name: "time-pos", value: .double(1.0)))
        #expect(events(cut.applyDrained(.endFile(entryID: 1, reason: .endOfFile, error: 0))).contains(.itemEnded(.truncated(position: 1, duration: 4))))

        var whole = playing(duration: 4)
        _ = whole.apply(.propertyChanged(observationID: 20, name: "time-pos", value: .double(3.4)))
        #expect(events(whole.applyDrained(.endFile(entryID: 1, reason: .endOfFile, error: 0))).contains(.itemEnded(.finished)))

        // The demuxer read to the end: the last position seen may lag, the item is complete.
        var read = playing(duration: 10)
        _ = read.apply(.propertyChanged(observationID: 20, name: "time-pos", value: .double(5)))
        _ = read.apply(.propertyChanged(observationID: 21, name: "demuxer-cache-time", value: .double(10)))
        #expect(events(read.applyDrained(.endFile(entryID: 1, reason: .endOfFile, error: 0))).contains(.itemEnded(.finished)))

        // A seek in flight (a seek past the end) is no truncation.
        var seeking = playing(duration: 4)
        _ = seeking.apply(.propertyChanged(observationID: 20, name: "time-pos", value: .double(1.0)))
        _ = seeking.apply(.seek)
        #expect(events(seeking.applyDrained(.endFile(entryID: 1, reason: .endOfFile, error: 0))).contains(.itemEnded(.finished)))
    }

    @Test("a playlist file: the load moves to the first inserted entry, then past entries that fail, naming them")
    func playlistRedirect() {
        var model = PlaybackModel()
        _ = model.awaitEntry(1, source: "list.m3u")
        _ = model.apply(.startFile(entryID: 1))
        let redirected = model.applyDrained(.endFile(entryID: 1, reason: .redirect, error: 0, insertedEntryID: 2, insertedCount: 2))
        #expect(redirected.contains(.loadRedirected(from: 1, to: 2)))
        #expect(events(redirected).isEmpty)  // no itemEnded, and the state stays loading
        #expect(model.state == .loading)
        _ = model.apply(.startFile(entryID: 2))
        _ = model.apply(.logMessage(level: .error, prefix: "file", text: "Cannot open file 'a.mp4': No such file or directory\n"))
        _ = model.apply(.logMessage(level: .error, prefix: "stream", text: " \n"))
        let failed = model.applyDrained(.endFile(entryID: 2, reason: .error, error: -13))
        let error = PlayerError.loadFailed(source: "entry 1 of list.m3u", MPVError(
            code: -13, message: "loading failed", logMessages: ["Cannot open file 'a.mp4': No such file or directory"]))
        #expect(events(failed).first == .error(error))
        #expect(failed.contains(.loadRedirected(from: 2, to: 3)))
        #expect(error.description.contains("No such file or directory"))
        // The last entry fails too: now the load fails.
        _ = model.apply(.startFile(entryID: 3))
        let last = model.applyDrained(.endFile(entryID: 3, reason: .error, error: -13))
        #expect(last.contains { if case .loadResolved(3, .failure(.loadFailed(let source, _))) = $0 { return source == "entry 2 of list.m3u" } else { return false } })
    }

    @Test("buffering longer than the buffering timeout asks for a stop, whose end is a bufferingTimedOut error")
    func bufferingTimeout() {
        var model = playing(duration: 20, bufferingTimeout: .seconds(2))
        _ = model.apply(.propertyChanged(observationID: 20, name: "time-pos", value: .double(5)))
        _ = model.apply(.propertyChanged(observationID: 2, name: "paused-for-cache", value: .flag(true)))
        #expect(model.state == .buffering)
        let start = ContinuousClock.now
        #expect(!model.poll(now: start).contains(.stopItem))
        #expect(!model.poll(now: start + .seconds(1)).contains(.stopItem))
        #expect(model.poll(now: start + .milliseconds(2100)).contains(.stopItem))
        let ended = events(model.applyDrained(.endFile(entryID: 1, reason: .stop, error: 0)))
        let error = PlayerError.bufferingTimedOut(source: "?", position: 5, after: .seconds(2))
        #expect(ended.prefix(2) == [.error(error), .itemEnded(.error(error))])
        #expect(model.state == .failed)
    }
}

extension PlaybackModel {
    /// `event`, then the pump's drain (as the pump does once mpv's queue and log are empty).
    mutating func applyDrained(_ event: MPVEvent) -> [Output] {
        apply(event) + drained()
    }
}
