import ArgumentParser
import Foundation
import PlayerKitAnalysis

/// An encode measured against its reference, for an encoder's CI: PSNR and SSIM per frame pair
/// (equal to FFmpeg's `psnr` and `ssim` filters), the summary, the worst pairs, and an exit status
/// that follows the thresholds given.
///
///     playerkit-quality master.mp4 encode.mp4 --min-ssim 0.95 --min-frame-ssim 0.90 --max-dropped 0
///
/// Exit status: 0 when every threshold holds, 1 when one does not (each failed one on standard
/// error), 2 when the files cannot be compared (the error names the file), 64 for bad arguments.
@main
struct QualityTool: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "playerkit-quality",
        abstract: "Measure an encode against its reference, frame by frame (PSNR, SSIM), and check thresholds.")

    @Argument(help: "The reference (the original).")
    var reference: String

    @Argument(help: "The rendition (the encode), scaled to the reference's size when it differs.")
    var rendition: String

    @Option(help: "How many seconds later the rendition shows a moment than the reference (a rendition whose first second was cut: -1).")
    var offset: Double = 0

    @Option(help: "Find the offset first, by the two files' sound or picture (sound|picture); it replaces --offset.")
    var align: RecordingAlignment.Method?

    @Flag(help: "With --align: print the offset found (and the drift between the recorders' clocks) and stop, comparing nothing; the files need no video when aligned by sound.")
    var alignOnly = false

    @Option(help: "With --align: how far apart the two may be either way, in seconds.")
    var searchRange = 600.0

    @Flag(help: "Print the result as one JSON object: thresholds, passed, summary, unpaired frames, worst pairs and every pair.")
    var json = false

    @Option(help: "Also write every pair as CSV to this file.")
    var csv: String?

    @Option(help: "How many of the worst pairs (by SSIM over all planes) to list.")
    var worst = 5

    @Option(help: "Fail below this mean PSNR over all planes, in dB.")
    var minPsnr: Double?

    @Option(help: "Fail when a pair's PSNR over all planes is below this, in dB.")
    var minFramePsnr: Double?

    @Option(help: "Fail below this mean SSIM over all planes.")
    var minSsim: Double?

    @Option(help: "Fail when a pair's SSIM over all planes is below this.")
    var minFrameSsim: Double?

    @Option(help: "Fail when more reference frames than this found no rendition frame (dropped by the encode).")
    var maxDropped: Int?

    func validate() throws {
        guard offset.isFinite else { throw ValidationError("--offset must be a number of seconds, got \(offset)") }
        guard worst >= 0 else { throw ValidationError("--worst must be 0 or more, got \(worst)") }
        for (name, value) in [("--min-psnr", minPsnr), ("--min-frame-psnr", minFramePsnr)] {
            if let value, !value.isFinite { throw ValidationError("\(name) must be a number of dB, got \(value)") }
        }
        for (name, value) in [("--min-ssim", minSsim), ("--min-frame-ssim", minFrameSsim)] {
            if let value, !(0...1).contains(value) { throw ValidationError("\(name) must be from 0 to 1, got \(value)") }
        }
        if let maxDropped, maxDropped < 0 { throw ValidationError("--max-dropped must be 0 or more, got \(maxDropped)") }
        if alignOnly, align == nil { throw ValidationError("--align-only needs --align sound or --align picture") }
        guard searchRange.isFinite, searchRange > 0 else { throw ValidationError("--search-range must be a number of seconds above 0, got \(searchRange)") }
    }

    /// The offset found, as `--json` prints it.
    struct Alignment: Encodable {
        let method: String, offset: Double, confidence: Double, driftPPM: Double?
    }

    /// A threshold and whether the series meets it.
    struct Check: Encodable {
        let name: String
        let limit: Double
        let value: Double
        let passed: Bool
    }

    func run() async throws {
        var found: RecordingOffset?
        if let align {
            do {
                found = try await RecordingAlignment(
                    reference: URL(fileURLWithPath: reference), other: URL(fileURLWithPath: rendition), method: align,
                    searchRange: .nanoseconds(Int64((searchRange * 1e9).rounded()))).run()
            } catch {
                FileHandle.standardError.write(Data("playerkit-quality: \(error)\n".utf8))
                throw ExitCode(2)
            }
        }
        if alignOnly, let found {
            let alignment = Alignment(method: align?.rawValue ?? "", offset: Self.seconds(found.offset), confidence: found.confidence, driftPPM: found.drift)
            if json {
                let encoder = JSONEncoder()
                encoder.outputFormatting = [.sortedKeys]
                print(String(decoding: try encoder.encode(alignment), as: UTF8.self))
            } else {
                print("offset \(format(alignment.offset)) s by \(alignment.method) (confidence \(format(found.confidence))"
                    + (found.drift.map { ", drift \(format($0)) ppm" } ?? "") + ")")
            }
            return
        }
        let comparison = QualityComparison(
            reference: URL(fileURLWithPath: reference), rendition: URL(fileURLWithPath: rendition),
            offset: found?.offset ?? .nanoseconds(Int64((offset * 1e9).rounded())))
        let series: QualitySeries
        do {
            series = try await comparison.run()
        } catch {
            FileHandle.standardError.write(Data("playerkit-quality: \(error)\n".utf8))
            throw ExitCode(2)
        }
        if let csv {
            do {
                try series.csv().write(toFile: csv, atomically: true, encoding: .utf8)
            } catch {
                FileHandle.standardError.write(Data("playerkit-quality: cannot write \(csv): \(error.localizedDescription)\n".utf8))
                throw ExitCode(2)
            }
        }
        let checks = checks(of: series)
        let passed = checks.allSatisfy(\.passed)
        if json {
            print(String(decoding: try report(series, checks: checks, passed: passed, alignment: found), as: UTF8.self))
        } else {
            if let found {
                print("offset \(format(Self.seconds(found.offset))) s by \(align?.rawValue ?? "") (confidence \(format(found.confidence))"
                    + (found.drift.map { ", drift \(format($0)) ppm" } ?? "") + ")")
            }
            printSummary(series, checks: checks)
        }
        for check in checks where !check.passed {
            FileHandle.standardError.write(Data("playerkit-quality: \(check.name) is \(format(check.value)), beyond the limit \(format(check.limit))\n".utf8))
        }
        if !passed { throw ExitCode(1) }
    }

    private func checks(of series: QualitySeries) -> [Check] {
        let psnr = series.summary(of: .psnrAll), ssim = series.summary(of: .ssimAll)
        var checks: [Check] = []
        // No pair at all meets no quality threshold.
        if let minPsnr { checks.append(Check(name: "mean PSNR", limit: minPsnr, value: psnr?.mean ?? -.infinity, passed: (psnr?.mean ?? -.infinity) >= minPsnr)) }
        if let minFramePsnr {
            checks.append(Check(name: "worst frame's PSNR", limit: minFramePsnr, value: psnr?.minimum ?? -.infinity, passed: (psnr?.minimum ?? -.infinity) >= minFramePsnr))
        }
        if let minSsim { checks.append(Check(name: "mean SSIM", limit: minSsim, value: ssim?.mean ?? 0, passed: (ssim?.mean ?? 0) >= minSsim)) }
        if let minFrameSsim {
            checks.append(Check(name: "worst frame's SSIM", limit: minFrameSsim, value: ssim?.minimum ?? 0, passed: (ssim?.minimum ?? 0) >= minFrameSsim))
        }
        if let maxDropped {
            let dropped = series.unpairedReferenceFrames.count
            checks.append(Check(name: "dropped frames", limit: Double(maxDropped), value: Double(dropped), passed: dropped <= maxDropped))
        }
        return checks
    }

    private static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }

    private func report(_ series: QualitySeries, checks: [Check], passed: Bool, alignment: RecordingOffset?) throws -> Data {
        struct Report: Encodable {
            let reference: String, rendition: String, offset: Double
            let alignment: Alignment?
            let width: Int, height: Int
            let passed: Bool
            let checks: [Check]
            let summary: [String: QualitySummary]
            let unpairedReferenceFrames: [Int], unpairedRenditionFrames: [Int]
            let worst: [FramePairScore]
            let pairs: [FramePairScore]
        }
        var summary: [String: QualitySummary] = [:]
        for metric in QualityMetric.allCases { summary[metric.rawValue] = series.summary(of: metric) }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        encoder.nonConformingFloatEncodingStrategy = .convertToString(positiveInfinity: "inf", negativeInfinity: "-inf", nan: "nan")
        let found = alignment.map { Alignment(method: align?.rawValue ?? "", offset: Self.seconds($0.offset), confidence: $0.confidence, driftPPM: $0.drift) }
        return try encoder.encode(Report(
            reference: reference, rendition: rendition, offset: found?.offset ?? offset, alignment: found, width: series.width, height: series.height, passed: passed,
            checks: checks, summary: summary, unpairedReferenceFrames: series.unpairedReferenceFrames,
            unpairedRenditionFrames: series.unpairedRenditionFrames, worst: series.worst(worst, by: .ssimAll), pairs: series.pairs))
    }

    private func printSummary(_ series: QualitySeries, checks: [Check]) {
        print("\(series.pairs.count) frame pairs at \(series.width)x\(series.height); reference frames unpaired (dropped): \(series.unpairedReferenceFrames.count); rendition frames unpaired: \(series.unpairedRenditionFrames.count)")
        for metric in QualityMetric.allCases {
            guard let summary = series.summary(of: metric) else { continue }
            print("\(metric.rawValue): mean \(format(summary.mean)), min \(format(summary.minimum)), p1 \(format(summary.p1)), p5 \(format(summary.p5)), p50 \(format(summary.p50)), max \(format(summary.maximum))"
                + (summary.identicalPairs > 0 ? " (\(summary.identicalPairs) identical pairs)" : ""))
        }
        for pair in series.worst(worst, by: .ssimAll) {
            print("worst: reference frame \(pair.referenceFrame) (\(format(pair.referenceTime)) s) / rendition frame \(pair.renditionFrame): SSIM \(format(pair.ssim.all)), PSNR \(format(pair.psnr.all)) dB")
        }
        for check in checks { print("\(check.passed ? "ok" : "FAILED"): \(check.name) \(format(check.value)) (limit \(format(check.limit)))") }
    }

    private func format(_ value: Double) -> String {
        value.isFinite ? String(format: "%.4f", value) : (value > 0 ? "inf" : "-inf")
    }
}

extension RecordingAlignment.Method: ExpressibleByArgument {}
