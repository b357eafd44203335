import Foundation
@testable import PlayerKitAnalysis
import Testing

/// Frame-by-frame PSNR and SSIM against FFmpeg's own filters on the same pairs (issue 52), on
/// clips the test makes with ffmpeg: testsrc2 at 320x240, 30 fps, 2 s, a reference encoded
/// nearly losslessly and renditions of it.
/// In the heavy pass: each test encodes its clips with ffmpeg, CPU the parallel pass's
/// load-sensitive tests (the feed's fling over a slow server) could not spare.
@Suite("Quality comparison: PSNR and SSIM per frame pair, as FFmpeg's filters give them", .timeLimit(.minutes(2)), .tags(.heavyPass))
struct QualityComparisonTests {
    static let ffmpeg = URL(fileURLWithPath: "/usr/bin/ffmpeg")

    /// A folder of its own with the reference clip in it.
    private func workspace() throws -> URL {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("pk-quality-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        try run(["-f", "lavfi", "-i", "testsrc2=size=320x240:rate=30:duration=2", "-c:v", "libx264", "-crf", "8", "-pix_fmt", "yuv420p",
                 folder.appendingPathComponent("reference.mp4").path])
        return folder
    }

    private func run(_ arguments: [String]) throws {
        let (status, output) = try ChildProcess.run(Self.ffmpeg, ["-v", "error", "-y"] + arguments)
        try #require(status == 0, "ffmpeg \(arguments.joined(separator: " ")): \(output)")
    }

    /// FFmpeg's figures for each frame pair: `psnr` and `ssim` filters' stats files, the
    /// rendition (scaled first when `scale`) against the reference.
    private func ffmpegScores(reference: URL, rendition: URL, scale: String? = nil, in folder: URL) throws -> [(psnr: [String: Double], ssim: [String: Double])] {
        let psnrLog = folder.appendingPathComponent("psnr.log"), ssimLog = folder.appendingPathComponent("ssim.log")
        let scaled = scale.map { "[1:v]scale=\($0)[r];[r]split[r0][r1]" } ?? "[1:v]split[r0][r1]"
        try run(["-i", reference.path, "-i", rendition.path, "-lavfi",
                 "[0:v]split[a0][a1];\(scaled);[a0][r0]psnr=stats_file=\(psnrLog.path);[a1][r1]ssim=stats_file=\(ssimLog.path)",
                 "-f", "null", "-"])
        func fields(_ line: Substring) -> [String: Double] {
            var values: [String: Double] = [:]
            for field in line.split(separator: " ") {
                let parts = field.split(separator: ":", maxSplits: 1)
                if parts.count == 2 { values[String(parts[0])] = Double(parts[1]) ?? (parts[1] == "inf" ? .infinity : nil) }
            }
            return values
        }
        let psnr = try String(contentsOf: psnrLog, encoding: .utf8).split(separator: "\n").map(fields)
        let ssim = try String(contentsOf: ssimLog, encoding: .utf8).split(separator: "\n").map(fields)
        return zip(psnr, ssim).map { ($0, $1) }
    }

    private func expectEqual(_ pairs: [FramePairScore], _ expected: [(psnr: [String: Double], ssim: [String: Double])]) {
        #expect(pairs.count == expected.count)
        for (pair, figures) in zip(pairs, expected) {
            // FFmpeg's stats file prints PSNR with two decimals and SSIM with six.
            let psnr: [(Double, String)] = [(pair.psnr.y, "psnr_y"), (pair.psnr.u, "psnr_u"), (pair.psnr.v, "psnr_v"), (pair.psnr.all, "psnr_avg")]
            for (ours, name) in psnr {
                let theirs = figures.psnr[name] ?? .nan
                #expect(abs(ours - theirs) <= 0.01, "frame \(pair.referenceFrame) \(name): \(ours) against ffmpeg's \(theirs)")
            }
            let ssim: [(Double, String)] = [(pair.ssim.y, "Y"), (pair.ssim.u, "U"), (pair.ssim.v, "V"), (pair.ssim.all, "All")]
            for (ours, name) in ssim {
                let theirs = figures.ssim[name] ?? .nan
                #expect(abs(ours - theirs) <= 0.0005, "frame \(pair.referenceFrame) SSIM \(name): \(ours) against ffmpeg's \(theirs)")
            }
        }
    }

    @Test("an encode's PSNR (Y, U, V, average) and SSIM (Y, U, V, All) per frame equal FFmpeg's psnr and ssim filters'")
    func equalToFFmpeg() async throws {
        let folder = try workspace()
        defer { try? FileManager.default.removeItem(at: folder) }
        let reference = folder.appendingPathComponent("reference.mp4"), rendition = folder.appendingPathComponent("rendition.mp4")
        try run(["-i", reference.path, "-c:v", "libx264", "-crf", "38", rendition.path])
        let series = try await QualityComparison(reference: reference, rendition: rendition).run()
        #expect(series.pairs.count == 60 && series.unpairedReferenceFrames.isEmpty && series.unpairedRenditionFrames.isEmpty)
        #expect(series.width == 320 && series.height == 240)
        expectEqual(series.pairs, try ffmpegScores(reference: reference, rendition: rendition, in: folder))
        // A poorer encode scores lower; the summary and the worst pairs agree with the series.
        let summary = try #require(series.summary(of: .psnrAll))
        #expect(summary.pairs == 60 && summary.minimum <= summary.p5 && summary.p5 <= summary.p50 && summary.p50 <= summary.maximum)
        #expect(summary.minimum > 20 && summary.maximum < 60, "\(summary)")
        let worst = series.worst(3, by: .ssimAll)
        #expect(worst.count == 3 && worst[0].ssim.all == series.pairs.map(\.ssim.all).min())
        // The series as CSV (a header and a line per pair) and JSON.
        #expect(series.csv().split(separator: "\n").count == 61)
        let decoded = try JSONSerialization.jsonObject(with: series.json()) as? [String: Any]
        #expect((decoded?["pairs"] as? [Any])?.count == 60)
    }

    @Test("sizes not a multiple of 4 (318x236: chroma planes of an odd width, samples past the last 4x4 block) score as FFmpeg's filters score them")
    func oddSize() async throws {
        let folder = try workspace()
        defer { try? FileManager.default.removeItem(at: folder) }
        let reference = folder.appendingPathComponent("odd.mkv"), rendition = folder.appendingPathComponent("odd-noisy.mkv")
        try run(["-f", "lavfi", "-i", "testsrc2=size=318x236:rate=30:duration=1", "-pix_fmt", "yuv420p", "-c:v", "ffv1", reference.path])
        try run(["-i", reference.path, "-vf", "noise=alls=12:allf=t", "-pix_fmt", "yuv420p", "-c:v", "ffv1", rendition.path])
        let series = try await QualityComparison(reference: reference, rendition: rendition).run()
        #expect(series.width == 318 && series.height == 236 && series.pairs.count == 30)
        expectEqual(series.pairs, try ffmpegScores(reference: reference, rendition: rendition, in: folder))
    }

    @Test("identical files: infinite PSNR, SSIM 1, counted as identical in the summary")
    func identical() async throws {
        let folder = try workspace()
        defer { try? FileManager.default.removeItem(at: folder) }
        let reference = folder.appendingPathComponent("reference.mp4")
        let series = try await QualityComparison(reference: reference, rendition: reference).run()
        #expect(series.pairs.count == 60)
        #expect(series.pairs.allSatisfy { $0.psnr.y == .infinity && $0.psnr.all == .infinity && $0.ssim.y == 1 && abs($0.ssim.all - 1) < 1e-12 })
        #expect(series.summary(of: .psnrY)?.identicalPairs == 60)
        #expect(series.csv().contains(",inf,"))
    }

    @Test("a rendition at another size is scaled to the reference's first (bicubic), as an ffmpeg user's scale filter does")
    func scaledRendition() async throws {
        let folder = try workspace()
        defer { try? FileManager.default.removeItem(at: folder) }
        let reference = folder.appendingPathComponent("reference.mp4"), rendition = folder.appendingPathComponent("small.mp4")
        try run(["-i", reference.path, "-vf", "scale=160:120", "-c:v", "libx264", "-crf", "23", rendition.path])
        let series = try await QualityComparison(reference: reference, rendition: rendition).run()
        #expect(series.width == 320 && series.pairs.count == 60)
        expectEqual(series.pairs, try ffmpegScores(reference: reference, rendition: rendition, scale: "320:240", in: folder))
    }

    @Test("a frame the rendition dropped is unpaired, and every later pair is still the same frame on both sides")
    func droppedFrame() async throws {
        let folder = try workspace()
        defer { try? FileManager.default.removeItem(at: folder) }
        let reference = folder.appendingPathComponent("reference.mp4"), rendition = folder.appendingPathComponent("dropped.mp4")
        // Frame 10 taken out, the others keeping their times (variable frame rate output).
        try run(["-i", reference.path, "-vf", "select='not(eq(n\\,10))'", "-fps_mode", "vfr", "-c:v", "libx264", "-crf", "8", rendition.path])
        let series = try await QualityComparison(reference: reference, rendition: rendition).run()
        #expect(series.unpairedReferenceFrames == [10])
        #expect(series.unpairedRenditionFrames.isEmpty)
        #expect(series.pairs.count == 59)
        // Past the gap, reference frame n pairs with rendition frame n - 1: the same picture.
        let after = try #require(series.pairs.first { $0.referenceFrame == 11 })
        #expect(after.renditionFrame == 10)
        #expect(series.pairs.allSatisfy { $0.psnr.y > 35 }, "a pair a frame off would score far lower: \(series.pairs.map(\.psnr.y).min() ?? 0)")
    }

    @Test("an offset moves the rendition's times: a rendition whose first half second was cut pairs at -0.5 s")
    func offset() async throws {
        let folder = try workspace()
        defer { try? FileManager.default.removeItem(at: folder) }
        let reference = folder.appendingPathComponent("reference.mp4"), rendition = folder.appendingPathComponent("trimmed.mp4")
        try run(["-ss", "0.5", "-i", reference.path, "-c:v", "libx264", "-crf", "8", rendition.path])
        let unaligned = try await QualityComparison(reference: reference, rendition: rendition).run()
        let aligned = try await QualityComparison(reference: reference, rendition: rendition, offset: .milliseconds(-500)).run()
        #expect(aligned.unpairedReferenceFrames == Array(0..<15))
        #expect(aligned.pairs.count == 45 && aligned.pairs.allSatisfy { $0.psnr.y > 35 })
        #expect((unaligned.summary(of: .psnrY)?.mean ?? 100) < (aligned.summary(of: .psnrY)?.mean ?? 0) - 5)
    }

    @Test("cancelling the task stops the comparison with cancelled, within a frame")
    func cancelling() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("pk-quality-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let long = folder.appendingPathComponent("long.mp4")
        try run(["-f", "lavfi", "-i", "testsrc2=size=320x240:rate=30:duration=20", "-c:v", "libx264", "-preset", "ultrafast", long.path])
        let task = Task { try await QualityComparison(reference: long, rendition: long).run() }
        task.cancel()
        await #expect(throws: AnalysisError.cancelled) { try await task.value }
    }

    @Test("a file that is not there, or has no video, is a typed error naming it")
    func badInput() async throws {
        let folder = try workspace()
        defer { try? FileManager.default.removeItem(at: folder) }
        let reference = folder.appendingPathComponent("reference.mp4")
        let missing = folder.appendingPathComponent("missing.mp4")
        await #expect(throws: AnalysisError.self) { try await QualityComparison(reference: reference, rendition: missing).run() }
        do {
            _ = try await QualityComparison(reference: missing, rendition: reference).run()
        } catch {
            guard case .cannotOpen(let path, _) = error else { Issue.record("\(error)"); return }
            #expect(path == missing.path)
        }
        let sound = folder.appendingPathComponent("sound.m4a")
        try run(["-f", "lavfi", "-i", "sine=duration=1", sound.path])
        await #expect(throws: AnalysisError.noVideo(path: sound.path)) { try await QualityComparison(reference: sound, rendition: reference).run() }
    }

    @Test("playerkit-quality, for an encoder's CI: exit 0 when the thresholds hold, 1 naming the one that fails, 2 naming a file it cannot read; JSON and CSV out")
    func commandLine() async throws {
        let folder = try workspace()
        defer { try? FileManager.default.removeItem(at: folder) }
        let tool = Fixtures.productsDirectory.appendingPathComponent("playerkit-quality")
        try #require(FileManager.default.isExecutableFile(atPath: tool.path), "playerkit-quality is not built")
        let reference = folder.appendingPathComponent("reference.mp4"), rendition = folder.appendingPathComponent("dropped.mp4")
        try run(["-i", reference.path, "-vf", "select='not(eq(n\\,10))'", "-fps_mode", "vfr", "-c:v", "libx264", "-crf", "30", rendition.path])
        let csv = folder.appendingPathComponent("pairs.csv")
        let passing = try await ChildProcess.runToEnd(tool, [reference.path, rendition.path, "--json", "--csv", csv.path, "--min-ssim", "0.5", "--max-dropped", "1"])
        #expect(passing.status == 0, "\(passing.errors)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(passing.output.utf8)) as? [String: Any])
        #expect(report["passed"] as? Bool == true)
        #expect((report["pairs"] as? [Any])?.count == 59)
        #expect(report["unpairedReferenceFrames"] as? [Int] == [10])
        #expect((report["summary"] as? [String: Any])?["ssimAll"] != nil)
        #expect(try String(contentsOf: csv, encoding: .utf8).split(separator: "\n").count == 60)
        // Thresholds the encode does not meet: exit 1, each named on standard error.
        let failing = try await ChildProcess.runToEnd(tool, [reference.path, rendition.path, "--min-frame-ssim", "0.9999", "--max-dropped", "0"])
        #expect(failing.status == 1)
        #expect(failing.errors.contains("worst frame's SSIM") && failing.errors.contains("dropped frames"), "\(failing.errors)")
        #expect(failing.output.contains("FAILED: dropped frames 1.0000 (limit 0.0000)"), "\(failing.output)")
        // A file that is not there: exit 2, named.
        let missing = folder.appendingPathComponent("missing.mp4").path
        let broken = try await ChildProcess.runToEnd(tool, [reference.path, missing])
        #expect(broken.status == 2 && broken.errors.contains(missing), "\(broken.errors)")
        // The offset found first, by the picture: a rendition whose first half second was cut.
        let trimmed = folder.appendingPathComponent("trimmed.mp4")
        try run(["-ss", "0.5", "-i", reference.path, "-c:v", "libx264", "-crf", "8", trimmed.path])
        let aligned = try await ChildProcess.runToEnd(tool, [reference.path, trimmed.path, "--align", "picture", "--json", "--min-frame-psnr", "35"])
        #expect(aligned.status == 0, "\(aligned.errors)")
        let alignedReport = try #require(try JSONSerialization.jsonObject(with: Data(aligned.output.utf8)) as? [String: Any])
        let found = try #require((alignedReport["alignment"] as? [String: Any])?["offset"] as? Double)
        #expect(abs(found + 0.5) < 0.04, "offset \(found)")
        // A threshold that makes no sense: a usage error naming it.
        let usage = try await ChildProcess.runToEnd(tool, [reference.path, rendition.path, "--min-ssim", "2"])
        #expect(usage.status == 64 && usage.errors.contains("--min-ssim"), "\(usage.errors)")
    }
}

/// The comparison's one bound: cancelling returns at once (a timing assertion, so one at a time).
@Suite("Quality comparison: cancelling a blocked comparison", .timeLimit(.minutes(1)), .tags(.timingPass))
struct QualityComparisonBoundsTests {
    @Test("a file that never answers (a FIFO no one writes): cancelling returns cancelled at once, and the work lets go")
    func blockedRead() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("pk-quality-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let fifo = folder.appendingPathComponent("never.mp4")
        try #require(mkfifo(fifo.path, 0o600) == 0)
        let task = Task { try await QualityComparison(reference: fifo, rendition: fifo).run() }
        try await Task.sleep(for: .milliseconds(200))
        let cancelled = ContinuousClock.now
        task.cancel()
        await #expect(throws: AnalysisError.cancelled) { try await task.value }
        #expect(ContinuousClock.now - cancelled < .seconds(2))
        // The work's thread waits in open(2) for a writer: one that comes and goes frees it
        // (non-blocking: with no reader left it fails instead of waiting).
        let writer = open(fifo.path, O_WRONLY | O_NONBLOCK)
        if writer >= 0 { close(writer) }
    }
}
