#!/usr/bin/env python3
"""Issue 68's benchmark (`make bench-health`): the alarms, the loudness and what health costs, in
one run, on this machine.

  Benchmarks/health.py            runs it, prints the Markdown tables
  Benchmarks/health.py --write    also records them (Documentation/Figures/health.json) and renders
                                  them into Documentation/Performance.md (between its
                                  "health-benchmarks" markers)

Alarms. A 60-second clip (testsrc2 at 25 fps, intra-only, a 440 Hz tone) with faults written into
it by ffmpeg: the picture frozen from 10 s to 14 s, black from 25 s to 29 s, the sound muted from
40 s to 44 s. `playerkit-bench health-alarms` (release) plays it once at 1x with the alarms
watched (thresholds 2 s, and 0.5 s) and the position observed every frame; each alarm's raise is
late by its time less the time of the frame that showed the fault's start plus the threshold, its
clear by its time less that of the frame that showed the fault's end.
No false alarm: 10 minutes of ordinary content (testsrc2 with speech by espeak-ng, 2 minutes
looped five times) played at 4x with the same watch must raise nothing.

Loudness. A 1 kHz tone at -20 dBFS, pink noise and speech (20 s each): the meter's last integrated
loudness and true peak, and its highest short-term loudness, against ffmpeg's `ebur128` on the same
file (its summary and its frames' metadata).

Truth of the statistics (`playerkit-bench health-truth`, statistics every second), each against a
count taken independently in the same run:
- frames rendered against the new frames a frame output got, and rendered plus dropped against the
  frames in the file (Tests/Fixtures/long.mp4 played through);
- the arriving bitrate against the bytes the benchmark's own HTTP origin on loopback sent over the
  same seconds (a 40 s clip at about 1.2 Mbit/s served at 300 kB/s);
- stalls (count, total, longest) against the gaps in the picture a frame output saw, with the origin
  silent for 4 s twice (long.mp4 served at 90 kB/s, a 75 kB/s stream);
- dropped frames of a 720p60 clip with the player's core to itself (none expected) and on one core
  shared with three stress-ng workers (`taskset -c 1`), against the frame output and the file.

Cost. 4 players loop Tests/Fixtures/long.mp4 (320x240, 30 fps) headless for 15 s: PlayerKit
(`playerkit-bench health-cost`) plain, with statistics at 1 Hz, with alarms and loudness; the plain
C client of libmpv (Benchmarks/c/health.c) plain, with the same eleven reads every second and the
position every frame, with the same filters and their metadata observed (PlayerKit observes every
position only while a fault is under way; the clip has none). CPU seconds over the window (after 2 s of start-up),
as % of a core per player; rounds interleaved, medians.
"""
import argparse
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchkit import build_bench, write_figures  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WORK = os.path.join(ROOT, ".build-bench", "health")
BEGIN, END = "<!-- health-benchmarks: begin -->", "<!-- health-benchmarks: end -->"
FAULTS = [("freeze", 10.0, 14.0), ("black", 25.0, 29.0), ("silence", 40.0, 44.0)]


def log(text):
    print(f"[health] {text}", file=sys.stderr, flush=True)


def run(arguments, **kwargs):
    return subprocess.run(arguments, check=True, **kwargs)


def ffmpeg(*arguments):
    run(["ffmpeg", "-nostdin", "-hide_banner", "-loglevel", "error", "-y", *arguments])


