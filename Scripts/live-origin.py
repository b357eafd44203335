#!/usr/bin/env python3
"""A live HLS origin on loopback, for multi-view tests, benchmarks and the demo (issue 42).

It encodes the camera angles of one scene once, with ffmpeg, then serves them as live streams:
each angle's media playlist is a sliding window that moves on with the wall clock, as an encoder
on air would publish it. All angles come from one clock, so the same segment number carries the
same presentation timestamps in every angle (unless an angle is given a timestamp offset of its
own, as separate encoders would have), and each playlist carries EXT-X-PROGRAM-DATE-TIME.

Every frame shows, in its bottom strip, its frame number since the scene's start as a barcode:
sixteen 1/16-wide blocks, least significant bit on the left, white = 1. The top part tells the
angles apart (testsrc2 as is, mirrored, negated, rotated colours, ...), and each angle has a
tone of its own.

Faults are injected over HTTP, on the same port (each answers 200 with a JSON line):
  /control/drop?angle=N[&count=K]   the next K segments of angle N to enter its window are
                                    missing: listed, but answered 404 (a lost segment)
  /control/delay?angle=N&seconds=S[&count=K]
                                    the next K segment requests of angle N (1 by default) are
                                    each answered S s late
  /control/stall?angle=N&seconds=S  angle N's playlist stops moving for S s (the encoder
                                    stalls); then it goes on at the live edge
  /control/end?angle=N              angle N's playlist ends (EXT-X-ENDLIST): the angle is over
  /control/gone?angle=N             everything of angle N answers 404
  /control/fail?angle=N&status=S    everything of angle N answers HTTP status S (503, 500, ...)
  /control/restore?angle=N          undoes end and gone
  /control/state                    the window of each angle now

Usage:
  live-origin.py --dir DIR [--angles 4] [--size 640x360] [--fps 30] [--segment 1]
                 [--window 6] [--seconds 120] [--formats ts,ts,ts,fmp4]
                 [--pts-offsets 0,0,0,0] [--pdt-offsets 0,0,0,0] [--without-pdt] [--port 0]
                 [--start MONOTONIC] [--encode-only]
Prints one JSON line once it serves: {"port": ..., "angles": [url, ...], "media": folder,
"start": the scene's start on the monotonic clock, ...}. Killed and started again with the same
options, --port and --start, it serves the same live window as if it had never stopped (a server
restarted in front of an encoder that kept running). It serves until killed, or until the process
that started it ends. The encoded media is kept in a folder of DIR named by the options it depends
on, and reused when they ask for it again (--encode-only: encode, print, exit).
"""

import argparse
import datetime
import fcntl
import hashlib
import json
import os
import subprocess
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

# Each angle's look: a filter applied to the shared scene.
LOOKS = ["null", "hflip", "negate", "vflip", "hue=h=90", "hue=h=180", "hue=h=270",
         "hflip,negate", "vflip,negate"]
TONES = [440, 550, 660, 770, 880, 990, 1100, 1210, 1320]
BITS = 16


def barcode_filter(width, height, strip):
    """drawbox filters that write the frame number n as a barcode into the bottom strip."""
    block = width // BITS
    boxes = [f"drawbox=x=0:y={height - strip}:w={width}:h={strip}:color=black:t=fill"]
    for bit in range(BITS):
        boxes.append(f"drawbox=x={bit * block}:y={height - strip}:w={block}:h={strip}:color=white:t=fill:"
                     f"enable='eq(mod(floor(n/{2 ** bit}),2),1)'")
    return ",".join(boxes)


def encoding_key(args):
    """What the encoded media depends on (not the serving options)."""
    return json.dumps([args.angles, args.size, args.fps, args.segment, args.seconds, args.formats,
                       args.pts_offsets, BITS, 3], sort_keys=True)


