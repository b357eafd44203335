/// The figures of ``PlaybackStatistics`` that no mpv property holds, tallied from the player's
/// own events and frames: stalls (count, total, longest), time to first frame, frames shown
/// and the rate they are shown at. A pure value: the engine feeds it the events it numbers
/// (``note(_:)``, under its state lock, with their monotonic times) and, while someone counts
/// frames, each new picture (``noteFrame(position:at:)``); ``figures(at:)`` reads it.
///
/// Per item: a load (``PlayerState/loading``) starts every figure again. A stall is
/// ``PlayerState/buffering`` after the item's first frame; it ends when the state leaves
/// buffering (to playing, paused, ended, failed, idle or a new load).
struct PlaybackTally: Sendable {
    /// The figures at one moment.
    struct Figures: Sendable, Equatable {
        var stallCount = 0
        var stallTime = Duration.zero
        var longestStall = Duration.zero
        var timeToFirstFrame: Duration?
        var framesRendered: Int?
        var renderedFrameRate: Double?
    }

    /// How long the window of ``Figures/renderedFrameRate`` is.
    static let rateWindow = Duration.seconds(1)
    /// Frames kept for the rate at most (a 240 Hz picture for one second, with room).
    static let recentFramesKept = 512

    private var loadStarted: ContinuousClock.Instant?
    private var firstFrameShown = false
    private var timeToFirstFrame: Duration?
    private var stallCount = 0
    private var stallTime = Duration.zero
    private var longestStall = Duration.zero
    /// When the ongoing stall began.
    private var stallStarted: ContinuousClock.Instant?
    /// Whether the item has video being decoded (``PlayerEvent/videoDecoderChanged(_:)``).
    private var hasVideo = false

    /// Whether frames are counted (someone observes the statistics).
    private(set) var countsFrames = false
    /// The first report after counting began is the picture already shown: a baseline.
    private var frameBaselinePending = false
    private var lastFramePosition: Double?
    private var framesRendered = 0
    /// When counting began or the item began to load, whichever is later: the rate's window
    /// is no longer than the time counted.
    private var countedSince: ContinuousClock.Instant?
    /// The output's drop count (mpv's `frame-drop-count`) when counting began (the first sample
    /// after it), or 0 when the item began to load (mpv counts per file): a frame the output dropped was handed to it (its
    /// position counted) but never shown, so the drops since then come off the count.
    private var outputDropsBaseline: Int?
    /// The two latest samples of the output's drop count, for the drops per second.
    private var outputDropSamples: [(time: ContinuousClock.Instant, drops: Int)] = []
    /// The moments of the latest frames, oldest first from ``recentStart``.
    private var recentFrames: [ContinuousClock.Instant] = []
    private var recentStart = 0

    /// Notes the events of one numbered batch, in order.
    mutating func note(_ records: [PlayerEventRecord]) {
        for record in records { note(record.event, at: record.time) }
    }

    /// Notes one event at the moment it went out.
    mutating func note(_ event: PlayerEvent, at time: ContinuousClock.Instant) {
        switch event {
        case .stateChanged(let from, let to):
            if from == .buffering { endStall(at: time) }
            if to == .loading { startItem(at: time) }
            if to == .buffering, firstFrameShown, stallStarted == nil {
                stallStarted = time
                stallCount += 1
            }
        case .firstFrame:
            guard !firstFrameShown else { return }
            firstFrameShown = true
            if let loadStarted { timeToFirstFrame = time - loadStarted }
        case .videoDecoderChanged(let decoder):
            hasVideo = decoder != nil
        default:
            break
        }
    }

    /// Notes the output's drop count as a sample read it at `time`.
    mutating func noteOutputDrops(_ drops: Int?, at time: ContinuousClock.Instant) {
        guard countsFrames, let drops else { return }
        if outputDropsBaseline == nil { outputDropsBaseline = drops }
        outputDropSamples.append((time, drops))
        if outputDropSamples.count > 2 { outputDropSamples.removeFirst() }
    }