def make_media(folder):
    """The faults clip, the ordinary 10 minutes, and the loudness signals; made once."""
    os.makedirs(folder, exist_ok=True)
    faults = os.path.join(folder, "faults-60s.mp4")
    if not os.path.exists(faults):
        log("making the faults clip")
        # Frames 251..349 repeat frame 250 (frozen from 10 s to 14 s, where frame 350 moves on);
        # black from 25 s; muted from 40 s. A fixed quantizer, intra-only: a repeated picture is
        # coded the same each time.
        ffmpeg("-f", "lavfi", "-i", "testsrc2=size=320x240:rate=25:duration=60", "-f", "lavfi", "-i", "sine=frequency=440:duration=60",
               "-filter_complex",
               "[0:v]split[a][b];[a][b]freezeframes=first=251:last=349:replace=250,"
               "drawbox=c=black:t=fill:enable='between(t,25,28.99)'[v];[1:a]volume=enable='between(t,40,44)':volume=0[au]",
               "-map", "[v]", "-map", "[au]", "-c:v", "libx264", "-preset", "veryfast", "-qp", "30", "-g", "1", "-pix_fmt", "yuv420p",
               "-c:a", "aac", "-b:a", "64k", faults + ".partial.mp4")
        os.replace(faults + ".partial.mp4", faults)
    speech = os.path.join(folder, "speech-120s.wav")
    if not os.path.exists(speech):
        log("making 2 minutes of speech (espeak-ng)")
        from analysis import speech as make_speech  # the comparison benchmark's speech
        make_speech(speech, 120, 68, folder)
    ordinary = os.path.join(folder, "ordinary-10min.mp4")
    if not os.path.exists(ordinary):
        log("making 10 minutes of ordinary content")
        ffmpeg("-f", "lavfi", "-i", "testsrc2=size=320x240:rate=25:duration=600", "-stream_loop", "4", "-i", speech,
               "-map", "0:v", "-map", "1:a", "-t", "600", "-c:v", "libx264", "-preset", "ultrafast", "-g", "50", "-pix_fmt", "yuv420p",
               "-c:a", "aac", "-b:a", "64k", ordinary + ".partial.mp4")
        os.replace(ordinary + ".partial.mp4", ordinary)
    signals = {}
    for name, source in (("1 kHz tone at -20 dBFS", "sine=frequency=1000:duration=20,volume=-1.94dB"),
                         ("pink noise", "anoisesrc=color=pink:amplitude=0.25:duration=20:seed=68")):
        path = os.path.join(folder, re.sub(r"[^a-z0-9]+", "-", name.lower()) + ".m4a")
        if not os.path.exists(path):
            ffmpeg("-f", "lavfi", "-i", source, "-ar", "48000", "-c:a", "aac", "-b:a", "192k", path)
        signals[name] = path
    speech20 = os.path.join(folder, "speech-20s.m4a")
    if not os.path.exists(speech20):
        ffmpeg("-i", speech, "-t", "20", "-c:a", "aac", "-b:a", "192k", speech20)
    signals["speech"] = speech20
    return faults, ordinary, signals


def lines(output):
    return [json.loads(line) for line in output.splitlines() if line.startswith("{")]


def alarms(bench, path, threshold, speed=1.0):
    """The alarm events of one play of `path`, and every frame shown as (position, time)."""
    out = lines(run([bench, "health-alarms", "--threshold", str(threshold), "--speed", str(speed), path], capture_output=True, text=True).stdout)
    done = next(line for line in out if line.get("done"))
    return [line for line in out if "event" in line], done["frames"]


def shown_at(frames, position):
    """When the first frame at or past `position` was shown (None if none was)."""
    return next((t for p, t in frames if p >= position - 1e-6), None)


def latencies(events, frames, threshold):
    """Per fault written into the media: how late its alarm was raised after the frame that showed
    the fault's start plus the threshold, and cleared after the frame that showed its end, in
    seconds (None when missing); how far off the start and end the detectors found were; and the
    alarms that match no fault (a black picture is also still: a freeze over the black stretch is
    expected too)."""
    rows, matched = [], set()
    expected = FAULTS + [("freeze", 25.0, 29.0)]
    for kind, start, end in expected:
        raised = next((e for e in events if e["event"] == "raised" and e["kind"] == kind and abs(e["start"] - start) < 0.3), None)
        cleared = next((e for e in events if e["event"] == "cleared" and e["kind"] == kind and abs(e["start"] - start) < 0.3), None)
        for event in (raised, cleared):
            if event:
                matched.add(id(event))
        due, over = shown_at(frames, start + threshold), shown_at(frames, end)
        rows.append({"kind": kind, "fault": [start, end],
                     "raise_late_s": raised["t"] - due if raised and due is not None else None,
                     "clear_late_s": cleared["t"] - over if cleared and over is not None else None,
                     "start_error_s": raised["start"] - start if raised else None,
                     "end_error_s": cleared["end"] - end if cleared else None})
    extra = [e for e in events if id(e) not in matched]
    return rows, extra


