#!/usr/bin/env python3
"""Issue 29's benchmark: a player on the desktop (MPRIS), measured from a desktop client's side,
next to what people use instead, in the same run.

  Benchmarks/mpris.py            runs it, prints a Markdown table
  Benchmarks/mpris.py --write    also records it (Documentation/Figures/mpris.json) and renders it
                                 into Documentation/Performance.md (between its "mpris-benchmarks"
                                 markers)

On a private session bus (dbus-daemon), one player loops Media/clip-a.mp4 headless:
  - PlayerKit: playerkit-bench mpris-serve (release build), a Player published by MPRISService;
  - mpv with its MPRIS plugin (Debian's mpv-mpris, a C plugin on libmpv's client API: the plain C
    client of libmpv that does this job), `mpv --script=/usr/lib/mpv-mpris/mpris.so`.
A plain C client on sd-bus (Benchmarks/c/mpris.c) plays the desktop: PlayPause, timed until the
player's PropertiesChanged says the new PlaybackStatus (what a media key costs until the panel
shows it), and a Get of Position (what a progress bar asks). Rounds interleaved.
"""
import argparse
import json
import os
import platform
import shutil
import signal
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchkit import build_bench, write_figures  # noqa: E402
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WORK = os.path.join(ROOT, ".build-bench")
DOC = os.path.join(ROOT, "Documentation", "Performance.md")
CLIP = os.path.join(ROOT, "Media", "clip-a.mp4")
PLUGIN = "/usr/lib/mpv-mpris/mpris.so"
BEGIN, END = "<!-- mpris-benchmarks: begin -->", "<!-- mpris-benchmarks: end -->"


def log(text):
    print(f"[mpris] {text}", file=sys.stderr, flush=True)


def start_bus(folder):
    address = f"unix:path={folder}/bus"
    daemon = subprocess.Popen(["dbus-daemon", "--session", "--nofork", "--nopidfile", f"--address={address}"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    env = dict(os.environ, DBUS_SESSION_BUS_ADDRESS=address)
    deadline = time.monotonic() + 10
    while subprocess.run(["dbus-send", f"--bus={address}", "--print-reply", "--dest=org.freedesktop.DBus", "/org/freedesktop/DBus",
                          "org.freedesktop.DBus.ListNames"], capture_output=True).returncode != 0:
        if time.monotonic() > deadline:
            sys.exit("dbus-daemon did not start")
        time.sleep(0.05)
    return daemon, env


def wait_for_name(env, name):
    deadline = time.monotonic() + 15
    while True:
        names = subprocess.run(["dbus-send", f"--bus={env['DBUS_SESSION_BUS_ADDRESS']}", "--print-reply=literal", "--dest=org.freedesktop.DBus",
                                "/org/freedesktop/DBus", "org.freedesktop.DBus.ListNames"], capture_output=True, text=True).stdout
        if name in names.split():
            return
        if time.monotonic() > deadline:
            sys.exit(f"{name} did not appear on the bus")
        time.sleep(0.05)


def measure(client, env, name, samples):
    out = subprocess.run([client, name, str(samples)], env=env, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--write", action="store_true")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--samples", type=int, default=200)
    options = parser.parse_args()
    for tool in ("dbus-daemon", "dbus-send", "mpv", "cc"):
        if not shutil.which(tool):
            sys.exit(f"{tool} is missing (make bench-deps installs it)")
    if not os.path.exists(PLUGIN):
        sys.exit(f"{PLUGIN} is missing: Debian's mpv-mpris (make bench-deps installs it)")
    os.makedirs(WORK, exist_ok=True)
    bench = build_bench(ROOT, log)
    client = os.path.join(WORK, "mpris-client")
    log("building the desktop client (Benchmarks/c/mpris.c)")
    subprocess.run(["cc", "-O2", "-Wall", "-Wextra", "-o", client, os.path.join(ROOT, "Benchmarks", "c", "mpris.c"), "-lsystemd"], check=True)

    results = {}
    with tempfile.TemporaryDirectory(prefix="playerkit-mpris-bench-") as folder:
        daemon, bus_env = start_bus(folder)
        try:
            for round_number in range(1, options.rounds + 1):
                for label, command, name in (
                    ("PlayerKit (MPRISService)", [bench, "mpris-serve", "--app", "pkbench", CLIP], "org.mpris.MediaPlayer2.pkbench.instance_bench"),
                    ("mpv + mpv-mpris (C plugin)", ["mpv", "--no-config", "--vo=null", "--ao=null", "--loop-file=inf", f"--script={PLUGIN}",
                                                    "--really-quiet", CLIP], "org.mpris.MediaPlayer2.mpv"),
                ):
                    log(f"round {round_number}: {label}")
                    server = subprocess.Popen(command, env=bus_env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                    try:
                        wait_for_name(bus_env, name)
                        results.setdefault(label, []).append(measure(client, bus_env, name, options.samples))
                    finally:
                        server.send_signal(signal.SIGTERM)
                        try:
                            server.wait(timeout=10)
                        except subprocess.TimeoutExpired:
                            server.kill()
                            server.wait()
        finally:
            daemon.kill()
            daemon.wait()

    def median(label, key):
        return statistics.median(r[key] for r in results[label])

    pk, mpv = "PlayerKit (MPRISService)", "mpv + mpv-mpris (C plugin)"
    machine = f"{platform.machine()}, {os.cpu_count()} cores, {platform.platform()}"
    lines = [
        f"`Benchmarks/mpris.py` ({options.rounds} rounds interleaved, {options.samples} samples each; medians of the rounds' percentiles), {machine}:",
        "",
        "| from a desktop client (C, sd-bus) | PlayerKit p50 | PlayerKit p99 | mpv + mpv-mpris p50 | mpv + mpv-mpris p99 | PlayerKit / mpv-mpris (p50) |",
        "|---|---|---|---|---|---|",
    ]
    for key, what in (("toggle", "PlayPause until PropertiesChanged says the new PlaybackStatus"), ("get", "Get Position answered")):
        a50, a99, b50, b99 = median(pk, f"{key}_p50_us"), median(pk, f"{key}_p99_us"), median(mpv, f"{key}_p50_us"), median(mpv, f"{key}_p99_us")
        lines.append(f"| {what} | {a50 / 1000:.2f} ms | {a99 / 1000:.2f} ms | {b50 / 1000:.2f} ms | {b99 / 1000:.2f} ms | {a50 / b50:.3f}x |")
    table = "\n".join(lines)
    print(table)
    print(json.dumps(results), file=sys.stderr)
    if options.write:
        try:
            record = write_figures("mpris", table, markers=(BEGIN, END), command="Benchmarks/mpris.py", machine=machine,
                                   results={"rounds": options.rounds, "samples": options.samples, "clients": results})
        except (OSError, ValueError) as error:
            sys.exit(f"writing the MPRIS table: {error}")
        log(f"wrote {os.path.relpath(record, ROOT)} and the MPRIS part of Documentation/Performance.md")


if __name__ == "__main__":
    main()
