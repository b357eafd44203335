import CGTK

// GTK 4 from Swift through its C API: the few helpers the GTK examples (playerkit-compare,
// playerkit-multiview) need to connect Swift closures to GTK signals and to hand work to GTK's
// main loop from other threads. Not part of PlayerKit: an app brings its own toolkit binding.
//
// The threading rule of a GTK app on PlayerKit: GTK's main loop runs on the main thread, and
// every GTK call happens there. PlayerKit's events arrive on other threads (a bus queue, mpv's
// threads), and its async calls run on Swift's cooperative pool; both come back to GTK with
// `MainLoop.post`, which queues the work with `g_idle_add`. The main actor's own executor (the
// dispatch main queue) is never drained by GTK's loop, so these apps never await on the main
// actor: async work runs in detached tasks, which post their results back.

/// A pointer to any GTK object, for the C calls that take a specific type.
public typealias Widget = UnsafeMutablePointer<GtkWidget>

/// `pointer` as a pointer to `type`: C's casts between GObject types (GTK_WINDOW(w), ...).
@inline(__always)
public func gtkCast<T>(_ pointer: UnsafeMutableRawPointer?, to type: T.Type = T.self) -> UnsafeMutablePointer<T> {
    pointer!.assumingMemoryBound(to: type)
}

/// A Swift closure kept alive for as long as GTK holds it (a signal connection or an idle source).
public final class ClosureBox<Function> {
    public let function: Function
    public init(_ function: Function) { self.function = function }
}

/// Releases a signal's closure box when GTK disconnects the signal (its object is finalized).
private let releaseBox: GClosureNotify = { data, _ in
    guard let data else { return }
    Unmanaged<AnyObject>.fromOpaque(data).release()
}

@MainActor
public enum Signal {
    private static func connect<Function>(
        _ instance: UnsafeMutableRawPointer?, _ name: String, _ function: Function, through callback: GCallback
    ) {
        let box = Unmanaged.passRetained(ClosureBox(function) as AnyObject).toOpaque()
        // The box lives as long as the connection: GTK calls `releaseBox` when it disconnects
        // the handler (at the latest when the object is finalized).
        _ = cgtk_connect(instance, name, callback, box, releaseBox)
    }

    private static func box<Function>(_ data: UnsafeMutableRawPointer?, _: Function.Type) -> ClosureBox<Function> {
        Unmanaged<AnyObject>.fromOpaque(data!).takeUnretainedValue() as! ClosureBox<Function>
    }

    /// A signal with no arguments of its own: `clicked`, `realize`, `unrealize`, `activate`, `destroy`.
    public static func on(_ instance: UnsafeMutableRawPointer?, _ name: String, _ action: @escaping @MainActor () -> Void) {
        let callback: @convention(c) (UnsafeMutableRawPointer?, UnsafeMutableRawPointer?) -> Void = { _, data in
            let handler = Signal.box(data, (@MainActor () -> Void).self)
            MainActor.assumeIsolated { handler.function() }
        }
        connect(instance, name, action, through: unsafeBitCast(callback, to: GCallback.self))
    }

    /// A signal with no arguments that returns a gboolean: `close-request`.
    public static func onBool(_ instance: UnsafeMutableRawPointer?, _ name: String, _ action: @escaping @MainActor () -> Bool) {
        let callback: @convention(c) (UnsafeMutableRawPointer?, UnsafeMutableRawPointer?) -> gboolean = { _, data in
            let handler = Signal.box(data, (@MainActor () -> Bool).self)
            return MainActor.assumeIsolated { handler.function() } ? 1 : 0
        }
        connect(instance, name, action, through: unsafeBitCast(callback, to: GCallback.self))
    }

    /// GtkGLArea's `render`: draw, then return true.
    public static func onRender(_ area: Widget, _ action: @escaping @MainActor () -> Bool) {
        let callback: @convention(c) (UnsafeMutableRawPointer?, UnsafeMutableRawPointer?, UnsafeMutableRawPointer?) -> gboolean = { _, _, data in
            let handler = Signal.box(data, (@MainActor () -> Bool).self)
            return MainActor.assumeIsolated { handler.function() } ? 1 : 0
        }
        connect(area, "render", action, through: unsafeBitCast(callback, to: GCallback.self))
    }

    /// Two doubles: GtkGestureDrag's `drag-begin` and `drag-update` (start point, then offset).
    public static func onPoint(_ instance: UnsafeMutableRawPointer?, _ name: String, _ action: @escaping @MainActor (Double, Double) -> Void) {
        let callback: @convention(c) (UnsafeMutableRawPointer?, Double, Double, UnsafeMutableRawPointer?) -> Void = { _, x, y, data in
            let handler = Signal.box(data, (@MainActor (Double, Double) -> Void).self)
            MainActor.assumeIsolated { handler.function(x, y) }
        }
        connect(instance, name, action, through: unsafeBitCast(callback, to: GCallback.self))
    }

    /// GtkEventControllerKey's `key-pressed`: the key's value and modifiers; true when handled.
    public static func onKey(_ controller: UnsafeMutableRawPointer?, _ action: @escaping @MainActor (UInt32, UInt32) -> Bool) {
        let callback: @convention(c) (UnsafeMutableRawPointer?, UInt32, UInt32, UInt32, UnsafeMutableRawPointer?) -> gboolean = { _, keyval, _, modifiers, data in
            let handler = Signal.box(data, (@MainActor (UInt32, UInt32) -> Bool).self)
            return MainActor.assumeIsolated { handler.function(keyval, modifiers) } ? 1 : 0
        }
        connect(controller, "key-pressed", action, through: unsafeBitCast(callback, to: GCallback.self))
    }

