import Foundation

/// Something that happened to one player. Delivered together with the player (to a
/// ``PlayerDelegate``) or its ``PlayerID`` (in a ``PlayerEventRecord``, on a
/// ``PlayerEventBus``, in an async sequence, or as a `Notification`).
///
/// The core's cases are what mpv reports about the player. Features (fullscreen policy, clip
/// loops, sync groups, an app's own orchestration) publish their events as
/// ``feature(_:)-swift.enum.case``, each with a type of its own (see ``PlayerFeatureEvent``), so adding a
/// feature never adds a case here.
///
/// **Can grow.** The enum is `@nonexhaustive` (SE-0487): outside PlayerKit a `switch` over it
/// needs an `@unknown default` case, so an event added in a later release does not break the
/// app's build.
@nonexhaustive
public enum PlayerEvent: Sendable, Hashable, CustomStringConvertible {
    /// The player was created. Always the first event of a player (sequence number 1).
    case created
    /// The state changed. Never sent with `from == to`.
    case stateChanged(from: PlayerState, to: PlayerState)
    /// The playback position in seconds, at most once per
    /// ``PlayerConfiguration/positionUpdateInterval`` and right after each seek (every frame
    /// while a ``PropertyObservation`` is active).
    case positionChanged(Double)
    /// The duration of the current item became known or changed.
    case durationKnown(Double)
    /// The item loaded: duration, size and tracks. Follows the state change out of `loading`.
    case mediaLoaded(MediaInfo)
    /// The item's first frame was decoded and presented (mpv's first playback restart after
    /// loading; also when loaded paused, which leaves the player on that frame). The end of
    /// "time to first frame". It goes out as mpv shows the frame; ``MediaPlayer/position`` then
    /// says where the item starts (0, or where it was loaded at), and a ``positionChanged(_:)``
    /// follows if the frame's own position differs. In the source's own timestamps
    /// (``PlayerCommand/setTimestampOrigin(_:)``) it waits for the frame's position instead,
    /// which the read-out shows when it arrives.
    case firstFrame
    /// A seek finished; the position where playback resumes, when known.
    case seekCompleted(position: Double?)
    /// Network cache fill while buffering, 0 to 100.
    case bufferingProgress(percent: Double)
    /// How far the player holds its source changed: reported while a
    /// ``MediaPlayer/observeBufferedMedia()`` observation lives (the current value first).
    case bufferedMediaChanged(BufferedMedia)
    /// The player's playback statistics, every interval while a
    /// ``MediaPlayer/observeStatistics(every:)`` observation lives (the shortest interval of
    /// those observing), read at once and put together as ``MediaPlayer/statistics(timeout:)``
    /// reads them.
    case statisticsUpdated(PlaybackStatistics)
    /// A fault in the picture or sound lasted its threshold: the picture froze, went black, or
    /// the sound went silent (``Alarm``, its ``Alarm/end`` nil), while a
    /// ``MediaPlayer/watchAlarms(_:)`` watch lives. Published when the player's position
    /// reaches the fault's start plus the threshold. Each is followed by one
    /// ``alarmCleared(_:)`` of the same kind and start.
    case alarmRaised(Alarm)
    /// The fault of an ``alarmRaised(_:)`` ended (the ``Alarm`` with its end and duration):
    /// published when the position reaches its end, or at a seek, the item's end, or the end
    /// of the watch (ending then at the last position played).
    case alarmCleared(Alarm)
    /// The player's loudness, every interval while a ``MediaPlayer/observeLoudness(every:)``
    /// observation lives (the shortest interval of those observing), once the meter has
    /// measured.
    case loudnessUpdated(Loudness)
    /// The volume changed (0 to 100 is normal, up to mpv's `volume-max`).
    case volumeChanged(Double)
    /// Mute was switched on or off.
    case muteChanged(Bool)
    /// The playback speed changed.
    case speedChanged(Double)
    /// The item's tracks changed after ``mediaLoaded(_:)``: a track was selected or deselected
    /// (``PlayerCommand/selectTrack(_:id:)``), an external subtitle file was added
    /// (``Player/addSubtitles(path:title:language:select:)``), or a stream announced a new
    /// track. The whole new list, as ``Player/tracks`` reads it.
    case tracksChanged([Track])
    /// The video decoder in use changed: video began to be decoded (after
    /// ``mediaLoaded(_:)``), hardware decoding began or fell back to software, or the video
    /// track changed. nil: no video is being decoded.
    case videoDecoderChanged(VideoDecoder?)
    /// mpv's `fullscreen` property changed: by ``PlayerCommand/setFullscreen(_:)``, by mpv's own window
    /// (a key binding), by the window manager, or through the escape hatches
    /// (``Player/setProperty(_:to:)``, ``Player/command(_:)``). A headless player keeps the
    /// setting too. The first value mpv reports is the baseline and is not an event.
    /// (A fullscreen policy's own view is its `FullscreenEvent`.)
    case fullscreenStateChanged(Bool)
    /// How the current item repeats changed (mpv's `loop-file`): by ``PlayerCommand/setLoop(_:)``, by
    /// ``Player/setProperty(_:to:)``, or by mpv's own window. The first value mpv reports is the
    /// baseline and is not an event.
    case loopModeChanged(LoopMode)
    /// The playlist changed: another item became current, an item was appended or removed, or
    /// the playlist ended (``PlaylistPosition/index`` nil). A player starts with an empty
    /// playlist, so its first load is reported (index 0 of 1).
    case playlistChanged(PlaylistPosition)
    /// An mpv property that the app observes (``Player/observeProperty(_:)``) has this value:
    /// the value when the observation began, then each change. `name` is the name as given;
    /// `value` is ``MPVValue/none`` while the property is unavailable (no item loaded, say).
    case propertyChanged(name: String, value: MPVValue)
    /// The current item ended, and why.
    case itemEnded(ItemEndReason)
    /// Something failed; the error names what.
    case error(PlayerError)
    /// mpv's event queue for this player overflowed (mpv keeps at most 1000 undelivered events
    /// per core) and some of its events were lost: an item's end, a pause, the answer to a
    /// command. PlayerKit has re-read every property it follows and rebuilt the player's state;
    /// the events this produced (a state change, a volume change, ``mediaLoaded(_:)`` for an item
    /// that loaded unseen) come before this one, and the snapshot says what the state now is.
    /// Events that were lost are not replayed: an item that ended unseen has no
    /// ``itemEnded(_:)``, and a `load` waiting for it fails with
    /// ``PlayerError/loadFailed(source:_:)`` (mpv error -1, "event queue full").
    case eventsLost(PlayerSnapshot)
    /// An event a feature published about this player (``Player/publish(_:)``). Its
    /// ``PlayerFeatureEvent/kind`` is the event's ``kind``; read it back with ``feature(_:)-swift.enum.case``:
    /// `record.event.feature(FullscreenEvent.self)`.
    case feature(any PlayerFeatureEvent)
    /// The player began to shut down (``MediaPlayer/shutdown()``): no command is taken any more,
    /// and ``shutDown`` follows. Features publish their last events about the player when they
    /// hear it (from an `.immediate` handler); those come before ``shutDown``.
    case shuttingDown
    /// The player shut down and its mpv core is destroyed. Always the last event of a player,
    /// also when it was dropped without ``Player/shutdown()``.
    case shutDown

