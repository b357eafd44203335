#!/usr/bin/env python3
"""How precisely libmpv's position changes time a frame change (issue 42).

Plays a file for 6 s with python-mpv (vo=null, ao=null), notes the monotonic time of every
`time-pos` change, and prints how far those moments stray from the frame grid: for each change,
position minus time, against the median of that; p50, p90, p99 and max in milliseconds. Options
are passed to mpv as name=value, e.g. video-timing-offset=0 or aid=no.

  .build-bench/venv/bin/python Benchmarks/frame-change-jitter.py .build-bench/clip-720p30-8s.mp4 video-timing-offset=0

(make bench makes the venv and the clip.)
"""
import statistics
import sys
import time

import mpv

options = dict(argument.split("=", 1) for argument in sys.argv[2:])
player = mpv.MPV(vo="null", ao="null", **options)
samples = []
player.observe_property("time-pos", lambda _name, value: value is not None and samples.append((value, time.monotonic())))
player.play(sys.argv[1])
time.sleep(6)
player.terminate()
offsets = [value - moment for value, moment in samples[30:]]
center = statistics.median(offsets)
residuals = sorted(abs(offset - center) * 1000 for offset in offsets)
pick = lambda fraction: residuals[min(len(residuals) - 1, int(len(residuals) * fraction))]
print("%-40s changes %d  p50 %.2f  p90 %.2f  p99 %.2f  max %.2f ms"
      % (" ".join(sys.argv[2:]) or "(defaults)", len(residuals), pick(0.5), pick(0.9), pick(0.99), residuals[-1]))
