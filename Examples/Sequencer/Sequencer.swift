import ArgumentParser
import CGLHost
import Dispatch
import ExampleSupport
import Foundation
import PlayerKit

/// A video sequencer: a shipped timeline of three clips and a still (one clip at 2x, one
/// mirrored, one reversed) played as one stream of frames that the app pulls on its own 30 fps
/// display clock. Shown in an SDL window of the app's own, or, with `--headless`, reported
/// frame by frame; it ends with the gaps measured at every clip boundary.
@main
struct Sequencer: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "playerkit-sequencer",
        abstract: "Play a timeline of clips and a still (2x, mirrored, reversed) as frames pulled on the app's display clock.")

    @OptionGroup var logging: LoggingOptions

    @Flag(help: "Print one JSON object per line: each output frame (clip, sourceTime, outputTime, flip), each boundary, a summary.")
    var json = false

    @Flag(help: "No window: pull and report the frames only.")
    var headless = false

    @Option(help: "The display clock's rate, frames per second.")
    var fps: Double = 30

    @Option(help: "Stop after this many seconds (default: when the timeline ends).")
    var seconds: Double?

    @Option(help: "Swap the last two clips after this many seconds of output (shows an edit while playing).")
    var swapAfter: Double?

    func validate() throws {
        guard fps >= 1, fps <= 240 else { throw ValidationError("--fps must be between 1 and 240, got \(fps)") }
        if let seconds, !(seconds > 0) { throw ValidationError("--seconds must be above 0, got \(seconds)") }
        if let swapAfter, !(swapAfter >= 0) { throw ValidationError("--swap-after must be 0 or more, got \(swapAfter)") }
    }

    /// The mirroring the timeline gives its clips, by clip ID (a clip is made with its flip, and
    /// the app keeps what it gave: the report names each frame's flip from here).
    static let flips: [String: VideoFlip] = ["clip-2": .horizontal]

    /// The shipped timeline.
    static var timeline: [SequenceClip] {
        [
            .video(MediaSource(ExampleSupport.shippedMedia("sequence-1.mp4")), id: "clip-1", speed: 2),
            .video(MediaSource(ExampleSupport.shippedMedia("sequence-2.mp4")), id: "clip-2", flip: flips["clip-2", default: []]),
            .still(MediaSource(ExampleSupport.shippedMedia("sequence-still.png")), duration: .milliseconds(1500), id: "still"),
            .video(MediaSource(ExampleSupport.shippedMedia("sequence-3.mp4")), id: "clip-3", direction: .backward),
        ]
    }

    func run() async throws {
        logging.bootstrap()
        _ = Interruption.shared  // Ctrl-C ends the display loop and shuts the players down
        let programStart = ContinuousClock.now
        let format = try FrameFormat(width: 320, height: 240, pixelFormat: .bgr0)
        let sequencer = try ClipSequencer(
            clips: Self.timeline, format: format, playerIDPrefix: "sequencer",
            configuration: logging.applied(to: PlayerConfiguration(videoOutput: .frames, audioOutput: .none)))
        let json = json
        if !json {
            ExampleSupport.printLine("timeline: " + sequencer.clips.map(\.description).joined(separator: "; "))
        }

        // The app's display loop runs on a thread of its own (SDL wants one thread), at a fixed
        // rate on absolute deadlines, pulling the sequencer's frame at each tick. Its window is
        // made first, so that output time starts when there is somewhere to show it.
        let options = DisplayOptions(headless: headless, json: json, fps: fps, seconds: seconds, swapAfter: swapAfter)
        let windowReady = DispatchSemaphore(value: 0), started = DispatchSemaphore(value: 0)
        let startFailed = StartFlag()
        let (finished, done) = AsyncStream<Void>.makeStream()
        let thread = Thread {
            runDisplayLoop(sequencer: sequencer, format: format, options: options, windowReady: windowReady, started: started, startFailed: startFailed)
            done.finish()
        }
        thread.name = "sequencer.display"
        thread.start()
        await withCheckedContinuation { (ready: CheckedContinuation<Void, Never>) in
            DispatchQueue.global().async {
                windowReady.wait()
                ready.resume()
            }
        }
        do {
            try await sequencer.start()
        } catch {
            startFailed.set()
            started.signal()
            for await _ in finished {}
            await sequencer.shutdown()
            throw error
        }
        started.signal()
        for await _ in finished {}

        // The boundaries and stills, measured on the output.
        let boundaries = sequencer.boundaries
        for boundary in boundaries {
            let gap = boundary.gap.inSeconds * 1000
            if json {
                var line = JSONEventLine(player: "", event: "boundary", t: ExampleSupport.seconds(since: programStart))
                line.clip = "\(boundary.fromClip)->\(boundary.toClip)"
                line.gapMs = (gap * 10).rounded() / 10
                line.outputTime = boundary.firstFrameOfIncoming.inSeconds
                ExampleSupport.printLine(line.json)
            } else {
                ExampleSupport.printLine(String(format: "boundary %@ -> %@: gap %.1f ms", boundary.fromClip, boundary.toClip, gap))
            }
        }
        for hold in sequencer.stillHolds {
            let shown = hold.shown.inSeconds * 1000, intended = hold.intended.inSeconds * 1000
            if json {
                var line = JSONEventLine(player: "", event: "stillHold", t: ExampleSupport.seconds(since: programStart))
                line.clip = hold.clipID
                line.value = String(format: "%.1f", intended)
                line.gapMs = ((shown - intended) * 10).rounded() / 10
                ExampleSupport.printLine(line.json)
            } else {
                ExampleSupport.printLine(String(format: "still %@: shown %.1f ms of %.1f ms", hold.clipID, shown, intended))
            }
        }
        let maxGap = boundaries.map { $0.gap.inSeconds * 1000 }.max() ?? 0
        if json {
            var line = JSONEventLine(player: "", event: "sequenceSummary", t: ExampleSupport.seconds(since: programStart))
            line.count = boundaries.count
            line.maxMs = (maxGap * 10).rounded() / 10
            line.value = sequencer.clips.map(\.id).joined(separator: ",")
            ExampleSupport.printLine(line.json)
        } else {
            ExampleSupport.printLine(String(format: "%d boundaries, largest gap %.1f ms (one frame at %.0f fps is %.1f ms)",
                                            boundaries.count, maxGap, fps, 1000 / fps))
        }
        await sequencer.shutdown()
    }
}