    /// The event's kind.
    public var kind: PlayerEventKind {
        switch self {
        case .created: return .created
        case .stateChanged: return .stateChanged
        case .positionChanged: return .positionChanged
        case .durationKnown: return .durationKnown
        case .mediaLoaded: return .mediaLoaded
        case .firstFrame: return .firstFrame
        case .seekCompleted: return .seekCompleted
        case .bufferingProgress: return .bufferingProgress
        case .bufferedMediaChanged: return .bufferedMediaChanged
        case .statisticsUpdated: return .statisticsUpdated
        case .alarmRaised: return .alarmRaised
        case .alarmCleared: return .alarmCleared
        case .loudnessUpdated: return .loudnessUpdated
        case .volumeChanged: return .volumeChanged
        case .muteChanged: return .muteChanged
        case .speedChanged: return .speedChanged
        case .tracksChanged: return .tracksChanged
        case .videoDecoderChanged: return .videoDecoderChanged
        case .fullscreenStateChanged: return .fullscreenStateChanged
        case .loopModeChanged: return .loopModeChanged
        case .playlistChanged: return .playlistChanged
        case .propertyChanged: return .propertyChanged
        case .itemEnded: return .itemEnded
        case .error: return .error
        case .eventsLost: return .eventsLost
        case .feature(let event): return event.kind
        case .shuttingDown: return .shuttingDown
        case .shutDown: return .shutDown
        }
    }

