#!/usr/bin/env python3
"""PlayerKit's benchmark driver.

Runs every workload three ways in the same run, interleaved so that machine noise hits all of
them alike: a plain C client of libmpv (the floor, Benchmarks/c), PlayerKit (release build,
Benchmarks/PlayerKitBench) and python-mpv (the peer, Benchmarks/python, installed into
.build-bench/venv). When python-mpv cannot be installed its column says so and the rest runs.

  Benchmarks/run.py --write     full suite (a few minutes); records it (Documentation/Figures/
                                benchmark.json) and renders its table into Documentation/Performance.md
  Benchmarks/run.py --quick     short suite (about 6 minutes once built); prints one JSON object
  Benchmarks/run.py --chart-only  redraws Documentation/performance.svg from the recorded table
                                  (Documentation/Figures/benchmark.json; runs nothing)
  Benchmarks/run.py --quick --baseline REV
                                the short suite with a fourth column, PlayerKit as of git revision
                                REV (e.g. 1.1.0's commit), built from a worktree in .build-bench and
                                run interleaved with the others: each figure gains
                                playerkit_over_baseline (a regression check side by side, in one run)

Every stage is named on standard error as it starts ("[bench] building ...", "[bench] running:
...") with its time when it ends. A step that fails shows its own output (the last 60 lines) and
ends the run with a non-zero status naming the step; only python-mpv's installation may fail
(its column then says "n/a").
"""
import argparse
import contextlib
import json
import math
import os
import platform
import re
import statistics
import subprocess
import sys
import textwrap
import time
from xml.sax.saxutils import escape

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchkit import docfigures, write_figures  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WORK = os.path.join(ROOT, ".build-bench")
SMALL_CLIP = os.path.join(ROOT, "Media", "clip-a.mp4")
DOC = os.path.join(ROOT, "Documentation", "Performance.md")
CHART = os.path.join(ROOT, "Documentation", "performance.svg")
IMPLEMENTATIONS = ("c", "playerkit", "python_mpv")
NAMES = {"c": "C client", "playerkit": "PlayerKit", "playerkit_immediate": "PlayerKit (.immediate)", "python_mpv": "python-mpv",
         "baseline": "PlayerKit (baseline)"}


def get(result, key):
    """`result[key]`, or None when there is no result or it has no such figure (a baseline built
    before the figure existed)."""
    return result.get(key) if result else None


def difference(result, later, earlier):
    """`result[later] - result[earlier]`, rounded to 0.01, or None when either is missing."""
    if get(result, later) is None or get(result, earlier) is None:
        return None
    return round(result[later] - result[earlier], 2)


def use_baseline(revision):
    """Adds the baseline column (PlayerKit as of `revision`) to every interleaved workload."""
    global IMPLEMENTATIONS
    IMPLEMENTATIONS = ("c", "playerkit", "baseline", "python_mpv")
    NAMES["baseline"] = f"PlayerKit {revision}"
OUTPUT_LINES = 60  # how much of a failed step's output is shown


class StepOutputError(Exception):
    """A step that exited successfully but printed no result (no JSON line); keeps its output."""

    def __init__(self, command, message, stdout, stderr):
        super().__init__(f"{os.path.basename(command[0])} {message}")
        self.cmd, self.stdout, self.stderr = command, stdout, stderr


def run(command, merged=False, **kwargs):
    """Runs `command`; returns its standard output. `merged` puts standard error into it too, in
    order (for builds: a compiler's errors and what led to them read as one log)."""
    if merged:
        return subprocess.run(command, check=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **kwargs).stdout
    return subprocess.run(command, check=True, capture_output=True, text=True, **kwargs).stdout


def run_json(command, **kwargs):
    """Runs `command` and parses its last line of output as JSON."""
    completed = subprocess.run(command, check=True, capture_output=True, text=True, **kwargs)
    try:
        return json.loads(completed.stdout.strip().splitlines()[-1])
    except (IndexError, ValueError):
        raise StepOutputError(command, "printed no JSON result", completed.stdout, completed.stderr) from None


_open_line = None  # the stage whose start line ("[bench] ...…") is still open on stderr


def log(message):
    global _open_line
    if _open_line is not None:
        sys.stderr.write("\n")
        _open_line = None
    print(message, file=sys.stderr, flush=True)


def duration(seconds):
    return f"{seconds:.1f} s" if seconds < 60 else f"{int(seconds // 60)} min {seconds % 60:02.0f} s"


