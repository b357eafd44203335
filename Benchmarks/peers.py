#!/usr/bin/env python3
"""First frame and player churn against the peers an app would use instead, side by side in one
run: the plain C client of libmpv (the floor, Benchmarks/c/workloads.c), PlayerKit
(`playerkit-bench`, release build), GStreamer's playbin and playbin3, and libVLC's media player
(Benchmarks/c/peers.c).

  time to first frame   create a player, load the 720p30 clip, play -> its first frame shown;
                        ROUNDS rounds (default 3) of 30 runs each, the programs interleaved round
                        by round; the table gives the median over the rounds of each round's p50
                        and p99 (with 30 runs, the p99 is the slowest run: the process's first,
                        cold, load)
  create + destroy      a player made and let go, nothing loaded, 200 times

What each counts as shown: mpv's MPV_EVENT_PLAYBACK_RESTART (vo=null, ao=null) for the C client
and PlayerKit (its firstFrame event); the video sink's first rendered buffer for GStreamer (a
fakesink that keeps the clock); the display callback for libVLC (memory callbacks in the
decoder's own format). PlayerKit makes its ready cores at launch (Player.prepareReadyCores), as
an app does; libVLC's instance is made once per process, as an app makes it.

  Benchmarks/peers.py            prints the table
  Benchmarks/peers.py --write    also records the table (Documentation/Figures/peers.json) and renders
                                 it into the peers part of Documentation/Performance.md
"""
import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WORK = os.path.join(ROOT, ".build-bench")
DOC = os.path.join(ROOT, "Documentation", "Performance.md")
MARKERS = ("<!-- PEERS START -->", "<!-- PEERS END -->")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchkit import build_bench, write_figures  # noqa: E402


def log(text):
    sys.stderr.write(f"[peers] {text}\n")
    sys.stderr.flush()


def run_json(command):
    result = subprocess.run(command, capture_output=True, text=True, timeout=600)
    if result.returncode != 0:
        raise SystemExit(f"[peers] FAILED: {' '.join(command)}\n{result.stderr[-2000:]}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def machine():
    model = "?"
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    def version(command):
        try:
            return subprocess.run(command, capture_output=True, text=True).stdout.strip()
        except OSError:
            return "?"
    return (f"{os.cpu_count()} CPUs ({model}), Linux {platform.release()}; "
            f"libmpv {version(['dpkg-query', '-W', '-f=${Version}', 'libmpv2'])}, "
            f"GStreamer {version(['pkg-config', '--modversion', 'gstreamer-1.0'])}, "
            f"libVLC {version(['pkg-config', '--modversion', 'libvlc'])}")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--write", action="store_true", help="rewrite the peers part of Documentation/Performance.md")
    args = parser.parse_args()
    os.makedirs(WORK, exist_ok=True)
    swift = build_bench(ROOT, log)
    workloads, peers = os.path.join(WORK, "workloads"), os.path.join(WORK, "peers")
    log("building the C clients (workloads.c, peers.c)")
    subprocess.run(["cc", "-O2", "-o", workloads, os.path.join(ROOT, "Benchmarks", "c", "workloads.c"),
                    "-lmpv", "-lpthread", "-lm"], check=True)
    flags = subprocess.run(["pkg-config", "--cflags", "--libs", "gstreamer-1.0", "libvlc"], check=True,
                           capture_output=True, text=True).stdout.split()
    subprocess.run(["cc", "-O2", "-o", peers, os.path.join(ROOT, "Benchmarks", "c", "peers.c"), *flags, "-lpthread"], check=True)
    clip = os.path.join(WORK, "clip-720p30-8s.mp4")
    if not os.path.exists(clip):
        log("making the 8 s 720p30 H.264 clip (ffmpeg)")
        subprocess.run(["ffmpeg", "-nostdin", "-loglevel", "error", "-y", "-f", "lavfi", "-i",
                        "testsrc2=size=1280x720:rate=30:duration=8", "-c:v", "libx264", "-preset", "veryfast",
                        "-pix_fmt", "yuv420p", clip], check=True)

    names = {"c": "plain C client of libmpv", "playerkit": "PlayerKit", "playbin": "GStreamer playbin",
             "playbin3": "GStreamer playbin3", "vlc": "libVLC media player"}
    ttff_commands = {
        "c": [workloads, "ttff", str(args.runs), clip],
        "playerkit": [swift, "ttff", "--runs", str(args.runs), "--media", clip],
        "playbin": [peers, "ttff", "playbin", str(args.runs), clip],
        "playbin3": [peers, "ttff", "playbin3", str(args.runs), clip],
        "vlc": [peers, "ttff", "vlc", str(args.runs), clip],
    }
    ttff = {name: [] for name in names}
    for index in range(args.rounds):
        for name, command in ttff_commands.items():
            log(f"first frame, {names[name]}, round {index + 1}/{args.rounds}")
            ttff[name].append(run_json(command))
    cycle_commands = {
        "c": [workloads, "cycles", "200"],
        "playerkit": [swift, "cycles", "--count", "200"],
        "playbin": [peers, "cycles", "playbin", "200"],
        "playbin3": [peers, "cycles", "playbin3", "200"],
        "vlc": [peers, "cycles", "vlc", "200"],
    }
    cycles = {}
    for name, command in cycle_commands.items():
        log(f"create + destroy, {names[name]}")
        cycles[name] = run_json(command)["cycle_ms"]

    def median(name, key):
        return statistics.median(r[key] for r in ttff[name])

    def each(name, key):
        return ", ".join(f"{r[key]:.1f}" for r in ttff[name])

    c50, c99 = median("c", "p50_ms"), median("c", "p99_ms")
    lines = ["| player | first frame p50 (ms) | p99 (ms) | p50 / C | p99 / C | each round's p50 | each round's p99 | create + destroy (ms) |",
             "|---|---|---|---|---|---|---|---|"]
    for name in names:
        p50, p99 = median(name, "p50_ms"), median(name, "p99_ms")
        lines.append(f"| {names[name]} | {p50:.1f} | {p99:.1f} | {p50 / c50:.2f}x | {p99 / c99:.2f}x | "
                     f"{each(name, 'p50_ms')} | {each(name, 'p99_ms')} | {cycles[name]:.3f} |")
    table = "\n".join(lines)
    print(table)
    if args.write:
        date, machine_text = time.strftime("%Y-%m-%d"), machine()
        section = (table + "\n\nMeasured " + date + " with `make bench-peers` (`Benchmarks/peers.py --write`): "
                   + f"{args.rounds} rounds of {args.runs} runs, the 8 s 720p30 H.264 clip without sound. Machine: {machine_text}.")
        try:
            record = write_figures("peers", section, markers=MARKERS, command="make bench-peers", machine=machine_text, date=date,
                                   results={"rounds": args.rounds, "runs": args.runs, "first_frame": ttff, "create_destroy_ms": cycles})
        except (OSError, ValueError) as error:
            raise SystemExit(f"[peers] FAILED: writing the peers table: {error}")
        log(f"wrote {os.path.relpath(record, ROOT)} and the peers part of {DOC}")


if __name__ == "__main__":
    main()
