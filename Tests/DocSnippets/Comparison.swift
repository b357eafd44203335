import Foundation
import PlayerKit
import PlayerKitAnalysis

// Documentation/Comparison.md's blocks, compiled.

func compareAnEncode() async throws {
    // snippet: compare
    let comparison = QualityComparison(
        reference: URL(fileURLWithPath: "master.mp4"),
        rendition: URL(fileURLWithPath: "encode-720p.mp4"))      // scaled to the master's size
    let series = try await comparison.run()                       // decodes faster than real time
    if let ssim = series.summary(of: .ssimAll), let psnr = series.summary(of: .psnrAll) {
        print("SSIM mean \(ssim.mean), worst \(ssim.minimum); PSNR p5 \(psnr.p5) dB")
    }
    for pair in series.worst(5, by: .ssimAll) {
        print("reference frame \(pair.referenceFrame) at \(pair.referenceTime) s: SSIM \(pair.ssim.all)")
    }
    print("dropped by the encode: \(series.unpairedReferenceFrames)")
    try series.csv().write(toFile: "quality.csv", atomically: true, encoding: .utf8)
    // end snippet
}

func compareATrimmedEncode() async throws {
    // snippet: offset
    // The encode starts half a second into the master: its times move by -0.5 s.
    let trimmed = QualityComparison(
        reference: URL(fileURLWithPath: "master.mp4"), rendition: URL(fileURLWithPath: "trimmed.mp4"),
        offset: .milliseconds(-500))
    let series = try await trimmed.run()
    // end snippet
    _ = series
}

func alignBySound() async throws {
    // snippet: sound
    let alignment = RecordingAlignment(reference: URL(fileURLWithPath: "camera-a.mp4"),
                                       other: URL(fileURLWithPath: "camera-b.mp4"))     // by their sound
    let found = try await alignment.run()
    print("camera B runs \(found.offset) later (confidence \(found.confidence))")
    // Its encode against camera A, frame by frame, at that offset:
    let series = try await QualityComparison(
        reference: URL(fileURLWithPath: "camera-a.mp4"), rendition: URL(fileURLWithPath: "camera-b.mp4"),
        offset: found.offset).run()
    // end snippet
    _ = series
}

func alignByPicture() async throws {
    // snippet: picture
    let capture = RecordingAlignment(reference: URL(fileURLWithPath: "camera.mp4"),
                                     other: URL(fileURLWithPath: "screen-capture.mp4"), method: .picture)
    let found = try await capture.run()          // found.drift is nil: a picture gives none
    // end snippet
    _ = found
}

func alignAGroup(cameraA: Player, cameraB: Player) async throws {
    // snippet: group
    let group = try SyncGroup(players: [cameraA, cameraB])
    try await group.load(["camera-a.mp4", "camera-b.mp4"])
    let found = try await group.alignRecordings()        // by their sound; applied to the group
    print("camera B: \(group.settings.mediaOffsets[cameraB.id] ?? .zero) into its media, drift \(group.settings.clockDrifts[cameraB.id] ?? 0) ppm")
    try await group.setMediaOffset((found[cameraB.id]?.offset ?? .zero) - .milliseconds(40), for: cameraB.id)   // B a frame later, by hand
    try await group.seek(to: 0)
    try await group.play()
    let saved = try JSONEncoder().encode(group.settings)  // offsets and drifts included
    // end snippet
    _ = saved
}
