internal import CMPV
import Foundation
import Logging
import PlayerKitSupport

/// Custom stream protocols on one core (`mpv_stream_cb_add_ro`): the bridge between mpv's C
/// callbacks and ``MediaStreamProvider`` / ``MediaByteStream``. The callbacks run on mpv's
/// demuxer thread (cancel on another) and call nothing of mpv's.
final class StreamProtocols: Sendable {
    /// The providers' boxes, retained while the core lives (mpv holds their pointers).
    private let boxes: [Unmanaged<ProviderBox>]
    /// The schemes registered, lowercased.
    let schemes: Set<String>

    final class ProviderBox: Sendable {
        let provider: any MediaStreamProvider
        let logger: Logger
        let player: PlayerID
        /// Every stream box opened on the core, kept until the core is destroyed: mpv may call a
        /// stream's cancel callback (from another thread, through its cancel chain) after its
        /// close callback, until it frees the stream, so a cookie must stay valid that long.
        let opened = Locked<[StreamBox]>([])
        init(_ provider: any MediaStreamProvider, player: PlayerID, logger: Logger) {
            self.provider = provider
            self.player = player
            self.logger = logger
        }
    }

    /// One opened stream, as mpv's cookie. The app's stream is dropped at close; the box itself
    /// lives until the core is destroyed (see ``ProviderBox/opened``).
    final class StreamBox: Sendable {
        private let stream: Locked<(any MediaByteStream)?>
        init(_ stream: any MediaByteStream) { self.stream = Locked(stream) }
        /// The stream, nil once closed. Called without holding anything while the stream works.
        var current: (any MediaByteStream)? { stream.withLock { $0 } }
        /// Takes the stream out (nil if already closed).
        func takeForClose() -> (any MediaByteStream)? { stream.withLock { stream in defer { stream = nil }; return stream } }
    }

    /// Registers every provider on the core.
    /// - Throws: ``PlayerError/invalidArgument(name:value:reason:)`` for a malformed or taken scheme.
    init(providers: [any MediaStreamProvider], handle: MPVHandle, catalog: MPVCatalog, logger: Logger) throws(PlayerError) {
        var schemes: Set<String> = []
        var boxes: [Unmanaged<ProviderBox>] = []
        do throws(PlayerError) {
            for provider in providers {
                let scheme = provider.scheme
                guard Self.isValidScheme(scheme) else {
                    throw .invalidArgument(name: "stream scheme", value: scheme,
                                           reason: "must start with a lowercase letter and use only a-z, 0-9, +, - and .")
                }
                guard !catalog.protocols.contains(scheme) else {
                    throw .invalidArgument(name: "stream scheme", value: scheme, reason: "is one of mpv's own protocols")
                }
                guard schemes.insert(scheme).inserted else {
                    throw .invalidArgument(name: "stream scheme", value: scheme, reason: "is registered twice")
                }
                let box = Unmanaged.passRetained(ProviderBox(provider, player: handle.playerID, logger: logger))
                boxes.append(box)
                let status = try handle.withHandle { raw in
                    mpv_stream_cb_add_ro(raw, scheme, box.toOpaque(), playerKitStreamOpen)
                }
                guard status >= 0 else {
                    throw .invalidArgument(name: "stream scheme", value: scheme, reason: "mpv refused it: \(MPVHandle.error(status))")
                }
            }
        } catch {
            for box in boxes { box.release() }
            throw error
        }
        self.boxes = boxes
        self.schemes = schemes
    }

    /// Releases the providers. Only after the core is destroyed (mpv closed every stream).
    func releaseAfterCoreDestroyed() {
        for box in boxes {
            let provider = box.takeUnretainedValue()
            // Streams mpv left open (none after mpv_terminate_destroy), then the boxes.
            for stream in provider.opened.withLock({ $0 }) { stream.takeForClose()?.close() }
            provider.opened.withLock { $0.removeAll() }
            box.release()
        }
    }

    static func isValidScheme(_ scheme: String) -> Bool {
        guard let first = scheme.unicodeScalars.first, ("a"..."z").contains(first) else { return false }
        return scheme.unicodeScalars.allSatisfy { ("a"..."z").contains($0) || ("0"..."9").contains($0) || "+-.".unicodeScalars.contains($0) }
    }
}

private func playerKitStreamOpen(
    _ userData: UnsafeMutableRawPointer?, _ uri: UnsafeMutablePointer<CChar>?, _ info: UnsafeMutablePointer<mpv_stream_cb_info>?
) -> Int32 {
    guard let userData, let uri, let info else { return MPV_ERROR_LOADING_FAILED.rawValue }
    let box = Unmanaged<StreamProtocols.ProviderBox>.fromOpaque(userData).takeUnretainedValue()
    let url = String(cString: uri)
    do {
        let stream = try box.provider.open(url, player: box.player)
        let streamBox = StreamProtocols.StreamBox(stream)
        box.opened.withLock { $0.append(streamBox) }
        info.pointee.cookie = Unmanaged.passUnretained(streamBox).toOpaque()
        info.pointee.read_fn = playerKitStreamRead
        info.pointee.seek_fn = playerKitStreamSeek
        info.pointee.size_fn = playerKitStreamSize
        info.pointee.close_fn = playerKitStreamClose
        info.pointee.cancel_fn = playerKitStreamCancel
        return 0
    } catch {
        box.logger.warning("stream could not be opened", metadata: ["url": "\(url)", "error": "\(error)"])
        return MPV_ERROR_LOADING_FAILED.rawValue
    }
}

private func stream(_ cookie: UnsafeMutableRawPointer?) -> (any MediaByteStream)? {
    cookie.flatMap { Unmanaged<StreamProtocols.StreamBox>.fromOpaque($0).takeUnretainedValue().current }
}

private func playerKitStreamRead(_ cookie: UnsafeMutableRawPointer?, _ buffer: UnsafeMutablePointer<CChar>?, _ count: UInt64) -> Int64 {
    guard let stream = stream(cookie), let buffer else { return -1 }
    do {
        let read = try stream.read(into: UnsafeMutableRawBufferPointer(start: buffer, count: Int(count)))
        return Int64(max(0, min(read, Int(count))))
    } catch {
        return -1
    }
}

private func playerKitStreamSeek(_ cookie: UnsafeMutableRawPointer?, _ offset: Int64) -> Int64 {
    guard let stream = stream(cookie) else { return Int64(MPV_ERROR_GENERIC.rawValue) }
    do {
        return try stream.seek(to: offset)
    } catch .seekUnsupported {
        return Int64(MPV_ERROR_UNSUPPORTED.rawValue)
    } catch {
        return Int64(MPV_ERROR_GENERIC.rawValue)
    }
}

private func playerKitStreamSize(_ cookie: UnsafeMutableRawPointer?) -> Int64 {
    stream(cookie)?.size ?? Int64(MPV_ERROR_UNSUPPORTED.rawValue)
}

private func playerKitStreamCancel(_ cookie: UnsafeMutableRawPointer?) {
    stream(cookie)?.cancel()
}

private func playerKitStreamClose(_ cookie: UnsafeMutableRawPointer?) {
    guard let cookie else { return }
    // The box stays (a late cancel may still come); the app's stream goes now.
    Unmanaged<StreamProtocols.StreamBox>.fromOpaque(cookie).takeUnretainedValue().takeForClose()?.close()
}