def ffmpeg_loudness(path):
    """ffmpeg's ebur128 on `path`: the summary's integrated loudness and true peak, and the highest
    short-term loudness of its frames."""
    errors = subprocess.run(["ffmpeg", "-nostdin", "-hide_banner", "-nostats", "-i", path, "-af", "ebur128=metadata=1:peak=true,ametadata=print:key=lavfi.r128.S",
                             "-f", "null", "-"], capture_output=True, text=True).stderr
    integrated = float(re.findall(r"I:\s+(-?[\d.]+) LUFS", errors)[-1])
    peak = float(re.findall(r"Peak:\s+(-?[\d.]+) dBFS", errors)[-1])
    shorts = [float(v) for v in re.findall(r"lavfi\.r128\.S=(-?[\d.]+)", errors) if float(v) > -100]
    return {"I": integrated, "TP": peak, "S_max": max(shorts)}


def playerkit_loudness(bench, path):
    measured = lines(run([bench, "health-loudness", path], capture_output=True, text=True).stdout)
    final = next(line for line in measured if line.get("final"))
    shorts = [line["S"] for line in measured if line.get("S") is not None]
    return {"I": final["I"], "TP": final["TP"], "S_max": max(shorts), "samples": len(measured) - 1}


class Origin:
    """A loopback HTTP origin for the truth of the statistics: serves one file at `rate` bytes per
    second (paced in 8 kB chunks, no catching up after a pause), stops sending during `pauses`
    ((start, length) in seconds after its first byte), and logs every chunk it sent as
    (time.monotonic(), bytes) and every pause as it really happened."""

    def __init__(self, path, rate, pauses=()):
        import http.server
        import threading
        self.data = open(path, "rb").read()
        self.rate, self.pauses = rate, list(pauses)
        self.sent, self.paused, self.first = [], [], None
        self.lock = threading.Lock()
        origin = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *arguments):
                pass

            def do_GET(self):
                offset = 0
                match = re.match(r"bytes=(\d+)-", self.headers.get("Range", ""))
                if match:
                    offset = int(match.group(1))
                body = origin.data[offset:]
                self.send_response(206 if match else 200)
                self.send_header("Content-Type", "video/mp4")
                self.send_header("Accept-Ranges", "bytes")
                self.send_header("Content-Length", str(len(body)))
                if match:
                    self.send_header("Content-Range", f"bytes {offset}-{len(origin.data) - 1}/{len(origin.data)}")
                self.end_headers()
                origin.stream(self.wfile, body)

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/media.mp4"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stream(self, out, body):
        import time
        chunk, due = 8192, time.monotonic()
        for index in range(0, len(body), chunk):
            now = time.monotonic()
            with self.lock:
                if self.first is None:
                    self.first = now
                first = self.first
            for start, length in self.pauses:
                begin = first + start
                if begin <= now < begin + length:
                    time.sleep(begin + length - now)
                    with self.lock:
                        self.paused.append((now, time.monotonic()))
                    now = due = time.monotonic()
            if due > now:
                time.sleep(due - now)
            part = body[index:index + chunk]
            try:
                out.write(part)
                out.flush()
            except (BrokenPipeError, ConnectionResetError):
                return
            with self.lock:
                self.sent.append((time.monotonic(), len(part)))
            due = max(due, time.monotonic() - 0.05) + len(part) / self.rate

    def close(self):
        self.server.shutdown()