    /// The feature event of type `type`, or nil when this is another event:
    /// `if let fullscreen = record.event.feature(FullscreenEvent.self) { ... }`.
    public func feature<Event: PlayerFeatureEvent>(_ type: Event.Type) -> Event? {
        if case .feature(let event) = self { return event as? Event }
        return nil
    }

    /// A short, stable name for the event's kind ("stateChanged", "positionChanged", ...),
    /// the raw value of ``kind``.
    var name: String { kind.rawValue }

    /// The event name with its payload, e.g. "stateChanged(loading -> playing)".
    public var description: String {
        switch self {
        case .created: return "created"
        case .stateChanged(let from, let to): return "stateChanged(\(from) -> \(to))"
        case .positionChanged(let position): return "positionChanged(\(String(format: "%.3f", position)))"
        case .durationKnown(let duration): return "durationKnown(\(String(format: "%.3f", duration)))"
        case .mediaLoaded(let info):
            return "mediaLoaded(\(info.title ?? info.source), \(info.videoSize?.description ?? "no video"), \(info.tracks.count) tracks)"
        case .firstFrame: return "firstFrame"
        case .seekCompleted(let position): return "seekCompleted(\(position.map { String(format: "%.3f", $0) } ?? "?"))"
        case .bufferingProgress(let percent): return "bufferingProgress(\(percent)%)"
        case .bufferedMediaChanged(let media): return "bufferedMediaChanged(\(media))"
        case .statisticsUpdated(let statistics): return "statisticsUpdated(\(statistics))"
        case .alarmRaised(let alarm): return "alarmRaised(\(alarm))"
        case .alarmCleared(let alarm): return "alarmCleared(\(alarm))"
        case .loudnessUpdated(let loudness): return "loudnessUpdated(\(loudness))"
        case .volumeChanged(let volume): return "volumeChanged(\(volume))"
        case .muteChanged(let muted): return "muteChanged(\(muted))"
        case .speedChanged(let speed): return "speedChanged(\(speed))"
        case .tracksChanged(let tracks): return "tracksChanged(\(tracks.map(\.description).joined(separator: ", ")))"
        case .videoDecoderChanged(let decoder): return "videoDecoderChanged(\(decoder?.description ?? "none"))"
        case .fullscreenStateChanged(let fullscreen): return "fullscreenStateChanged(\(fullscreen))"
        case .loopModeChanged(let mode): return "loopModeChanged(\(mode))"
        case .playlistChanged(let playlist): return "playlistChanged(\(playlist))"
        case .propertyChanged(let name, let value): return "propertyChanged(\(name): \(value))"
        case .itemEnded(let reason): return "itemEnded(\(reason))"
        case .error(let error): return "error(\(error))"
        case .eventsLost(let snapshot): return "eventsLost(now \(snapshot))"
        case .feature(let event): return event.description
        case .shuttingDown: return "shuttingDown"
        case .shutDown: return "shutDown"
        }
    }

