"""The peer: python-mpv doing the benchmark's round trip.

N players, each with a clip loaded paused; for each sample, set `volume` on one player and
wait until that player's observer callback sees the new value (it runs on python-mpv's event
thread). Prints one JSON object like the C and Swift programs.
Usage: python3 roundtrip.py PLAYERS SAMPLES MEDIA [GAP_US]
"""
import json
import sys
import threading
import time

import mpv


def main():
    players, samples, media = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    gap = (int(sys.argv[4]) if len(sys.argv) > 4 else 0) / 1e6
    handles = []
    for _ in range(players):
        player = mpv.MPV(vo="null", ao="null", idle="yes", pause=True, config=False, ytdl=False,
                         load_scripts=False)
        loaded = threading.Event()
        player.event_callback("file-loaded")(lambda _event, loaded=loaded: loaded.set())
        player.play(media)
        if not loaded.wait(10):
            sys.exit("load timeout")
        handles.append(player)

    state = {"target": None, "end": 0}
    done = threading.Event()

    def observer(_name, value):
        if value == state["target"]:
            state["end"] = time.perf_counter_ns()
            done.set()

    for player in handles:
        player.observe_property("volume", observer)
    time.sleep(0.2)  # let the initial observed values pass before measuring

    warmup = samples // 10
    latencies = []
    for k in range(-warmup, samples):
        player = handles[(k + warmup) % players]
        if gap:
            time.sleep(gap)  # start each sample from a quiet machine, as the C and Swift programs do
        value = 20.0 + float((k + warmup) % 50)
        done.clear()
        state["target"] = value
        start = time.perf_counter_ns()
        player.volume = value
        if not done.wait(10):
            sys.exit("round trip timeout")
        if k >= 0:
            latencies.append((state["end"] - start) / 1000.0)
    latencies.sort()
    print(json.dumps({"p50_us": round(latencies[len(latencies) // 2], 2),
                      "p99_us": round(latencies[int(len(latencies) * 0.99)], 2),
                      "mean_us": round(sum(latencies) / len(latencies), 2), "samples": samples}))
    for player in handles:
        player.terminate()


if __name__ == "__main__":
    main()
