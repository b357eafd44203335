#!/usr/bin/env python3
"""PlayerKit's benchmark driver.

Runs each workload three ways in the same run, interleaved round by round so that machine
noise hits all of them alike: a plain C client of libmpv (the floor), PlayerKit (release
build), and python-mpv (the peer). Prints a Markdown table and, with --write, puts it into
Documentation/Performance.md between the BENCHMARK markers.

Usage: Benchmarks/run.py [--quick] [--write] [--rounds N]
"""
import argparse
import json
import os
import platform
import re
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WORK = os.path.join(ROOT, ".build-bench")
MEDIA = os.path.join(ROOT, "Media", "clip-a.mp4")
DOC = os.path.join(ROOT, "Documentation", "Performance.md")


def run(command, **kwargs):
    return subprocess.run(command, check=True, capture_output=True, text=True, **kwargs).stdout


def log(message):
    print(message, file=sys.stderr, flush=True)


def build():
    os.makedirs(WORK, exist_ok=True)
    log("building playerkit-bench (release)...")
    run(["swift", "build", "-c", "release", "--product", "playerkit-bench"], cwd=ROOT)
    bin_dir = run(["swift", "build", "-c", "release", "--show-bin-path"], cwd=ROOT).strip()
    swift_bench = os.path.join(bin_dir, "playerkit-bench")
    log("building the C floor...")
    c_bench = os.path.join(WORK, "roundtrip")
    run(["cc", "-O2", "-o", c_bench, os.path.join(ROOT, "Benchmarks", "c", "roundtrip.c"), "-lmpv"])
    python = None
    try:
        venv = os.path.join(WORK, "venv")
        if not os.path.exists(os.path.join(venv, "bin", "python")):
            log("installing python-mpv into .build-bench/venv...")
            run([sys.executable, "-m", "venv", venv])
        run([os.path.join(venv, "bin", "pip"), "install", "-q", "python-mpv"])
        python = os.path.join(venv, "bin", "python")
    except (subprocess.CalledProcessError, OSError) as error:
        log(f"python-mpv unavailable: {error}")
    return swift_bench, c_bench, python


def machine():
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
        "cpus": os.cpu_count(),
        "cpu": model,
        "kernel": platform.release(),
        "libmpv": version(["dpkg-query", "-W", "-f=${Version}", "libmpv2"]) + " (client API "
        + version(["pkg-config", "--modversion", "mpv"]) + ")",
        "swift": version(["swift", "--version"]),
        "python": platform.python_version(),
    }


def round_trip(tools, players, samples, rounds, gap_us):
    swift_bench, c_bench, python = tools
    swift = [swift_bench, "round-trip", "--players", str(players), "--samples", str(samples), "--media", MEDIA,
             "--gap-us", str(gap_us)]
    variants = {
        "c": [c_bench, str(players), str(samples), MEDIA, str(gap_us)],
        "playerkit_queue": swift,
        "playerkit_immediate": swift + ["--immediate"],
    }
    if python:
        variants["python_mpv"] = [python, os.path.join(ROOT, "Benchmarks", "python", "roundtrip.py"),
                                  str(players), str(samples), MEDIA, str(gap_us)]
    results = {name: [] for name in variants}
    for index in range(rounds):
        for name, command in variants.items():
            log(f"round trip, {players} player(s), gap {gap_us} us, round {index + 1}/{rounds}: {name}")
            results[name].append(json.loads(run(command).strip().splitlines()[-1]))
    # The median over rounds of each percentile.
    return {name: {key: statistics.median(r[key] for r in runs) for key in ("p50_us", "p99_us")}
            for name, runs in results.items()}


# 0: samples back to back (threads hot); 500: each sample starts from a quiet machine.
ROUND_TRIP_GAPS = (0, 500)

FAN_OUT_VARIANTS = {
    "queue, 1 event per publish": [],
    "queue, 4 events per publish": ["--batch", "4"],
    "immediate, 1 event per publish": ["--immediate"],
}


