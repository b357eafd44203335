import CGTK
import GTKSupport
import Foundation
import PlayerKit
import PlayerKitAnalysis

/// The comparison by the numbers (PlayerKitAnalysis): B aligned to A by their sound or pictures,
/// its offset shown and adjusted by hand, B measured against A frame by frame, the SSIM of every
/// pair as a graph under the transport (a click puts both players on that pair), and the worst
/// pair one button away.
extension CompareApp {
    /// The graph's colours: the SSIM line, and A's frames B has no frame for (orange).
    private static let lineColor = (0.25, 0.85, 0.35)
    private static let unpairedColor = (0.95, 0.55, 0.1)

    // MARK: The window

    /// A row of controls (align, B's offset, measure, worst) and the graph under it.
    func buildAnalysisRows(in column: Widget) {
        let row = gtk_box_new(GTK_ORIENTATION_HORIZONTAL, 6)!
        let box = gtkCast(row, to: GtkBox.self)
        func button(_ title: String, _ command: Command) {
            let button = gtk_button_new_with_label(title)!
            Signal.on(button, "clicked") { [unowned self] in perform(command) }
            gtk_box_append(box, button)
        }
        button("Align: sound", .align(byPicture: false))
        button("Align: picture", .align(byPicture: true))
        gtk_box_append(box, gtk_label_new("B later (s)"))
        let offset = gtk_spin_button_new_with_range(-600, 600, 0.001)!
        gtk_spin_button_set_digits(OpaquePointer(offset), 3)
        gtk_spin_button_set_value(OpaquePointer(offset), 0)
        Signal.on(offset, "value-changed") { [unowned self] in
            guard !settingOffset, let offsetButton else { return }
            perform(.offset(gtk_spin_button_get_value(OpaquePointer(offsetButton))))
        }
        gtk_box_append(box, offset)
        offsetButton = offset
        button("Measure", .measure)
        button("Worst", .worst)
        let summary = gtk_label_new("SSIM per frame: press Measure")!
        gtk_label_set_xalign(OpaquePointer(summary), 0)
        // Shortened to fit, not widening the window (the whole text is its tooltip).
        gtk_label_set_ellipsize(OpaquePointer(summary), PANGO_ELLIPSIZE_END)
        gtk_label_set_width_chars(OpaquePointer(summary), 12)
        gtk_widget_set_hexpand(summary, 1)
        gtk_box_append(box, summary)
        summaryLabel = summary
        gtk_box_append(gtkCast(column, to: GtkBox.self), row)

        // The graph: A's time across (as the seek bar), SSIM up; a click shows that pair.
        let graph = gtk_drawing_area_new()!
        gtk_widget_set_size_request(graph, -1, 64)
        gtk_widget_set_hexpand(graph, 1)
        Drawing.setDraw(graph) { [unowned self] cairo, width, height in drawGraph(cairo, width: width, height: height) }
        let click = gtk_gesture_click_new()!
        Signal.onPressed(UnsafeMutableRawPointer(click)) { [unowned self] _, x, _ in
            guard let graphArea else { return }
            let width = Double(max(gtk_widget_get_width(graphArea), 1))
            perform(.graph(min(max(x / width, 0), 1)))
        }
        gtk_widget_add_controller(graph, click)
        gtk_box_append(gtkCast(column, to: GtkBox.self), graph)
        graphArea = graph
    }

    // MARK: Commands

    /// How much later B plays a moment than A, in seconds: its media offset.
    var offsetOfB: Double { group.settings.mediaOffsets[players[1].id].map(Self.seconds) ?? 0 }

    func align(byPicture: Bool, named name: String) {
        let group = group
        Task.detached {
            do {
                try await group.alignRecordings(by: byPicture ? .picture : .sound)
                // Both players to where A is, so B shows its frame at its new offset.
                try await group.seek(to: group.position ?? 0)
                MainLoop.post { [weak self] in
                    self?.offsetChanged()
                    self?.done(name)
                }
            } catch {
                MainLoop.post { [weak self] in self?.failed(name, error) }
            }
        }
    }