def truth(bench, source, *arguments, prefix=()):
    """One `playerkit-bench health-truth` run: its samples, state changes, final figures and the
    gaps between the frames its frame output got."""
    out = lines(run([*prefix, bench, "health-truth", *arguments, source], capture_output=True, text=True).stdout)
    return ([o for o in out if o["type"] == "stats"], [o for o in out if o["type"] == "state"],
            next(o for o in out if o["type"] == "final"), next(o["gaps"] for o in out if o["type"] == "gaps"))


def frame_count(path):
    out = run(["ffprobe", "-v", "error", "-count_packets", "-select_streams", "v:0", "-show_entries", "stream=nb_read_packets",
               "-of", "csv=p=0", path], capture_output=True, text=True).stdout
    return int(out.strip())


def truth_of_statistics(bench, folder):
    """The statistics against counts taken independently in the same run (see the docstring)."""
    results = {}
    # Frames: the fixture played through with a frame output.
    long = os.path.join(ROOT, "Tests", "Fixtures", "long.mp4")
    log("truth: frames rendered against a frame output's count")
    _, _, final, _ = truth(bench, long, "--frames")
    results["frames"] = {"rendered": final["rendered"], "frame_output": final["frames"], "dropped": final["dropped_output"],
                         "in_file": frame_count(long)}
    # Bytes: a 40 s clip at about 1.2 Mbit/s from the origin at 300 kB/s (it reads all the way).
    wire = os.path.join(folder, "wire-40s.mp4")
    if not os.path.exists(wire):
        ffmpeg("-f", "lavfi", "-i", "testsrc2=size=640x360:rate=25:duration=40", "-c:v", "libx264", "-preset", "veryfast",
               "-b:v", "1200k", "-maxrate", "1300k", "-bufsize", "1300k", "-g", "50", "-pix_fmt", "yuv420p", "-movflags", "+faststart",
               wire + ".partial.mp4")
        os.replace(wire + ".partial.mp4", wire)
    log("truth: the arriving bitrate against the bytes the origin sent")
    origin = Origin(wire, 300_000)
    samples, _, _, _ = truth(bench, origin.url, "--seconds", "30")
    origin.close()
    last_byte = origin.sent[-1][0]
    steady = [s for s in samples if s["arriving"] is not None and origin.first + 2 <= s["t"] <= last_byte - 0.5]
    window = (steady[0]["t"] - 1, steady[-1]["t"]) if steady else (0, 0)
    sent = sum(n for t, n in origin.sent if window[0] < t <= window[1])
    results["bytes"] = {"samples": len(steady), "arriving_mean_bps": statistics.mean(s["arriving"] for s in steady) if steady else None,
                        "origin_bps": 8 * sent / (window[1] - window[0]) if steady else None, "window_s": window[1] - window[0],
                        "file_bytes": len(origin.data)}
    # Stalls: the fixture from the origin at 90 kB/s (a 75 kB/s stream), which stops sending for
    # 4 s at 6 s and at 14 s; the stalls against the gaps in the picture a frame output saw.
    log("truth: stalls against the origin's pauses and the picture's gaps")
    origin = Origin(long, 90_000, pauses=[(6, 4), (14, 4)])
    samples, states, final, gaps = truth(bench, origin.url, "--frames", "--seconds", "60")
    origin.close()
    stalls, begun = [], None
    for change in states:
        if change["to"] == "buffering" and begun is None and any(c["to"] == "playing" for c in states if c["t"] < change["t"]):
            begun = change["t"]
        elif change["from"] == "buffering" and begun is not None:
            stalls.append(change["t"] - begun)
            begun = None
    long_gaps = [length for _, length in gaps if length > 0.5]
    results["stalls"] = {"origin_pauses": [b - a for a, b in origin.paused], "count": final["stalls"], "stall_time_s": final["stall_time"],
                         "longest_s": final["longest_stall"], "state_stalls_s": stalls, "picture_gaps_s": long_gaps}
    # Drops: a 720p60 clip played with its core to itself, then on one core shared with three
    # stress-ng workers; the drops against the frames the output got and the frames in the file.
    heavy = os.path.join(folder, "heavy-720p60.mp4")
    if not os.path.exists(heavy):
        ffmpeg("-f", "lavfi", "-i", "testsrc2=size=1280x720:rate=60:duration=15", "-c:v", "libx264", "-preset", "veryfast", "-b:v", "6M",
               "-g", "60", "-pix_fmt", "yuv420p", heavy + ".partial.mp4")
        os.replace(heavy + ".partial.mp4", heavy)
    results["drops"] = {"in_file": frame_count(heavy)}
    for name, starve in (("free", False), ("starved", True)):
        log(f"truth: drops, {name}")
        stress = subprocess.Popen(["taskset", "-c", "1", "stress-ng", "--quiet", "--cpu", "3", "--timeout", "60"]) if starve else None
        try:
            _, _, final, _ = truth(bench, heavy, "--frames", "--seconds", "60", prefix=("taskset", "-c", "1"))
        finally:
            if stress:
                stress.terminate()
                stress.wait()
        results["drops"][name] = {"rendered": final["rendered"], "frame_output": final["frames"], "dropped_output": final["dropped_output"],
                                  "dropped_decoder": final["dropped_decoder"]}
    return results


