"""The peer for the benchmark workloads: python-mpv doing the same work as
Benchmarks/c/workloads.c and playerkit-bench. Each mode prints one JSON object.

Usage: python3 workloads.py decode PLAYERS MEDIA | ttff RUNS MEDIA | events PLAYERS SECONDS MEDIA
       | memory PLAYERS MEDIA | cycles COUNT
"""
import json
import resource
import sys
import threading
import time

import mpv

OPTIONS = dict(vo="null", ao="null", idle="yes", config=False, ytdl=False, load_scripts=False, hwdec="no")


def cpu_s():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def rss_mb():
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return float(line.split()[1]) / 1024
    return 0.0


def create(loop=False):
    options = dict(OPTIONS)
    if loop:
        options["loop_file"] = "inf"
    return mpv.MPV(**options)


def when(player, event_name):
    """An Event set the first time `event_name` arrives on `player`."""
    happened = threading.Event()
    player.event_callback(event_name)(lambda _event: happened.set())
    return happened


def main():
    mode = sys.argv[1]
    if mode == "decode":
        players, media = int(sys.argv[2]), sys.argv[3]
        handles = [create() for _ in range(players)]
        ended = [when(player, "end-file") for player in handles]
        cpu0, wall0 = cpu_s(), time.monotonic()
        for player in handles:
            player.play(media)
        for event in ended:
            event.wait(600)
        print(json.dumps({"cpu_s": round(cpu_s() - cpu0, 3), "wall_s": round(time.monotonic() - wall0, 3)}))
        for player in handles:
            player.terminate()
    elif mode == "ttff":
        runs, media = int(sys.argv[2]), sys.argv[3]
        times = []
        for _ in range(runs):
            start = time.monotonic()
            player = create()
            started = when(player, "playback-restart")
            player.play(media)
            started.wait(30)
            times.append((time.monotonic() - start) * 1000)
            player.terminate()
        times.sort()
        print(json.dumps({"p50_ms": round(times[len(times) // 2], 2), "p99_ms": round(times[int(len(times) * 0.99)], 2)}))
    elif mode == "events":
        players, seconds, media = int(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
        handles = [create(loop=True) for _ in range(players)]
        started = [when(player, "playback-restart") for player in handles]
        count = [0]
        lock = threading.Lock()

        def observer(_name, _value):
            with lock:
                count[0] += 1

        for player in handles:
            player.observe_property("time-pos", observer)
            player.play(media)
        for event in started:
            event.wait(30)
        with lock:
            count[0] = 0
        cpu0 = cpu_s()
        time.sleep(seconds)
        with lock:
            total = count[0]
        print(json.dumps({"events_per_second": round(total / seconds, 1), "cpu_s": round(cpu_s() - cpu0, 3)}))
        for player in handles:
            player.terminate()
    elif mode == "memory":
        players, media = int(sys.argv[2]), sys.argv[3]
        before = rss_mb()
        handles = [create(loop=True) for _ in range(players)]
        started = [when(player, "playback-restart") for player in handles]
        for player in handles:
            player.play(media)
        for event in started:
            event.wait(30)
        time.sleep(1)
        print(json.dumps({"rss_added_per_player_mb": round((rss_mb() - before) / players, 2)}))
        for player in handles:
            player.terminate()
    elif mode == "cycles":
        count = int(sys.argv[2])
        warm, start = 0.0, time.monotonic()
        for index in range(count):
            create().terminate()
            if index == 9:
                warm = rss_mb()
        print(json.dumps({"cycle_ms": round((time.monotonic() - start) * 1000 / count, 3),
                          "rss_growth_mb": round(rss_mb() - warm, 2)}))
    else:
        sys.exit(f"unknown mode {mode}")


if __name__ == "__main__":
    main()
