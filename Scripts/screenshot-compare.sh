#!/usr/bin/env bash
# README's screenshot of the GTK 4 app: playerkit-compare on the shipped compare clips under Xvfb,
# B measured against A (the SSIM graph under the transport), both panes on frame 45 (its number
# is burned into the clips' lower halves in binary), grabbed
# with xwd, cropped to the window and written as Documentation/images/compare.png. Builds
# nothing: the app is taken from $EXAMPLES_BIN (default .build/debug). Needs Xvfb, xwd, xwininfo
# and ffmpeg (Scripts/install-deps.sh test installs them). Fails, naming the reason.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
bin=${EXAMPLES_BIN:-.build/debug}
output=${SCREENSHOT:-Documentation/images/compare.png}
app="$bin/playerkit-compare"
fail() { echo "screenshot-compare: $*" >&2; exit 1; }
[ -x "$app" ] || fail "$app not found: build the examples first (make build), or set EXAMPLES_BIN"
for tool in Xvfb xwd xwininfo ffmpeg; do command -v "$tool" >/dev/null || fail "$tool not found"; done

work=$(mktemp -d "${TMPDIR:-/tmp}/playerkit-compare-shot.XXXXXX")
exec 3< <(Xvfb -displayfd 1 -noreset -screen 0 1024x600x24 -nolisten tcp 2>/dev/null)
read -r -t 10 number <&3 || fail "Xvfb did not start"
export DISPLAY=":$number" GDK_BACKEND=x11
cleanup() { pkill -f "Xvfb -displayfd 1 -noreset -screen 0 1024x600x24" 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT

# The app takes its commands on standard input (a FIFO kept open here) and answers in JSON.
mkfifo "$work/commands"
"$app" --json --remote --paused --size 900x520 Media/compare-a.mp4 Media/compare-b.mp4 <"$work/commands" >"$work/out.jsonl" 2>/dev/null &
app_pid=$!
exec 4>"$work/commands"
wait_for() {  # wait_for PATTERN: up to 20 s for a line of the app's output
    for _ in $(seq 200); do grep -q "$1" "$work/out.jsonl" && return 0; sleep 0.1; done
    fail "the app did not report $1"
}
wait_for '"event":"ready"'
echo "measure" >&4
wait_for '"command":"measure"'
echo "frame 45" >&4
wait_for '"command":"frame 45"'
sleep 1  # GTK draws the area at its next frame; the screenshot is only for the README
geometry=$(xwininfo -root -tree | awk '/"PlayerKit compare"/ { print $(NF-1); exit }')
[ -n "$geometry" ] || fail "the window did not appear"
size=${geometry%%+*}
xwd -root -silent -out "$work/shot.xwd"
ffmpeg -hide_banner -loglevel error -y -i "$work/shot.xwd" -vf "crop=${size%x*}:${size#*x}:0:0" -frames:v 1 "$output"
echo "quit" >&4
wait "$app_pid" || fail "the app did not quit cleanly"
echo "screenshot-compare: wrote $output ($size)"