def show_output(error):
    """The last OUTPUT_LINES lines of what a failed step printed, on stderr."""
    streams = [(name, text) for name, text in (("standard error", getattr(error, "stderr", None)),
                                               ("output", getattr(error, "stdout", None)))
               if isinstance(text, str) and text.strip()]
    if not streams:
        log("[bench] (it printed nothing)")
    blocks = [(name, text.rstrip().splitlines()) for name, text in streams]
    keeps = [OUTPUT_LINES] * len(blocks)
    if len(blocks) == 2:  # standard output gets what standard error leaves, at least a third
        first, second = len(blocks[0][1]), len(blocks[1][1])
        keeps[1] = min(second, max(OUTPUT_LINES // 3, OUTPUT_LINES - first))
        keeps[0] = OUTPUT_LINES - keeps[1]
    for (name, lines), keep in zip(blocks, keeps):
        shown = lines[-keep:]
        log(f"[bench] --- its {name}" + (f" (last {len(shown)} of {len(lines)} lines)" if len(shown) < len(lines) else "") + ":")
        for line in shown:
            print(line, file=sys.stderr)
    if streams:
        log("[bench] ---")


@contextlib.contextmanager
def stage(name, fatal=True):
    """Names a stage on stderr as it starts, and its time when it ends (on the same line when
    nothing was logged in between). When a command in it fails, shows that command's output
    and exits non-zero naming the stage; with fatal=False, re-raises after showing it."""
    global _open_line
    # Written without its newline: the end goes on the same line unless something comes between.
    if _open_line is not None:
        sys.stderr.write("\n")
    sys.stderr.write(f"[bench] {name}…")
    sys.stderr.flush()
    marker = object()
    _open_line = marker
    start = time.monotonic()

    def end(text):
        global _open_line
        if _open_line is marker:
            sys.stderr.write(f" {text}\n")
            sys.stderr.flush()
            _open_line = None
        else:
            log(f"[bench] {name}: {text}")
    try:
        yield
    except (subprocess.CalledProcessError, StepOutputError, OSError) as error:
        if isinstance(error, subprocess.CalledProcessError):
            what = f"{os.path.basename(str(error.cmd[0]))} exited with status {error.returncode}"
        elif isinstance(error, StepOutputError):
            what = str(error)
        else:
            what = f"{error.filename or 'a command'}: {error.strerror or error}"
        end(f"failed after {duration(time.monotonic() - start)}: {what}")
        if not isinstance(error, OSError):
            show_output(error)
        if fatal:
            command = getattr(error, "cmd", None)
            if command:
                log("[bench] the command was: " + " ".join(map(str, command)))
            log(f"[bench] FAILED: {name} ({what})")
            sys.exit(1)
        raise
    except BaseException:
        end(f"stopped after {duration(time.monotonic() - start)}")
        raise
    end(f"done in {duration(time.monotonic() - start)}")


class Tools:
    """The three programs, built or installed."""

    def __init__(self, clip_seconds):
        os.makedirs(WORK, exist_ok=True)
        with stage("building PlayerKit benchmark (release)"):
            run(["swift", "build", "-c", "release", "--product", "playerkit-bench"], merged=True, cwd=ROOT)
            bin_dir = run(["swift", "build", "-c", "release", "--show-bin-path"], cwd=ROOT).strip()
        self.swift = os.path.join(bin_dir, "playerkit-bench")
        self.baseline = None
        self.c_roundtrip = os.path.join(WORK, "roundtrip")
        self.c_workloads = os.path.join(WORK, "workloads")
        self.c_frames = os.path.join(WORK, "frames")
        for binary, libraries in ((self.c_roundtrip, ["-lmpv"]), (self.c_workloads, ["-lmpv", "-lpthread", "-lm"]),
                                  (self.c_frames, ["-lmpv", "-lpthread", "-lEGL", "-lOpenGL"])):
            source = os.path.join(ROOT, "Benchmarks", "c", os.path.basename(binary) + ".c")
            with stage(f"building the C client ({os.path.basename(source)})"):
                run(["cc", "-O2", "-o", binary, source, *libraries], merged=True)
        self.python = None
        try:
            venv = os.path.join(WORK, "venv")
            if not os.path.exists(os.path.join(venv, "bin", "python")):
                with stage("creating .build-bench/venv for python-mpv", fatal=False):
                    run([sys.executable, "-m", "venv", venv], merged=True)
            with stage("installing python-mpv into .build-bench/venv (pip)", fatal=False):
                run([os.path.join(venv, "bin", "pip"), "install", "-q", "python-mpv"], merged=True)
            self.python = os.path.join(venv, "bin", "python")
            self.python_mpv_version = run([self.python, "-c", "import importlib.metadata as m; print(m.version('python-mpv'))"]).strip()
        except (subprocess.CalledProcessError, OSError):
            log("[bench] python-mpv unavailable: its column says n/a")
            self.python = None
            self.python_mpv_version = "not installed"
        self.clip = os.path.join(WORK, f"clip-720p30-{clip_seconds}s.mp4")
        if not os.path.exists(self.clip):
            with stage(f"making the {clip_seconds} s 720p30 H.264 clip (ffmpeg)"):
                run(["ffmpeg", "-nostdin", "-loglevel", "error", "-y", "-f", "lavfi", "-i",
                     f"testsrc2=size=1280x720:rate=30:duration={clip_seconds}", "-c:v", "libx264", "-preset", "veryfast",
                     "-pix_fmt", "yuv420p", self.clip], merged=True)
        self.clip_seconds = clip_seconds

    def build_baseline(self, revision):
        """Builds playerkit-bench as of git `revision` in a worktree of its own (release)."""
        tree = os.path.join(WORK, "baseline-" + re.sub(r"[^A-Za-z0-9._-]", "_", revision))
        if not os.path.exists(tree):
            with stage(f"checking out {revision} into {os.path.relpath(tree, ROOT)} (git worktree)"):
                run(["git", "worktree", "add", "--detach", tree, revision], merged=True, cwd=ROOT)
        with stage(f"building the PlayerKit benchmark of {revision} (release)"):
            run(["swift", "build", "-c", "release", "--product", "playerkit-bench"], merged=True, cwd=tree)
            bin_dir = run(["swift", "build", "-c", "release", "--show-bin-path"], cwd=tree).strip()
        self.baseline = os.path.join(bin_dir, "playerkit-bench")
        use_baseline(revision)

    def binary(self, implementation):
        """The PlayerKit benchmark binary of a PlayerKit column."""
        return self.baseline if implementation == "baseline" else self.swift

    def workload(self, implementation, mode, *arguments, env=None, note=None):
        """Runs one workload as a stage; returns its JSON, or None when python-mpv is missing (or
        the baseline has no such workload)."""
        if implementation == "baseline":
            try:
                return self._workload(implementation, mode, *arguments, env=env, note=note, fatal=False)
            except (subprocess.CalledProcessError, StepOutputError, OSError):
                return None
        return self._workload(implementation, mode, *arguments, env=env, note=note)

    def _workload(self, implementation, mode, *arguments, env=None, note=None, fatal=True):
        swift = self.binary(implementation)
        if implementation == "c":
            command = [self.c_workloads, mode, *map(str, arguments)]
        elif implementation == "python_mpv":
            if not self.python:
                return None
            command = [self.python, os.path.join(ROOT, "Benchmarks", "python", "workloads.py"), mode, *map(str, arguments)]
        elif mode == "seams":
            command = [swift, "seams", "--seconds", str(arguments[1]), *arguments[2:]]
        elif mode == "churn":
            command = [swift, "churn", "--count", str(arguments[0]), "--media", str(arguments[1]), *map(str, arguments[2:])]
        elif mode == "sync-naive":
            command = [swift, "sync", "--naive", "--seconds", str(arguments[0]), *arguments[1:]]
        else:
            names = {"decode": ["--players"], "ttff": ["--runs"], "events": ["--players", "--seconds"],
                     "memory": ["--players"], "cycles": ["--count"], "ready": ["--runs"], "switch": ["--runs"], "release": ["--players"],
                     "realtime": ["--players", "--seconds"]}[mode]
            command = [swift, mode]
            for name, value in zip(names, arguments):
                command += [name, str(value)]
            if len(arguments) > len(names):
                command += ["--media", str(arguments[-1])]
        with stage(describe(mode, arguments, implementation, note), fatal=fatal):
            return run_json(command, env=env)

    def run_json(self, name, command, implementation="playerkit", note=None):
        """Runs one command of a workload as a stage; returns its JSON."""
        with stage(f"running: {name}, {NAMES[implementation]}" + (f" ({note})" if note else "")):
            return run_json(command)


def describe(mode, arguments, implementation, note=None):
    """A stage's name for one workload: "running: decode, 4 players, C client (round 1/2)"."""
    def players(count):
        return f"{count} player{'' if count == 1 else 's'}"
    text = {
        "decode": lambda: f"decode, {players(arguments[0])}",
        "ttff": lambda: f"time to first frame, {arguments[0]} runs" + (" over HTTP" if str(arguments[1]).startswith("http") else ""),
        "events": lambda: f"events, {players(arguments[0])}, {arguments[1]} s",
        "memory": lambda: f"memory, {players(arguments[0])}",
        "cycles": lambda: f"create + shutdown, {arguments[0]} cycles",
        "ready": lambda: f"a player that accepts a load, {arguments[0]} runs 0.3 s apart",
        "churn": lambda: f"churn, {arguments[0]} cycles",
        "switch": lambda: f"next clip, {arguments[0]} runs",
        "seams": lambda: f"loop seams, {arguments[0]}, {arguments[1]} s",
        "release": lambda: f"memory release, {players(arguments[0])}",
        "realtime": lambda: f"real time, {players(arguments[0])}, {arguments[1]} s",
        "sync-naive": lambda: f"drift, 2 players started one after the other, {arguments[0]} s",
    }.get(mode, lambda: mode)()
    return f"running: {text}, {NAMES[implementation]}" + (f" ({note})" if note else "")


def machine(tools):
    model = "unknown"
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass

    def version(command):
        try:
            return run(command).strip().splitlines()[0]
        except (subprocess.CalledProcessError, OSError, IndexError):
            return "unknown"
    return {
        "cpus": os.cpu_count(), "cpu": model, "kernel": platform.release(),
        "libmpv": version(["dpkg-query", "-W", "-f=${Version}", "libmpv2"]),
        "swift": version(["swift", "--version"]), "python": platform.python_version(),
        "python_mpv": tools.python_mpv_version,
    }


def median_of(runs, key):
    values = [r[key] for r in runs if r is not None]
    return statistics.median(values) if values else None


def measure(tools, quick):
    """Every workload, interleaved by implementation. Returns {figure: {implementation: value}}."""
    rounds = 1 if quick else 2
    figures = {}

    def record(name, values):
        figures[name] = values

    decode_players = (1, 16) if quick else (1, 4, 8, 16)
    for players in decode_players:
        runs = {i: [] for i in IMPLEMENTATIONS}
        for index in range(rounds):
            for implementation in IMPLEMENTATIONS:
                runs[implementation].append(tools.workload(implementation, "decode", players, tools.clip,
                                                           note=f"round {index + 1}/{rounds}"))
        record(f"decode_cpu_per_player_second_n{players}",
               {i: (median_of(r, "cpu_s") / (players * tools.clip_seconds)) if median_of(r, "cpu_s") else None for i, r in runs.items()})
        record(f"decode_wall_over_media_time_n{players}",
               {i: (median_of(r, "wall_s") / tools.clip_seconds) if median_of(r, "wall_s") else None for i, r in runs.items()})

    ttff_runs = 10 if quick else 30
    ttff = {i: tools.workload(i, "ttff", ttff_runs, tools.clip) for i in IMPLEMENTATIONS}
    record("ttff_p50_ms", {i: get(r, "p50_ms") for i, r in ttff.items()})
    record("ttff_p99_ms", {i: get(r, "p99_ms") for i, r in ttff.items()})

    # The quick suite checks the delivery cost (issue 11: queue delivery within 1.25x of C at
    # p50), so it takes three rounds of a thousand samples: one round swings by 30% here.
    samples = 1000 if quick else 2000
    round_trip_rounds = 3 if quick else 5
    for gap_us in (0, 500):
        for players in (1, 16):
            runs = {"c": [], "playerkit": [], "playerkit_immediate": [], "python_mpv": []}
            for index in range(round_trip_rounds):
                swift = [tools.swift, "round-trip", "--players", str(players), "--samples", str(samples),
                         "--media", SMALL_CLIP, "--gap-us", str(gap_us)]
                name = f"round trip, {players} player{'s' if players > 1 else ''}, {gap_us} us apart"
                note = f"round {index + 1}/{round_trip_rounds}"
                runs["c"].append(tools.run_json(name, [tools.c_roundtrip, str(players), str(samples), SMALL_CLIP, str(gap_us)], "c", note))
                runs["playerkit"].append(tools.run_json(name, swift, "playerkit", note))
                runs["playerkit_immediate"].append(tools.run_json(name, swift + ["--immediate"], "playerkit_immediate", note))
                if tools.python:
                    runs["python_mpv"].append(tools.run_json(name, [tools.python, os.path.join(ROOT, "Benchmarks", "python", "roundtrip.py"),
                                                                    str(players), str(samples), SMALL_CLIP, str(gap_us)], "python_mpv", note))
            spacing = "back_to_back" if gap_us == 0 else "apart"
            for percentile in ("p50_us", "p99_us"):
                record(f"round_trip_{spacing}_n{players}_{percentile}", {i: median_of(r, percentile) for i, r in runs.items()})
            # PlayerKit only: the delivery hop itself, from the event's record time (on the pump)
            # to the subscriber's handler, for each delivery mode.
            record(f"delivery_hop_{spacing}_n{players}_p50_us",
                   {"playerkit": median_of(runs["playerkit"], "hop_p50_us"),
                    "playerkit_immediate": median_of(runs["playerkit_immediate"], "hop_p50_us")})

    seconds = 2 if quick else 5
    events = {i: tools.workload(i, "events", 16, seconds, tools.clip) for i in IMPLEMENTATIONS}
    record("events_per_second_n16", {i: get(r, "events_per_second") for i, r in events.items()})
    record("events_cpu_s_per_second_n16", {i: get(r, "cpu_s") / seconds for i, r in events.items()})

    for players in ((1, 16) if quick else (1, 8, 16)):
        memory = {i: tools.workload(i, "memory", players, tools.clip) for i in IMPLEMENTATIONS}
        record(f"rss_added_per_player_mb_n{players}", {i: get(r, "rss_added_per_player_mb") for i, r in memory.items()})

    count = 50 if quick else 200
    cycles = {i: tools.workload(i, "cycles", count) for i in IMPLEMENTATIONS}
    record("cycle_ms", {i: get(r, "cycle_ms") for i, r in cycles.items()})
    record(f"rss_growth_after_{count}_cycles_mb", {i: get(r, "rss_growth_mb") for i, r in cycles.items()})

    measure_churn(tools, quick, record)

    # A player that accepts a load: PlayerKit takes a core made ready ahead (its default), the C
    # client and python-mpv create theirs; one run every 0.3 s on an idle machine.
    ready_runs = 20 if quick else 50
    ready = {i: tools.workload(i, "ready", ready_runs) for i in IMPLEMENTATIONS}
    record("ready_p50_ms", {i: get(r, "p50_ms") for i, r in ready.items()})
    record("ready_p99_ms", {i: get(r, "p99_ms") for i, r in ready.items()})
    cold = ready.get("playerkit")
    record("ready_without_ready_cores_p50_ms", {i: (get(cold, "cold_p50_ms")) if i == "playerkit" else (ready[i] and ready[i]["p50_ms"])
                                                for i in IMPLEMENTATIONS})

    # Switching to the next clip: cold load against a preloaded player.
    switch_runs = 9 if quick else 21
    switch = {i: tools.workload(i, "switch", switch_runs, tools.clip) for i in IMPLEMENTATIONS}
    record("switch_cold_p50_ms", {i: get(r, "cold_p50_ms") for i, r in switch.items()})
    record("switch_preloaded_p50_ms", {i: get(r, "preloaded_p50_ms") for i, r in switch.items()})

    # Seams of a loop of the two shipped 4 s clips (video and audio): one timeline (PlayerKit's
    # ClipLoop, and the same edl:// in C and python-mpv), and mpv's playlist with gapless
    # audio and prefetching.
    with stage("reading the loop clips' durations (ffprobe)"):
        durations = [clip_duration(clip) for clip in LOOP_CLIPS]
    loop_seconds = 9 if quick else 21
    for mode in ("edl", "playlist"):
        gaps = {}
        for implementation in IMPLEMENTATIONS:
            if mode == "playlist" and implementation in ("playerkit", "baseline"):
                continue  # PlayerKit loops through one timeline only
            result = tools.workload(implementation, "seams", mode, loop_seconds, *LOOP_CLIPS)
            gaps[implementation] = result and seam_gaps(result["samples"], durations, mode)
        record(f"seam_gap_{mode}_p50_ms", {i: g and statistics.median(g) for i, g in gaps.items()})
        record(f"seam_gap_{mode}_max_ms", {i: g and max(g) for i, g in gaps.items()})

    # Memory of 8 playing players, after they release their media, and after malloc_trim.
    release = {i: tools.workload(i, "release", 8, tools.clip) for i in IMPLEMENTATIONS}
    for key in ("active_mb_per_player", "released_mb_per_player", "trimmed_mb_per_player"):
        record(f"release_{key}", {i: r and r[key] for i, r in release.items()})

    # The largest number of looping 720p30 players that drop at most 1% of their frames.
    counts = (8, 16) if quick else (4, 8, 12, 16, 20, 24, 32)
    realtime_seconds = 3 if quick else 5
    largest = {}
    for implementation in IMPLEMENTATIONS:
        best = 0
        for players in counts:
            result = tools.workload(implementation, "realtime", players, realtime_seconds, tools.clip)
            if result is None:
                best = None
                break
            if result["dropped"] > 0.01 * result["frames"]:
                break
            best = players
        largest[implementation] = best
    record("realtime_players_720p30", largest)

    # Two players side by side: started the naive way (one after the other; C, python-mpv and
    # PlayerKit alike), and PlayerKit's SyncGroup. Drift between them at every frame.
    sync_seconds = 8 if quick else 30
    naive = {i: tools.workload(i, "sync-naive", sync_seconds, *LOOP_CLIPS) for i in IMPLEMENTATIONS}
    group = tools.run_json(f"drift, 2 players in a SyncGroup, {sync_seconds} s", [tools.swift, "sync", "--seconds", str(sync_seconds), *LOOP_CLIPS])
    for key in ("p50_ms", "p99_ms", "max_ms"):
        record(f"sync_naive_{key}", {i: r and r[key] for i, r in naive.items()})
        record(f"sync_group_{key}", {"playerkit": group[key]})
    # A SyncGroup's load (every member paused on its first frame; the members load at once) and
    # its start skew (the spread of the members' `playing` records after `play()`).
    for members in (2, 4):
        load = tools.run_json(f"SyncGroup load and start, {members} members", [tools.swift, "sync-load", "--members", str(members), "--runs", "5" if quick else "15", *LOOP_CLIPS])
        record(f"sync_load_p50_ms_n{members}", {"playerkit": get(load, "load_p50_ms")})
        record(f"sync_start_skew_p50_ms_n{members}", {"playerkit": get(load, "skew_p50_ms")})

    # Autoplay: from the moment scrolling settled to the decision, and to the item playing.
    autoplay_runs = 10 if quick else 40
    autoplay = tools.run_json(f"autoplay, {autoplay_runs} runs", [tools.swift, "autoplay", "--runs", str(autoplay_runs), "--media", SMALL_CLIP])
    for key in ("decision_p50_ms", "decision_p99_ms", "playing_p50_ms"):
        record(f"autoplay_{key}", {"playerkit": autoplay[key]})

    # Frames the app draws: software frames (720p bgr0) and OpenGL into an FBO (Mesa's llvmpipe,
    # EGL without a surface), 1 and 4 looping 720p30 players, counted over 30 s (5 s quick).
    # python-mpv has no software column: its render API wrapper knows no software-renderer
    # parameters (MpvRenderParam.TYPES stops at drm_display_v2, id 16); its OpenGL column is
    # Benchmarks/python/frames.py (python-mpv's MpvRenderContext, EGL and GL through ctypes).
    frame_seconds = 5 if quick else 30
    for mode in ("sw", "gl"):
        for players in (1, 4):
            results = {}
            for implementation in IMPLEMENTATIONS:
                if implementation == "python_mpv" and (mode == "sw" or not tools.python):
                    results[implementation] = None
                    continue
                if implementation == "c":
                    command = [tools.c_frames, mode, str(players), str(frame_seconds), "1280", "720", tools.clip]
                elif implementation == "python_mpv":
                    command = [tools.python, os.path.join(ROOT, "Benchmarks", "python", "frames.py"), mode, str(players),
                               str(frame_seconds), "1280", "720", tools.clip]
                elif implementation == "baseline":
                    results[implementation] = None   # the frames workloads run on the tree under test only
                    continue
                else:
                    command = [tools.swift, "frames", "--mode", mode, "--players", str(players), "--seconds", str(frame_seconds),
                               "--width", "1280", "--height", "720", "--media", tools.clip]
                kind = "software frames" if mode == "sw" else "OpenGL frames"
                results[implementation] = tools.run_json(f"{kind}, {players} player{'s' if players > 1 else ''}, {frame_seconds} s",
                                                         command, implementation)
            for key in ("frames_per_second_per_player", "cpu_ms_per_frame", "late", "missing") + (("render_ms",) if mode == "gl" else ()):
                record(f"frames_{mode}_{key}_n{players}", {i: r and r[key] for i, r in results.items()})

    # The media cache: first frame over loopback HTTP throttled to 2 MB/s (PlayerKit through a cold
    # cache; C and python-mpv through mpv's own HTTP loading of the same URL), from a warm cache
    # (against the plain local file for C and python-mpv), and the bytes the server sends when two
    # players and a precache want one item (the cache) or two players load its URL (mpv's own).
    cache_runs = 5 if quick else 15
    cache = tools.run_json(f"media cache, {cache_runs} runs", [tools.swift, "cache", "--runs", str(cache_runs), "--media", tools.clip])
    with stage("starting the loopback media server (playerkit-bench serve)"):
        server = subprocess.Popen([tools.swift, "serve", "--media", tools.clip], stdout=subprocess.PIPE, text=True)
    try:
        url = server.stdout.readline().strip()
        http_runs = 5 if quick else 15
        http = {i: tools.workload(i, "ttff", http_runs, url) for i in ("c", "python_mpv")}
    finally:
        server.kill()
        server.wait()
    local = {i: tools.workload(i, "ttff", 5 if quick else 15, tools.clip) for i in ("c", "python_mpv")}
    record("cache_ttff_network_p50_ms", {"playerkit": cache["cold_p50_ms"], "c": http["c"] and http["c"]["p50_ms"],
                                         "python_mpv": http["python_mpv"] and http["python_mpv"]["p50_ms"]})
    record("cache_ttff_uncached_p50_ms", {"playerkit": cache["mpv_http_p50_ms"], "c": http["c"] and http["c"]["p50_ms"],
                                          "python_mpv": http["python_mpv"] and http["python_mpv"]["p50_ms"]})
    record("cache_ttff_network_p99_ms", {"playerkit": cache["cold_p99_ms"], "c": http["c"] and http["c"]["p99_ms"],
                                         "python_mpv": http["python_mpv"] and http["python_mpv"]["p99_ms"]})
    record("cache_ttff_uncached_p99_ms", {"playerkit": cache["mpv_http_p99_ms"], "c": http["c"] and http["c"]["p99_ms"],
                                          "python_mpv": http["python_mpv"] and http["python_mpv"]["p99_ms"]})
    record("cache_ttff_warm_p50_ms", {"playerkit": cache["warm_p50_ms"], "c": local["c"] and local["c"]["p50_ms"],
                                      "python_mpv": local["python_mpv"] and local["python_mpv"]["p50_ms"]})
    record("cache_ttff_local_p50_ms", {"playerkit": cache["local_p50_ms"], "c": local["c"] and local["c"]["p50_ms"],
                                       "python_mpv": local["python_mpv"] and local["python_mpv"]["p50_ms"]})
    record("cache_server_bytes_shared", {"playerkit": cache["shared_bytes"] / cache["size"]})
    record("cache_server_bytes_mpv_http", {"playerkit": cache["mpv_http_bytes"] / cache["size"]})

    for subscribers in (1, 10, 100):
        events_count = (100_000 if subscribers == 1 else 1_000_000 // subscribers * 5) // (5 if quick else 1)
        for label, extra in (("queue", []), ("immediate", ["--immediate"])):
            values = []
            fan_out_rounds = 1 if quick else 3
            for index in range(fan_out_rounds):
                result = tools.run_json(f"fan-out, {subscribers} subscriber{'s' if subscribers > 1 else ''}, {label} delivery",
                                        [tools.swift, "fan-out", "--subscribers", str(subscribers), "--events", str(events_count)] + extra,
                                        note=f"round {index + 1}/{fan_out_rounds}")
                values.append(result["deliveries_per_second"])
            record(f"fan_out_{label}_deliveries_per_second_s{subscribers}", {"playerkit": statistics.median(values)})
    measure_cache_layouts(tools, quick, record)
    return figures


# Items for the cold-cache rows: (label, bytes wanted). 720p30 H.264 at 2.4 Mbit/s with noise (so
# the encoder spends its bitrate): 0.3 MB is one second, 30 MB a hundred.
CACHE_LAYOUT_SIZES = [("0.3MB", 300_000), ("1MB", 1_000_000), ("3MB", 3_000_000), ("30MB", 30_000_000)]
CACHE_LAYOUT_BITRATE = 2_400_000


def cache_layout_items():
    """The items of the cold-cache rows, made once into .build-bench: for each size, `moov` at
    the end (ffmpeg's default) and at the start (the same streams remuxed with +faststart).
    Returns [(label, layout, path)]."""
    items = []
    for label, size in CACHE_LAYOUT_SIZES:
        seconds = size * 8 / CACHE_LAYOUT_BITRATE
        end = os.path.join(WORK, f"cache-item-{label}-moov-end.mp4")
        start = os.path.join(WORK, f"cache-item-{label}-moov-start.mp4")
        if not os.path.exists(end):
            with stage(f"making the {label} cache item, moov at the end (ffmpeg)"):
                rate = f"{CACHE_LAYOUT_BITRATE // 1000}k"
                run(["ffmpeg", "-nostdin", "-loglevel", "error", "-y", "-f", "lavfi", "-i",
                     f"testsrc2=size=1280x720:rate=30:duration={seconds:.3f}", "-vf", "noise=alls=24:allf=t",
                     "-c:v", "libx264", "-preset", "veryfast", "-b:v", rate, "-maxrate", rate, "-bufsize", rate,
                     "-pix_fmt", "yuv420p", end + ".part.mp4"], merged=True)
                os.replace(end + ".part.mp4", end)
        if not os.path.exists(start):
            with stage(f"remuxing the {label} cache item, moov at the start (ffmpeg +faststart)"):
                run(["ffmpeg", "-nostdin", "-loglevel", "error", "-y", "-i", end, "-c", "copy", "-movflags", "+faststart",
                     start + ".part.mp4"], merged=True)
                os.replace(start + ".part.mp4", start)
        items += [(label, "end", end), (label, "start", start)]
    return items


def measure_cache_layouts(tools, quick, record):
    """First frame over loopback HTTP at 2 MB/s through a cold MediaCache against mpv's own HTTP
    (PlayerKit loading the URL, and the plain C client), for every size and `moov` layout; and
    the bytes the server sent for a cold play that went on to cache the whole item."""
    items = cache_layout_items()
    runs = 5 if quick else 11
    results = tools.run_json(f"cold cache by size and layout, {runs} runs each",
                             [tools.swift, "cache-layouts", "--runs", str(runs), "--media", *[path for _, _, path in items]])
    for (label, layout, path), result in zip(items, results):
        with stage(f"starting the loopback media server for the {label} item, moov at the {layout}"):
            server = subprocess.Popen([tools.swift, "serve", "--media", path], stdout=subprocess.PIPE, text=True)
        try:
            url = server.stdout.readline().strip()
            c = tools.workload("c", "ttff", runs, url)
        finally:
            server.kill()
            server.wait()
        record(f"cache_layout_{label}_moov_{layout}", {
            "playerkit": result["cold_p50_ms"], "mpv_http": result["mpv_http_p50_ms"], "c": get(c, "p50_ms"),
            "cache_over_mpv_http": round(result["cold_p50_ms"] / result["mpv_http_p50_ms"], 3),
            "sent_over_size": result["sent_over_size"], "requests": result["requests"], "size": result["size"]})


LOOP_CLIPS = [os.path.join(ROOT, "Media", name) for name in ("clip-a.mp4", "clip-b.mp4")]


def measure_churn(tools, quick, record):
    """Players that decode, created and shut down one after another: resident memory growth,
    with glibc's default settings and with at most 2 arenas (MALLOC_ARENA_MAX=2 for C and
    python-mpv, ProcessMemory.limitMallocArenas(to: 2) for PlayerKit, which without it bounds
    them to 2 itself). Growth from before the first cycle to after the 50th and the last (what
    churning costs), from the 50th to the last (creep once the arenas have warmed up), and from
    the 10th to the last (the figure before issue 53: it lands in the middle of the warm-up)."""
    count = 50 if quick else 500
    default = {i: tools.workload(i, "churn", count, tools.clip) for i in IMPLEMENTATIONS}
    bounded_env = dict(os.environ, MALLOC_ARENA_MAX="2")
    bounded = {i: tools.workload(i, "churn", count, tools.clip, *(["--arenas", "2"] if i == "playerkit" else []),
                                 env=None if i == "playerkit" else bounded_env, note="at most 2 malloc arenas")
               for i in IMPLEMENTATIONS}
    record("churn_cycle_ms", {i: get(r, "cycle_ms") for i, r in default.items()})
    record("churn_rss_from_start_after_50_mb", {i: difference(r, "rss_50_mb", "rss_start_mb") for i, r in default.items()})
    if count > 50:
        record(f"churn_rss_from_start_after_{count}_mb", {i: difference(r, "rss_mb", "rss_start_mb") for i, r in default.items()})
        record(f"churn_rss_creep_50_to_{count}_mb", {i: difference(r, "rss_mb", "rss_50_mb") for i, r in default.items()})
    record(f"churn_rss_growth_after_{count}_mb", {i: get(r, "rss_growth_mb") for i, r in default.items()})
    record(f"churn_rss_growth_arenas2_after_{count}_mb", {i: get(r, "rss_growth_mb") for i, r in bounded.items()})


def clip_duration(path):
    return float(run(["ffprobe", "-v", "error", "-show_entries", "format=duration", "-of", "csv=p=0", path]).strip())


def seam_gaps(samples, durations, mode):
    """The gap at every clip change, in ms, measured as PlayerKit's ClipLoop does: the median
    offset (wall clock minus media clock) of the 3 frames after the change minus the median of
    the 10 frames before it. `samples` are (wall seconds, position) for every frame."""
    cycle = sum(durations)
    starts = [sum(durations[:i]) for i in range(len(durations))]
    clock, clip, offsets, seams = 0.0, 0, [], []
    previous = None
    for wall, position in samples:
        if previous is not None:
            step = position - previous
            if step < -0.5:  # the position started over: a new playlist entry, or the timeline wrapped
                step = (durations[clip] if mode == "playlist" else cycle * 100) - previous + position
            clock += step
        if mode == "playlist":
            if previous is not None and position + 0.5 < previous:
                clip = (clip + 1) % len(durations)
                seams.append(len(offsets))
        else:
            within = position % cycle
            now = max(i for i, start in enumerate(starts) if start <= within + 0.0005)
            if previous is not None and now != clip:
                seams.append(len(offsets))
            clip = now
        offsets.append(wall - clock)
        previous = position
    gaps = []
    for index in seams:
        before, after = offsets[max(0, index - 10):index], offsets[index:index + 3]
        if len(before) >= 3 and len(after) == 3:
            gaps.append((statistics.median(after) - statistics.median(before)) * 1000)
    return gaps


def with_ratios(figures):
    """Adds playerkit_over_c and playerkit_over_python_mpv to every figure that has them (not
    to seam gaps: a ratio of two near-zero gaps says nothing)."""
    for name, values in figures.items():
        if name.startswith("seam_gap"):
            continue
        playerkit = values.get("playerkit")
        for other in ("c", "python_mpv", "baseline"):
            if playerkit is not None and values.get(other):
                values[f"playerkit_over_{other}"] = round(playerkit / values[other], 3)
    return figures


LABELS = [
    ("decode_cpu_per_player_second_n", "CPU seconds per player-second, {} playing 720p30 H.264", "{:.3f}"),
    ("decode_wall_over_media_time_n", "wall time / media time, {} (1.00 = real time)", "{:.3f}"),
    ("ttff_p50_ms", "time to first frame p50 (ms)", "{:.1f}"),
    ("ttff_p99_ms", "time to first frame p99 (ms)", "{:.1f}"),
    ("round_trip_back_to_back_n", "round trip, back to back, {} (us)", "{:.1f}"),
    ("round_trip_apart_n", "round trip, 500 us apart, {} (us)", "{:.1f}"),
    ("delivery_hop_back_to_back_n", "delivery hop (record time on the pump -> handler), back to back, {} (us)", "{:.1f}"),
    ("delivery_hop_apart_n", "delivery hop (record time on the pump -> handler), 500 us apart, {} (us)", "{:.1f}"),
    ("events_per_second_n16", "position events delivered per second, 16 players", "{:.0f}"),
    ("events_cpu_s_per_second_n16", "CPU seconds per second while delivering them", "{:.3f}"),
    ("rss_added_per_player_mb_n", "resident memory added per player, {} (MB)", "{:.1f}"),
    ("cycle_ms", "create + shutdown cycle (ms)", "{:.2f}"),
    ("rss_growth_after_", "resident memory growth after the cycles (MB)", "{:+.2f}"),
    ("churn_cycle_ms", "create + load 720p -> first frame + shutdown cycle (ms)", "{:.1f}"),
    ("churn_rss_from_start_after_50_mb", "resident memory growth from before the first cycle to after the 50th, default malloc settings (MB)", "{:+.2f}"),
    ("churn_rss_from_start_after_", "... to after the last (MB)", "{:+.2f}"),
    ("churn_rss_creep_50_to_", "... from the 50th to the last: creep once warm (MB)", "{:+.2f}"),
    ("churn_rss_growth_after_", "resident memory growth over those cycles, 10th to last, default malloc settings (MB)", "{:+.2f}"),
    ("churn_rss_growth_arenas2_after_", "... with at most 2 malloc arenas (MB)", "{:+.2f}"),
    ("ready_p50_ms", "a player that accepts a load (create, idle machine), p50 (ms)", "{:.2f}"),
    ("ready_p99_ms", "a player that accepts a load, p99 (ms)", "{:.2f}"),
    ("ready_without_ready_cores_p50_ms", "... PlayerKit with readyCores 0, p50 (ms)", "{:.2f}"),
    ("switch_cold_p50_ms", "next clip, cold: load -> first frame, p50 (ms)", "{:.2f}"),
    ("switch_preloaded_p50_ms", "next clip, preloaded: play -> running, p50 (ms)", "{:.2f}"),
    ("seam_gap_edl_p50_ms", "loop seam gap, one timeline, p50 (ms)", "{:.1f}"),
    ("seam_gap_edl_max_ms", "loop seam gap, one timeline, max (ms)", "{:.1f}"),
    ("seam_gap_playlist_p50_ms", "loop seam gap, mpv playlist (gapless audio, prefetch), p50 (ms)", "{:.1f}"),
    ("seam_gap_playlist_max_ms", "loop seam gap, mpv playlist (gapless audio, prefetch), max (ms)", "{:.1f}"),
    ("release_active_mb_per_player", "resident memory per player, 8 playing 720p (MB)", "{:.1f}"),
    ("release_released_mb_per_player", "... after releasing their media (MB; PlayerKit trims the heap itself)", "{:.1f}"),
    ("release_trimmed_mb_per_player", "... after releasing and malloc_trim (MB)", "{:.1f}"),
    ("realtime_players_720p30", "most looping 720p30 players dropping at most 1% of frames", "{:.0f}"),
    ("sync_naive_p50_ms", "drift between 2 players started one after the other, p50 (ms)", "{:.1f}"),
    ("sync_naive_p99_ms", "drift between 2 players started one after the other, p99 (ms)", "{:.1f}"),
    ("sync_naive_max_ms", "drift between 2 players started one after the other, max (ms)", "{:.1f}"),
    ("sync_group_p50_ms", "drift between 2 players in a SyncGroup, p50 (ms)", "{:.1f}"),
    ("sync_group_p99_ms", "drift between 2 players in a SyncGroup, p99 (ms)", "{:.1f}"),
    ("sync_group_max_ms", "drift between 2 players in a SyncGroup, max (ms)", "{:.1f}"),
    ("sync_load_p50_ms_n", "SyncGroup load, every member paused on its first frame, p50 (ms), {}", "{:.1f}"),
    ("sync_start_skew_p50_ms_n", "SyncGroup start skew between members' playing records, p50 (ms), {}", "{:.2f}"),
    ("frames_sw_frames_per_second_per_player_n", "software frames 720p bgr0: frames per second per player, {}", "{:.1f}"),
    ("frames_sw_cpu_ms_per_frame_n", "software frames 720p: CPU ms per frame (whole process), {}", "{:.2f}"),
    ("frames_sw_late_n", "software frames 720p: late frames (>1.5 intervals) over the run, {}", "{:.0f}"),
    ("frames_sw_missing_n", "software frames 720p: frames missing (30/s expected) over the run, {}", "{:.0f}"),
    ("frames_gl_frames_per_second_per_player_n", "OpenGL into an FBO, 720p, Mesa llvmpipe: frames per second per player, {}", "{:.1f}"),
    ("frames_gl_cpu_ms_per_frame_n", "OpenGL 720p: CPU ms per frame (whole process), {}", "{:.2f}"),
    ("frames_gl_render_ms_n", "OpenGL 720p: ms per render (render + glFinish), {}", "{:.2f}"),
    ("frames_gl_late_n", "OpenGL 720p: late frames (>1.5 intervals) over the run, {}", "{:.0f}"),
    ("frames_gl_missing_n", "OpenGL 720p: frames missing (30/s expected) over the run, {}", "{:.0f}"),
    ("autoplay_decision_p50_ms", "autoplay: scrolling settled -> decision, p50 (ms)", "{:.2f}"),
    ("autoplay_decision_p99_ms", "autoplay: scrolling settled -> decision, p99 (ms)", "{:.2f}"),
    ("autoplay_playing_p50_ms", "autoplay: scrolling settled -> item playing, p50 (ms)", "{:.1f}"),
    ("cache_ttff_network_p50_ms", "first frame over loopback HTTP at 2 MB/s, p50 (ms): PlayerKit through a cold MediaCache; C and python-mpv through mpv's own HTTP", "{:.1f}"),
    ("cache_ttff_uncached_p50_ms", "first frame over loopback HTTP at 2 MB/s through mpv's own HTTP (no cache), p50 (ms)", "{:.1f}"),
    ("cache_ttff_network_p99_ms", "first frame over loopback HTTP at 2 MB/s, p99 (ms): PlayerKit through a cold MediaCache; C and python-mpv through mpv's own HTTP", "{:.1f}"),
    ("cache_ttff_uncached_p99_ms", "first frame over loopback HTTP at 2 MB/s through mpv's own HTTP (no cache), p99 (ms)", "{:.1f}"),
    ("cache_ttff_warm_p50_ms", "first frame, p50 (ms): PlayerKit from a warm MediaCache; C and python-mpv from the local file", "{:.1f}"),
    ("cache_ttff_local_p50_ms", "first frame from the local file, p50 (ms)", "{:.1f}"),
    ("cache_server_bytes_shared", "bytes the server sent / item size: 2 players + a precache of one item through a MediaCache", "{:.3f}"),
    ("cache_server_bytes_mpv_http", "bytes the server sent / item size: 2 players loading the item's URL (mpv's own HTTP)", "{:.3f}"),
]


def label(name):
    for prefix, text, number in LABELS:
        if name.startswith(prefix):
            rest = name[len(prefix):]
            detail = rest.replace("_p50_us", " p50").replace("_p99_us", " p99")
            detail = re.sub(r"^(\d+)", lambda m: f"{m.group(1)} player{'s' if m.group(1) != '1' else ''}", detail)
            return text.format(detail) if "{}" in text else text, number
    return name, "{:.3g}"


def machine_text(info):
    return (f"{info['cpus']} CPUs ({info['cpu']}), Linux {info['kernel']}; "
            f"libmpv {info['libmpv']}; {info['swift']}; Python {info['python']}, python-mpv {info['python_mpv']}")


def table(figures, info, command, date=None):
    def cell(value, number):
        return number.format(value) if value is not None else "n/a"
    lines = [
        f"Measured {date + ' ' if date else ''}with `{command}`. Machine: {machine_text(info)}.",
        "",
        "| figure | plain C | PlayerKit | python-mpv | PlayerKit / C | PlayerKit / python-mpv |",
        "|---|---|---|---|---|---|",
    ]
    for name, values in figures.items():
        if name.startswith("fan_out") or name.startswith("cache_layout_"):
            continue
        text, number = label(name)
        lines.append(f"| {text} | {cell(values.get('c'), number)} | {cell(values.get('playerkit'), number)} "
                     f"| {cell(values.get('python_mpv'), number)} | {cell(values.get('playerkit_over_c'), '{:.2f}x')} "
                     f"| {cell(values.get('playerkit_over_python_mpv'), '{:.2f}x')} |")
        if "playerkit_immediate" in values:
            lines.append(f"| ... with `.immediate` delivery | | {cell(values['playerkit_immediate'], number)} | "
                         f"| {cell(values['playerkit_immediate'] / values['c'] if values.get('c') else None, '{:.2f}x')} "
                         f"| {cell(values['playerkit_immediate'] / values['python_mpv'] if values.get('python_mpv') else None, '{:.2f}x')} |")
    lines += ["", "Fan-out (a player's published events to its bus subscribers; no C or python-mpv counterpart), "
              "deliveries per second:", "",
              "| subscribers | queue | immediate |", "|---|---|---|"]
    for subscribers in (1, 10, 100):
        row = [figures[f"fan_out_{kind}_deliveries_per_second_s{subscribers}"]["playerkit"] for kind in ("queue", "immediate")]
        lines.append(f"| {subscribers} | " + " | ".join(f"{value:,.0f}" for value in row) + " |")
    layouts = [(name, values) for name, values in figures.items() if name.startswith("cache_layout_")]
    if layouts:
        lines += ["", "First frame through a cold `MediaCache` against mpv's own HTTP, over loopback at 2 MB/s per "
                  "connection, p50 (ms); and the bytes the server sent for a cold play that went on to cache the "
                  "whole item, over the item's size (and its requests):", "",
                  "| item | `moov` | mpv's HTTP, PlayerKit | mpv's HTTP, plain C | cold cache | cold cache / mpv's HTTP "
                  "| bytes sent / item | requests |", "|---|---|---|---|---|---|---|---|"]
        for name, values in layouts:
            item, layout = name[len("cache_layout_"):].split("_moov_")
            lines.append(f"| {item} ({values['size'] / 1e6:.2f} MB) | at the {layout} | {cell(values['mpv_http'], '{:.1f}')} "
                         f"| {cell(values.get('c'), '{:.1f}')} | {cell(values['playerkit'], '{:.1f}')} "
                         f"| {values['cache_over_mpv_http']:.2f}x | {values['sent_over_size']:.3f} | {values['requests']} |")
    return "\n".join(lines)


CHART_EMBED = "![PlayerKit vs plain C and python-mpv](performance.svg)"
CHART_SENTENCE = ("A ratio below 1 means PlayerKit's figure is lower than plain C's or python-mpv's: better for "
                  "times, CPU and memory, worse where more is better (frames or events per second, players in real time).")
MARKERS = ("<!-- BENCHMARK START -->", "<!-- BENCHMARK END -->")


def ratio_rows(generated):
    """(label, PlayerKit / C, PlayerKit / python-mpv) for every row of the results table in
    `generated` (the text table() makes) that has at least one ratio; a missing ratio is None."""
    rows, inside = [], False
    for line in generated.splitlines():
        if line.startswith("| figure | plain C |"):
            inside = True
            continue
        if not inside or line.startswith("|---"):
            continue
        if not line.startswith("|"):
            break
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) != 6:
            continue
        ratios = [float(cell[:-1]) if re.fullmatch(r"-?[0-9.]+x", cell) else None for cell in cells[4:6]]
        if any(ratio is not None for ratio in ratios):
            rows.append((cells[0].replace("`", ""), *ratios))
    return rows


def chart_svg(rows):
    """A horizontal bar chart (SVG, drawn here: no plotting library) of PlayerKit / C and
    PlayerKit / python-mpv for every row: bars from 0 on a linear scale with a line at 1.0, cut
    (and marked) past 3x, each with its value. White background: readable on GitHub."""
    colors = {"c": "#3b6fb6", "python_mpv": "#e07b39"}
    width, label_right, plot_left, plot_right = 980, 478, 490, 900
    top, bar, bar_gap, pad = 86, 9, 2, 7
    largest = max(ratio for row in rows for ratio in row[1:] if ratio is not None)
    limit = min(3.0, max(1.5, math.ceil(largest * 2) / 2))
    scale = (plot_right - plot_left) / limit
    font = 'font-family="Helvetica, Arial, sans-serif"'

    def x_of(value):
        return plot_left + min(value, limit) * scale

    body, values, y = [], [], top
    for index, (text, over_c, over_python) in enumerate(rows):
        # Long labels on balanced lines of at most 66 characters.
        lines = textwrap.wrap(text, math.ceil(len(text) / math.ceil(len(text) / 66)) + 6) or [text]
        height = max(2 * bar + bar_gap + 2 * pad, 14 * len(lines) + 2 * pad - 2)
        if index % 2 == 0:
            body.append(f'<rect x="8" y="{y}" width="{width - 16}" height="{height}" fill="#f3f5f8"/>')
        first = y + height / 2 - (14 * (len(lines) - 1)) / 2 + 4
        for number, line in enumerate(lines):
            body.append(f'<text x="{label_right}" y="{first + 14 * number:.1f}" text-anchor="end" {font} font-size="12" '
                        f'fill="#24292f">{escape(line)}</text>')
        bars_top = y + height / 2 - bar - bar_gap / 2
        for slot, (key, ratio) in enumerate((("c", over_c), ("python_mpv", over_python))):
            bar_y = bars_top + slot * (bar + bar_gap)
            if ratio is None:
                body.append(f'<text x="{plot_left + 4}" y="{bar_y + bar - 1:.1f}" {font} font-size="9" fill="#8c959f">n/a</text>')
                continue
            end = x_of(ratio)
            body.append(f'<rect x="{plot_left}" y="{bar_y:.1f}" width="{end - plot_left:.1f}" height="{bar}" fill="{colors[key]}"/>')
            if ratio > limit:  # cut: a white zigzag near the end
                cut = plot_right - 14
                body.append(f'<path d="M{cut},{bar_y - 1:.1f} l4,{(bar + 2) / 2:.1f} l-4,{(bar + 2) / 2:.1f} m6,0 l4,-{(bar + 2) / 2:.1f} '
                            f'l-4,-{(bar + 2) / 2:.1f}" stroke="#ffffff" stroke-width="2" fill="none"/>')
            # A white halo keeps the value readable over the 1x line and the grid.
            values.append(f'<text x="{end + 4:.1f}" y="{bar_y + bar - 1:.1f}" {font} font-size="10" fill="#24292f" '
                          f'stroke="#ffffff" stroke-width="3" stroke-linejoin="round" paint-order="stroke">{ratio:.2f}×</text>')
        y += height
    bottom = y
    grid = []
    for step in range(int(limit * 2) + 1):
        value = step / 2
        x = x_of(value)
        if value == 1.0:
            continue
        grid.append(f'<line x1="{x:.1f}" y1="{top - 6}" x2="{x:.1f}" y2="{bottom}" stroke="#d0d7de" stroke-width="1"/>')
        for label_y in (top - 10, bottom + 16):
            grid.append(f'<text x="{x:.1f}" y="{label_y}" text-anchor="middle" {font} font-size="11" fill="#57606a">{value:g}×</text>')
    one = x_of(1.0)
    grid_top = [f'<line x1="{one:.1f}" y1="{top - 6}" x2="{one:.1f}" y2="{bottom}" stroke="#24292f" stroke-width="1.5"/>']
    for label_y in (top - 10, bottom + 16):
        grid_top.append(f'<text x="{one:.1f}" y="{label_y}" text-anchor="middle" {font} font-size="11" font-weight="bold" '
                        f'fill="#24292f">1×</text>')
    height = bottom + 44
    legend_y = 50
    legend = [
        f'<text x="16" y="26" {font} font-size="16" font-weight="bold" fill="#24292f">PlayerKit against plain C and python-mpv '
        f'(make bench): PlayerKit\'s figure / theirs</text>',
        f'<rect x="16" y="{legend_y - 10}" width="12" height="12" fill="{colors["c"]}"/>',
        f'<text x="34" y="{legend_y}" {font} font-size="12" fill="#24292f">PlayerKit / plain C</text>',
        f'<rect x="170" y="{legend_y - 10}" width="12" height="12" fill="{colors["python_mpv"]}"/>',
        f'<text x="188" y="{legend_y}" {font} font-size="12" fill="#24292f">PlayerKit / python-mpv</text>',
        f'<text x="370" y="{legend_y}" {font} font-size="12" fill="#57606a">below 1×: PlayerKit measured less '
        f'(bars past {limit:g}× are cut)</text>',
    ]
    return "\n".join([
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}">',
        f'<rect width="{width}" height="{height}" fill="#ffffff"/>',
        *legend, *grid, *body, *grid_top, *values, "</svg>", ""])


def with_chart(generated):
    """The generated part of Performance.md with the chart's embed and its sentence after the
    first paragraph (replacing any there already)."""
    generated = re.sub(re.escape(CHART_EMBED) + r"\n\n[^\n]*\n\n", "", generated)
    head, separator, rest = generated.partition("\n\n")
    return head + separator + CHART_EMBED + "\n\n" + CHART_SENTENCE + "\n\n" + rest if separator else generated


def write_chart(generated):
    """Writes Documentation/performance.svg from the table in `generated`; returns
    `generated` with the chart embedded."""
    rows = ratio_rows(generated)
    if not rows:
        sys.exit("[bench] FAILED: drawing the chart: no ratios in the table of Documentation/Performance.md")
    os.makedirs(os.path.dirname(CHART), exist_ok=True)
    with open(CHART, "w", encoding="utf-8") as file:
        file.write(chart_svg(rows))
    log(f"[bench] wrote {os.path.relpath(CHART, ROOT)} ({len(rows)} rows)")
    return with_chart(generated)


def write_document(generated, command, info, figures, date):
    """Records the run (Documentation/Figures/benchmark.json: the table, the machine, the
    figures as measured) and renders the table into Performance.md from that record."""
    try:
        record = write_figures("benchmark", generated, markers=MARKERS, command=command, machine=machine_text(info),
                               date=date, results={"machine": info, **figures})
    except (OSError, ValueError) as error:
        sys.exit(f"[bench] FAILED: writing {DOC}: {error}")
    log(f"[bench] wrote {os.path.relpath(record, ROOT)} and {os.path.relpath(DOC, ROOT)}")


COMPARISON_MARKERS = ("<!-- BASELINE START -->", "<!-- BASELINE END -->")


def comparison_table(figures, revision, info, date):
    """The figures a `--quick --baseline REV` run measured of both, as the ratio of this tree to
    REV, worst first."""
    rows = sorted(((name, values) for name, values in figures.items()
                   if isinstance(values, dict) and values.get("playerkit_over_baseline") is not None),
                  key=lambda item: -item[1]["playerkit_over_baseline"])
    value = lambda number: f"{number:.4g}" if isinstance(number, (int, float)) else "n/a"
    lines = [f"Measured {date} with `make bench-quick BASELINE={revision}`. Machine: {machine_text(info)}.", "",
             f"| figure | this tree | {revision} | this tree / {revision} |", "|---|---|---|---|"]
    for name, values in rows:
        lines.append(f"| `{name}` | {value(values.get('playerkit'))} | {value(values.get('baseline'))} "
                     f"| {values['playerkit_over_baseline']:.3f} |")
    within = sum(1 for _, values in rows if values["playerkit_over_baseline"] <= 1.05)
    lines += ["", f"{within} of {len(rows)} figures within 5% of {revision}'s or better."]
    return "\n".join(lines)


def record_comparison(output, revision):
    """--record-comparison: records a `make bench-quick BASELINE=REV` run's printed JSON
    (Documentation/Figures/baseline.json) and renders its table into Performance.md."""
    figures = {name: values for name, values in output.items() if name not in ("command", "machine", "baseline")}
    info, date = output["machine"], output.get("date") or time.strftime("%Y-%m-%d")
    text = comparison_table(figures, revision, info, date)
    try:
        record = write_figures("baseline", text, markers=COMPARISON_MARKERS, command=f"make bench-quick BASELINE={revision}",
                               machine=machine_text(info), date=date, results=output)
    except (OSError, ValueError) as error:
        sys.exit(f"[bench] FAILED: writing {DOC}: {error}")
    log(f"[bench] wrote {os.path.relpath(record, ROOT)} and {os.path.relpath(DOC, ROOT)}")


def chart_only():
    """--chart-only: the chart from the figures already recorded (Documentation/Figures/
    benchmark.json); runs nothing."""
    try:
        generated = docfigures.render_body(docfigures.load("benchmark"))
        docfigures.replace_blocks("benchmark", write_chart(generated))
    except (OSError, ValueError) as error:
        sys.exit(f"[bench] FAILED: drawing the chart from Documentation/Figures/benchmark.json: {error}")
    log(f"[bench] wrote {os.path.relpath(DOC, ROOT)}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="the short suite; prints one JSON object")
    parser.add_argument("--write", action="store_true",
                        help="rewrite the table in Documentation/Performance.md and its chart, Documentation/performance.svg")
    parser.add_argument("--churn", action="store_true", help="only the memory-churn workload; prints one JSON object")
    parser.add_argument("--baseline", metavar="REV",
                        help="also run PlayerKit as of git revision REV, interleaved (a fourth column; not with --write)")
    parser.add_argument("--chart-only", action="store_true",
                        help="only redraw Documentation/performance.svg (and its embed) from the table in "
                             "Documentation/Performance.md; builds and runs nothing")
    parser.add_argument("--record-comparison", metavar="JSON",
                        help="record what a `make bench-quick BASELINE=REV` run printed (the file JSON; REV from "
                             "--baseline or the output) into Documentation/Figures/baseline.json and render its "
                             "table into Documentation/Performance.md; runs nothing")
    arguments = parser.parse_args()
    if arguments.record_comparison:
        with open(arguments.record_comparison, encoding="utf-8") as file:
            text = file.read()
        output = json.loads(text[text.find("{\n"):text.rfind("}") + 1])
        revision = arguments.baseline or output.get("baseline")
        if not revision:
            parser.error("--record-comparison needs the baseline's revision: --baseline REV")
        record_comparison(output, revision)
        return
    if arguments.chart_only:
        chart_only()
        return
    if arguments.baseline and arguments.write:
        parser.error("--baseline compares; --write records the tree's own figures: give one")
    started = time.monotonic()
    tools = Tools(clip_seconds=3 if arguments.quick else 8)
    if arguments.baseline:
        tools.build_baseline(arguments.baseline)
    if arguments.churn:
        figures = {}
        measure_churn(tools, False, lambda name, values: figures.__setitem__(name, values))
        print(json.dumps({"command": "Benchmarks/run.py --churn", "machine": machine(tools), **with_ratios(figures)}, indent=1))
        log(f"[bench] all done in {duration(time.monotonic() - started)}")
        return
    info = machine(tools)
    figures = with_ratios(measure(tools, arguments.quick))
    command = "make bench-quick" if arguments.quick else "make bench"
    if arguments.quick:
        extra = {"baseline": arguments.baseline, "date": time.strftime("%Y-%m-%d")} if arguments.baseline else {}
        print(json.dumps({"command": command, "machine": info, **extra, **figures}, indent=1))
        log(f"[bench] all done in {duration(time.monotonic() - started)}")
        return
    date = time.strftime("%Y-%m-%d")
    text = table(figures, info, command, date)
    print(text)
    print(json.dumps({"machine": info, **figures}), file=sys.stderr)
    if arguments.write:
        write_document(write_chart(text), command, info, figures, date)
    log(f"[bench] all done in {duration(time.monotonic() - started)}")


if __name__ == "__main__":
    main()
