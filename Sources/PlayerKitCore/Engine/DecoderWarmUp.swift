internal import CMPV
import Dispatch
import PlayerKitSupport

/// The process's first load made warm, once, before its first player's: a throwaway core
/// (no window, no sound) plays a tiny built-in clip (H.264 High and AAC, as most media is) to
/// its first frame and is destroyed. The first load of a process pays for what later loads find
/// ready: FFmpeg's demuxer, decoder and filter code read in from disk, their tables computed,
/// mpv's playback path run once. Measured on a 2-core machine, the first frame of a process's
/// first load took 27-33 ms without it and 20-25 ms after it (Documentation/Performance.md).
///
/// Player/prepareReadyCores(for:) starts it (the first call in the process) and returns
/// once it has finished; nothing else waits for it. It never touches a player's core, and it
/// is bounded: a clip that has not shown its frame after timeout is given up.
///
/// **Threading.** Its core's events are read on a serial queue of its own, woken by mpv's
/// wakeup callback (nothing waits on mpv); the phase is under a lock, released before a
/// waiter runs.
enum DecoderWarmUp {
    /// How it ended.
    enum Outcome: Sendable, Equatable {
        /// The clip's first frame was decoded and shown (to no window).
        case firstFrame
        /// The clip ended or failed to load first (the decoders may lack H.264 or AAC).
        case ended
        /// Nothing by timeout.
        case timedOut
        /// mpv would not create its core.
        case failed(String)
    }

    private enum Phase {
        case idle
        case running(waiters: [@Sendable () -> Void])
        case finished(Outcome)
    }

    private static let phase = Locked(Phase.idle)

    /// The longest it runs.
    static let timeout: Duration = .seconds(2)

    /// How it ended; nil before it has.
    static var outcome: Outcome? {
        phase.withLock { phase in
            if case .finished(let outcome) = phase { return outcome }
            return nil
        }
    }

    /// How many times it started in this process (at most 1).
    static var starts: Int { startCount.withLock { $0 } }
    private static let startCount = Locked(0)

    /// Starts it unless it ran or runs; returns at once.
    static func start() {
        let starting = phase.withLock { phase -> Bool in
            guard case .idle = phase else { return false }
            phase = .running(waiters: [])
            return true
        }
        guard starting else { return }
        startCount.withLock { $0 += 1 }
        play(clip, timeout: timeout) { finish($0) }
    }

    /// Plays `source` on a throwaway core to its first frame, then destroys the core and calls
    /// `done` (on a queue of its own) with how it ended: at the first frame, the end or a
    /// failure, or after `timeout`, whichever comes first. Returns at once.
    static func play(_ source: String, timeout: Duration, _ done: @escaping @Sendable (Outcome) -> Void) {
        let core: OpaquePointer
        do throws(PlayerError) {
            core = try MPVHandle.createCore(options: options)
        } catch {
            done(.failed("\(error)"))
            return
        }
        WarmUpRun(core: core, source: source, done: done).begin(timeout: timeout)
    }

    /// Calls `then` once it has finished (at once when it has; it need not have started), on
    /// the caller's thread or its queue.
    static func whenFinished(_ then: @escaping @Sendable () -> Void) {
        let now = phase.withLock { phase -> Bool in
            guard case .running(let waiters) = phase else { return true }
            phase = .running(waiters: waiters + [then])
            return false
        }
        if now { then() }
    }

    private static func finish(_ outcome: Outcome) {
        let waiters = phase.withLock { phase -> [@Sendable () -> Void] in
            defer { phase = .finished(outcome) }
            if case .running(let waiters) = phase { return waiters }
            return []
        }
        waiters.forEach { $0() }
    }

    /// A core that shows nothing and plays nothing aloud, with no scripts, configuration or
    /// input of its own.
    static let options: [(String, String)] = [
        ("config", "no"), ("terminal", "no"), ("load-scripts", "no"), ("ytdl", "no"), ("osc", "no"),
        ("load-stats-overlay", "no"), ("load-osd-console", "no"), ("load-auto-profiles", "no"),
        ("input-default-bindings", "no"), ("vo", "null"), ("ao", "null"), ("idle", "yes"), ("hwdec", "no"),
    ]

