#!/usr/bin/env python3
"""Live camera angles kept in lockstep, three ways side by side in one run (`make bench-multiview`):

  PlayerKit     playerkit-multiview --headless (release build): a MultiView over one Player per angle
  uncorrected   a plain C client of libmpv (Benchmarks/c/multiview.c plain): one mpv core per angle,
                each playing on as it joined (what N players side by side do without a group)
  autosync      the same C client with RaceControl's approach (multiview.c autosync): each core
                keeps a fixed lag (3 s) behind its cache's end, trimming its speed and seeking when
                more than 1 s off

Each run: 4 live angles at 640x360, 30 fps, from Scripts/live-origin.py on loopback (one encoder's
clock; 1 s segments, 6 in the window), joined 0, 0.7, 1.5 and 3 s after the start; at 27 s the
next segment of angle 2 goes missing (404), at 37 s angle 3's playlist stalls for 4 s, at 46 s
the next two segment requests of angle 4 are each answered 4 s late (two stalls in a row). Every
process writes each angle's frame changes (the media time of the new frame and the monotonic time
it changed; mpv's video-timing-offset=0 makes that the moment the frame is due), and this script
measures the same thing for all three: at each frame change of angle 1, the spread of the moments
the angles show that frame (each angle's moment interpolated between its own frame changes).

  aligned after     from the last join until the spread stays under 5 ms for a second
  p50/p95/p99       the spread over the 20 s after that (before the faults)
  after a fault     from the source recovering (the frame after the missing segment; the stalled
                    playlist moving again; the origin answering the second delayed segment) until
                    the faulted angle is back in step with the others for a second: its moment
                    for each frame against the others' median moment for it, as a running median
                    of 5 frames, under 5 ms (the group's spread is not the measure: on a machine
                    whose frames come unevenly it goes over 5 ms now and then, faults or none)
  CPU per angle     the process's CPU time over the run, per angle and second of play

On rendered frames: PlayerKit's faulted run is made RUNS times more, and the on-demand ones once
more each, with each angle also rendering its frames (160x90, software, through a FrameOutput),
and the app reads, from each frame's pixels, the frame number the origin burned into
its bottom strip (a barcode), noting the moment its frame handler got the frame
(`--rendered-log`). The same figures, computed from those (number over frame rate, moment)
pairs, are in a table of their own: what a viewer of the rendered frames sees, from nothing
PlayerKit reports about positions. Beside them, the plain C client of the render API
(Benchmarks/c/frames.c sw, FRAMES_LOG) renders the same way, one core alone and two at once on
one file, uncorrected: the floor when rendering.

PlayerKit's faulted run is made RUNS (3) times, each in a row of its own, so the table shows how
much the figures move from run to run.

On demand: two local files (640x360, 30 fps, 30 s, one testsrc2 scene, made once with ffmpeg in
.build-bench), `playerkit-multiview --headless --json --seconds 20` against two uncorrected C cores
started together: the app's own figure (the worst member's skew_p99_ms on its last line, over its
10 s window) and the spread measured from the frame log over the 20 s after both were aligned.

Then the most angles PlayerKit keeps in sync on this machine: 4, 6, 8 and 9 angles joined together
for 25 s; in sync when the spread's p99 over the last 15 s is within a frame (33 ms) and mpv
dropped at most 1% of the frames.

  Benchmarks/multiview.py            prints the table
  Benchmarks/multiview.py --write    also records the tables (Documentation/Figures/multiview.json) and
                                     renders them into the multi-view part of Documentation/Performance.md
  MULTIVIEW_LOGS=DIR                 keeps every run's frame log in DIR (JSON lines: player, media, t)
"""
import argparse
import bisect
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WORK = os.path.join(ROOT, ".build-bench")
DOC = os.path.join(ROOT, "Documentation", "Performance.md")
MARKERS = ("<!-- MULTIVIEW START -->", "<!-- MULTIVIEW END -->")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchkit import write_figures  # noqa: E402
JOINS = [0.0, 0.7, 1.5, 3.0]
SECONDS = 64
MISSING_AT, STALL_AT, STALL_FOR = 27.0, 37.0, 4.0
# Two stalls in a row: the next two segment requests of angle 4 each answered 4 s late.
TWO_STALLS_AT, TWO_STALLS_DELAY = 46.0, 4.0
IN_STEP = 0.005
FRAME = 1 / 30
RUNS = 3


def say(text):
    sys.stderr.write(f"[multiview] {text}\n")
    sys.stderr.flush()


