#!/usr/bin/env python3
"""What live cameras do when their origin goes away and comes back, measured (issue 66).

Starts the project's live origin (Scripts/live-origin.py: four cameras of one scene, 1 s
segments in a 6-segment window), plays the cameras with playerkit-live-cameras (one headless
player each), kills the origin once every camera plays for --play seconds, starts it again on its
port and timeline --down seconds later, and watches each camera's events. Prints a table (markdown)
per camera: when it started waiting for its source after the kill, when it played again after the
restart, and whether anything ended or failed; then the machine and the command.

  make live-outage                     (after the build; DOWN=8 PLAY=6 CAMERAS=4)
  Scripts/live-outage.py [--cameras 4] [--play 6] [--down 8] [--binary PATH]
"""

import argparse
import json
import os
import platform
import subprocess
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def start_origin(cameras, extra=()):
    command = [sys.executable, os.path.join(ROOT, "Scripts/live-origin.py"), "--dir", os.path.join(ROOT, ".build/live-origin"),
               "--angles", str(cameras), "--size", "320x180", "--fps", "30", "--seconds", "120", "--segment", "1",
               "--window", "6", *extra]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    line = process.stdout.readline()
    if not line:
        raise SystemExit("live-outage: the live origin did not start")
    return process, json.loads(line)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cameras", type=int, default=int(os.environ.get("CAMERAS", 4)))
    parser.add_argument("--play", type=float, default=float(os.environ.get("PLAY", 6)), help="seconds every camera plays before the kill")
    parser.add_argument("--down", type=float, default=float(os.environ.get("DOWN", 8)), help="seconds the origin stays down")
    parser.add_argument("--binary", help="playerkit-live-cameras (default: the debug build's)")
    args = parser.parse_args()
    binary = args.binary or os.path.join(
        subprocess.run(["swift", "build", "--show-bin-path"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.strip(),
        "playerkit-live-cameras")

    origin, served = start_origin(args.cameras)
    cameras = subprocess.Popen([binary, "--json", "--seconds", str(args.play + args.down + 40), *served["angles"]],
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    events = []  # (arrival time on this clock, line)
    lock = threading.Lock()
    playing = threading.Event()

    def read():
        seen_playing = set()
        for text in cameras.stdout:
            now = time.monotonic()
            try:
                line = json.loads(text)
            except ValueError:
                continue
            with lock:
                events.append((now, line))
            if line.get("event") == "stateChanged" and line.get("state") == "playing":
                seen_playing.add(line["player"])
                if len(seen_playing) == args.cameras:
                    playing.set()
    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    if not playing.wait(60):
        cameras.kill()
        origin.kill()
        raise SystemExit("live-outage: not every camera played within 60 s")
    time.sleep(args.play)
    origin.kill()
    origin.wait()
    killed = time.monotonic()
    time.sleep(args.down)
    restarted_origin, _ = start_origin(args.cameras, ["--port", str(served["port"]), "--start", str(served["start"])])
    restarted = time.monotonic()

    def back():
        with lock:
            after = [(t, l) for t, l in events if t > restarted]
        return {l["player"] for t, l in after if l.get("event") == "stateChanged" and l.get("state") == "playing"}
    deadline = time.monotonic() + 40
    while time.monotonic() < deadline and len(back()) < args.cameras:
        time.sleep(0.1)
    time.sleep(2)
    cameras.terminate()
    try:
        cameras.wait(20)
    except subprocess.TimeoutExpired:
        cameras.kill()
    restarted_origin.kill()
    reader.join(5)

    rows = []
    for index in range(args.cameras):
        name = f"cam-{index + 1}"
        mine = [(t, l) for t, l in events if l.get("player") == name]
        waiting = next((t for t, l in mine if t > killed and l.get("event") == "stateChanged" and l.get("state") == "buffering"), None)
        again = next((t for t, l in mine if t > restarted and l.get("event") == "stateChanged" and l.get("state") == "playing"), None)
        ended = [l.get("reason") for t, l in mine if t > killed and l.get("event") == "itemEnded"]
        errors = [l.get("cause") or l.get("error") for t, l in mine if t > killed and l.get("event") == "error"]
        live = next((l.get("live") for t, l in mine if l.get("event") == "mediaLoaded"), None)
        rows.append((name, live, waiting - killed if waiting else None, again - restarted if again else None, ended, errors))

    print(f"Origin down {args.down:g} s after {args.play:g} s of play; {args.cameras} cameras of one origin.\n")
    print("| camera | live | waiting for its source after the kill | playing again after the restart | ended or failed |")
    print("|---|---|---|---|---|")
    for name, live, waiting, again, ended, errors in rows:
        print(f"| {name} | {'yes' if live else 'no'} | {f'{waiting:.2f} s' if waiting is not None else 'never'} | "
              f"{f'{again:.2f} s' if again is not None else 'never'} | {', '.join(ended + errors) or 'no'} |")
    print(f"\nMachine: {platform.machine()}, {os.cpu_count()} CPUs, {platform.platform()}; "
          f"command: Scripts/live-outage.py --cameras {args.cameras} --play {args.play:g} --down {args.down:g}")
    ok = all(waiting is not None and again is not None and not ended for _, _, waiting, again, ended, _ in rows)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