    /// GtkRange's `change-value`: the value the user moved it to (never emitted by the app's own
    /// `gtk_range_set_value`, so position updates do not seek).
    public static func onUserValue(_ range: UnsafeMutableRawPointer?, _ action: @escaping @MainActor (Double) -> Void) {
        let callback: @convention(c) (UnsafeMutableRawPointer?, Int32, Double, UnsafeMutableRawPointer?) -> gboolean = { _, _, value, data in
            let handler = Signal.box(data, (@MainActor (Double) -> Void).self)
            MainActor.assumeIsolated { handler.function(value) }
            return 0
        }
        connect(range, "change-value", action, through: unsafeBitCast(callback, to: GCallback.self))
    }

    /// GtkGestureClick's `pressed`: the number of presses and the point, in the widget's
    /// coordinates.
    public static func onPressed(_ gesture: UnsafeMutableRawPointer?, _ action: @escaping @MainActor (Int, Double, Double) -> Void) {
        let callback: @convention(c) (UnsafeMutableRawPointer?, Int32, Double, Double, UnsafeMutableRawPointer?) -> Void = { _, presses, x, y, data in
            let handler = Signal.box(data, (@MainActor (Int, Double, Double) -> Void).self)
            MainActor.assumeIsolated { handler.function(Int(presses), x, y) }
        }
        connect(gesture, "pressed", action, through: unsafeBitCast(callback, to: GCallback.self))
    }

    /// GtkDropTarget's `drop` for files: the dropped files' paths and where they were dropped.
    public static func onDropFiles(_ target: UnsafeMutableRawPointer?, _ action: @escaping @MainActor ([String], Double) -> Bool) {
        let callback: @convention(c) (UnsafeMutableRawPointer?, UnsafePointer<GValue>?, Double, Double, UnsafeMutableRawPointer?) -> gboolean = { _, value, x, _, data in
            let handler = Signal.box(data, (@MainActor ([String], Double) -> Bool).self)
            var paths: [String] = []
            if let value, let list = g_value_get_boxed(value) {
                var node = gdk_file_list_get_files(OpaquePointer(list))
                let head = node
                while let current = node {
                    if let file = current.pointee.data, let path = g_file_get_path(OpaquePointer(file)) {
                        paths.append(String(cString: path))
                        g_free(path)
                    }
                    node = current.pointee.next
                }
                g_slist_free(head)
            }
            return MainActor.assumeIsolated { handler.function(paths, x) } ? 1 : 0
        }
        connect(target, "drop", action, through: unsafeBitCast(callback, to: GCallback.self))
    }
}

/// A `GtkDrawingArea`'s drawing, with cairo.
@MainActor
public enum Drawing {
    /// Draws `area` with `draw` (cairo's context, the area's width and height) whenever GTK
    /// asks; `gtk_widget_queue_draw` asks again.
    public static func setDraw(_ area: Widget, _ draw: @escaping @MainActor (OpaquePointer, Int, Int) -> Void) {
        let box = Unmanaged.passRetained(ClosureBox(draw)).toOpaque()
        gtk_drawing_area_set_draw_func(gtkCast(area, to: GtkDrawingArea.self), { _, cairo, width, height, data in
            let handler = Unmanaged<ClosureBox<@MainActor (OpaquePointer, Int, Int) -> Void>>.fromOpaque(data!).takeUnretainedValue()
            guard let cairo else { return }
            MainActor.assumeIsolated { handler.function(cairo, Int(width), Int(height)) }
        }, box, { data in Unmanaged<ClosureBox<@MainActor (OpaquePointer, Int, Int) -> Void>>.fromOpaque(data!).release() })
    }
}

/// Hands work to GTK's main loop.
public enum MainLoop {
    // snippet: post
    /// Runs `work` on the main thread at the main loop's next idle moment. Safe from any thread.
    public static func post(_ work: @escaping @Sendable @MainActor () -> Void) {
        let box = Unmanaged.passRetained(ClosureBox(work)).toOpaque()
        _ = g_idle_add_full(G_PRIORITY_DEFAULT, { data in
            let work = Unmanaged<ClosureBox<@Sendable @MainActor () -> Void>>.fromOpaque(data!).takeRetainedValue().function
            MainActor.assumeIsolated { work() }
            return 0  // G_SOURCE_REMOVE: once
        }, box, nil)
    }
    // end snippet

    /// Runs `work` on the main thread every `milliseconds` until it returns false.
    @MainActor
    public static func every(milliseconds: UInt32, _ work: @escaping @MainActor () -> Bool) {
        let box = Unmanaged.passRetained(ClosureBox(work)).toOpaque()
        _ = g_timeout_add_full(G_PRIORITY_DEFAULT, milliseconds, { data in
            let handler = Unmanaged<ClosureBox<@MainActor () -> Bool>>.fromOpaque(data!).takeUnretainedValue()
            return MainActor.assumeIsolated { handler.function() } ? 1 : 0
        }, box, { data in Unmanaged<ClosureBox<@MainActor () -> Bool>>.fromOpaque(data!).release() })
    }
}