struct DisplayOptions: Sendable {
    let headless: Bool
    let json: Bool
    let fps: Double
    let seconds: Double?
    let swapAfter: Double?
}

/// Pulls a frame per tick until the timeline ends; shows it in an SDL window or reports it.
/// Makes the window, says so through `windowReady`, and starts pulling once `started` says the
/// sequencer runs.
func runDisplayLoop(sequencer: ClipSequencer, format: FrameFormat, options: DisplayOptions, windowReady: DispatchSemaphore,
                    started: DispatchSemaphore, startFailed: StartFlag) {
    let window = options.headless ? nil : SoftwareWindow(width: format.width, height: format.height)
    windowReady.signal()
    started.wait()
    guard !startFailed.isSet else {
        window?.close()
        return
    }
    let start = ContinuousClock.now
    let tick = Duration.nanoseconds(Int64(1e9 / options.fps))
    var swapped = false
    var lastReported: (String, UInt64)?
    for number in 0... {
        let deadline = start + tick * number
        let now = ContinuousClock.now
        if deadline > now { Thread.sleep(forTimeInterval: (deadline - now).inSeconds) }
        if window?.quitRequested() == true || Interruption.shared.receivedSignal != nil { break }
        let pulledAt = ContinuousClock.now
        let frame = sequencer.frame(at: deadline)
        if let frame {
            window?.show(frame.frame)
            let key = (frame.clipID, frame.sequenceNumberForReport)
            if options.json, lastReported.map({ $0 != key }) ?? true {
                var line = JSONEventLine(player: frame.frame.info.playerID.rawValue, event: "frame", t: deadline.seconds(since: start))
                line.clip = frame.clipID
                line.sourceTime = frame.sourceTime.map { ($0 * 1000).rounded() / 1000 }
                line.outputTime = (frame.outputTime.inSeconds * 1000).rounded() / 1000
                line.flip = Sequencer.flips[frame.clipID, default: []].description
                line.isNewFrame = !frame.isRepeat
                line.lateMs = ((pulledAt - deadline).inSeconds * 10_000).rounded() / 10
                line.renderedMs = ((frame.frame.info.renderedAt - deadline).inSeconds * 10_000).rounded() / 10
                ExampleSupport.printLine(line.json)
            }
            lastReported = key
        }
        let elapsed = (deadline - start).inSeconds
        if let swapAfter = options.swapAfter, !swapped, elapsed >= swapAfter {
            var clips = sequencer.clips
            clips.swapAt(clips.count - 2, clips.count - 1)
            try? sequencer.setClips(clips)
            swapped = true
            if !options.json { ExampleSupport.printLine("swapped the last two clips at \(elapsed) s") }
        }
        if sequencer.isFinished { break }
        if let seconds = options.seconds, elapsed >= seconds { break }
    }
    window?.close()
}

/// Set when the sequencer could not start: the display loop then ends at once.
final class StartFlag: @unchecked Sendable {
    private let lock = NSLock()
    private var value = false
    var isSet: Bool { lock.withLock { value } }
    func set() { lock.withLock { value = true } }
}

extension SequencedFrame {
    fileprivate var sequenceNumberForReport: UInt64 { frame.info.sequenceNumber }
}

/// An SDL window showing software frames (bgr0 is SDL's ARGB8888 on little-endian machines).
final class SoftwareWindow {
    private let window: OpaquePointer
    private let renderer: OpaquePointer
    private let texture: OpaquePointer

    init?(width: Int, height: Int) {
        guard SDL_Init(SDL_INIT_VIDEO | SDL_INIT_EVENTS) == 0,
              let window = SDL_CreateWindow("PlayerKit sequencer", 0, 0, Int32(width * 2), Int32(height * 2), SDL_WINDOW_SHOWN.rawValue),
              let renderer = SDL_CreateRenderer(window, -1, 0),
              let texture = SDL_CreateTexture(
                  renderer, SDL_PIXELFORMAT_ARGB8888.rawValue, Int32(SDL_TEXTUREACCESS_STREAMING.rawValue), Int32(width), Int32(height))
        else {
            FileHandle.standardError.write(Data("sequencer: no window (\(String(cString: SDL_GetError()))); use --headless\n".utf8))
            return nil
        }
        self.window = window
        self.renderer = renderer
        self.texture = texture
    }

    func show(_ frame: VideoFrame) {
        frame.withUnsafeBytes { bytes in
            _ = SDL_UpdateTexture(texture, nil, bytes.baseAddress, Int32(frame.info.stride))
        }
        SDL_RenderClear(renderer)
        SDL_RenderCopy(renderer, texture, nil, nil)
        SDL_RenderPresent(renderer)
    }

    func quitRequested() -> Bool {
        var event = SDL_Event()
        while SDL_PollEvent(&event) != 0 {
            if event.type == SDL_QUIT.rawValue { return true }
        }
        return false
    }

    func close() {
        SDL_DestroyTexture(texture)
        SDL_DestroyRenderer(renderer)
        SDL_DestroyWindow(window)
        SDL_Quit()
    }
}