def truth_table(truth):
    """The truth of the statistics as Markdown rows."""
    def off(a, b, unit=""):
        if a is None or b is None:
            return "missing"
        return f"{a - b:+g}{unit}" if isinstance(a, int) and isinstance(b, int) else f"{100 * (a - b) / b:+.2f} %"
    frames, wire, stalls, drops = truth["frames"], truth["bytes"], truth["stalls"], truth["drops"]
    out = ["", "Truth of the statistics, each against a count taken independently in the same run (`playerkit-bench health-truth`,"
           " statistics every second; the origin is the benchmark's own HTTP server on loopback):", "",
           "| figure | PlayerKit | independent count | off by |", "|---|---|---|---|"]
    out.append(f"| frames rendered, Tests/Fixtures/long.mp4 played through | {frames['rendered']} | {frames['frame_output']}"
               f" new frames a frame output got | {off(frames['rendered'], frames['frame_output'])} |")
    decoded = None if frames["rendered"] is None or frames["dropped"] is None else frames["rendered"] + frames["dropped"]
    out.append(f"| frames rendered + dropped, the same play | {decoded} | {frames['in_file']} frames in the file | {off(decoded, frames['in_file'])} |")
    if wire["arriving_mean_bps"]:
        out.append(f"| arriving bitrate, mean of {wire['samples']} samples while a 40 s clip downloads at 300 kB/s |"
                   f" {wire['arriving_mean_bps'] / 1e6:.3f} Mbit/s | {wire['origin_bps'] / 1e6:.3f} Mbit/s the origin sent over the"
                   f" same {wire['window_s']:.1f} s | {off(wire['arriving_mean_bps'], wire['origin_bps'])} |")
    pauses = ", ".join(f"{p:.2f} s" for p in stalls["origin_pauses"])
    gaps = stalls["picture_gaps_s"]
    out.append(f"| stalls, long.mp4 at 90 kB/s with the origin silent twice ({pauses}) | {stalls['count']} |"
               f" {len(gaps)} gaps over 0.5 s in the picture a frame output got | {off(stalls['count'], len(gaps))} |")
    out.append(f"| stall time, the same play | {stalls['stall_time_s']:.3f} s | {sum(gaps):.3f} s the picture stood still |"
               f" {stalls['stall_time_s'] - sum(gaps):+.3f} s |")
    out.append(f"| longest stall, the same play | {stalls['longest_s']:.3f} s | {max(gaps, default=0):.3f} s |"
               f" {stalls['longest_s'] - max(gaps, default=0):+.3f} s |")
    for name, what in (("free", "its core to itself"), ("starved", "one core shared with 3 stress-ng workers")):
        run_ = drops[name]
        dropped = (run_["dropped_output"] or 0) + (run_["dropped_decoder"] or 0)
        out.append(f"| dropped frames, a 720p60 clip ({drops['in_file']} frames), {what} | {dropped}"
                   f" ({run_['dropped_output']} by the output, {run_['dropped_decoder']} by the decoder) |"
                   f" {run_['frame_output']} new frames a frame output got, {run_['rendered']} rendered | |")
        shown = None if run_["rendered"] is None else run_["rendered"] + dropped
        out.append(f"| frames rendered + dropped, {what} | {shown} | {drops['in_file']} frames in the file | {off(shown, drops['in_file'])} |")
    return out