class Origin:
    """Scripts/live-origin.py with `angles` angles at 640x360 (encoded once, kept in .build-bench)."""
    # The scene's length: it repeats, frame numbers and all, every SECONDS s.
    SECONDS = 150

    def __init__(self, angles):
        directory = os.path.join(WORK, "live-origin-multiview")
        self.process = subprocess.Popen(
            [sys.executable, os.path.join(ROOT, "Scripts", "live-origin.py"), "--dir", directory, "--angles", str(angles),
             "--size", "640x360", "--fps", "30", "--seconds", str(self.SECONDS), "--segment", "1", "--window", "6"],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        line = self.process.stdout.readline()
        if not line:
            raise SystemExit("the live origin did not start (ffmpeg and python3 are needed)")
        info = json.loads(line)
        self.angles = info["angles"]
        self.control_url = info["control"]

    def control(self, action, angle, **query):
        arguments = "&".join([f"angle={angle}"] + [f"{key}={value}" for key, value in query.items()])
        urllib.request.urlopen(f"{self.control_url}{action}?{arguments}", timeout=10).read()

    def delays_answered(self, angle):
        """How many delayed segment requests of `angle` the origin has answered."""
        state = json.loads(urllib.request.urlopen(f"{self.control_url}state", timeout=10).read())
        return state["angles"][angle].get("delays_answered", 0)

    def stop(self):
        self.process.kill()
        self.process.wait()


def faults(origin, start):
    """Injects the run's faults at their moments after `start` (a thread of its own). Returns a
    dict the thread fills with "flowing": the moment (seconds after `start`) the origin answered
    the second of the two delayed segments, when the data flows again for good."""
    moments = {}

    def inject():
        time.sleep(max(0, start + MISSING_AT - time.monotonic()))
        origin.control("drop", 1)
        time.sleep(max(0, start + STALL_AT - time.monotonic()))
        origin.control("stall", 2, seconds=STALL_FOR)
        time.sleep(max(0, start + TWO_STALLS_AT - time.monotonic()))
        origin.control("delay", 3, seconds=TWO_STALLS_DELAY, count=2)
        deadline = time.monotonic() + 4 * TWO_STALLS_DELAY
        while time.monotonic() < deadline:
            if origin.delays_answered(3) >= 2:
                moments["flowing"] = time.monotonic() - start
                return
            time.sleep(0.02)
    thread = threading.Thread(target=inject, daemon=True)
    thread.start()
    return moments


def cpu_seconds(pid):
    """utime + stime of a process, in seconds."""
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def read_log(path):
    frames, dropped = {}, {}
    for line in open(path):
        item = json.loads(line)
        if "dropped" in item:
            dropped = item["dropped"]
        else:
            frames.setdefault(item["player"], []).append((item["media"], item["t"]))
    for values in frames.values():
        values.sort(key=lambda frame: frame[1])
    return frames, dropped


def read_rendered(path, period=None):
    """A `--rendered-log` as a frame log: each angle's rendered frames as (media, t), the media
    time being the burned-in frame number over the frame rate (the scene's time, the same in
    every angle), a frame rendered again left out. The origin's scene repeats every `period` s:
    each number is unwrapped to the repetition nearest the first frame's plus the time since.
    Also the count of frames whose strip held no barcode, by angle."""
    records, unreadable = [], {}
    for line in open(path):
        item = json.loads(line)
        if "unreadable" in item:
            unreadable = item["unreadable"]
        else:
            records.append((item["player"], item["frame"] * FRAME, item["t"]))
    records.sort(key=lambda record: record[2])
    frames = {}
    if records:
        _, first_media, first_t = records[0]
        for player, media, t in records:
            if period:
                media += period * round((first_media + (t - first_t) - media) / period)
            shown = frames.setdefault(player, [])
            if not shown or abs(shown[-1][0] - media) > 1e-6:
                shown.append((media, t))
    return frames, unreadable


def moment(frames, media):
    """When `frames` (one angle's (media, t), in order) showed `media`: interpolated between the
    frame changes around it; None across a pause, a jump or a freeze, or outside the log."""
    low, high = 0, len(frames)
    while low < high:
        middle = (low + high) // 2
        if frames[middle][0] < media - 1e-6:
            low = middle + 1
        else:
            high = middle
    if low == 0 or low >= len(frames):
        return None
    (m0, t0), (m1, t1) = frames[low - 1], frames[low]
    if m1 - m0 >= 0.1 or t1 - t0 >= 0.1 or m1 <= m0:
        return None
    # Media is monotonic in a log only between seeks: the angle must show `media` at most once.
    return t0 + (media - m0) / (m1 - m0) * (t1 - t0)


def spreads(frames, ids):
    """(t, spread) at each frame change of the first angle that every angle showed."""
    reference = frames.get(ids[0], [])
    result = []
    for media, t in reference:
        moments = []
        for player in ids:
            found = moment(frames.get(player, []), media)
            if found is None:
                break
            moments.append(found)
        if len(moments) == len(ids):
            result.append((t, max(moments) - min(moments)))
    return result


def runs(frames):
    """One angle's frame changes cut where it paused, jumped or froze (a seek, a hold, a stall)."""
    pieces, piece = [], []
    for frame in frames:
        if piece and not (0 < frame[0] - piece[-1][0] < 0.1 and frame[1] - piece[-1][1] < 0.1):
            pieces.append(piece)
            piece = []
        piece.append(frame)
    return pieces + ([piece] if piece else [])


def wander(points, window=0.5):
    """Each (t, value)'s distance from the median of the values within `window` s around it: the
    part of a series that changes from one frame to the next, without what drifts slowly (which a
    correction can take away, and which a speed trim changes)."""
    times = [t for t, _ in points]
    result = []
    for t, value in points:
        low, high = bisect.bisect_left(times, t - window), bisect.bisect_right(times, t + window)
        if high - low < 10:
            continue
        result.append(abs(value - statistics.median(v for _, v in points[low:high])))
    return result


def frame_jitter(frames, start, end):
    """The floor of one angle: how far its frame changes stray from their due times (the moment
    each frame changed minus its media time, against the median of that over the second around
    it), p99 in ms, over [start, end)."""
    residuals = []
    for piece in runs([f for f in frames if start <= f[1] < end]):
        residuals += wander([(t, t - media) for media, t in piece])
    return percentile(residuals, 0.99) and percentile(residuals, 0.99) * 1000


def spread_floor(frames, ids, start, end):
    """The floor of the angles' spread: the part of the moments they show the same frame that
    changes from frame to frame (each angle's signed difference from the first, against the
    median of it over the second around; the spread of those, the first's being 0), p99 in ms,
    over [start, end). No correction acting on skews measured over frames can take it away: it
    is their frames' own unevenness."""
    reference = [f for f in frames.get(ids[0], []) if start <= f[1] < end]
    residuals = []
    for piece in runs(reference):
        rows = []
        for media, t in piece:
            others = [moment(frames.get(i, []), media) for i in ids[1:]]
            if None not in others:
                rows.append((t, [other - t for other in others]))
        if len(rows) < 10:
            continue
        times = [t for t, _ in rows]
        for t, differences in rows:
            low, high = bisect.bisect_left(times, t - 0.5), bisect.bisect_right(times, t + 0.5)
            if high - low < 10:
                continue
            errors = [0.0] + [d - statistics.median(r[1][k] for r in rows[low:high]) for k, d in enumerate(differences)]
            residuals.append(max(errors) - min(errors))
    return percentile(residuals, 0.99) and percentile(residuals, 0.99) * 1000


def skew_agreement(frames, line, window=10.0):
    """How far the app's MemberSkew p99 (a `skews` line: each member's skew_p99_ms over its last
    `window` s) is from the same member's frames: their frame jitter p99 over the same `window`
    s, read from the frame log. The worst member's difference, in ms (positive: MemberSkew says
    more than the frames show); None without a line or a member's frames."""
    if not line:
        return None
    differences = []
    for member in line.get("members", []):
        reported = member.get("skew_p99_ms")
        if reported is None or not member.get("in_group", True):
            continue
        measured = frame_jitter(frames.get(member["id"], []), line["t"] - window, line["t"])
        if measured is None:
            return None
        differences.append(reported - measured)
    return max(differences, key=abs) if differences else None


def member_offsets(frames, member, ids):
    """(t, offset) at each frame `member` showed that every other angle showed too: its moment
    minus the median of the others' moments for that frame."""
    others = [player for player in ids if player != member]
    result = []
    for media, t in frames.get(member, []):
        moments = [found for found in (moment(frames.get(player, []), media) for player in others) if found is not None]
        if others and len(moments) == len(others):
            result.append((t, t - statistics.median(moments)))
    return result


def member_back(frames, member, ids, after, width=5):
    """The first moment at or after `after` from which `member` stays in step with the other
    angles for a second: the running median of its last `width` offsets (``member_offsets``)
    under IN_STEP. A single frame shown late (each angle's own frame timing, the floor) does not
    move a median of five; a member still held, seeking or catching up does."""
    offsets = member_offsets(frames, member, ids)
    smoothed = [(t, abs(statistics.median(o for (_, o) in offsets[max(0, k - width + 1):k + 1])))
                for k, (t, _) in enumerate(offsets)]
    return settled(smoothed, after)


def settled(series, after):
    """The first moment at or after `after` from which the spread stays under IN_STEP for a second."""
    for index, (t, _) in enumerate(series):
        if t < after:
            continue
        window = [s for (u, s) in series[index:] if u < t + 1.0]
        if len(window) >= 20 and all(s < IN_STEP for s in window):
            return t
    return None


def percentile(values, fraction):
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def missing_segment_recovery(frames, player, after):
    """When `player` crossed the missing segment: its first frame after a jump or a freeze."""
    values = [f for f in frames.get(player, []) if f[1] >= after]
    for (m0, t0), (m1, t1) in zip(values, values[1:]):
        if m1 - m0 > 0.25 or t1 - t0 > 0.25:
            return t1
    return None


def analyse(log, cpu, wall, angles, faulted=True, moments=None, skew_lines=None):
    frames, dropped = read_log(log)
    return analyse_frames(frames, dropped, cpu, wall, angles, faulted, moments, skew_lines)


def analyse_frames(frames, dropped, cpu, wall, angles, faulted=True, moments=None, skew_lines=None):
    ids = [f"angle-{index + 1}" for index in range(angles)]
    series = spreads(frames, ids)
    last_join = max(JOINS) if faulted else 0.0
    aligned = settled([(t, s) for (t, s) in series if t < MISSING_AT], last_join)
    start = aligned if aligned is not None else last_join + 2
    steady = [s for (t, s) in series if start <= t < min(start + 20, MISSING_AT)]
    result = {
        "aligned_after_s": None if aligned is None else aligned - last_join,
        "steady_seconds": min(start + 20, MISSING_AT) - start,
        "p50_ms": percentile(steady, 0.5) and percentile(steady, 0.5) * 1000,
        "p95_ms": percentile(steady, 0.95) and percentile(steady, 0.95) * 1000,
        "p99_ms": percentile(steady, 0.99) and percentile(steady, 0.99) * 1000,
        "jitter_p99_ms": max((j for j in (frame_jitter(frames.get(i, []), start, min(start + 20, MISSING_AT)) for i in ids)
                              if j is not None), default=None),
        "floor_p99_ms": spread_floor(frames, ids, start, min(start + 20, MISSING_AT)),
        # The app's MemberSkew at the end of the steady window, against the frames of its window.
        "skew_vs_frames_ms": skew_agreement(frames, next((l for l in reversed(skew_lines or [])
                                                           if l["t"] <= min(start + 20, MISSING_AT)), None)),
        "samples": len(steady),
        "cpu_per_angle_percent": 100 * cpu / wall / angles if wall else None,
        "dropped_percent": 100 * sum(dropped.values()) / max(1, sum(dropped.values()) + sum(len(v) for v in frames.values())),
    }
    if faulted:
        crossed = missing_segment_recovery(frames, "angle-2", MISSING_AT)
        back = member_back(frames, "angle-2", ids, crossed) if crossed is not None else None
        result["missing_segment_back_s"] = None if back is None or back >= STALL_AT else back - crossed
        resumed = STALL_AT + STALL_FOR
        back = member_back(frames, "angle-3", ids, resumed)
        back = None if back is None or back >= TWO_STALLS_AT else back
        result["stall_back_s"] = None if back is None else back - resumed
        flowing = (moments or {}).get("flowing")
        back = member_back(frames, "angle-4", ids, flowing) if flowing is not None else None
        result["two_stalls_back_s"] = None if back is None else back - flowing
    return result


def run_playerkit(app, origin, angles, seconds, joins, log, inject=True, render=False):
    rendered = log + ".rendered"
    command = [app, "--headless", "--json", "--seconds", str(seconds), "--frame-log", log,
               *(["--rendered-log", rendered] if render else []), "--join-at", ",".join(str(j) for j in joins), *origin.angles[:angles]]
    start = time.monotonic()
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    moments = faults(origin, start) if inject else None
    cpu0, cpu1, t0, t1 = None, None, None, None
    skew_lines = []
    for line in process.stdout:
        item = json.loads(line)
        if item.get("type") == "ready":
            cpu0, t0 = cpu_seconds(process.pid), time.monotonic()
        elif item.get("type") == "skews":
            skew_lines.append(item)
            try:
                cpu1, t1 = cpu_seconds(process.pid), time.monotonic()
            except OSError:
                pass
    if process.wait() != 0:
        raise SystemExit(f"playerkit-multiview failed: {' '.join(command)}")
    figures = analyse(log, cpu1 - cpu0, t1 - t0, angles, inject, moments, skew_lines)
    if not render:
        return figures
    frames, unreadable = read_rendered(rendered, Origin.SECONDS)
    figures["rendered"] = analyse_frames(frames, {}, cpu1 - cpu0, t1 - t0, angles, inject, moments, skew_lines)
    figures["rendered"]["unreadable"] = sum(unreadable.values())
    return figures


def barcode_filter():
    """Scripts/live-origin.py's barcode (each frame's number in the bottom strip) for 640x360."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("live_origin", os.path.join(ROOT, "Scripts", "live-origin.py"))
    origin = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(origin)
    return origin.barcode_filter(640, 360, 360 // 8)


def local_files():
    """Two 30 s angles of one testsrc2 scene at 640x360, 30 fps, each frame's number burned in as
    the live origin's barcode, with a tone each (made once)."""
    files = []
    for index in (1, 2):
        path = os.path.join(WORK, f"multiview-file-{index}-numbered.mp4")
        if not os.path.exists(path):
            partial = path + ".partial.mp4"
            subprocess.run(["ffmpeg", "-hide_banner", "-loglevel", "error", "-y",
                            "-f", "lavfi", "-i", "testsrc2=size=640x360:rate=30:duration=30",
                            "-f", "lavfi", "-i", f"sine=frequency={400 * index}:duration=30",
                            "-vf", barcode_filter(),
                            "-c:v", "libx264", "-preset", "ultrafast", "-g", "30", "-pix_fmt", "yuv420p",
                            "-c:a", "aac", "-shortest", partial], check=True)
            os.rename(partial, path)
        files.append(path)
    return files


def on_demand_figures(log, seconds):
    """The spread of two on-demand angles from a frame log: over the `seconds` after both were in
    step (the spread under 5 ms for a second), or after 2 s when they never were."""
    frames, dropped = read_log(log)
    return on_demand_frames(frames, dropped, seconds)


def on_demand_frames(frames, dropped, seconds):
    ids = sorted(frames)
    if len(ids) == 1:
        # One angle alone: only its own floor.
        first = frames[ids[0]][0][1] if frames[ids[0]] else 0.0
        jitter = frame_jitter(frames[ids[0]], first + 2.0, first + 2.0 + seconds)
        return {"aligned_after_s": None, "p50_ms": None, "p95_ms": None, "p99_ms": None, "samples": 0,
                "jitter_p99_ms": jitter, "floor_p99_ms": None,
                "dropped_percent": 100 * sum(dropped.values()) / max(1, sum(dropped.values()) + len(frames[ids[0]]))}
    series = spreads(frames, ids)
    aligned = settled(series, 0.0)
    start = aligned if aligned is not None else 2.0
    steady = [s for (t, s) in series if start <= t < start + seconds]
    jitters = [frame_jitter(frames.get(i, []), start, start + seconds) for i in ids]
    return {
        "jitter_p99_ms": None if None in jitters else max(jitters),
        "floor_p99_ms": spread_floor(frames, ids, start, start + seconds),
        "aligned_after_s": aligned,
        "p50_ms": percentile(steady, 0.5) and percentile(steady, 0.5) * 1000,
        "p95_ms": percentile(steady, 0.95) and percentile(steady, 0.95) * 1000,
        "p99_ms": percentile(steady, 0.99) and percentile(steady, 0.99) * 1000,
        "samples": len(steady),
        "dropped_percent": 100 * sum(dropped.values()) / max(1, sum(dropped.values()) + sum(len(v) for v in frames.values())),
    }


def run_playerkit_files(app, files, log, seconds=20, render=False):
    """playerkit-multiview --headless --json --seconds 20 on local files: the app's own worst
    skew_p99_ms (last line) beside the spread from the frame log (and, with `render`, from the
    rendered frames)."""
    rendered = log + ".rendered"
    command = [app, "--headless", "--json", "--seconds", str(seconds), "--frame-log", log,
               *(["--rendered-log", rendered] if render else []), *files]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    cpu0, cpu1, t0, t1, last = None, None, None, None, None
    for line in process.stdout:
        item = json.loads(line)
        if item.get("type") == "ready":
            cpu0, t0 = cpu_seconds(process.pid), time.monotonic()
        elif item.get("type") == "skews":
            last = item
            try:
                cpu1, t1 = cpu_seconds(process.pid), time.monotonic()
            except OSError:
                pass
    if process.wait() != 0:
        raise SystemExit(f"playerkit-multiview failed: {' '.join(command)}")
    figures = on_demand_figures(log, seconds - 3)
    members = (last or {}).get("members", [])
    reported = [m.get("skew_p99_ms") for m in members if m.get("skew_p99_ms") is not None]
    figures["app_skew_p99_ms"] = max(reported) if len(reported) == len(files) else None
    figures["skew_vs_frames_ms"] = skew_agreement(read_log(log)[0], last)
    figures["cpu_per_angle_percent"] = 100 * (cpu1 - cpu0) / (t1 - t0) / len(files) if t1 and t1 > t0 else None
    if not render:
        return figures
    frames, unreadable = read_rendered(rendered)
    figures["rendered"] = on_demand_frames(frames, {}, seconds - 3)
    figures["rendered"]["skew_vs_frames_ms"] = skew_agreement(frames, last)
    figures["rendered"]["unreadable"] = sum(unreadable.values())
    return figures


def run_c_files(binary, files, log, seconds=20):
    command = [binary, "plain", str(seconds), log, ",".join("0" for _ in files), *files]
    process = subprocess.run(command, capture_output=True, text=True)
    if process.returncode != 0:
        raise SystemExit(f"the C client failed: {' '.join(command)}")
    figures = on_demand_figures(log, seconds - 3)
    measured = json.loads(process.stdout.strip().splitlines()[-1])
    figures["app_skew_p99_ms"] = None
    figures["cpu_per_angle_percent"] = 100 * measured["cpu_s"] / measured["wall_s"] / len(files)
    return figures


def run_c_rendering(binary, players, file, log, seconds=20):
    """Benchmarks/c/frames.c sw: `players` plain mpv cores rendering `file` (160x90 software
    frames, a render thread each, as playerkit-multiview's --rendered-log does), uncorrected; each
    new frame's burned-in number and moment (FRAMES_LOG). Their floor, rendering."""
    command = [binary, "sw", str(players), str(seconds), "160", "90", file]
    process = subprocess.run(command, capture_output=True, text=True, env=dict(os.environ, FRAMES_LOG=log))
    if process.returncode != 0:
        raise SystemExit(f"the C client failed: {' '.join(command)}: {process.stderr[-300:]}")
    measured = json.loads(process.stdout.strip().splitlines()[-1])
    frames, _ = read_rendered(log)
    figures = {"rendered": on_demand_frames(frames, {}, seconds - 3), "p99_ms": None,
               "cpu_per_angle_percent": measured["frames_per_second_per_player"] * measured["cpu_ms_per_frame"] / 10}
    figures["rendered"]["unreadable"] = None
    return figures


def run_c(binary, mode, origin, angles, seconds, joins, log):
    command = [binary, mode, str(seconds), log, ",".join(str(j) for j in joins), *origin.angles[:angles]]
    start = time.monotonic()
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    moments = faults(origin, start) if angles == len(JOINS) else None
    output, _ = process.communicate()
    if process.returncode != 0:
        raise SystemExit(f"the C client failed: {' '.join(command)}")
    figures = json.loads(output.strip().splitlines()[-1])
    return analyse(log, figures["cpu_s"], figures["wall_s"], angles, moments=moments)


class _Folder:
    """A kept folder, usable where a temporary one is."""

    def __init__(self, path):
        self.path = path

    def __enter__(self):
        return self.path

    def __exit__(self, *exception):
        return False


def machine():
    model = ""
    try:
        model = next(l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name"))
    except (OSError, StopIteration):
        pass
    libmpv = subprocess.run(["dpkg-query", "-W", "-f=${Version}", "libmpv2"], capture_output=True, text=True).stdout.strip()
    return f"{os.cpu_count()} vCPU {model}, {platform.system()} {platform.release()}, libmpv {libmpv or 'unknown'}"


def number(value, digits=1, unit=""):
    return "never" if value is None else f"{value:.{digits}f}{unit}"


def table(rows, most, on_demand, machine_text, date=None, rendering=()):
    lines = [
        "| 4 live angles, 360p, joined 0-3 s apart | aligned after the last join | spread p50 | p95 | p99 (20 s) "
        "| floor of the spread, p99 | frame jitter p99 (worst angle) | MemberSkew p99 against its frames (worst member) "
        "| back in step after a missing segment | after a 4 s stall | after two 4 s stalls in a row | CPU per angle | frames dropped |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    signed = lambda value: "-" if value is None else f"{value:+.2f} ms"
    for name, figures in rows:
        lines.append(
            f"| {name} | {number(figures['aligned_after_s'], 2, ' s')} | {number(figures['p50_ms'], 2, ' ms')} "
            f"| {number(figures['p95_ms'], 2, ' ms')} | {number(figures['p99_ms'], 2, ' ms')} "
            f"| {number(figures.get('floor_p99_ms'), 2, ' ms')} | {number(figures.get('jitter_p99_ms'), 2, ' ms')} "
            f"| {signed(figures.get('skew_vs_frames_ms'))} "
            f"| {number(figures.get('missing_segment_back_s'), 2, ' s')} | {number(figures.get('stall_back_s'), 2, ' s')} "
            f"| {number(figures.get('two_stalls_back_s'), 2, ' s')} "
            f"| {number(figures['cpu_per_angle_percent'], 1, '%')} | {number(figures['dropped_percent'], 2, '%')} |")
    lines += ["", "| Local files (on demand), started together, 20 s | the app's skew_p99_ms (worst member, last 10 s) "
              "| spread p50 | p95 | p99 (frame log) | floor of the spread, p99 | frame jitter p99 (worst angle) "
              "| MemberSkew p99 against its frames (worst member) "
              "| CPU per angle | frames dropped |", "|---|---|---|---|---|---|---|---|---|---|"]
    dash = lambda value: "-" if value is None else number(value, 2, " ms")
    for name, figures in on_demand:
        lines.append(
            f"| {name} | {dash(figures.get('app_skew_p99_ms'))} "
            f"| {dash(figures['p50_ms'])} | {dash(figures['p95_ms'])} | {dash(figures['p99_ms'])} "
            f"| {dash(figures.get('floor_p99_ms'))} | {dash(figures.get('jitter_p99_ms'))} "
            f"| {signed(figures.get('skew_vs_frames_ms'))} "
            f"| {number(figures['cpu_per_angle_percent'], 1, '%')} | {number(figures['dropped_percent'], 2, '%')} |")
    lines += ["", "The floor: a frame's moment strays from its due time by each player's own frame timing (frame jitter: "
              "each frame change minus its media time, against the median of that over the second around it). Two players' "
              "spread cannot be kept below the part of it that changes from frame to frame (floor of the spread: each "
              "frame's signed difference against its median over the second around it), whatever corrects their skews. "
              "MemberSkew against its frames: each member's skew p99 as the app reads it (`MultiView.skews`, over its last 10 s "
              "window) minus that member's frame jitter p99 over the same 10 s from the frame log; the worst member's "
              "(positive: MemberSkew says more than its frames show). Back in step after a fault: from the source recovering "
              "until the faulted angle's moment for each frame, against the other angles' median moment for it, stays "
              "under 5 ms for a second, as a running median of 5 frames."]
    lines += ["", "On rendered frames: PlayerKit's runs again, the same faults, each angle also rendering its frames "
              "(160x90, software, `--rendered-log`), measured from the frames themselves: the number each frame carries "
              "in its bottom strip, read from its pixels, and the moment mpv rendered it. Nothing but the last column "
              "comes from positions PlayerKit reports: that is the same run's spread p99 from its frame log, for "
              "comparison. Rendering costs CPU the runs above do not spend. The floor when rendering: the plain C client "
              "of the render API (Benchmarks/c/frames.c sw) on one numbered file, a render thread per core as PlayerKit's, "
              "one core alone and two at once, uncorrected (their spread is how far apart they started; their floor and "
              "jitter are what counts).", "",
              "| PlayerKit, on rendered frames | aligned after the last join | spread p50 | p95 | p99 "
              "| floor of the spread, p99 | frame jitter p99 (worst angle) | MemberSkew p99 against its rendered frames (worst member) "
              "| back in step after a missing segment | after a 4 s stall | after two 4 s stalls in a row | frames without a readable number "
              "| CPU per angle | the same run's spread p99 from positions |",
              "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for name, figures in rendering:
        seen = figures["rendered"]
        lines.append(
            f"| {name} | {number(seen.get('aligned_after_s'), 2, ' s') if 'steady_seconds' in seen else '-'} "
            f"| {dash(seen['p50_ms'])} | {dash(seen['p95_ms'])} | {dash(seen['p99_ms'])} "
            f"| {dash(seen.get('floor_p99_ms'))} | {dash(seen.get('jitter_p99_ms'))} | {signed(seen.get('skew_vs_frames_ms'))} "
            f"| {number(seen.get('missing_segment_back_s'), 2, ' s') if 'missing_segment_back_s' in seen else '-'} "
            f"| {number(seen.get('stall_back_s'), 2, ' s') if 'stall_back_s' in seen else '-'} "
            f"| {number(seen.get('two_stalls_back_s'), 2, ' s') if 'two_stalls_back_s' in seen else '-'} "
            f"| {'-' if seen.get('unreadable') is None else seen['unreadable']} | {number(figures['cpu_per_angle_percent'], 1, '%')} "
            f"| {dash(figures['p99_ms'])} |")
    lines += ["", "| PlayerKit, angles joined together (25 s) | spread p99 (last 15 s) | frames dropped | CPU per angle | in sync |",
              "|---|---|---|---|---|"]
    for count, figures in most:
        ok = figures["p99_ms"] is not None and figures["p99_ms"] <= FRAME * 1000 and figures["dropped_percent"] <= 1
        lines.append(f"| {count} | {number(figures['p99_ms'], 2, ' ms')} | {number(figures['dropped_percent'], 2, '%')} "
                     f"| {number(figures['cpu_per_angle_percent'], 1, '%')} | {'yes' if ok else 'no'} |")
    kept = [count for count, figures in most
            if figures["p99_ms"] is not None and figures["p99_ms"] <= FRAME * 1000 and figures["dropped_percent"] <= 1]
    lines += ["", f"Most 360p live angles kept in sync (p99 within a frame, at most 1% dropped): **{max(kept) if kept else 'none'}** "
              f"of those tried ({', '.join(str(c) for c, _ in most)}).",
              "", f"Command: `make bench-multiview` ({date or time.strftime('%Y-%m-%d')}). Machine: {machine_text}."]
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--write", action="store_true", help="rewrite the multi-view table in Documentation/Performance.md")
    parser.add_argument("--counts", default="4,6,8,9", help="angle counts for the most angles in sync")
    args = parser.parse_args()
    os.makedirs(WORK, exist_ok=True)
    say("building playerkit-multiview (release)")
    env = dict(os.environ, PLAYERKIT_WARNINGS_AS_ERRORS="1")
    subprocess.run(["swift", "build", "-c", "release", "--product", "playerkit-multiview"], check=True, cwd=ROOT, env=env,
                   stdout=subprocess.DEVNULL)
    bin_path = subprocess.run(["swift", "build", "-c", "release", "--show-bin-path"], check=True, cwd=ROOT,
                              capture_output=True, text=True).stdout.strip()
    app = os.path.join(bin_path, "playerkit-multiview")
    client = os.path.join(WORK, "multiview")
    say("building the C client (Benchmarks/c/multiview.c)")
    subprocess.run(["cc", "-O2", "-o", client, os.path.join(ROOT, "Benchmarks", "c", "multiview.c"), "-lmpv", "-lpthread", "-lm"],
                   check=True)
    frames_client = os.path.join(WORK, "frames-rendering")
    say("building the C client (Benchmarks/c/frames.c)")
    subprocess.run(["cc", "-O2", "-o", frames_client, os.path.join(ROOT, "Benchmarks", "c", "frames.c"),
                    "-lmpv", "-lpthread", "-lEGL", "-lOpenGL"], check=True)
    counts = [int(c) for c in args.counts.split(",")]
    rows, most = [], []
    keep = os.environ.get("MULTIVIEW_LOGS")  # a folder to keep every run's frame log in
    if keep:
        os.makedirs(keep, exist_ok=True)
    with (tempfile.TemporaryDirectory() if not keep else _Folder(keep)) as work:
        runners = [(f"PlayerKit (MultiView), run {run}", lambda o, log: run_playerkit(app, o, 4, SECONDS, JOINS, log))
                   for run in range(1, RUNS + 1)]
        runners += [("uncorrected mpv cores (C client)", lambda o, log: run_c(client, "plain", o, 4, SECONDS, JOINS, log)),
                    ("RaceControl's autosync (C client)", lambda o, log: run_c(client, "autosync", o, 4, SECONDS, JOINS, log))]
        for name, runner in runners:
            say(f"running: {name}, {SECONDS} s")
            origin = Origin(max(counts))
            try:
                figures = runner(origin, os.path.join(work, re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") + ".log"))
            finally:
                origin.stop()
            say(f"  {json.dumps(figures)}")
            rows.append((name, figures))
        rendering = []
        for run in range(1, RUNS + 1):
            name = f"PlayerKit (MultiView), rendering, run {run}"
            say(f"running: {name}, {SECONDS} s")
            origin = Origin(max(counts))
            try:
                figures = run_playerkit(app, origin, 4, SECONDS, JOINS, os.path.join(work, f"rendering-{run}.log"), render=True)
            finally:
                origin.stop()
            say(f"  {json.dumps(figures)}")
            rendering.append((name, figures))
        say("running: two local files on demand, 20 s (PlayerKit, then uncorrected C cores)")
        files = local_files()
        on_demand = [("PlayerKit, 2 files (playerkit-multiview --json)", run_playerkit_files(app, files, os.path.join(work, "files-playerkit.log"))),
                     ("uncorrected mpv cores, 2 files (C client)", run_c_files(client, files, os.path.join(work, "files-c.log"))),
                     ("PlayerKit, 1 file alone", run_playerkit_files(app, files[:1], os.path.join(work, "file-playerkit.log"))),
                     ("one mpv core, 1 file alone (C client)", run_c_files(client, files[:1], os.path.join(work, "file-c.log")))]
        for name, figures in on_demand:
            say(f"  {name}: {json.dumps(figures)}")
        for name, count in [("PlayerKit, 2 files, rendering", 2), ("PlayerKit, 1 file alone, rendering", 1)]:
            figures = run_playerkit_files(app, files[:count], os.path.join(work, f"files-rendering-{count}.log"), render=True)
            say(f"  {name}: {json.dumps(figures)}")
            rendering.append((name, figures))
        for name, count in [("two mpv cores rendering, 1 file, uncorrected (C client)", 2), ("one mpv core rendering, 1 file alone (C client)", 1)]:
            figures = run_c_rendering(frames_client, count, files[0], os.path.join(work, f"c-rendering-{count}.log"))
            say(f"  {name}: {json.dumps(figures)}")
            rendering.append((name, figures))
        for count in counts:
            say(f"running: PlayerKit, {count} angles joined together, 25 s")
            origin = Origin(max(counts))
            try:
                log = os.path.join(work, f"most-{count}.log")
                figures = run_playerkit(app, origin, count, 25, [0.0] * count, log, inject=False)
                frames, _ = read_log(log)
                series = spreads(frames, [f"angle-{i + 1}" for i in range(count)])
                last = [s for (t, s) in series if t >= 10]
                figures["p99_ms"] = percentile(last, 0.99) and percentile(last, 0.99) * 1000
            finally:
                origin.stop()
            say(f"  {json.dumps(figures)}")
            most.append((count, figures))
    date, machine_text = time.strftime("%Y-%m-%d"), machine()
    section = table(rows, most, on_demand, machine_text, date, rendering)
    print(section)
    if args.write:
        try:
            record = write_figures("multiview", section, markers=MARKERS, command="make bench-multiview", machine=machine_text,
                                   date=date, results={"live": [{"case": name, **figures} for name, figures in rows],
                                                       "on_demand": [{"case": name, **figures} for name, figures in on_demand],
                                                       "rendering": [{"case": name, **figures} for name, figures in rendering],
                                                       "most": [{"angles": count, **figures} for count, figures in most]})
        except (OSError, ValueError) as error:
            raise SystemExit(f"[multiview] FAILED: writing the multi-view table: {error}")
        say(f"wrote {os.path.relpath(record, ROOT)} and the multi-view part of {DOC}")


if __name__ == "__main__":
    main()
