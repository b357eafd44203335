#!/usr/bin/env bash
# The live origin's media that make test's multi-view tests use (Scripts/live-origin.py
# --encode-only, once per option set, kept under .build/live-origin), encoded next to the build
# at the lowest priority so no test waits for ffmpeg. The option sets are those of
# MultiViewTests.originArguments, PlaylistClockTests.mixed and
# MultiViewEventTests.unrelatedTimestampsAreDropped and MultiViewEventTests.wrapArguments; a set not made here is encoded by the test
# that asks for it (the same folder, so nothing is encoded twice).
set -euo pipefail
cd "$(dirname "$0")/.."
origin() { python3 Scripts/live-origin.py --dir .build/live-origin --encode-only "$@" >/dev/null; }
origin --angles 4 --size 320x180 --fps 30 --seconds 60 --segment 1 --window 6
origin --angles 3 --size 160x90 --fps 30 --seconds 30 --segment 1 --formats ts,fmp4,ts --pts-offsets 0,0,7
origin --angles 2 --size 160x90 --fps 30 --seconds 40 --segment 1 --pts-offsets 0,5
origin --angles 2 --size 160x90 --fps 30 --seconds 40 --segment 1 --formats fmp4,ts --pts-offsets 95438.4,95437