def cost(command):
    out = run(command, capture_output=True, text=True).stdout
    figures = lines(out)[-1]
    return 100 * figures["cpu_s"] / figures["wall_s"] / figures["players"]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--write", action="store_true")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=15)
    parser.add_argument("--parts", default="alarms,loudness,truth,cost",
                        help="the parts to run, comma-separated (--write needs them all)")
    options = parser.parse_args()
    parts = set(options.parts.split(","))
    if options.write and parts != {"alarms", "loudness", "truth", "cost"}:
        sys.exit("--write records every part: leave --parts out")
    for tool in ("ffmpeg", "cc", "espeak-ng", "sox", "stress-ng", "taskset"):
        if not shutil.which(tool):
            sys.exit(f"{tool} is missing (make bench-deps installs it)")
    os.makedirs(WORK, exist_ok=True)
    bench = build_bench(ROOT, log)
    client = os.path.join(WORK, "health-c")
    log("building the C client (Benchmarks/c/health.c)")
    run(["cc", "-O2", "-Wall", "-Wextra", "-o", client, os.path.join(ROOT, "Benchmarks", "c", "health.c"), "-lmpv", "-lpthread"])
    faults, ordinary, signals = make_media(WORK)

    results = {"alarms": {}, "loudness": {}, "cost": {}, "false_alarms": []}
    for threshold in (2.0, 0.5) if "alarms" in parts else ():
        log(f"alarms at {threshold} s on the faults clip")
        events, frames = alarms(bench, faults, threshold)
        rows, extra = latencies(events, frames, threshold)
        results["alarms"][str(threshold)] = {"faults": rows, "unmatched": extra}
    if "alarms" in parts:
        log("no false alarm: 10 minutes of ordinary content at 4x")
        ordinary_events, _ = alarms(bench, ordinary, 2.0, speed=4.0)
        results["false_alarms"] = ordinary_events
    for name, path in signals.items() if "loudness" in parts else ():
        log(f"loudness: {name}")
        results["loudness"][name] = {"playerkit": playerkit_loudness(bench, path), "ffmpeg": ffmpeg_loudness(path)}
    if "truth" in parts:
        results["truth"] = truth_of_statistics(bench, WORK)
    media = os.path.join(ROOT, "Tests", "Fixtures", "long.mp4")
    seconds = str(options.seconds)
    configurations = [
        ("PlayerKit", "plain", [bench, "health-cost", "--seconds", seconds, media]),
        ("PlayerKit", "statistics at 1 Hz", [bench, "health-cost", "--seconds", seconds, "--statistics", media]),
        ("PlayerKit", "alarms and loudness", [bench, "health-cost", "--seconds", seconds, "--alarms", "--loudness", media]),
        ("C client", "plain", [client, "4", seconds, media]),
        ("C client", "statistics at 1 Hz", [client, "4", seconds, media, "stats"]),
        ("C client", "alarms and loudness", [client, "4", seconds, media, "alarms", "loudness"]),
    ]
    for round_number in range(1, options.rounds + 1) if "cost" in parts else ():
        for who, what, command in configurations:
            log(f"cost, round {round_number}: {who}, {what}")
            results["cost"].setdefault(f"{who}/{what}", []).append(cost(command))

    machine = f"{platform.machine()}, {os.cpu_count()} cores, {platform.platform()}"

    def fmt(value, unit=" s"):
        return "missing" if value is None else f"{value:+.3f}{unit}"

    out = [f"`Benchmarks/health.py` (release build), {machine}:", ""]
    out += ["Alarms on a 60 s clip with faults written into it (freeze 10-14 s, black 25-29 s, silence 40-44 s), played at 1x;"
            " late = the event's time less the time of the frame that showed the fault's start plus the threshold (raise) or its end"
            " (clear), both on the monotonic clock as the pump took them:", "",
            "| threshold | fault | raised late by | cleared late by | start found off by | end found off by |", "|---|---|---|---|---|---|"]
    for threshold, found in results["alarms"].items():
        for row in found["faults"]:
            out.append(f"| {float(threshold):g} s | {row['kind']} {row['fault'][0]:g}-{row['fault'][1]:g} s | {fmt(row['raise_late_s'])} |"
                       f" {fmt(row['clear_late_s'])} | {fmt(row['start_error_s'])} | {fmt(row['end_error_s'])} |")
        out.append(f"| {float(threshold):g} s | alarms matching no fault | {len(found['unmatched'])} | | | |")
    raised = sum(1 for e in results["false_alarms"] if e["event"] == "raised")
    out += ["", f"False alarms over 10 minutes of testsrc2 with speech (espeak-ng), played at 4x, thresholds 2 s: **{raised}**.", ""]
    out += ["Loudness against ffmpeg's `ebur128` on the same file:", "",
            "| signal | integrated: PlayerKit | ffmpeg | true peak: PlayerKit | ffmpeg | short-term max: PlayerKit | ffmpeg | largest difference |",
            "|---|---|---|---|---|---|---|---|"]
    for name, pair in results["loudness"].items():
        a, b = pair["playerkit"], pair["ffmpeg"]
        worst = max(abs(a[k] - b[k]) for k in ("I", "TP", "S_max"))
        out.append(f"| {name} | {a['I']:.2f} LUFS | {b['I']:.2f} LUFS | {a['TP']:.2f} dBTP | {b['TP']:.2f} dBTP | {a['S_max']:.2f} LUFS |"
                   f" {b['S_max']:.2f} LUFS | {worst:.2f} LU |")
    if "truth" in parts:
        out += truth_table(results["truth"])
    cost_rows = {key: statistics.median(values) for key, values in results["cost"].items()}
    out += ["", f"Cost: 4 players looping Tests/Fixtures/long.mp4 (320x240, 30 fps) headless for {options.seconds:g} s,"
            f" % of a core per player, medians of {options.rounds} interleaved rounds:", "",
            "| | PlayerKit | C client | PlayerKit / C | added to plain: PlayerKit | C client |", "|---|---|---|---|---|---|"]
    for what in ("plain", "statistics at 1 Hz", "alarms and loudness") if "cost" in parts else ():
        pk, c = cost_rows[f"PlayerKit/{what}"], cost_rows[f"C client/{what}"]
        added = "" if what == "plain" else f"{pk - cost_rows['PlayerKit/plain']:+.2f} % | {c - cost_rows['C client/plain']:+.2f} %"
        out.append(f"| {what} | {pk:.2f} % | {c:.2f} % | {pk / c:.3f}x | {added or ' | '} |")
    table = "\n".join(out)
    print(table)
    print(json.dumps(results), file=sys.stderr)
    if options.write:
        record = write_figures("health", table, markers=(BEGIN, END), command="Benchmarks/health.py", machine=machine, results=results)
        log(f"wrote {os.path.relpath(record, ROOT)} and the health part of Documentation/Performance.md")


if __name__ == "__main__":
    main()
