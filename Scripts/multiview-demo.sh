#!/usr/bin/env bash
# make multiview-demo: a live origin on loopback (Scripts/live-origin.py: ANGLES angles of one
# testsrc2 scene, default 4, 640x360, each frame's number as a barcode, a tone each, as
# sliding-window live playlists with PROGRAM-DATE-TIME, encoded once with ffmpeg and kept under
# .build/live-origin/demo), then playerkit-multiview on it. With a display (DISPLAY or
# WAYLAND_DISPLAY) the app opens its window; without one it runs headless for DEMO_SECONDS (default
# 20) and prints its JSON lines. Extra arguments go to the app (e.g. --audio, --mpris).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
swift=${SWIFT:-swift}
angles=${ANGLES:-4}
fail() { echo "multiview-demo: $*" >&2; exit 1; }

"$swift" build --product playerkit-multiview
app=$("$swift" build --show-bin-path)/playerkit-multiview

echo "multiview-demo: encoding $angles angles (once; kept under .build/live-origin/demo) and serving them on loopback"
work=$(mktemp -d "${TMPDIR:-/tmp}/playerkit-multiview-demo.XXXXXX")
mkfifo "$work/origin"
python3 Scripts/live-origin.py --dir .build/live-origin/demo --angles "$angles" --size 640x360 --seconds 180 \
    --segment 1 --window 6 >"$work/origin" &
origin_pid=$!
cleanup() { kill "$origin_pid" 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
read -r -t 300 line <"$work/origin" || fail "the origin did not start (python3 and ffmpeg are needed: make test-deps)"
mapfile -t urls < <(python3 -c 'import json, sys; print("\n".join(json.loads(sys.argv[1])["angles"]))' "$line")
echo "multiview-demo: ${#urls[@]} live angles, e.g. ${urls[0]} (the scene lasts 3 minutes)"
if [ -n "${DISPLAY:-}" ] || [ -n "${WAYLAND_DISPLAY:-}" ]; then
  "$app" "$@" "${urls[@]}"
else
  seconds=${DEMO_SECONDS:-20}
  echo "multiview-demo: no display; headless for $seconds s, one JSON line of skews per second"
  "$app" --headless --json --seconds "$seconds" "$@" "${urls[@]}"
fi