    /// The clip, 3,408 bytes, as mpv's `hex://` source: 3 frames of 128x72 H.264 High (two
    /// B-frames) and 0.1 s of AAC LC stereo, made with
    /// `ffmpeg -f lavfi -i testsrc=size=128x72:rate=30 -f lavfi -i sine=frequency=440:sample_rate=48000
    /// -frames:v 3 -t 0.1 -c:v libx264 -profile:v high -pix_fmt yuv420p -preset medium -x264-params bframes=2
    /// -c:a aac -b:a 32k -ac 2 -shortest -movflags +faststart -map_metadata -1 -fflags +bitexact
    /// -flags:v +bitexact -flags:a +bitexact clip.mp4`.
    static let clip = "hex://000000206674797069736f6d0000020069736f6d69736f32617663316d703431000005776d6f6f760000006c6d766864000000000000000000000000000003e8000000640001000001000000000000000000000000010000000000000000000000000000000100000000000000000000000000004000000000000000000000000000000000000000000000000000000000000003000002897472616b0000005c746b686400000003000000000000000000000001000000000000006400000000000000000000000000000000000100000000000000000000000000000001000000000000000000000000000040000000008000000048000000000024656474730000001c656c73740000000000000001000000640000040000010000000002016d646961000000206d64686400000000000000000000000000003c000000060055c400000000002d68646c72000000000000000076696465000000000000000000000000566964656f48616e646c657200000001ac6d696e6600000014766d68640000000100000000000000000000002464696e660000001c6472656600000000000000010000000c75726c20000000010000016c7374626c000000c0737473640000000000000001000000b0617663310000000000000001000000000000000000000000000000000080004800480000004800000000000000010c4c617663206c696278323634000000000000000000000000000000000000000018ffff00000036617663430164000affe100196764000aacd9420bf970110000030001000003003c0f12259601000668ebe3cb22c0fdf8f80000000010706173700000000100000001000000146274727400000000000239b0000239b0000000187374747300000000000000010000000300000200000000147374737300000000000000010000000100000018637474730000000000000001000000030000040000000028737473630000000000000002000000010000000200000001000000020000000100000001000000207374737a000000000000000000000003000006d10000002c00000022000000187374636f0000000000000002000005a700000cea0000023d7472616b0000005c746b686400000003000000000000000000000002000000000000001600000000000000000000000101000000000100000000000000000000000000000001000000000000000000000000000040000000000000000000000000000024656474730000001c656c73740000000000000001000000150000040000010000000001b56d646961000000206d6468640000000000000000000000000000bb800000080055c400000000002d68646c720000000000000000736f756e000000000000000000000000536f756e6448616e646c657200000001606d696e6600000010736d686400000000000000000000002464696e660000001c6472656600000000000000010000000c75726c2000000001000001247374626c0000007e7374736400000000000000010000006e6d703461000000000000000100000000000000000002001000000000bb80000000000036657364730000000003808080250002000480808017401500000000007d00000065130580808005119056e50006808080010200000014627472740000000000007d00000065130000001873747473000000000000000100000002000004000000001c7374736300000000000000010000000100000001000000010000001c7374737a0000000000000000000000020000004600000044000000187374636f000000000000000200000ca400000d0c0000001a7367706401000000726f6c6c0000000200000001ffff0000001c7362677000000000726f6c6c0000000100000002000000010000003d75647461000000356d657461000000000000002168646c7200000000000000006d6469726170706c00000000000000000000000008696c73740000000866726565000007b16d646174000002ae0605ffffaadc45e9bde6d948b7962cd820d923eeef78323634202d20636f7265203136342072333039352062616565343030202d20482e3236342f4d5045472d342041564320636f646563202d20436f70796c65667420323030332d32303232202d20687474703a2f2f7777772e766964656f6c616e2e6f72672f783236342e68746d6c202d206f7074696f6e733a2063616261633d31207265663d33206465626c6f636b3d313a303a3020616e616c7973653d3078333a3078313133206d653d686578207375626d653d37207073793d31207073795f72643d312e30303a302e3030206d697865645f7265663d31206d655f72616e67653d3136206368726f6d615f6d653d31207472656c6c69733d31203878386463743d312063716d3d3020646561647a6f6e653d32312c313120666173745f70736b69703d31206368726f6d615f71705f6f66667365743d2d3220746872656164733d32206c6f6f6b61686561645f746872656164733d3120736c696365645f746872656164733d30206e723d3020646563696d6174653d3120696e7465726c616365643d3020626c757261795f636f6d7061743d3020636f6e73747261696e65645f696e7472613d3020626672616d65733d3220625f707972616d69643d3220625f61646170743d3120625f626961733d30206469726563743d3120776569676874623d31206f70656e5f676f703d3020776569676874703d32206b6579696e743d323530206b6579696e745f6d696e3d3235207363656e656375743d343020696e7472615f726566726573683d302072635f6c6f6f6b61686561643d34302072633d637266206d62747265653d31206372663d32332e302071636f6d703d302e36302071706d696e3d302071706d61783d3639207170737465703d342069705f726174696f3d312e34302061713d313a312e303000800000041b658884002ffffef6aefccb2b742ae21c5bd2cf512801301dea65132fe544f2f4eef4cd72b05b1eb2bdac29333d8658e8ac84deedac72229fe2b7d388e62c01412d5dc2645ab37ed84846637960f5554b6886ccc933eb53e6f7492c295b591f54b265f094828feb537bd05038e94fc456a99667abae6de1036a73aba5944bca334e1e5cbe50979c806ac3c17a80382d17b373f529e2b0dbad30a71209d63c930fba5ad5153779a77a01261c2f88cb7586d56e57859af845ccae4cfa8f7e73bb009276cfeb0d2b0fe8f81f12481201590aee664121ca8bde0fe0471294cb758b55134765a1de9c7bff2688f11d8cf4f2bae3b1d868556a7b04fa2890ffef31e19f90f57027a3e19e87fc585c6e31ce7c0d85caed348a5ac02e1d2ba8628032599b6073244b4660c8640dd2deb212611c66b8c6afce83b0c7ebe2586ca5bfa4aa600d03affcf470432b6201c823e86a4fa24fcdb4a7f8cb2dd375955cefcffc64d288e9013e8dc77a29e7350e3c0a3847eb0b7aa76bb9218854ec55dfa89c871fca6e8d65637b4ec0316c04394b1cb5321fcdfd4b81643a842557e33013ee307cb1472f0c05fbfad2634fafdae51a79ea29ea271ad7d5943f331736be71f59e054b0ee371356db4b6c5e530067f74bae7a579918526f3fb26cf4edc56de6cf67bc369305b6fcce164ec744e16a4def6fcf1a4bc6dd84c2fea7929ce91ed2be7250019296f6692138b5585f4f3ff55daf4cd9d24d627a360c69553d6b46a50820493fec9322ddf9f040b037829fea72a5fd3920c6746261aee0d6537896924d8ba8b90a1a989ae97769a6921d3d31509d2c65e024f3e23d48af0fc44d4dc024c779c4203d956bbd88683b6126d62563889b60e9a074aa62ffc6bba8cb6fe30eb745327e064ee7232b310b7ff96bd350329998aff00fb7454bf3ace6d98e04688ee112b665c6a8280a456fdd6a7d163dec68b4c363db9d6b34ee8a97a9b40f77598279b257c987e2d902973e5141e9e0d7974a124cd1736274b9a46877d5dfa29e12bda2bfa44373654667a4aa5841a76db490a92c821031f2f71f7a98b2cd5a2c08bad6290c3f4186efd2712e7e79c5246df06c5140fabe38e2fff57938eeb3113f6070c6f19bedfd6e1117b7f5573087bbeec82a1787774578fbe4b67b67f2f27e3610c0405c27074810bb95fceccb757552d8f25101777858c39a3b7383d5578f5d50608ae359c63ba39163b0d70d39900268d1c8fc43ae8cc3052fc3d1133ee90078b0b0b7b4d74a1675ae6a855b9d0f4f779df3539a324dbc0e3e73c9434783f95586a55dafd1aaf7b46c836805e5407c00dee9eaccf57af87ba0db300675df795ccff7b9026db835a0170d76988964e4997853b116425cdc5677bbc4cab426d748e857b59ca2e3d1bd4d7f3d37dc58be5a8707cb7859f626376f2f371cc3a8b4486255e0d1d61e91c549f0fb5ca391e87c895ef965d53268a478100000028419a216c42bffe3864f17e24bfc705001e9ff78ecd26082b5d148334a2a32ba4af452ba0c7a1cfe02115552c191e5bbd5d6a5dddcb922010441122d5195fc2d4ad0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0d2cb2cb2cb4a352ddeaeb52eeee5c910000000000700000001e419a423c2193298427fffdf1515ac392a0a3046b85d7c5a00085632514412115951a58cdfda7b6aee5c924490024266982552cb2cb2cb2cb2cb2cb2ca06060606060606060606060606060606060606074636337f69edabb9724912400000000000e"
}

