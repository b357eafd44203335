import CGLHost
import ExampleSupport
import Foundation
import PlayerKit

/// `--window`: the feed drawn in an SDL window of the app's own, 1.2 items tall like the script's
/// viewport. Each item is its poster (from the `PosterMaker`, or grey until it has one) at its
/// place in the scrolled list; the playing item is framed in green. SDL is called from one
/// thread of the view's own; the feed hands it what changed through `state`.
final class FeedView: Sendable {
    static let itemWidth = 320, itemHeight = 180
    /// The window's height: 1.2 items.
    static let height = itemHeight * 6 / 5

    struct State: Sendable {
        /// The viewport's top, in items.
        var offset = 0.0
        var playing: String?
        var posters: [Int: VideoFrame] = [:]
        var closing = false
    }

    let state = Guarded(State())
    /// Counts the view's first drawing with posters, then its end.
    let drawnWithPosters = Tally()
    let ended = Tally()
    private let items: Int

    init(items: Int) {
        self.items = items
    }

    func scrolled(to offset: Double) { state.withLock { $0.offset = offset } }
    func playing(_ item: String?) { state.withLock { $0.playing = item } }
    func poster(_ frame: VideoFrame, of index: Int) { state.withLock { $0.posters[index] = frame } }

    /// Opens the window and draws it, about 60 times a second, until ``close()``.
    /// - Returns: why the window could not open, or nil once it runs.
    func start() async -> String? {
        let opened = Guarded<String??>(nil)
        let outcome = Tally()
        let thread = Thread { [self] in
            run { failure in
                opened.withLock { $0 = .some(failure) }
                outcome.increment()
            }
            ended.increment()
        }
        thread.name = "feed.view"
        thread.start()
        _ = await outcome.wait(for: 1, timeout: .seconds(10))
        return opened.withLock { $0 } ?? "the window did not open within 10 s"
    }

    /// Closes the window; returns once its thread ended (at most 5 s).
    func close() async {
        state.withLock { $0.closing = true }
        _ = await ended.wait(for: 1, timeout: .seconds(5))
    }

    private func run(opened: (String?) -> Void) {
        guard SDL_InitSubSystem(SDL_INIT_VIDEO) == 0 else { return opened("SDL_Init: \(String(cString: SDL_GetError()))") }
        defer { SDL_QuitSubSystem(SDL_INIT_VIDEO) }
        guard let window = SDL_CreateWindow("PlayerKit feed", 0, 0, Int32(Self.itemWidth), Int32(Self.height), SDL_WINDOW_SHOWN.rawValue) else {
            return opened("SDL_CreateWindow: \(String(cString: SDL_GetError()))")
        }
        defer { SDL_DestroyWindow(window) }
        // SDL's software renderer: a poster list needs no GPU.
        guard let renderer = SDL_CreateRenderer(window, -1, SDL_RENDERER_SOFTWARE.rawValue) else {
            return opened("SDL_CreateRenderer: \(String(cString: SDL_GetError()))")
        }
        defer { SDL_DestroyRenderer(renderer) }
        opened(nil)
        var textures: [Int: (texture: OpaquePointer, width: Int)] = [:]
        defer { for texture in textures.values { SDL_DestroyTexture(texture.texture) } }
        var reportedPosters = false
        while true {
            var event = SDL_Event()
            while SDL_PollEvent(&event) != 0 {}
            let now = state.withLock { $0 }
            if now.closing { break }
            for (index, frame) in now.posters where textures[index] == nil {
                // Shown at the item's height with its own aspect ratio, centred.
                if let texture = Self.texture(of: frame, renderer: renderer) {
                    textures[index] = (texture, min(Self.itemWidth, frame.info.format.width * Self.itemHeight / max(frame.info.format.height, 1)))
                }
            }
            SDL_SetRenderDrawColor(renderer, 24, 24, 24, 255)
            SDL_RenderClear(renderer)
            for index in 0..<items {
                let top = Int(((Double(index) - now.offset) * Double(Self.itemHeight)).rounded())
                guard top > -Self.itemHeight, top < Self.height else { continue }
                var place = SDL_Rect(x: 0, y: Int32(top), w: Int32(Self.itemWidth), h: Int32(Self.itemHeight))
                if let (texture, width) = textures[index] {
                    var picture = SDL_Rect(x: Int32((Self.itemWidth - width) / 2), y: Int32(top), w: Int32(width), h: Int32(Self.itemHeight))
                    SDL_RenderCopy(renderer, texture, nil, &picture)
                } else {
                    SDL_SetRenderDrawColor(renderer, 90, 90, 90, 255)
                    SDL_RenderFillRect(renderer, &place)
                }
                if now.playing == "item-\(index)" {
                    SDL_SetRenderDrawColor(renderer, 40, 220, 60, 255)
                    for inset in 0..<4 {
                        var border = SDL_Rect(x: Int32(inset), y: Int32(top + inset), w: Int32(Self.itemWidth - 2 * inset), h: Int32(Self.itemHeight - 2 * inset))
                        SDL_RenderDrawRect(renderer, &border)
                    }
                }
            }
            SDL_RenderPresent(renderer)
            if !reportedPosters, !now.posters.isEmpty {
                reportedPosters = true
                drawnWithPosters.increment()
            }
            SDL_Delay(16)
        }
    }

    /// A texture holding `frame`'s pixels (SDL's byte order for them: XBGR8888 is R, G, B, X in
    /// memory on a little-endian machine, as `rgb0` frames are).
    private static func texture(of frame: VideoFrame, renderer: OpaquePointer) -> OpaquePointer? {
        let format: UInt32 = switch frame.info.format.pixelFormat {
        case .bgr0: SDL_PIXELFORMAT_XRGB8888.rawValue
        default: SDL_PIXELFORMAT_XBGR8888.rawValue
        }
        guard let texture = SDL_CreateTexture(renderer, format, Int32(SDL_TEXTUREACCESS_STATIC.rawValue), Int32(frame.info.format.width), Int32(frame.info.format.height)) else {
            return nil
        }
        frame.withUnsafeBytes { bytes in
            _ = SDL_UpdateTexture(texture, nil, bytes.baseAddress, Int32(frame.info.stride))
        }
        return texture
    }
}
