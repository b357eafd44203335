#!/usr/bin/env python3
"""Writes the seed inputs of every fuzz target to Fuzz/Corpus/<target>/seed-* (committed; `make
test` replays them, `make fuzz` starts from them). Real examples where the bytes come from a real
producer: HLS playlists and segments written by ffmpeg (MPEG-TS and fMP4, PROGRAM-DATE-TIME, byte
ranges), MP4 headers of files ffmpeg wrote; the others as the protocols define them (HTTP heads,
Syncplay's lines as syncplay-server 1.6.9 sends them, MPRIS requests in the target's own
encoding). Files named regression-* (inputs a fuzzer found) are left alone.
  Scripts/make-fuzz-seeds.py
"""
import os
import random
import shutil
import struct
import subprocess
import sys
import tempfile

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
CORPUS = os.path.join(ROOT, "Fuzz", "Corpus")


def write(target, name, data):
    folder = os.path.join(CORPUS, target)
    os.makedirs(folder, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(folder, "seed-" + name), "wb") as f:
        f.write(data)


def clear_seeds():
    for target in os.listdir(CORPUS) if os.path.isdir(CORPUS) else []:
        for name in os.listdir(os.path.join(CORPUS, target)):
            if name.startswith("seed-"):
                os.remove(os.path.join(CORPUS, target, name))


def u16(v): return struct.pack(">H", v)
def u32(v): return struct.pack(">I", v & 0xFFFFFFFF)
def u64(v): return struct.pack(">Q", v & 0xFFFFFFFFFFFFFFFF)
def f64(v): return struct.pack(">d", v)
def counted(data):
    data = data.encode() if isinstance(data, str) else data
    return u16(len(data)) + data


def ffmpeg(*args):
    subprocess.run(["ffmpeg", "-hide_banner", "-loglevel", "error", "-y", *args], check=True)


def hls(tmp):
    """MPEG-TS and fMP4 HLS angles, a byte-range one, and an MP4 with its moov first and last."""
    source = ["-f", "lavfi", "-i", "testsrc2=size=96x64:rate=25:duration=3", "-f", "lavfi", "-i",
              "sine=frequency=440:duration=3", "-c:v", "libx264", "-g", "25", "-pix_fmt", "yuv420p",
              "-c:a", "aac", "-b:a", "32k"]
    ts = os.path.join(tmp, "ts")
    os.makedirs(ts)
    ffmpeg(*source, "-output_ts_offset", "7", "-f", "hls", "-hls_time", "1", "-hls_list_size", "0",
           "-hls_flags", "program_date_time", os.path.join(ts, "index.m3u8"))
    mp4 = os.path.join(tmp, "fmp4")
    os.makedirs(mp4)
    ffmpeg(*source, "-f", "hls", "-hls_time", "1", "-hls_list_size", "0", "-hls_segment_type", "fmp4",
           "-hls_flags", "program_date_time", os.path.join(mp4, "index.m3u8"))
    single = os.path.join(tmp, "single")
    os.makedirs(single)
    ffmpeg(*source, "-f", "hls", "-hls_time", "1", "-hls_list_size", "0", "-hls_flags", "single_file",
           os.path.join(single, "index.m3u8"))
    for name in ("faststart", "plain"):
        flags = ["-movflags", "+faststart"] if name == "faststart" else []
        ffmpeg(*source, *flags, os.path.join(tmp, name + ".mp4"))
    return ts, mp4, single


def read(path, limit=None):
    with open(path, "rb") as f:
        return f.read(limit) if limit else f.read()