    /// Equal events: the same case with equal payloads (feature events of the same type and value).
    public static func == (lhs: PlayerEvent, rhs: PlayerEvent) -> Bool {
        switch (lhs, rhs) {
        case (.created, .created), (.firstFrame, .firstFrame), (.shuttingDown, .shuttingDown), (.shutDown, .shutDown): return true
        case (.stateChanged(let a, let b), .stateChanged(let c, let d)): return a == c && b == d
        case (.positionChanged(let a), .positionChanged(let b)): return a == b
        case (.durationKnown(let a), .durationKnown(let b)): return a == b
        case (.mediaLoaded(let a), .mediaLoaded(let b)): return a == b
        case (.seekCompleted(let a), .seekCompleted(let b)): return a == b
        case (.bufferingProgress(let a), .bufferingProgress(let b)): return a == b
        case (.bufferedMediaChanged(let a), .bufferedMediaChanged(let b)): return a == b
        case (.statisticsUpdated(let a), .statisticsUpdated(let b)): return a == b
        case (.alarmRaised(let a), .alarmRaised(let b)): return a == b
        case (.alarmCleared(let a), .alarmCleared(let b)): return a == b
        case (.loudnessUpdated(let a), .loudnessUpdated(let b)): return a == b
        case (.volumeChanged(let a), .volumeChanged(let b)): return a == b
        case (.muteChanged(let a), .muteChanged(let b)): return a == b
        case (.speedChanged(let a), .speedChanged(let b)): return a == b
        case (.tracksChanged(let a), .tracksChanged(let b)): return a == b
        case (.videoDecoderChanged(let a), .videoDecoderChanged(let b)): return a == b
        case (.fullscreenStateChanged(let a), .fullscreenStateChanged(let b)): return a == b
        case (.loopModeChanged(let a), .loopModeChanged(let b)): return a == b
        case (.playlistChanged(let a), .playlistChanged(let b)): return a == b
        case (.propertyChanged(let a, let b), .propertyChanged(let c, let d)): return a == c && b == d
        case (.itemEnded(let a), .itemEnded(let b)): return a == b
        case (.error(let a), .error(let b)): return a == b
        case (.eventsLost(let a), .eventsLost(let b)): return a == b
        case (.feature(let a), .feature(let b)): return a.isEqual(to: b)
        default: return false
        }
    }

    /// Hashes consistently with `==`.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(kind)
        switch self {
        case .created, .firstFrame, .shuttingDown, .shutDown: break
        case .stateChanged(let from, let to): hasher.combine(from); hasher.combine(to)
        case .positionChanged(let value), .durationKnown(let value), .volumeChanged(let value), .speedChanged(let value):
            hasher.combine(value)
        case .mediaLoaded(let info): hasher.combine(info)
        case .seekCompleted(let position): hasher.combine(position)
        case .bufferingProgress(let percent): hasher.combine(percent)
        case .bufferedMediaChanged(let media): hasher.combine(media)
        case .statisticsUpdated(let statistics): hasher.combine(statistics)
        case .alarmRaised(let alarm), .alarmCleared(let alarm): hasher.combine(alarm)
        case .loudnessUpdated(let loudness): hasher.combine(loudness)
        case .muteChanged(let muted), .fullscreenStateChanged(let muted): hasher.combine(muted)
        case .tracksChanged(let tracks): hasher.combine(tracks)
        case .videoDecoderChanged(let decoder): hasher.combine(decoder)
        case .loopModeChanged(let mode): hasher.combine(mode)
        case .playlistChanged(let playlist): hasher.combine(playlist)
        case .propertyChanged(let name, let value): hasher.combine(name); hasher.combine(value)
        case .itemEnded(let reason): hasher.combine(reason)
        case .error(let error): hasher.combine(error)
        case .eventsLost(let snapshot): hasher.combine(snapshot)
        case .feature(let event): hasher.combine(event)
        }
    }
}
