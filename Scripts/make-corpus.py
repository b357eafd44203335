#!/usr/bin/env python3
"""Writes a deterministic corpus of corrupted media made from the shipped clips.

Usage: Scripts/make-corpus.py OUTPUT_FOLDER [--seed N]

Every file is a mutation of Media/clip-a.mp4, Media/clip-b.mp4, Tests/Fixtures/short-a.mp4
or Media/sequence-still.png: truncations, flipped bytes, MP4 boxes with wrong sizes, tracks
with no samples or no duration, absurd picture dimensions, a track removed (audio-only,
video-only, no tracks at all), and damaged or intact images. The same seed always gives the
same bytes. A manifest (manifest.json) lists each file with its kind and what was done.
Needs only Python 3 (no ffmpeg).
"""
import json
import os
import random
import struct
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SOURCES = ["Media/clip-a.mp4", "Media/clip-b.mp4", "Tests/Fixtures/short-a.mp4"]
IMAGE = "Media/sequence-still.png"
CONTAINERS = {b"moov", b"trak", b"mdia", b"minf", b"stbl", b"edts", b"dinf", b"udta", b"mvex"}


def boxes(data, start=0, end=None, depth=0):
    """Every box as (offset, size, type, depth), containers descended into."""
    end = len(data) if end is None else end
    found = []
    offset = start
    while offset + 8 <= end:
        size, kind = struct.unpack(">I4s", data[offset:offset + 8])
        if size < 8 or offset + size > end:
            break
        found.append((offset, size, kind, depth))
        if kind in CONTAINERS:
            found += boxes(data, offset + 8, offset + size, depth + 1)
        elif kind == b"stsd":
            # Version/flags, entry count, then sample entries (avc1, mp4a, ...).
            found += boxes(data, offset + 16, offset + size, depth + 1)
        offset += size
    return found


def first(data, kind):
    return next((b for b in boxes(data) if b[2] == kind), None)


def tracks(data):
    """(trak offset, size, handler) for each track."""
    result = []
    for offset, size, kind, _ in boxes(data):
        if kind != b"trak":
            continue
        inner = data[offset:offset + size]
        hdlr = inner.find(b"hdlr")
        handler = inner[hdlr + 12:hdlr + 16] if hdlr >= 0 else b"????"
        result.append((offset, size, handler))
    return result


def put32(data, at, value):
    data[at:at + 4] = struct.pack(">I", value & 0xFFFFFFFF)