def fan_out(tools, subscribers, events, rounds):
    swift_bench = tools[0]
    figures = {name: [] for name in FAN_OUT_VARIANTS}
    for index in range(rounds):
        for name, extra in FAN_OUT_VARIANTS.items():
            log(f"fan-out, {subscribers} subscriber(s), {name}, round {index + 1}/{rounds}")
            output = run([swift_bench, "fan-out", "--subscribers", str(subscribers), "--events", str(events)] + extra)
            figures[name].append(json.loads(output)["deliveries_per_second"])
    return {name: statistics.median(values) for name, values in figures.items()}


def ratio(a, b):
    return f"{a / b:.2f}x" if a and b else "n/a"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="fewer samples and rounds")
    parser.add_argument("--write", action="store_true", help="rewrite the table in Documentation/Performance.md")
    parser.add_argument("--rounds", type=int, default=None)
    arguments = parser.parse_args()
    rounds = arguments.rounds or (1 if arguments.quick else 5)
    samples = 500 if arguments.quick else 2000

    tools = build()
    info = machine()
    figures = {"machine": info, "round_trip": {}, "fan_out": {}}
    for gap_us in ROUND_TRIP_GAPS:
        for players in (1, 16):
            figures["round_trip"][(gap_us, players)] = round_trip(tools, players, samples, rounds, gap_us)
    for subscribers in (1, 10, 100):
        events = 100_000 if subscribers == 1 else (1_000_000 // subscribers) * (2 if arguments.quick else 5)
        figures["fan_out"][subscribers] = fan_out(tools, subscribers, events, rounds)

    command = "make bench" if not arguments.quick else "Benchmarks/run.py --quick"
    lines = [
        f"Measured with `{command}` (`Benchmarks/run.py`): {rounds} interleaved round(s), {samples} samples per run, "
        "median over rounds of each percentile.",
        "",
        f"Machine: {info['cpus']} CPUs, {info['cpu']}, Linux {info['kernel']}; libmpv {info['libmpv']}; "
        f"{info['swift']}; Python {info['python']}.",
        "",
        "### Property round trip: set `volume` -> the subscriber's handler runs with the change",
        "",
        "| samples | players | plain C p50 / p99 (us) | PlayerKit queue p50 / p99 | PlayerKit immediate p50 / p99 | python-mpv p50 / p99 "
        "| PlayerKit / C (p50, queue; immediate) | python-mpv / PlayerKit (p50, queue; immediate) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for (gap_us, players), row in figures["round_trip"].items():
        c, queue, immediate = row["c"], row["playerkit_queue"], row["playerkit_immediate"]
        python = row.get("python_mpv")
        def cell(figure):
            return f"{figure['p50_us']:.1f} / {figure['p99_us']:.1f}" if figure else "not installed"
        lines.append(
            f"| {'back to back' if gap_us == 0 else f'{gap_us} us apart'} | {players} | {cell(c)} | {cell(queue)} | {cell(immediate)} | {cell(python)} "
            f"| {ratio(queue['p50_us'], c['p50_us'])}; {ratio(immediate['p50_us'], c['p50_us'])} "
            f"| {ratio(python['p50_us'], queue['p50_us']) if python else 'n/a'}; "
            f"{ratio(python['p50_us'], immediate['p50_us']) if python else 'n/a'} |")
    lines += [
        "",
        "### Fan-out: events published on a bus -> every subscriber's handler, deliveries per second",
        "",
        "| subscribers | " + " | ".join(FAN_OUT_VARIANTS) + " |",
        "|---|" + "---|" * len(FAN_OUT_VARIANTS),
    ]
    for subscribers, rates in figures["fan_out"].items():
        lines.append(f"| {subscribers} | " + " | ".join(f"{rates[name]:,.0f}" for name in FAN_OUT_VARIANTS) + " |")
    table = "\n".join(lines)
    print(table)
    figures["round_trip"] = {f"gap{gap}_players{players}": row for (gap, players), row in figures["round_trip"].items()}
    print(json.dumps(figures, default=str), file=sys.stderr)

    if arguments.write:
        with open(DOC) as document:
            text = document.read()
        text = re.sub(r"(<!-- BENCHMARK START -->\n).*?(\n<!-- BENCHMARK END -->)",
                      lambda match: match.group(1) + table + match.group(2), text, flags=re.S)
        with open(DOC, "w") as document:
            document.write(text)
        log(f"wrote {DOC}")


if __name__ == "__main__":
    main()
