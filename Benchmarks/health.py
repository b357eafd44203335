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

Cost. 4 players loop Tests/Fixtures/long.mp4 (320x240, 30 fps) headless for 15 s: PlayerKit
(`playerkit-bench health-cost`) plain, with statistics at 1 Hz, with alarms and loudness; the plain
C client of libmpv (Benchmarks/c/health.c) plain, with the same eleven reads every second and the
position every frame, with the same filters. CPU seconds over the window (after 2 s of start-up),
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


def cost(command):
    out = run(command, capture_output=True, text=True).stdout
    figures = lines(out)[-1]
    return 100 * figures["cpu_s"] / figures["wall_s"] / figures["players"]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--write", action="store_true")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=15)
    options = parser.parse_args()
    for tool in ("ffmpeg", "cc", "espeak-ng", "sox"):
        if not shutil.which(tool):
            sys.exit(f"{tool} is missing (make bench-deps installs it)")
    os.makedirs(WORK, exist_ok=True)
    bench = build_bench(ROOT, log)
    client = os.path.join(WORK, "health-c")
    log("building the C client (Benchmarks/c/health.c)")
    run(["cc", "-O2", "-Wall", "-Wextra", "-o", client, os.path.join(ROOT, "Benchmarks", "c", "health.c"), "-lmpv", "-lpthread"])
    faults, ordinary, signals = make_media(WORK)

    results = {"alarms": {}, "loudness": {}, "cost": {}}
    for threshold in (2.0, 0.5):
        log(f"alarms at {threshold} s on the faults clip")
        events, frames = alarms(bench, faults, threshold)
        rows, extra = latencies(events, frames, threshold)
        results["alarms"][str(threshold)] = {"faults": rows, "unmatched": extra}
    log("no false alarm: 10 minutes of ordinary content at 4x")
    ordinary_events, _ = alarms(bench, ordinary, 2.0, speed=4.0)
    results["false_alarms"] = ordinary_events
    for name, path in signals.items():
        log(f"loudness: {name}")
        results["loudness"][name] = {"playerkit": playerkit_loudness(bench, path), "ffmpeg": ffmpeg_loudness(path)}
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
    for round_number in range(1, options.rounds + 1):
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
    cost_rows = {key: statistics.median(values) for key, values in results["cost"].items()}
    out += ["", f"Cost: 4 players looping Tests/Fixtures/long.mp4 (320x240, 30 fps) headless for {options.seconds:g} s,"
            f" % of a core per player, medians of {options.rounds} interleaved rounds:", "",
            "| | PlayerKit | C client | PlayerKit / C | added to plain: PlayerKit | C client |", "|---|---|---|---|---|---|"]
    for what in ("plain", "statistics at 1 Hz", "alarms and loudness"):
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