/// One warm-up's core, from its load to its destruction.
private final class WarmUpRun: @unchecked Sendable {
    // @unchecked: `finished`, `lists`, `timer` and `context` are touched only on `queue`; the rest is set once.
    let core: OpaquePointer
    let source: String
    let done: @Sendable (DecoderWarmUp.Outcome) -> Void
    let queue = DispatchQueue(label: "PlayerKit.decoder-warm-up")
    private var finished = false
    /// The catalog's lists answered so far (``MPVCatalog/listProperties``).
    private var lists: [String: MPVValue] = [:]
    private var timer: DispatchSourceTimer?
    private var context: Unmanaged<WarmUpRun>?

    init(core: OpaquePointer, source: String, done: @escaping @Sendable (DecoderWarmUp.Outcome) -> Void) {
        self.core = core
        self.source = source
        self.done = done
    }

    func begin(timeout: Duration) {
        queue.async { [self] in
            let context = Unmanaged.passRetained(self)
            self.context = context
            mpv_set_wakeup_callback(core, decoderWarmUpWakeup, context.toOpaque())
            let timer = DispatchSource.makeTimerSource(queue: queue)
            timer.schedule(deadline: .now() + timeout.inSeconds)
            timer.setEventHandler { [self] in finish(.timedOut) }
            timer.resume()
            self.timer = timer
            // What this libmpv can do (MPVCatalog), asked first: mpv answers in order, so the
            // answers come before the clip's first frame, and the first player need not ask.
            for (index, name) in MPVCatalog.listProperties.enumerated() {
                mpv_get_property_async(core, UInt64(index + 1), name, MPV_FORMAT_NODE)
            }
            // Sent, not awaited: its reply, like every event, comes through the wakeup.
            let status = withCStringArray(["loadfile", source]) { mpv_command_async(core, 0, $0) }
            if status < 0 { finish(.ended) }
        }
    }

