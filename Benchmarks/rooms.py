#!/usr/bin/env python3
"""Drift between players in two processes kept together three ways, side by side in one run:

  PlayerKit   two `playerkit-room` processes in a room on Debian's syncplay-server
              (RoomFollower: the room's clock, continuous correction)
  naive       two `playerkit-room --naive` processes, each playing at once on its own (no room):
              the second started once the first plays (one after the other, as a person or a
              script that waits for the first would), and, for reference, both started back to
              back in the same instant
  Syncplay    Debian's own client (`syncplay --no-gui`) twice, each driving its mpv, in a room
              on the same server; one mpv is unpaused and Syncplay starts the other

Each case plays SECONDS (default 60) of the same 30 fps timeline (Media/clip-a.mp4 repeated).
Every frame's position is logged with its wall-clock time: PlayerKit's processes log their
frames themselves (--frames); for Syncplay's mpvs this script observes `time-pos` through mpv's
JSON IPC (one event per frame, stamped on arrival here). The drift at each frame of one player
is its position minus the other's at that instant (interpolated between the other's frames),
computed by `playerkit-room --compare` for all three cases.

  Benchmarks/rooms.py            prints the table (release build of playerkit-room first)
  Benchmarks/rooms.py --write    also records the table (Documentation/Figures/rooms.json) and renders
                                 it into the rooms part of Documentation/Performance.md
"""
import argparse
import json
import os
import platform
import re
import socket
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOC = os.path.join(ROOT, "Documentation", "Performance.md")
CLIP = os.path.join(ROOT, "Media", "clip-a.mp4")
MARKERS = ("<!-- ROOMS START -->", "<!-- ROOMS END -->")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchkit import write_figures  # noqa: E402


