import Foundation
import PlayerKitCore

extension VideoFrame {
    /// The frame as a PNG image (8-bit RGB, no alpha). The image data is stored without
    /// compression (deflate's stored blocks): every PNG reader opens it, it takes no
    /// compression library and no time to encode, and it is about 3 bytes a pixel (a 320×180
    /// poster: 173 KB).
    public func pngData() -> Data {
        var png = Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A])
        var header = Data()
        header.appendBigEndian(UInt32(info.format.width))
        header.appendBigEndian(UInt32(info.format.height))
        header.append(contentsOf: [8, 2, 0, 0, 0])  // 8 bits, RGB, deflate, filter 0, no interlace
        png.appendChunk("IHDR", header)

        // The scanlines: a filter byte (0, none) and RGB for each row.
        let rowBytes = 1 + info.format.width * 3
        var raw = [UInt8](repeating: 0, count: rowBytes * info.format.height)
        let layout = info.format.pixelFormat
        withUnsafeBytes { (pixels: UnsafeRawBufferPointer) in
            for y in 0..<info.format.height {
                let row = y * info.stride, out = y * rowBytes + 1
                for x in 0..<info.format.width {
                    let pixel = row + x * 4  // 4 bytes per pixel in every PixelFormat
                    raw[out + x * 3] = pixels[pixel + layout.redOffset]
                    raw[out + x * 3 + 1] = pixels[pixel + layout.greenOffset]
                    raw[out + x * 3 + 2] = pixels[pixel + layout.blueOffset]
                }
            }
        }
        // zlib: header, stored blocks of at most 65535 bytes, Adler-32.
        var zlib = Data([0x78, 0x01])
        var offset = 0
        repeat {
            let count = min(65_535, raw.count - offset)
            let last: UInt8 = offset + count == raw.count ? 1 : 0
            zlib.append(last)
            zlib.append(UInt8(count & 0xFF)); zlib.append(UInt8(count >> 8))
            zlib.append(UInt8(~count & 0xFF)); zlib.append(UInt8((~count >> 8) & 0xFF))
            zlib.append(contentsOf: raw[offset..<(offset + count)])
            offset += count
        } while offset < raw.count
        zlib.appendBigEndian(PNGChecksum.adler32(raw))
        png.appendChunk("IDAT", zlib)
        png.appendChunk("IEND", Data())
        return png
    }

    /// Writes ``pngData()`` to `file`, replacing it.
    /// - Throws: ``PosterError/pngNotWritten(_:reason:)`` with the system's reason.
    func writePNG(to file: URL) throws(PosterError) {
        do {
            try pngData().write(to: file, options: .atomic)
        } catch {
            throw .pngNotWritten(file, reason: (error as NSError).localizedDescription)
        }
    }
}

enum PNGChecksum {
    static let crcTable: [UInt32] = (0..<256).map { index in
        var value = UInt32(index)
        for _ in 0..<8 { value = value & 1 == 1 ? 0xEDB8_8320 ^ (value >> 1) : value >> 1 }
        return value
    }

    static func crc32(_ bytes: Data) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in bytes { crc = crcTable[Int((crc ^ UInt32(byte)) & 0xFF)] ^ (crc >> 8) }
        return crc ^ 0xFFFF_FFFF
    }

    static func adler32(_ bytes: [UInt8]) -> UInt32 {
        var a: UInt32 = 1, b: UInt32 = 0
        var index = 0
        while index < bytes.count {
            // 5552 bytes keep the sums below 2^32 before the modulo.
            let end = min(index + 5552, bytes.count)
            for byte in bytes[index..<end] {
                a += UInt32(byte)
                b += a
            }
            a %= 65_521
            b %= 65_521
            index = end
        }
        return b << 16 | a
    }
}

extension Data {
    fileprivate mutating func appendBigEndian(_ value: UInt32) {
        append(contentsOf: [UInt8(value >> 24), UInt8((value >> 16) & 0xFF), UInt8((value >> 8) & 0xFF), UInt8(value & 0xFF)])
    }

    fileprivate mutating func appendChunk(_ type: String, _ body: Data) {
        appendBigEndian(UInt32(body.count))
        var typed = Data(type.utf8)
        typed.append(body)
        append(typed)
        appendBigEndian(PNGChecksum.crc32(typed))
    }
}