    func setOffset(_ seconds: Double, named name: String) {
        guard seconds.isFinite else {
            failed(name, PlayerError.invalidArgument(name: "offset", value: "\(seconds)", reason: "must be a finite number of seconds"))
            return
        }
        let (group, id) = (group, players[1].id)
        Task.detached {
            do {
                try await group.setMediaOffset(.seconds(seconds), for: id)
                // Both players to where A is, so B shows its frame at its new offset.
                try await group.seek(to: group.position ?? 0)
                MainLoop.post { [weak self] in
                    self?.offsetChanged()
                    self?.done(name)
                }
            } catch {
                MainLoop.post { [weak self] in self?.failed(name, error) }
            }
        }
    }

    /// B's offset changed: the spin button shows it, and a measurement made at another offset
    /// is forgotten.
    func offsetChanged() {
        if let offsetButton {
            settingOffset = true
            gtk_spin_button_set_value(OpaquePointer(offsetButton), offsetOfB)
            settingOffset = false
        }
        forgetMeasurement()
    }

    func measure(named name: String) {
        let comparison = QualityComparison(reference: Self.location(sources[0]), rendition: Self.location(sources[1]),
                                           offset: .seconds(offsetOfB))
        if let summaryLabel { gtk_label_set_text(OpaquePointer(summaryLabel), "Measuring…") }
        Task.detached {
            do {
                let series = try await comparison.run()
                MainLoop.post { [weak self] in
                    guard let self else { return }
                    self.series = series
                    showSummary()
                    if let graphArea { gtk_widget_queue_draw(graphArea) }
                    done(name)
                }
            } catch {
                MainLoop.post { [weak self] in
                    self?.forgetMeasurement()
                    self?.failed(name, error)
                }
            }
        }
    }

    func showWorst(named name: String) {
        guard let series else { return failed(name, AnalysisCommandError.notMeasured(command: name)) }
        guard let worst = series.worst(1, by: .ssimAll).first else { return failed(name, AnalysisCommandError.noPairs) }
        runFrames(name) { group in try await group.seek(toFrame: worst.referenceFrame) }
    }

    func showPair(atFraction fraction: Double, named name: String) {
        guard let series else { return failed(name, AnalysisCommandError.notMeasured(command: name)) }
        let time = fraction * graphDuration(series)
        guard let pair = series.pairs.min(by: { abs($0.referenceTime - time) < abs($1.referenceTime - time) }) else {
            return failed(name, AnalysisCommandError.noPairs)
        }
        runFrames(name) { group in try await group.seek(toFrame: pair.referenceFrame) }
    }

    func forgetMeasurement() {
        series = nil
        if let summaryLabel { gtk_label_set_text(OpaquePointer(summaryLabel), "SSIM per frame: press Measure") }
        if let graphArea { gtk_widget_queue_draw(graphArea) }
    }

    private func showSummary() {
        guard let series, let summaryLabel else { return }
        var text = "\(series.pairs.count) pairs"
        if let ssim = series.summary(of: .ssimAll) { text += String(format: " · SSIM mean %.4f, worst %.4f", ssim.mean, ssim.minimum) }
        if let psnr = series.summary(of: .psnrAll) { text += String(format: " · PSNR mean %.2f dB", psnr.mean) }
        if !series.unpairedRenditionFrames.isEmpty || !series.unpairedReferenceFrames.isEmpty {
            text += " · unpaired \(series.unpairedReferenceFrames.count) A, \(series.unpairedRenditionFrames.count) B"
        }
        gtk_label_set_text(OpaquePointer(summaryLabel), text)
        gtk_widget_set_tooltip_text(summaryLabel, text)
    }

    // MARK: The graph

    /// The time the graph spans: A's duration, or its last pair's time.
    private func graphDuration(_ series: QualitySeries) -> Double {
        max(durations[0] ?? series.pairs.last?.referenceTime ?? 1, 0.001)
    }