def say(text):
    sys.stderr.write(f"[rooms] {text}\n")
    sys.stderr.flush()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """Debian's syncplay-server on a free loopback port."""

    def __init__(self):
        self.port = free_port()
        self.process = subprocess.Popen(
            ["syncplay-server", "--port", str(self.port), "--disable-ready", "--salt", "PLAYERKITBENCH"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.time() + 15
        while time.time() < deadline:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", self.port)) == 0:
                    return
            time.sleep(0.05)
        raise SystemExit("[rooms] FAILED: syncplay-server did not start")

    def stop(self):
        self.process.kill()
        self.process.wait()


def compare(room_binary, logs, seconds):
    out = subprocess.run([room_binary, "--seconds", str(seconds), "--compare", *logs],
                         capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"[rooms] FAILED: comparing {logs}: {out.stderr[-2000:]}")
    line = out.stdout.strip().splitlines()[0]
    figures = dict(re.findall(r"(p50|p99|max) ([0-9.]+) ms", line))
    frames = int(re.search(r": (\d+) frames", line).group(1))
    mean = float(re.search(r"mean ([-+0-9.]+) ms", line).group(1))
    return {"frames": frames, "p50": float(figures["p50"]), "p99": float(figures["p99"]),
            "max": float(figures["max"]), "mean": mean}


def wait_for_frame(log, deadline=30):
    """Waits until a process's frame log has its first frame (it plays)."""
    end = time.time() + deadline
    while time.time() < end:
        try:
            if '"frame"' in open(log).read():
                return
        except OSError:
            pass
        time.sleep(0.01)
    raise SystemExit(f"[rooms] FAILED: no frame in {log} after {deadline} s")


def run_playerkit(room_binary, work, seconds, naive, back_to_back=False):
    name = ("naive-together" if back_to_back else "naive") if naive else "playerkit"
    server = None if naive else Server()
    try:
        logs, processes = [], []
        for index, member in enumerate(["first", "second"]):
            log = os.path.join(work, f"{name}-{member}.jsonl")
            arguments = [room_binary, "--name", member, "--room", "bench", "--frames", "--json",
                         "--seconds", str(seconds + 5)]
            if naive:
                arguments.append("--naive")
            else:
                arguments += ["--server", f"127.0.0.1:{server.port}", "--security", "plain"]
                if index == 1:
                    arguments += ["--start-with", "2"]
            processes.append(subprocess.Popen(arguments, stdout=open(log, "w"), stderr=subprocess.DEVNULL))
            logs.append(log)
            if not naive:
                time.sleep(0.3)  # the first is in the room before the second starts it
            elif not back_to_back and index == 0:
                wait_for_frame(log)  # one after the other: the second once the first plays
        for process in processes:
            if process.wait() != 0:
                raise SystemExit(f"[rooms] FAILED: {name}: playerkit-room exited with {process.returncode}")
        return compare(room_binary, logs, seconds)
    finally:
        if server:
            server.stop()


class MpvObserver:
    """Logs every time-pos change of one mpv (JSON IPC) as a frame line with its arrival time."""

    def __init__(self, path, player, log):
        self.path, self.player, self.log = path, player, open(log, "w")
        self.socket = None
        deadline = time.time() + 30
        while time.time() < deadline:
            try:
                s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                s.connect(path)
                self.socket = s
                break
            except OSError:
                time.sleep(0.1)
        if not self.socket:
            raise SystemExit(f"[rooms] FAILED: no mpv on {path}")
        self.socket.sendall(b'{"command": ["observe_property", 1, "time-pos"]}\n')
        self.recording = False
        self.thread = threading.Thread(target=self.read, daemon=True)
        self.thread.start()

    def command(self, *arguments):
        self.socket.sendall((json.dumps({"command": list(arguments)}) + "\n").encode())

    def read(self):
        buffer = b""
        while True:
            try:
                chunk = self.socket.recv(65536)
            except OSError:
                return
            if not chunk:
                return
            now = time.time()
            buffer += chunk
            while b"\n" in buffer:
                line, buffer = buffer.split(b"\n", 1)
                try:
                    message = json.loads(line)
                except ValueError:
                    continue
                if self.recording and message.get("event") == "property-change" and message.get("name") == "time-pos" \
                        and isinstance(message.get("data"), (int, float)):
                    self.log.write(json.dumps({"event": "frame", "player": self.player,
                                               "position": message["data"], "wall": now}) + "\n")

    def close(self):
        self.recording = False
        try:
            self.command("quit")
            self.socket.close()
        except OSError:
            pass
        self.log.close()


def run_syncplay(room_binary, work, seconds):
    server = Server()
    timeline = os.path.join(work, "clip-a-long.edl")
    with open(timeline, "w") as f:
        f.write("# mpv EDL v0\n" + (CLIP + "\n") * int((seconds + 30) / 4 + 1))
    clients, observers, logs = [], [], []
    try:
        for member in ["first", "second"]:
            home = os.path.join(work, f"home-{member}")
            os.makedirs(home, exist_ok=True)
            sock = os.path.join(work, f"mpv-{member}.sock")
            env = dict(os.environ, HOME=home, XDG_CONFIG_HOME=os.path.join(home, ".config"), PYTHONUNBUFFERED="1")
            env.pop("DISPLAY", None)
            env.pop("WAYLAND_DISPLAY", None)
            clients.append(subprocess.Popen(
                ["syncplay", "--no-gui", "--no-store", "-a", f"127.0.0.1:{server.port}", "-n", member, "-r", "bench",
                 "--player-path", "/usr/bin/mpv", timeline, "--", "--vo=null", "--ao=null", f"--input-ipc-server={sock}"],
                stdin=subprocess.DEVNULL, stdout=open(os.path.join(work, f"syncplay-{member}.log"), "w"),
                stderr=subprocess.STDOUT, env=env, start_new_session=True))
            log = os.path.join(work, f"syncplay-{member}.jsonl")
            observers.append(MpvObserver(sock, member, log))
            logs.append(log)
        time.sleep(3)  # both clients in the room and their files announced
        for observer in observers:
            observer.recording = True
        observers[0].command("set_property", "pause", False)  # as its user would; Syncplay starts the other
        time.sleep(seconds + 3)
    finally:
        for observer in observers:
            observer.close()
        for client in clients:
            try:
                os.killpg(client.pid, 9)
            except ProcessLookupError:
                pass
            client.wait()
        server.stop()
    return compare(room_binary, logs, seconds)


def machine():
    cpus = os.cpu_count()
    model = ""
    try:
        model = next(l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name"))
    except (OSError, StopIteration):
        pass
    mpv = " ".join(subprocess.run(["mpv", "--version"], capture_output=True, text=True).stdout.split()[:2])
    return f"{cpus} vCPU {model}, {platform.system()} {platform.release()}, {mpv}, syncplay 1.6.9 (Debian)"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--write", action="store_true", help="rewrite the rooms part of Documentation/Performance.md")
    args = parser.parse_args()

    say("building playerkit-room (release)…")
    build = subprocess.run(["swift", "build", "-c", "release", "--product", "playerkit-room"], cwd=ROOT,
                           capture_output=True, text=True)
    if build.returncode != 0:
        sys.stderr.write(("\n".join((build.stdout + build.stderr).splitlines()[-60:])) + "\n")
        raise SystemExit("[rooms] FAILED: building playerkit-room")
    bin_dir = subprocess.run(["swift", "build", "-c", "release", "--show-bin-path"], cwd=ROOT,
                             capture_output=True, text=True).stdout.strip()
    room_binary = os.path.join(bin_dir, "playerkit-room")

    rows = []
    with tempfile.TemporaryDirectory(prefix="playerkit-rooms-") as work:
        for label, runner in [("PlayerKit (RoomFollower, syncplay-server)", lambda: run_playerkit(room_binary, work, args.seconds, False)),
                              ("naive: the second process started once the first plays", lambda: run_playerkit(room_binary, work, args.seconds, True)),
                              ("naive: both started back to back, for reference", lambda: run_playerkit(room_binary, work, args.seconds, True, back_to_back=True)),
                              ("Syncplay's own client driving mpv (syncplay-server)", lambda: run_syncplay(room_binary, work, args.seconds))]:
            say(f"running: {label}, {args.seconds:g} s…")
            started = time.time()
            figures = runner()
            say(f"  {figures}  ({time.time() - started:.0f} s)")
            rows.append((label, figures))

    table = ["| two processes kept together by | frames compared | drift p50 (ms, absolute) | p99 (ms) | max (ms) | mean, signed (ms) |",
             "|---|---|---|---|---|---|"]
    for label, f in rows:
        table.append(f"| {label} | {f['frames']} | {f['p50']:.1f} | {f['p99']:.1f} | {f['max']:.1f} | {f['mean']:+.1f} |")
    text = "\n".join(table)
    print(text)
    if args.write:
        date, machine_text = time.strftime('%Y-%m-%d'), machine()
        section = (f"Measured {date} with `Benchmarks/rooms.py --write` (`make bench-rooms`), "
                   f"{args.seconds:g} s per case, on {machine_text}.\n\n{text}")
        try:
            record = write_figures("rooms", section, markers=MARKERS, command="make bench-rooms", machine=machine_text, date=date,
                                   results={"seconds": args.seconds, "cases": [{"case": label, **f} for label, f in rows]})
        except (OSError, ValueError) as error:
            raise SystemExit(f"[rooms] FAILED: writing the rooms table: {error}")
        say(f"wrote {os.path.relpath(record, ROOT)} and the rooms part of {DOC}")


if __name__ == "__main__":
    main()
