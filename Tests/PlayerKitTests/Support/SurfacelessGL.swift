import Foundation

/// A real OpenGL context from Mesa with no window (EGL's surfaceless platform), current on the
/// thread that made it: what a render-path test needs to get mpv's update callbacks, on a
/// machine with no display. Loaded with `dlopen`, so the test target links no EGL.
final class SurfacelessGL: @unchecked Sendable {
    // @unchecked: the handles are written once, in init.
    private typealias GetPlatformDisplay = @convention(c) (UInt32, UnsafeMutableRawPointer?, UnsafePointer<Int>?) -> UnsafeMutableRawPointer?
    private typealias Initialize = @convention(c) (UnsafeMutableRawPointer?, UnsafeMutablePointer<Int32>?, UnsafeMutablePointer<Int32>?) -> UInt32
    private typealias BindAPI = @convention(c) (UInt32) -> UInt32
    private typealias CreateContext = @convention(c) (UnsafeMutableRawPointer?, UnsafeMutableRawPointer?, UnsafeMutableRawPointer?, UnsafePointer<Int32>?) -> UnsafeMutableRawPointer?
    private typealias MakeCurrent = @convention(c) (UnsafeMutableRawPointer?, UnsafeMutableRawPointer?, UnsafeMutableRawPointer?, UnsafeMutableRawPointer?) -> UInt32
    private typealias GetProcAddress = @convention(c) (UnsafePointer<CChar>?) -> UnsafeMutableRawPointer?
    private typealias DestroyContext = @convention(c) (UnsafeMutableRawPointer?, UnsafeMutableRawPointer?) -> UInt32

    private static let platformSurfacelessMesa: UInt32 = 0x31DD
    private static let openGLAPI: UInt32 = 0x30A2
    private static let none: Int32 = 0x3038

    private let display: UnsafeMutableRawPointer
    private let context: UnsafeMutableRawPointer
    private let getProcAddress: GetProcAddress
    private let makeCurrent: MakeCurrent
    private let destroyContext: DestroyContext

    /// Why no context could be made (no libEGL, no surfaceless platform).
    struct Unavailable: Error, CustomStringConvertible {
        let description: String
    }

    /// Makes the context and makes it current on the calling thread.
    init() throws {
        guard let library = dlopen("libEGL.so.1", RTLD_NOW) else { throw Unavailable(description: "no libEGL.so.1") }
        func symbol<T>(_ name: String, as type: T.Type) throws -> T {
            guard let address = dlsym(library, name) else { throw Unavailable(description: "libEGL has no \(name)") }
            return unsafeBitCast(address, to: type)
        }
        let getDisplay = try symbol("eglGetPlatformDisplay", as: GetPlatformDisplay.self)
        let initialize = try symbol("eglInitialize", as: Initialize.self)
        let bindAPI = try symbol("eglBindAPI", as: BindAPI.self)
        let createContext = try symbol("eglCreateContext", as: CreateContext.self)
        makeCurrent = try symbol("eglMakeCurrent", as: MakeCurrent.self)
        getProcAddress = try symbol("eglGetProcAddress", as: GetProcAddress.self)
        destroyContext = try symbol("eglDestroyContext", as: DestroyContext.self)
        guard let display = getDisplay(Self.platformSurfacelessMesa, nil, nil) else {
            throw Unavailable(description: "no surfaceless EGL display")
        }
        var major: Int32 = 0, minor: Int32 = 0
        guard initialize(display, &major, &minor) != 0 else { throw Unavailable(description: "eglInitialize failed") }
        guard bindAPI(Self.openGLAPI) != 0 else { throw Unavailable(description: "eglBindAPI(OpenGL) failed") }
        // No config (EGL_KHR_no_config_context) and no surface (EGL_KHR_surfaceless_context):
        // mpv draws into framebuffer objects the caller names.
        let attributes: [Int32] = [Self.none]
        guard let context = createContext(display, nil, nil, attributes) else { throw Unavailable(description: "eglCreateContext failed") }
        guard makeCurrent(display, nil, nil, context) != 0 else { throw Unavailable(description: "eglMakeCurrent failed") }
        self.display = display
        self.context = context
    }

    /// The context's function lookup, as an OpenGL renderer takes it.
    var lookUp: @Sendable (String) -> UnsafeMutableRawPointer? {
        let getProcAddress = self.getProcAddress
        return { name in name.withCString { getProcAddress($0) } }
    }

    /// Releases the context from the calling thread and destroys it.
    func destroy() {
        _ = makeCurrent(display, nil, nil, nil)
        _ = destroyContext(display, context)
    }
}
