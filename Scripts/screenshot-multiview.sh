#!/usr/bin/env bash
# README's screenshot of playerkit-multiview: four live angles from Scripts/live-origin.py under
# Xvfb, in the grid, once every angle is aligned and a few seconds in step, grabbed with
# xwd, cropped to the window and written as Documentation/images/multiview.png. Builds nothing:
# the app is taken from $EXAMPLES_BIN (default .build/debug). Needs Xvfb, xwd, xwininfo, python3
# and ffmpeg (Scripts/install-deps.sh test installs them). Fails, naming the reason.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
bin=${EXAMPLES_BIN:-.build/debug}
output=${SCREENSHOT:-Documentation/images/multiview.png}
app="$bin/playerkit-multiview"
fail() { echo "screenshot-multiview: $*" >&2; exit 1; }
[ -x "$app" ] || fail "$app not found: build the examples first (make build), or set EXAMPLES_BIN"
for tool in Xvfb xwd xwininfo ffmpeg python3; do command -v "$tool" >/dev/null || fail "$tool not found"; done

work=$(mktemp -d "${TMPDIR:-/tmp}/playerkit-multiview-shot.XXXXXX")
mkfifo "$work/origin"
python3 Scripts/live-origin.py --dir .build/live-origin/screenshot --angles 4 --size 640x360 --seconds 60 >"$work/origin" &
origin_pid=$!
exec 3< <(Xvfb -displayfd 1 -noreset -screen 0 1280x800x24 -nolisten tcp 2>/dev/null)
read -r -t 10 number <&3 || fail "Xvfb did not start"
export DISPLAY=":$number" GDK_BACKEND=x11 NO_AT_BRIDGE=1 GTK_A11Y=none
cleanup() {
  kill "$origin_pid" 2>/dev/null || true
  pkill -f "Xvfb -displayfd 1 -noreset -screen 0 1280x800x24" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
read -r -t 300 line <"$work/origin" || fail "the origin did not start"
mapfile -t urls < <(python3 -c 'import json, sys; print("\n".join(json.loads(sys.argv[1])["angles"]))' "$line")
"$app" --json --seconds 40 --size 1024x576 --ids main,onboard,pit,aerial "${urls[@]}" >"$work/out.jsonl" 2>/dev/null &
app_pid=$!
for _ in $(seq 300); do
  [ "$(grep -c 'aligned after' "$work/out.jsonl" || true)" -ge 4 ] && break
  sleep 0.1
done
[ "$(grep -c 'aligned after' "$work/out.jsonl" || true)" -ge 4 ] || fail "the angles were not aligned within 30 s"
sleep 12  # the skew window (10 s) past the joins, so the tiles show the figures in step
geometry=$(xwininfo -root -tree | awk '/"PlayerKit multi-view"/ { print $(NF-1); exit }')
[ -n "$geometry" ] || fail "the window did not appear"
size=${geometry%%+*}
xwd -root -silent -out "$work/shot.xwd"
ffmpeg -hide_banner -loglevel error -y -i "$work/shot.xwd" -vf "crop=${size%x*}:${size#*x}:0:0" -frames:v 1 "$output"
kill -TERM "$app_pid"
wait "$app_pid" || fail "the app did not quit cleanly"
echo "screenshot-multiview: wrote $output ($size)"