def main():
    if shutil.which("ffmpeg") is None:
        sys.exit("make-fuzz-seeds: ffmpeg is needed (apt-get install ffmpeg)")
    clear_seeds()
    with tempfile.TemporaryDirectory() as tmp:
        ts, mp4, single = hls(tmp)

        # hls-playlist: ffmpeg's playlists, a multivariant one, odd but valid forms.
        write("hls-playlist", "ffmpeg-ts-program-date-time.m3u8", read(os.path.join(ts, "index.m3u8")))
        write("hls-playlist", "ffmpeg-fmp4-map.m3u8", read(os.path.join(mp4, "index.m3u8")))
        write("hls-playlist", "ffmpeg-single-file-byteranges.m3u8", read(os.path.join(single, "index.m3u8")))
        write("hls-playlist", "multivariant.m3u8",
              "#EXTM3U\n#EXT-X-INDEPENDENT-SEGMENTS\n"
              "#EXT-X-STREAM-INF:BANDWIDTH=1280000,RESOLUTION=640x360,CODECS=\"avc1.4d401e,mp4a.40.2\"\n"
              "low/index.m3u8\n#EXT-X-STREAM-INF:BANDWIDTH=2560000,RESOLUTION=1280x720\nhttp://cdn.invalid/hi/index.m3u8\n")
        write("hls-playlist", "live-discontinuity-crlf.m3u8",
              "#EXTM3U\r\n#EXT-X-VERSION:6\r\n#EXT-X-TARGETDURATION:2\r\n#EXT-X-MEDIA-SEQUENCE:4294967290\r\n"
              "#EXT-X-DISCONTINUITY-SEQUENCE:3\r\n#EXT-X-PROGRAM-DATE-TIME:2026-11-27T20:13:13.250+01:00\r\n"
              "#EXTINF:2.002,\r\nseg-a.ts\r\n#EXT-X-DISCONTINUITY\r\n#EXT-X-MAP:URI=\"init-b.mp4\",BYTERANGE=\"720@0\"\r\n"
              "#EXT-X-PROGRAM-DATE-TIME:2026-11-27T19:13:20Z\r\n#EXTINF:1.5,title, with comma\r\n"
              "#EXT-X-BYTERANGE:1000@720\r\nseg-b.mp4\r\n#EXTINF:1.5\r\n#EXT-X-BYTERANGE:1000\r\nseg-b.mp4\r\n")

        # segment-timestamps: mode 0 (a segment alone), 1 (init section + fragment), 2 and 3 (values).
        segments = sorted(n for n in os.listdir(ts) if n.endswith(".ts"))
        write("segment-timestamps", "ffmpeg-ts-offset-7s.ts", b"\x00" + read(os.path.join(ts, segments[1])))
        fragments = sorted(n for n in os.listdir(mp4) if n.endswith(".m4s"))
        init = read(os.path.join(mp4, "init.mp4"))
        write("segment-timestamps", "ffmpeg-fmp4-init-and-fragment", b"\x01" + u16(len(init)) + init
              + read(os.path.join(mp4, fragments[1])))
        write("segment-timestamps", "ffmpeg-fmp4-init-then-fragment-as-one", b"\x00" + init + read(os.path.join(mp4, fragments[0])))
        # Mode 2: track 1, 90 kHz, movie scale 1000, elst v0 with an empty edit and a media time,
        # tfdt v1 at 10 s, trun v1 with a composition offset of -2 frames.
        write("segment-timestamps", "values-fmp4-edit-list",
              b"\x02" + u32(1) + u32(90000) + u32(1000) + b"\x00" + b"\x02"
              + b"\x01" + u64(500) + b"\x00" + u64(10000) + u64(1800)
              + b"\x01" + u64(900000) + b"\x01" + b"\x01" + u32(-6000))
        # Mode 3: two packets, one near the 33-bit wrap, with an adaptation field.
        write("segment-timestamps", "values-ts-near-wrap",
              b"\x03" + b"\x01" + u64(8589934000) + u16(0x100) + b"\x00" + u64(900000) + u16(0x101) + b"\x07")

        # cache-http: mode 0 (header lines, then the download's body chunks), 1 (Content-Range), 2 (byte ranges).
        heads = {
            "206-partial": "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes 1000-1999/50000\r\nContent-Length: 1000\r\n"
                           "ETag: \"abc\"\r\nLast-Modified: Fri, 27 Nov 2026 20:00:00 GMT\r\n\r\n",
            "200-ignores-range": "HTTP/1.1 200 OK\r\nContent-Length: 50000\r\nAccept-Ranges: none\r\n\r\n",
            "redirect-then-206": "HTTP/1.1 302 Found\r\nLocation: http://other.invalid/k\r\nContent-Length: 0\r\n\r\n"
                                 "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes 0-99/*\r\n\r\n",
            "100-then-416": "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 416 Range Not Satisfiable\r\nContent-Range: bytes */4096\r\n\r\n",
            "chunked-no-length": "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Type: video/mp4\r\n\r\n",
        }
        for name, head in heads.items():
            body = b"\x01" + u32(1000) + u32(1000) + b"\x03" + u16(600) + u16(400) + u16(0) + b"\x01"
            write("cache-http", "head-" + name, b"\x00" + counted(head) + body)
        write("cache-http", "content-range-values", b"\x01" + u64(123456789) + u64(65535) + b"\x01" + u64(17))
        write("cache-http", "byte-ranges", b"\x02" + b"\x06" + bytes([0, 10, 40, 8, 18, 30, 200, 63, 5, 1, 255, 1]) + b"\x64")

        # mp4-header: a file's first 64 KB (mode 0), and values (mode 1).
        write("mp4-header", "ffmpeg-faststart", b"\x00" + read(os.path.join(tmp, "faststart.mp4"), 65536))
        write("mp4-header", "ffmpeg-moov-last", b"\x00" + read(os.path.join(tmp, "plain.mp4"), 65536))
        write("mp4-header", "values-mvhd-v1", b"\x01" + counted(b"isom\x00\x00\x02\x00") + counted(b"\x00" * 40)
              + b"\x01" + u32(600) + u64(7200))

    # syncplay-wire: lines as syncplay-server 1.6.9 sends them (mode 0), and values (mode 1).
    lines = {
        "hello": '{"Hello": {"username": "alice_1", "room": {"name": "movie night"}, "version": "1.2.255", '
                 '"realversion": "1.6.9", "features": {"isolateRooms": false, "readiness": true, "managedRooms": true, '
                 '"persistentRooms": false, "chat": true, "maxChatMessageLength": 150, "maxUsernameLength": 150, '
                 '"maxRoomNameLength": 35, "maxFilenameLength": 250}, "motd": ""}}',
        "state": '{"State": {"ping": {"latencyCalculation": 1795806793.25, "serverRtt": 0.012}, "playstate": '
                 '{"position": 12.5, "paused": false, "doSeek": false, "setBy": "bob"}, "ignoringOnTheFly": {"server": 1}}}',
        "set-user-joined": '{"Set": {"user": {"bob": {"room": {"name": "movie night"}, "event": {"joined": true}}}}}',
        "set-file-and-ready": '{"Set": {"user": {"bob": {"room": {"name": "movie night"}, "file": {"name": "clip.mp4", '
                              '"duration": 30.0, "size": 1048576}}}, "ready": {"username": "bob", "isReady": true, '
                              '"manuallyInitiated": false}}}',
        "list": '{"List": {"movie night": {"alice_1": {"position": 0, "file": {}, "controller": false, "isReady": null, '
                '"features": {}}, "bob": {"position": 12.5, "file": {}}}}}',
        "error-chat-tls": '{"Error": {"message": "Wrong password"}, "Chat": {"username": "bob", "message": "hi \\u00e9"}, '
                          '"TLS": {"startTLS": "false"}}',
    }
    for name, line in lines.items():
        write("syncplay-wire", "server-" + name, b"\x00" + line.encode() + b"\r\n")
    write("syncplay-wire", "values-state-and-hello", b"\x01" + f64(12.5) + f64(1795806793.25) + f64(0.02) + b"\x01\x01"
          + b"\x01" + u64(1795806790) + b"\x02\x00" + counted("alice") + counted("movie night"))

    # mpris-request: events that load and play an item, then requests (the target's encoding).
    rng = random.Random(49)
    loaded = (b"\x04"                                                   # four events
              + u16(10) + b"\x03" + counted("/media/clip.mp4") + b"\x01" + b"\x02" + b"\x00" + b"\x01" + counted("Clip")
              + u16(10) + b"\x00" + b"\x01\x03"                         # loading -> playing
              + u16(500) + b"\x02" + b"\x00" + f64(30.0)                # duration 30 s
              + u16(250) + b"\x08" + u64(1) + b"\x01" + u64(0)          # playlist 0 of 1... (count from int64)
              + u16(0xFFFF))                                            # every control
    requests = {
        "seek-forward": b"\x01" + b"\x06" + u64(5_000_000),
        "seek-past-the-end": b"\x01" + b"\x06" + u64(9_000_000_000_000_000_000 & 0x7FFFFFFFFFFFFFFF),
        "set-position-current-track": b"\x01" + b"\x07" + u64(12_000_000) + b"\x01",
        "set-position-stale-track": b"\x01" + b"\x07" + u64(1) + b"\x00" + counted("/org/playerkit/track/0"),
        "rate-and-volume": b"\x02" + b"\x09" + b"\x00" + f64(1.5) + b"\x00\x00" + b"\x08" + b"\x00" + f64(0.4),
        "loop-and-open": b"\x02" + b"\x0a" + b"\x01" + b"\x00\x00" + b"\x0c" + counted("file:///etc/passwd"),
    }
    for name, request in requests.items():
        write("mpris-request", name, loaded + request + b"\x00\x00" + counted("main"))
    write("mpris-request", "random", bytes(rng.randrange(256) for _ in range(256)))


if __name__ == "__main__":
    main()
