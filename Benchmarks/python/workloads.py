"""The peer for the benchmark workloads: python-mpv doing the same work as
Benchmarks/c/workloads.c and playerkit-bench. Each mode prints one JSON object.

Usage: python3 workloads.py decode PLAYERS MEDIA | ttff RUNS MEDIA | events PLAYERS SECONDS MEDIA
       | memory PLAYERS MEDIA | cycles COUNT | churn COUNT MEDIA | switch RUNS MEDIA | release PLAYERS MEDIA
       | realtime PLAYERS SECONDS MEDIA | seams edl|playlist SECONDS CLIP...
"""
import ctypes
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


def start_looping(players, media, timeout=30):
    """`players` looping cores, each playing `media`, returned once all showed a first frame."""
    handles = [create(loop=True) for _ in range(players)]
    started = [when(player, "playback-restart") for player in handles]
    for player in handles:
        player.play(media)
    for event in started:
        event.wait(timeout)
    return handles


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
        handles = start_looping(players, media)
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
    elif mode == "ready":
        # The time an app waits for a player that accepts a load, one every 0.3 s.
        runs = int(sys.argv[2])
        times = []
        for _ in range(runs):
            time.sleep(0.3)
            start = time.monotonic()
            player = create()
            times.append((time.monotonic() - start) * 1000)
            player.terminate()
        times.sort()
        print(json.dumps({"p50_ms": round(times[len(times) // 2], 3), "p99_ms": round(times[int(len(times) * 0.99)], 3)}))
    elif mode == "churn":
        count, media = int(sys.argv[2]), sys.argv[3]
        libc = ctypes.CDLL("libc.so.6")
        libc.malloc_trim(0)
        initial, warm, after50, start = rss_mb(), 0.0, -1.0, time.monotonic()
        for index in range(count):
            player = create()
            restarted = when(player, "playback-restart")
            player.play(media)
            restarted.wait(30)
            player.terminate()
            if index == 9:
                libc.malloc_trim(0)
                warm = rss_mb()
            if index == 49:
                libc.malloc_trim(0)
                after50 = rss_mb()
        libc.malloc_trim(0)
        print(json.dumps({"cycle_ms": round((time.monotonic() - start) * 1000 / count, 3),
                          "rss_growth_mb": round(rss_mb() - warm, 2), "rss_mb": round(rss_mb(), 2),
                          "rss_start_mb": round(initial, 2), "rss_50_mb": round(after50, 2)}))
    elif mode == "switch":
        # Each run on fresh idle cores (made outside the timing), as the standby player of an
        # A/B pair would be.
        runs, media = int(sys.argv[2]), sys.argv[3]
        cold, warm = [], []
        for _ in range(runs):
            a, b = create(), create()
            restarted_a, restarted_b = when(a, "playback-restart"), when(b, "playback-restart")
            running = threading.Event()
            b.observe_property("core-idle", lambda _name, value: running.set() if value is False else None)
            start = time.monotonic()
            a.play(media)
            restarted_a.wait(30)
            cold.append((time.monotonic() - start) * 1000)
            b.pause = True
            b.play(media)
            restarted_b.wait(30)
            running.clear()
            start = time.monotonic()
            b.pause = False
            running.wait(30)
            warm.append((time.monotonic() - start) * 1000)
            a.terminate()
            b.terminate()
        cold.sort()
        warm.sort()
        print(json.dumps({"cold_p50_ms": round(cold[runs // 2], 3), "preloaded_p50_ms": round(warm[runs // 2], 3)}))
    elif mode == "release":
        players, media = int(sys.argv[2]), sys.argv[3]
        before = rss_mb()
        handles = start_looping(players, media)
        time.sleep(1)
        active = rss_mb()
        idle = [when(player, "end-file") for player in handles]
        for player in handles:
            player.stop()
        for event in idle:
            event.wait(30)
        time.sleep(1)
        released = rss_mb()
        ctypes.CDLL("libc.so.6").malloc_trim(0)
        print(json.dumps({"active_mb_per_player": round((active - before) / players, 2),
                          "released_mb_per_player": round((released - before) / players, 2),
                          "trimmed_mb_per_player": round((rss_mb() - before) / players, 2)}))
        for player in handles:
            player.terminate()
    elif mode == "realtime":
        players, seconds, media = int(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
        handles = start_looping(players, media, timeout=60)

        def drops(player):
            return (player.frame_drop_count or 0) + (player.decoder_frame_drop_count or 0)
        base = [drops(player) for player in handles]
        time.sleep(seconds)
        dropped = sum(drops(player) - b for player, b in zip(handles, base))
        print(json.dumps({"dropped": dropped, "frames": players * seconds * 30}))
        for player in handles:
            player.terminate()
    elif mode == "seams":
        how, seconds, clips = sys.argv[2], float(sys.argv[3]), sys.argv[4:]
        player = create()
        player["gapless-audio"] = "yes"
        player["prefetch-playlist"] = "yes"
        samples = []
        lock = threading.Lock()

        def observer(_name, value):
            if value is not None:
                with lock:
                    samples.append((time.monotonic(), value))
        player.observe_property("time-pos", observer)
        if how == "edl":
            player["loop-file"] = "inf"
            # The clips joined into one timeline, repeated 100 times, as PlayerKit's ClipLoop does.
            player.play("edl://" + ";".join(f"%{len(clip.encode())}%{clip}" for clip in clips * 100))
        else:
            player["loop-playlist"] = "inf"
            for clip in clips:
                player.playlist_append(clip)
            player.playlist_pos = 0
        time.sleep(seconds)
        with lock:
            taken = list(samples)
        player.terminate()
        print(json.dumps({"samples": taken}))
    elif mode == "sync-naive":
        # The naive way: play A, then B, each clip looping in one timeline; the drift between
        # them at every frame of either is |(wall - position) of A - (wall - position) of B|.
        seconds, clips = float(sys.argv[2]), sys.argv[3:5]
        players = [create(loop=True) for _ in clips]
        for player in players:
            player["video-timing-offset"] = 0  # a new position when its frame is due (on frame changes)
        offsets, spreads = [None, None], []
        lock = threading.Lock()

        def observer(index):
            def observe(_name, value):
                if value is None:
                    return
                with lock:
                    offsets[index] = time.monotonic() - value
                    if None not in offsets:
                        spreads.append(abs(offsets[0] - offsets[1]))
            return observe
        for index, (player, clip) in enumerate(zip(players, clips)):
            player.observe_property("time-pos", observer(index))
            player.play("edl://" + ";".join([f"%{len(clip.encode())}%{clip}"] * 100))
        time.sleep(seconds)
        with lock:
            taken = sorted(spreads)
        for player in players:
            player.terminate()
        print(json.dumps({"p50_ms": round(taken[len(taken) // 2] * 1000, 3), "p99_ms": round(taken[int(len(taken) * 0.99)] * 1000, 3),
                          "max_ms": round(taken[-1] * 1000, 3), "frames": len(taken)}))
    else:
        sys.exit(f"unknown mode {mode}")


if __name__ == "__main__":
    main()