    /// Reads the events mpv has queued (never waiting), on `queue`.
    func drain() {
        while !finished {
            guard let event = mpv_wait_event(core, 0)?.pointee else { return }
            switch event.event_id {
            case MPV_EVENT_NONE:
                return
            case MPV_EVENT_PLAYBACK_RESTART:
                finish(.firstFrame)
            case MPV_EVENT_END_FILE, MPV_EVENT_SHUTDOWN:
                finish(.ended)
            case MPV_EVENT_COMMAND_REPLY where event.error < 0:
                finish(.ended)
            case MPV_EVENT_GET_PROPERTY_REPLY:
                guard event.error >= 0, let property = event.data?.assumingMemoryBound(to: mpv_event_property.self).pointee
                else { continue }
                lists[String(cString: property.name)] = MPVNode.value(format: property.format, data: property.data)
                if lists.count == MPVCatalog.listProperties.count { MPVCatalog.remember(MPVCatalog(lists: lists)) }
            default:
                continue
            }
        }
    }

    /// Ends it, on `queue`: no wakeup after this, and the core destroyed.
    private func finish(_ outcome: DecoderWarmUp.Outcome) {
        guard !finished else { return }
        finished = true
        timer?.cancel()
        timer = nil
        // mpv calls the wakeup under a lock of its own that this takes: none is under way after it.
        mpv_set_wakeup_callback(core, nil, nil)
        context?.release()
        context = nil
        mpv_terminate_destroy(core)
        done(outcome)
    }
}

private func decoderWarmUpWakeup(_ context: UnsafeMutableRawPointer?) {
    guard let context else { return }
    let run = Unmanaged<WarmUpRun>.fromOpaque(context).takeUnretainedValue()
    run.queue.async { run.drain() }
}