def encode(args, directory):
    """Encodes every angle as a VOD HLS set under directory/angle-N, once per option set. Origins
    started at once with the same options (tests running in parallel) wait for one encode: the
    directory is locked while it runs."""
    key = encoding_key(args)
    os.makedirs(directory, exist_ok=True)
    stamp = os.path.join(directory, "encoded.json")
    with open(os.path.join(directory, ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if os.path.exists(stamp) and open(stamp).read() == key:
            return
        encode_locked(args, directory, key, stamp)


def encode_locked(args, directory, key, stamp):
    width, height = (int(v) for v in args.size.split("x"))
    strip = max(height // 8, 8)
    inputs = ["-f", "lavfi", "-i", f"testsrc2=size={args.size}:rate={args.fps}:duration={args.seconds}"]
    for angle in range(args.angles):
        inputs += ["-f", "lavfi", "-i", f"sine=frequency={TONES[angle % len(TONES)]}:duration={args.seconds}"]
    scene = f"[0:v]{barcode_filter(width, height, strip)},split={args.angles}" + "".join(
        f"[s{a}]" for a in range(args.angles))
    # The look applies to the picture above the strip only: crop it, change it, stack the strip back.
    looks = []
    for angle in range(args.angles):
        look = LOOKS[angle % len(LOOKS)]
        looks.append(f"[s{angle}]split[t{angle}][b{angle}];"
                     f"[t{angle}]crop={width}:{height - strip}:0:0,{look}[u{angle}];"
                     f"[b{angle}]crop={width}:{strip}:0:{height - strip}[l{angle}];"
                     f"[u{angle}][l{angle}]vstack[v{angle}]")
    graph = ";".join([scene] + looks)
    outputs = []
    for angle in range(args.angles):
        target = os.path.join(directory, f"angle-{angle}")
        os.makedirs(target, exist_ok=True)
        for name in os.listdir(target):
            os.remove(os.path.join(target, name))
        fmp4 = args.formats[angle] == "fmp4"
        outputs += ["-map", f"[v{angle}]", "-map", f"{angle + 1}:a",
                    "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p",
                    "-g", str(args.fps), "-keyint_min", str(args.fps), "-sc_threshold", "0",
                    "-force_key_frames", f"expr:gte(t,n_forced*{args.segment})",
                    "-c:a", "aac", "-b:a", "48k",
                    "-output_ts_offset", str(args.pts_offsets[angle]),
                    "-f", "hls", "-hls_time", str(args.segment), "-hls_playlist_type", "vod",
                    "-hls_flags", "independent_segments",
                    "-hls_segment_type", "fmp4" if fmp4 else "mpegts",
                    "-hls_segment_filename", os.path.join(target, "seg_%05d." + ("m4s" if fmp4 else "ts"))]
        if fmp4:
            outputs += ["-hls_fmp4_init_filename", "init.mp4"]
        outputs.append(os.path.join(target, "vod.m3u8"))
    command = ["ffmpeg", "-hide_banner", "-loglevel", "error", "-y"] + inputs + ["-filter_complex", graph] + outputs
    subprocess.run(command, check=True)
    with open(stamp, "w") as handle:
        handle.write(key)


def read_vod(path):
    """The segments of a VOD playlist: [(duration, file name)], and its init file (fMP4) or None."""
    segments, duration, init = [], None, None
    for line in open(path):
        line = line.strip()
        if line.startswith("#EXTINF:"):
            duration = float(line[len("#EXTINF:"):].split(",")[0])
        elif line.startswith("#EXT-X-MAP:"):
            init = line.split("URI=")[1].strip('"')
        elif line and not line.startswith("#"):
            segments.append((duration, line))
    return segments, init


class Angle:
    """One angle's segments and its injected faults. Guarded by the origin's lock."""

    def __init__(self, index, directory, fmt, pdt_offset):
        self.index = index
        self.directory = directory
        self.format = fmt
        self.pdt_offset = pdt_offset
        self.segments, self.init = read_vod(os.path.join(directory, "vod.m3u8"))
        self.missing = set()      # segment numbers answered 404
        self.drop_next = 0        # segments to make missing as they enter the window
        self.delay_next = 0.0     # seconds to hold each of the next delay_count segment requests
        self.delay_count = 0
        self.delays_answered = 0  # delayed requests answered so far (/control/state)
        self.stall_until = None   # monotonic time until which the window does not move
        self.stalled_edge = None  # the edge held while stalled
        self.ended_at = None      # the edge at which the angle ended
        self.gone = False
        self.failing = None       # an HTTP status everything of the angle answers (fail), or None


class Origin:
    def __init__(self, args, directory):
        self.args = args
        self.lock = threading.Lock()
        self.angles = [Angle(a, os.path.join(directory, f"angle-{a}"), args.formats[a], args.pdt_offsets[a])
                       for a in range(args.angles)]
        self.segment = args.segment
        # The scene's start on the system's monotonic clock (CLOCK_MONOTONIC, the same in every
        # process): an origin started again with --start carries on with the same window, as an
        # encoder that kept running behind a server that was restarted.
        self.start = args.start if args.start is not None else time.monotonic()
        self.start_wall = time.time() - (time.monotonic() - self.start)
        self.last_edge = [None] * args.angles

    def edge(self, angle, now):
        """The newest segment number of angle's window now (called under the lock)."""
        count = len(angle.segments)
        live = min(int((now - self.start) / self.segment) + self.args.window - 1, count - 1)
        if angle.ended_at is not None:
            live = min(live, angle.ended_at)
        if angle.stall_until is not None:
            if now < angle.stall_until:
                if angle.stalled_edge is None:
                    angle.stalled_edge = live
                live = angle.stalled_edge
            else:
                angle.stall_until, angle.stalled_edge = None, None
        previous = self.last_edge[angle.index]
        if previous is not None and live > previous:
            for number in range(previous + 1, live + 1):
                if angle.drop_next > 0:
                    angle.missing.add(number)
                    angle.drop_next -= 1
        self.last_edge[angle.index] = max(live, previous if previous is not None else live)
        return live

    def playlist(self, index):
        with self.lock:
            angle = self.angles[index]
            if angle.gone:
                return None
            now = time.monotonic()
            edge = self.edge(angle, now)
            first = max(0, edge - self.args.window + 1)
            ended = angle.ended_at is not None or edge == len(angle.segments) - 1
            lines = ["#EXTM3U", "#EXT-X-VERSION:7" if angle.init else "#EXT-X-VERSION:3",
                     f"#EXT-X-TARGETDURATION:{int(max(d for d, _ in angle.segments) + 0.999)}",
                     f"#EXT-X-MEDIA-SEQUENCE:{first}", "#EXT-X-INDEPENDENT-SEGMENTS"]
            if angle.init:
                lines.append(f'#EXT-X-MAP:URI="{angle.init}"')
            for number in range(first, edge + 1):
                duration, name = angle.segments[number]
                wall = self.start_wall + sum(d for d, _ in angle.segments[:number]) + angle.pdt_offset
                stamp = datetime.datetime.fromtimestamp(wall, datetime.timezone.utc)
                if not self.args.without_pdt:
                    lines.append("#EXT-X-PROGRAM-DATE-TIME:" + stamp.isoformat(timespec="milliseconds").replace("+00:00", "Z"))
                lines.append(f"#EXTINF:{duration:.6f},")
                lines.append(name)
            if ended:
                lines.append("#EXT-X-ENDLIST")
            return ("\n".join(lines) + "\n").encode()

    def segment_file(self, index, name):
        """The path of a segment or init file, the seconds to hold it, or None for 404."""
        with self.lock:
            angle = self.angles[index]
            if angle.gone:
                return None, 0
            if name == angle.init:
                return os.path.join(angle.directory, name), 0
            numbers = [n for n, (_, file) in enumerate(angle.segments) if file == name]
            if not numbers or numbers[0] in angle.missing:
                return None, 0
            delay = 0.0
            if angle.delay_count > 0:
                delay = angle.delay_next
                angle.delay_count -= 1
            return os.path.join(angle.directory, name), delay

    def control(self, action, query):
        with self.lock:
            if action == "state":
                now = time.monotonic()
                return {"angles": [{"angle": a.index, "edge": self.edge(a, now), "missing": sorted(a.missing),
                                    "ended": a.ended_at is not None, "gone": a.gone,
                                    "delays_left": a.delay_count, "delays_answered": a.delays_answered}
                                   for a in self.angles]}
            index = int(query.get("angle", ["-1"])[0])
            if not 0 <= index < len(self.angles):
                raise ValueError(f"no angle {index}")
            angle = self.angles[index]
            seconds = float(query.get("seconds", ["0"])[0])
            if action == "drop":
                angle.drop_next += int(query.get("count", ["1"])[0])
            elif action == "delay":
                angle.delay_next = seconds
                angle.delay_count = int(query.get("count", ["1"])[0])
            elif action == "stall":
                angle.stall_until = time.monotonic() + seconds
            elif action == "end":
                angle.ended_at = self.edge(angle, time.monotonic())
            elif action == "gone":
                angle.gone = True
            elif action == "fail":
                status = int(query.get("status", ["503"])[0])
                if not 400 <= status <= 599:
                    raise ValueError(f"status {status} is no HTTP error")
                angle.failing = status
            elif action == "restore":
                angle.ended_at, angle.gone, angle.failing = None, False, None
            else:
                raise ValueError(f"no action {action}")
            return {"ok": action, "angle": index}


def serve(origin, port):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *_):
            pass

        def answer(self, status, body=b"", kind="text/plain"):
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-cache")
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

        def do_HEAD(self):
            self.do_GET()

        def do_GET(self):
            url = urllib.parse.urlparse(self.path)
            parts = [p for p in url.path.split("/") if p]
            try:
                if parts[:1] == ["control"] and len(parts) == 2:
                    body = json.dumps(origin.control(parts[1], urllib.parse.parse_qs(url.query)))
                    return self.answer(200, (body + "\n").encode(), "application/json")
                if len(parts) == 2 and parts[0].startswith("angle-"):
                    index = int(parts[0][len("angle-"):])
                    if not 0 <= index < len(origin.angles):
                        return self.answer(404)
                    with origin.lock:
                        failing = origin.angles[index].failing
                    if failing is not None:
                        return self.answer(failing)
                    if parts[1] == "live.m3u8":
                        body = origin.playlist(index)
                        if body is None:
                            return self.answer(404)
                        return self.answer(200, body, "application/vnd.apple.mpegurl")
                    path, delay = origin.segment_file(index, parts[1])
                    if path is None:
                        return self.answer(404)
                    if delay > 0:
                        time.sleep(delay)
                    with open(path, "rb") as handle:
                        data = handle.read()
                    self.answer(200, data, "video/mp4" if path.endswith((".m4s", ".mp4")) else "video/mp2t")
                    if delay > 0:
                        with origin.lock:
                            origin.angles[index].delays_answered += 1
                    return None
                return self.answer(404)
            except (ValueError, IndexError) as error:
                return self.answer(400, (json.dumps({"error": str(error)}) + "\n").encode(), "application/json")
            except (BrokenPipeError, ConnectionResetError):
                pass

    class Server(ThreadingHTTPServer):
        daemon_threads = True
        allow_reuse_address = True

        def handle_error(self, request, client_address):
            pass  # a player that hung up mid-answer (it seeked, or shut down) is not news

    server = Server(("127.0.0.1", port), Handler)
    return server


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dir", required=True, help="where the encoded angles are kept")
    parser.add_argument("--angles", type=int, default=4)
    parser.add_argument("--size", default="640x360")
    parser.add_argument("--fps", type=int, default=30)
    parser.add_argument("--segment", type=float, default=1.0, help="segment duration in seconds")
    parser.add_argument("--window", type=int, default=6, help="segments in each live playlist")
    parser.add_argument("--seconds", type=int, default=120, help="length of the encoded scene")
    parser.add_argument("--formats", default="", help="ts or fmp4 per angle, comma-separated (default: all ts)")
    parser.add_argument("--pts-offsets", default="", help="timestamp offset per angle in seconds (separate encoders)")
    parser.add_argument("--pdt-offsets", default="", help="PROGRAM-DATE-TIME offset per angle in seconds")
    parser.add_argument("--without-pdt", action="store_true", help="no EXT-X-PROGRAM-DATE-TIME in the playlists")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--start", type=float, default=None,
                        help="the scene's start on the monotonic clock (CLOCK_MONOTONIC seconds; default: now), "
                             "to start an origin again where a killed one was")
    parser.add_argument("--encode-only", action="store_true", help="encode (or find) the media, print {\"media\": DIR} and exit")
    args = parser.parse_args()
    if not 1 <= args.angles <= len(LOOKS):
        parser.error(f"--angles must be 1 to {len(LOOKS)}")

    def per_angle(text, default, kind):
        values = [kind(v) for v in text.split(",")] if text else []
        if len(values) not in (0, args.angles):
            parser.error(f"give one value per angle ({args.angles}): {text}")
        return values or [default] * args.angles

    args.formats = per_angle(args.formats, "ts", str)
    if any(f not in ("ts", "fmp4") for f in args.formats):
        parser.error(f"--formats takes ts or fmp4: {args.formats}")
    args.pts_offsets = per_angle(args.pts_offsets, 0.0, float)
    args.pdt_offsets = per_angle(args.pdt_offsets, 0.0, float)
    # Each option set's media in a folder of its own under --dir, named by what it depends on.
    directory = os.path.join(os.path.abspath(args.dir), hashlib.sha1(encoding_key(args).encode()).hexdigest()[:12])
    encode(args, directory)
    if args.encode_only:
        print(json.dumps({"media": directory}), flush=True)
        return
    origin = Origin(args, directory)
    server = serve(origin, args.port)
    port = server.server_address[1]
    print(json.dumps({"port": port, "segment": args.segment, "window": args.window, "fps": args.fps,
                      "angles": [f"http://127.0.0.1:{port}/angle-{a}/live.m3u8" for a in range(args.angles)],
                      "control": f"http://127.0.0.1:{port}/control/", "media": directory,
                      "start": origin.start}), flush=True)
    # An origin outlives nothing: when the process that started it goes away without stopping
    # it (a test runner that crashed), it is reparented, and it ends.
    parent = os.getppid()

    def watch_parent():
        while os.getppid() == parent:
            time.sleep(1)
        server.shutdown()
    threading.Thread(target=watch_parent, daemon=True).start()
    try:
        server.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