def mutations(name, original, rng):
    """Yields (label, kind, bytes) for one MP4 source."""
    size = len(original)
    moov = first(original, b"moov")
    mdat = first(original, b"mdat")
    # Truncations: anywhere in the file, and inside the header.
    for fraction in [0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99, 0.999]:
        cut = max(1, int(size * fraction))
        yield f"truncated-{fraction}", "truncation", original[:cut]
    if moov:
        for fraction in [0.1, 0.25, 0.5, 0.75, 0.9, 0.99]:
            cut = moov[0] + int(moov[1] * fraction)
            yield f"truncated-moov-{fraction}", "truncation", original[:cut]
    # Flipped bytes, in the header and in the media data.
    for region, box in [("moov", moov), ("mdat", mdat)]:
        if not box:
            continue
        for index in range(10):
            data = bytearray(original)
            count = [1, 2, 4, 8, 16, 32, 64, 3, 5, 128][index]
            for _ in range(count):
                at = rng.randrange(box[0] + 8, box[0] + box[1])
                data[at] ^= 1 << rng.randrange(8)
            yield f"flipped-{region}-{count}-bytes-{index}", "flipped bytes", bytes(data)
    # Boxes with wrong sizes.
    wanted = [b"ftyp", b"moov", b"mvhd", b"trak", b"tkhd", b"mdia", b"mdhd", b"hdlr", b"minf", b"stbl", b"stsd", b"stsz",
              b"stco", b"stts", b"avc1", b"avcC", b"mdat"]
    for kind in wanted:
        box = first(original, kind)
        if not box:
            continue
        for label, value in [("zero", 0), ("one", 1), ("huge", 0xFFFFFFF0), ("plus", box[1] + 4096), ("minus", max(0, box[1] - 9))]:
            data = bytearray(original)
            put32(data, box[0], value)
            yield f"box-{kind.decode()}-size-{label}", "wrong box size", bytes(data)
    # Tracks with no samples, no duration.
    for kind, field, label in [(b"stsz", 16, "stsz-no-samples"), (b"stco", 12, "stco-no-chunks"), (b"stts", 12, "stts-no-entries"),
                               (b"stsc", 12, "stsc-no-entries")]:
        for offset, _, found, _ in boxes(original):
            if found == kind:
                data = bytearray(original)
                put32(data, offset + field, 0)
                yield f"{label}-{offset}", "zero-size track", bytes(data)
                break
    for kind, label in [(b"mdhd", "mdhd-duration-zero"), (b"tkhd", "tkhd-duration-zero"), (b"mvhd", "mvhd-duration-zero")]:
        box = first(original, kind)
        if box and original[box[0] + 8] == 0:
            # Version 0: duration after creation, modification (and track ID and reserved for tkhd; timescale otherwise).
            at = box[0] + 8 + 4 + (20 if kind == b"tkhd" else 12)
            data = bytearray(original)
            put32(data, at, 0)
            yield label, "zero-size track", bytes(data)
    # Absurd picture dimensions: the track header (16.16 fixed) and the sample entry.
    tkhd = next((b for b in boxes(original) if b[2] == b"tkhd" and original[b[0] + 8] == 0), None)
    avc1 = first(original, b"avc1")
    for label, width, height in [("huge", 0xFFFF, 0xFFFF), ("zero", 0, 0), ("thin", 1, 0xFFFF), ("wide", 0x7FFF, 1)]:
        if tkhd:
            data = bytearray(original)
            at = tkhd[0] + 8 + 4 + 76
            put32(data, at, width << 16)
            put32(data, at + 4, height << 16)
            yield f"tkhd-dimensions-{label}", "absurd dimensions", bytes(data)
        if avc1:
            data = bytearray(original)
            at = avc1[0] + 8 + 24
            data[at:at + 4] = struct.pack(">HH", width, height)
            yield f"avc1-dimensions-{label}", "absurd dimensions", bytes(data)
    # A track removed (its box renamed "free", which players skip): audio-only, video-only, none.
    found = tracks(original)
    for keep, label in [(b"soun", "audio-only"), (b"vide", "video-only"), (None, "no-tracks")]:
        data = bytearray(original)
        removed = 0
        for offset, _, handler in found:
            if handler != keep:
                data[offset + 4:offset + 8] = b"free"
                removed += 1
        if removed and (keep is None or any(h == keep for _, _, h in found)):
            yield label, "track removed", bytes(data)


def image_mutations(original, rng):
    yield "intact", "image", original
    for fraction in [0.05, 0.1, 0.3, 0.5, 0.7, 0.9, 0.99]:
        yield f"truncated-{fraction}", "image truncation", original[:max(1, int(len(original) * fraction))]
    for index in range(8):
        data = bytearray(original)
        for _ in range([1, 2, 4, 8, 16, 32, 64, 128][index]):
            at = rng.randrange(8, len(data))
            data[at] ^= 1 << rng.randrange(8)
        yield f"flipped-{index}", "image flipped bytes", bytes(data)
    data = bytearray(original)
    data[16:24] = struct.pack(">II", 0x7FFFFFFF, 0x7FFFFFFF)  # IHDR width and height
    yield "dimensions-huge", "absurd dimensions", bytes(data)


def main():
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    output = sys.argv[1]
    seed = int(sys.argv[sys.argv.index("--seed") + 1]) if "--seed" in sys.argv else 14
    os.makedirs(output, exist_ok=True)
    manifest = []

    def write(source, label, kind, data, extension):
        name = f"{len(manifest):03d}-{os.path.splitext(os.path.basename(source))[0]}-{label}.{extension}"
        with open(os.path.join(output, name), "wb") as handle:
            handle.write(data)
        manifest.append({"file": name, "source": source, "kind": kind, "mutation": label, "bytes": len(data)})

    for source in SOURCES:
        rng = random.Random(f"{seed}:{source}")
        with open(os.path.join(ROOT, source), "rb") as handle:
            original = handle.read()
        for label, kind, data in mutations(source, original, rng):
            write(source, label, kind, data, "mp4")
    rng = random.Random(f"{seed}:{IMAGE}")
    with open(os.path.join(ROOT, IMAGE), "rb") as handle:
        image = handle.read()
    for label, kind, data in image_mutations(image, rng):
        write(IMAGE, label, kind, data, "png")
    with open(os.path.join(output, "manifest.json"), "w") as handle:
        json.dump({"seed": seed, "files": manifest}, handle, indent=1)
    print(f"make-corpus: {len(manifest)} files in {output} (seed {seed})")


if __name__ == "__main__":
    main()