    /// The SSIM range drawn: from a little under the lowest to 1.
    private func ssimFloor(_ series: QualitySeries) -> Double {
        let lowest = series.pairs.map(\.ssim.all).filter(\.isFinite).min() ?? 0
        return max(min(lowest - 0.02, 0.98), 0)
    }

    /// Where the pair's point is drawn, in the graph's pixels.
    private func point(_ pair: FramePairScore, _ series: QualitySeries, width: Int, height: Int) -> (x: Double, y: Double) {
        let floor = ssimFloor(series)
        let x = pair.referenceTime / graphDuration(series) * Double(width)
        let value = pair.ssim.all.isFinite ? pair.ssim.all : 1
        let y = Double(height) - 4 - (value - floor) / max(1 - floor, 1e-6) * Double(height - 8)
        return (x, y)
    }

    private func drawGraph(_ cairo: OpaquePointer, width: Int, height: Int) {
        cairo_set_source_rgb(cairo, 0.12, 0.12, 0.12)
        cairo_rectangle(cairo, 0, 0, Double(width), Double(height))
        cairo_fill(cairo)
        guard let series, !series.pairs.isEmpty else { return }
        // Unpaired frames: red ticks at the bottom, where they would have been.
        let duration = graphDuration(series)
        cairo_set_source_rgb(cairo, Self.unpairedColor.0, Self.unpairedColor.1, Self.unpairedColor.2)
        let rate = Double(series.pairs.count) / max(duration, 0.001)
        for frame in series.unpairedReferenceFrames {
            let x = Double(frame) / max(rate, 1) / duration * Double(width)
            cairo_rectangle(cairo, x, Double(height - 6), 2, 6)
        }
        cairo_fill(cairo)
        // The SSIM line.
        cairo_set_source_rgb(cairo, Self.lineColor.0, Self.lineColor.1, Self.lineColor.2)
        cairo_set_line_width(cairo, 2)
        for (index, pair) in series.pairs.enumerated() {
            let (x, y) = point(pair, series, width: width, height: height)
            if index == 0 { cairo_move_to(cairo, x, y) } else { cairo_line_to(cairo, x, y) }
        }
        cairo_stroke(cairo)
        // Where A is.
        if let position = positions[0] {
            let x = position / duration * Double(width)
            cairo_set_source_rgb(cairo, 1, 1, 1)
            cairo_set_line_width(cairo, 1)
            cairo_move_to(cairo, x, 0)
            cairo_line_to(cairo, x, Double(height))
            cairo_stroke(cairo)
        }
    }

    // MARK: Reports

    /// B's offset and the measurement, in a `--json` answer.
    func describeAnalysis(in line: inout AppLine) {
        line.offset = offsetOfB
        line.drift = group.settings.clockDrifts[players[1].id]
        guard let series else { return }
        line.pairs = series.pairs.count
        line.ssimMean = series.summary(of: .ssimAll)?.mean
        line.unpaired = series.unpairedRenditionFrames.count
        if let graphArea {
            let (width, height) = (Int(gtk_widget_get_width(graphArea)), Int(gtk_widget_get_height(graphArea)))
            line.graph = [width, height]
            line.graphColumns = Set(series.pairs.map { Int(point($0, series, width: width, height: height).x) }).count
        }
    }

    // MARK: Helpers

    static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }

    /// A source as FFmpeg opens it: a URL with a scheme, else a path.
    static func location(_ source: String) -> URL {
        source.contains("://") ? URL(string: source) ?? URL(fileURLWithPath: source) : URL(fileURLWithPath: source)
    }
}

/// An analysis command that cannot be done yet.
enum AnalysisCommandError: Error, CustomStringConvertible {
    case notMeasured(command: String)
    case noPairs

    var description: String {
        switch self {
        case .notMeasured(let command): "'\(command)' needs a measurement: run 'measure' (the Measure button) first"
        case .noPairs: "the measurement paired no frames of B with A's"
        }
    }
}
