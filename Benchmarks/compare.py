#!/usr/bin/env python3
"""Issue 28's benchmarks, each beside the tools people would use instead, in the same run.

  Benchmarks/compare.py            runs both, prints a Markdown table
  Benchmarks/compare.py --write    also records it (Documentation/Figures/compare.json) and renders
                                   it into Documentation/Performance.md (between its
                                   "compare-benchmarks" markers)

Frame steps: a SyncGroup's stepFrame()/stepFrameBack() until every member shows its new frame
(playerkit-bench framestep, release build) beside a plain C client sending mpv's own frame-step
and frame-back-step to the same number of cores (Benchmarks/c/compare.c framestep), 2 and 4
members on Media/clip-a.mp4, rounds interleaved.

Posters: 50 short clips (Benchmarks/make-poster-clips.sh), the frame at 1 s as PNG, by a
PosterMaker (playerkit-bench posters, pool of 1 and of 2), by a C client reusing one core with
mpv's screenshot-to-file (compare.c posters), and per clip by ffmpeg and by mpv's command line
(Benchmarks/posters-baselines.sh), rounds interleaved.
"""
import argparse
import json
import os
import platform
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchkit import build_bench, write_figures  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WORK = os.path.join(ROOT, ".build-bench")
DOC = os.path.join(ROOT, "Documentation", "Performance.md")
CLIP = os.path.join(ROOT, "Media", "clip-a.mp4")
BEGIN, END = "<!-- compare-benchmarks: begin -->", "<!-- compare-benchmarks: end -->"


def log(text):
    print(f"[compare] {text}", file=sys.stderr, flush=True)


def run_json(command):
    out = subprocess.run(command, check=True, capture_output=True, text=True).stdout
    return [json.loads(line) for line in out.strip().splitlines() if line.startswith("{")]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--write", action="store_true")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=30)
    options = parser.parse_args()
    os.makedirs(WORK, exist_ok=True)
    bench = build_bench(ROOT, log)
    c_client = os.path.join(WORK, "compare")
    log("building the C client (Benchmarks/c/compare.c)")
    subprocess.run(["cc", "-O2", "-Wall", "-Wextra", "-o", c_client, os.path.join(ROOT, "Benchmarks", "c", "compare.c"),
                    "-lmpv", "-lpthread", "-lm"], check=True)
    clips_dir = os.path.join(WORK, "posters-clips")
    log("making the 50 poster clips")
    subprocess.run([os.path.join(ROOT, "Benchmarks", "make-poster-clips.sh"), clips_dir], check=True)
    clips = sorted(os.path.join(clips_dir, name) for name in os.listdir(clips_dir) if name.endswith(".mp4"))

    steps = {}  # (implementation, members) -> list of results
    posters = {}  # tool -> list of posters per second
    for round_number in range(1, options.rounds + 1):
        for members in (2, 4):
            for name, command in (("C client", [c_client, "framestep", str(members), str(options.steps), CLIP]),
                                  ("PlayerKit", [bench, "framestep", "--members", str(members), "--steps", str(options.steps), CLIP])):
                log(f"round {round_number}: frame steps, {members} members, {name}")
                result = run_json(command)[-1]
                if not (result.get("positions_ok") and result.get("back_positions_ok", True)):
                    sys.exit(f"{name} with {members} members ended on the wrong frames: {result}")
                steps.setdefault((name, members), []).append(result)
        out = os.path.join(WORK, "posters-out")
        for name, command in (
            ("PlayerKit PosterMaker, 2 players", [bench, "posters", "--time", "1", "--concurrency", "2", "--output", out + "/pk2", *clips]),
            ("PlayerKit PosterMaker, 1 player", [bench, "posters", "--time", "1", "--concurrency", "1", "--output", out + "/pk1", *clips]),
            ("C client, one core, screenshot-to-file", [c_client, "posters", out + "/c", "1.0", *clips]),
        ):
            os.makedirs(command[command.index("--output") + 1] if "--output" in command else out + "/c", exist_ok=True)
            log(f"round {round_number}: posters, {name}")
            result = run_json(command)[-1]
            if result.get("failures"):
                sys.exit(f"{name}: {result['failures']} posters failed")
            posters.setdefault(name, []).append(result["posters_per_second"])
        log(f"round {round_number}: posters, ffmpeg and mpv per clip")
        for result in run_json([os.path.join(ROOT, "Benchmarks", "posters-baselines.sh"), clips_dir, "1.0", out + "/cli"]):
            if result.get("failures"):
                sys.exit(f"{result['tool']}: {result['failures']} posters failed")
            label = {"ffmpeg": "ffmpeg -ss 1 -frames:v 1, one process per clip",
                     "mpv-cli": "mpv --vo=image --frames=1 --start=1, one process per clip"}[result["tool"]]
            posters.setdefault(label, []).append(result["posters_per_second"])

    machine = f"{platform.machine()}, {os.cpu_count()} cores, {platform.platform()}"
    lines = [f"Command: `Benchmarks/compare.py --write` ({options.rounds} rounds, interleaved; medians of the rounds). "
             f"Machine: {machine}.", "",
             "**Frame steps** (time from the step request until every member shows its new frame; "
             f"{options.steps} steps forward from frame 30 of Media/clip-a.mp4, then {options.steps} back):", "",
             "| members | C client forward p50 | PlayerKit forward p50 | ratio | C client back p50 | PlayerKit back p50 | ratio |",
             "|---|---|---|---|---|---|---|"]
    for members in (2, 4):
        c = steps[("C client", members)]
        p = steps[("PlayerKit", members)]
        cf = statistics.median(r["forward_p50_ms"] for r in c)
        pf = statistics.median(r["forward_p50_ms"] for r in p)
        cb = statistics.median(r["back_p50_ms"] for r in c)
        pb = statistics.median(r["back_p50_ms"] for r in p)
        lines.append(f"| {members} | {cf:.1f} ms | {pf:.1f} ms | {pf / cf:.2f}x | {cb:.1f} ms | {pb:.1f} ms | {pb / cb:.2f}x |")
    lines += ["", f"**Posters** ({len(clips)} clips of 2 s, 320x240, the frame at 1 s saved as PNG):", "",
              "| tool | posters per second | vs ffmpeg |", "|---|---|---|"]
    ffmpeg = statistics.median(posters["ffmpeg -ss 1 -frames:v 1, one process per clip"])
    for name, values in posters.items():
        median = statistics.median(values)
        lines.append(f"| {name} | {median:.1f} | {median / ffmpeg:.2f}x |")
    table = "\n".join(lines)
    print(table)
    if options.write:
        with open(DOC) as document:
            text = document.read()
        if BEGIN not in text:
            text = text.replace("## What mpv's built-in scripts cost",
                                "## Frame steps and posters (issue 28)\n\n" + BEGIN + "\n" + END + "\n\n## What mpv's built-in scripts cost")
            with open(DOC, "w") as document:
                document.write(text)
        results = {"rounds": options.rounds, "steps": options.steps,
                   "frame_steps": [{"client": client, "members": members, "rounds": runs} for (client, members), runs in steps.items()],
                   "posters_per_second": posters}
        record = write_figures("compare", table, markers=(BEGIN, END), command="Benchmarks/compare.py --write", machine=machine,
                               results=results)
        log(f"wrote {os.path.relpath(record, ROOT)} and its part of {DOC}")


if __name__ == "__main__":
    main()