    /// Starts or stops counting frames; a start counts from the next new picture.
    mutating func countFrames(_ enabled: Bool, at time: ContinuousClock.Instant) {
        guard enabled != countsFrames else { return }
        countsFrames = enabled
        framesRendered = 0
        forgetRecentFrames()
        frameBaselinePending = enabled
        lastFramePosition = nil
        countedSince = enabled ? time : nil
        outputDropsBaseline = nil
        outputDropSamples = []
    }

    /// Notes a picture's position as the player reported it (nil: no picture). A new position
    /// while the item has video is a new frame shown.
    mutating func noteFrame(position: Double?, at time: ContinuousClock.Instant) {
        guard countsFrames else { return }
        defer { lastFramePosition = position }
        if frameBaselinePending {
            frameBaselinePending = false
            return
        }
        guard hasVideo, let position, position != lastFramePosition else { return }
        framesRendered += 1
        if recentFrames.count - recentStart >= Self.recentFramesKept { recentStart += 1 }
        recentFrames.append(time)
        pruneRecentFrames(before: time - Self.rateWindow)
    }

    /// The figures at `now` (an ongoing stall counted up to it).
    func figures(at now: ContinuousClock.Instant) -> Figures {
        var figures = Figures(stallCount: stallCount, stallTime: stallTime, longestStall: longestStall,
                              timeToFirstFrame: timeToFirstFrame)
        if let stallStarted {
            let ongoing = max(.zero, now - stallStarted)
            figures.stallTime += ongoing
            figures.longestStall = max(longestStall, ongoing)
        }
        if countsFrames, hasVideo {
            let dropped = max(0, (outputDropSamples.last?.drops ?? 0) - (outputDropsBaseline ?? outputDropSamples.last?.drops ?? 0))
            figures.framesRendered = max(0, framesRendered - dropped)
            let windowStart = max(now - Self.rateWindow, countedSince ?? now)
            let span = now - windowStart
            let inWindow = recentFrames[recentStart...].reduce(0) { $0 + ($1 > windowStart && $1 <= now ? 1 : 0) }
            var dropsPerSecond = 0.0
            if outputDropSamples.count == 2, outputDropSamples[1].time > outputDropSamples[0].time {
                dropsPerSecond = Double(max(0, outputDropSamples[1].drops - outputDropSamples[0].drops))
                    / (outputDropSamples[1].time - outputDropSamples[0].time).inSeconds
            }
            if span > .milliseconds(100) { figures.renderedFrameRate = max(0, Double(inWindow) / span.inSeconds - dropsPerSecond) }
        }
        return figures
    }

    private mutating func startItem(at time: ContinuousClock.Instant) {
        loadStarted = time
        firstFrameShown = false
        timeToFirstFrame = nil
        stallCount = 0
        stallTime = .zero
        longestStall = .zero
        stallStarted = nil
        hasVideo = false
        framesRendered = 0
        forgetRecentFrames()
        // mpv counts the output's drops per file: a new item's start from 0.
        outputDropsBaseline = 0
        outputDropSamples = []
        if countsFrames { countedSince = time }
    }

    private mutating func endStall(at time: ContinuousClock.Instant) {
        guard let stallStarted else { return }
        let stall = max(.zero, time - stallStarted)
        stallTime += stall
        longestStall = max(longestStall, stall)
        self.stallStarted = nil
    }

    private mutating func forgetRecentFrames() {
        recentFrames.removeAll(keepingCapacity: true)
        recentStart = 0
    }

    /// Drops the frames older than `limit`, compacting the array now and then, so its work is
    /// constant per frame on average and its size bounded.
    private mutating func pruneRecentFrames(before limit: ContinuousClock.Instant) {
        while recentStart < recentFrames.count, recentFrames[recentStart] <= limit { recentStart += 1 }
        if recentStart > Self.recentFramesKept {
            recentFrames.removeFirst(recentStart)
            recentStart = 0
        }
    }
}
