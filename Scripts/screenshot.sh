#!/usr/bin/env bash
# README's screenshot: the playerkit-two-players example's two real mpv windows (X11, vo=x11)
# under Xvfb, grabbed with xwd while both play, cropped to the windows and written as
# Documentation/images/examples.png. Builds nothing: the examples are taken from $EXAMPLES_BIN
# (default .build/debug; `make screenshots` builds them first). Needs Xvfb, xwininfo (x11-utils),
# xwd (x11-apps) and python3, all installed by Scripts/install-deps.sh. Fails, naming the reason,
# when the windows do not appear, do not show video, or the example does not play.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
bin=${EXAMPLES_BIN:-.build/debug}
output=${SCREENSHOT:-Documentation/images/examples.png}
timeout_seconds=${SCREENSHOT_TIMEOUT:-30}
example="$bin/playerkit-two-players"

say() { echo "screenshot: $*" >&2; }
fail() { say "$*"; exit 1; }

[ -x "$example" ] || fail "$example not found: build the examples first (make build), or set EXAMPLES_BIN"
for tool in Xvfb xwininfo xwd python3; do
    command -v "$tool" >/dev/null || fail "$tool not found (Scripts/install-deps.sh installs it)"
done

work=$(mktemp -d "${TMPDIR:-/tmp}/playerkit-screenshot.XXXXXX")
xvfb_pid=""
example_pid=""
# Ctrl-C for the example (it shuts its players down and exits); SIGKILL if it has not exited
# 10 s later. Returns its exit status.
stop_example() {
    local waited=0 status=0
    kill -INT "$example_pid" 2>/dev/null || true
    while kill -0 "$example_pid" 2>/dev/null && [ "$waited" -lt 100 ]; do
        sleep 0.1
        waited=$((waited + 1))
    done
    if kill -0 "$example_pid" 2>/dev/null; then
        say "the example did not exit within 10 s of SIGINT: killing it"
        kill -KILL "$example_pid" 2>/dev/null || true
    fi
    wait "$example_pid" 2>/dev/null || status=$?
    example_pid=""
    return "$status"
}
cleanup() {
    local status=$?
    if [ -n "$example_pid" ]; then stop_example || true; fi
    if [ -n "$xvfb_pid" ]; then
        kill "$xvfb_pid" 2>/dev/null || true
        wait "$xvfb_pid" 2>/dev/null || true
    fi
    if [ "$status" -ne 0 ] && [ "$status" -ne 130 ] && [ -s "$work/example.err" ]; then
        say "the example's standard error (last 20 lines):"
        tail -n 20 "$work/example.err" >&2
    fi
    rm -rf "$work"
    exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Polls `$@` every 0.1 s until it succeeds; fails with $what after $timeout_seconds.
wait_for() {
    local what=$1; shift
    local deadline=$((SECONDS + timeout_seconds))
    until "$@"; do
        [ "$SECONDS" -lt "$deadline" ] || fail "timed out after ${timeout_seconds}s waiting for $what"
        if [ -n "$example_pid" ] && ! kill -0 "$example_pid" 2>/dev/null; then
            fail "the example exited while waiting for $what"
        fi
        sleep 0.1
    done
}

# 1. A virtual X server on a free display: the first :N from :90 with neither a socket nor a
#    lock file (another X server's), the next one when Xvfb cannot take it after all (a race).
#    Black root window, 1280x720 at 24 bits.
start_xvfb() {
    local n deadline
    for n in $(seq 90 199); do
        if [ -e "/tmp/.X11-unix/X$n" ] || [ -e "/tmp/.X$n-lock" ]; then continue; fi
        Xvfb ":$n" -screen 0 1280x720x24 -br -nolisten tcp 2>"$work/xvfb.err" &
        xvfb_pid=$!
        deadline=$((SECONDS + timeout_seconds))
        while kill -0 "$xvfb_pid" 2>/dev/null; do
            if xwininfo -display ":$n" -root >/dev/null 2>&1; then
                export DISPLAY=":$n"
                return 0
            fi
            [ "$SECONDS" -lt "$deadline" ] || fail "timed out after ${timeout_seconds}s waiting for Xvfb on :$n"
            sleep 0.1
        done
        wait "$xvfb_pid" 2>/dev/null || true
        xvfb_pid=""
        say "Xvfb could not take :$n ($(tail -n 1 "$work/xvfb.err")); trying the next display"
    done
    fail "no free X display from :90 to :199"
}
say "starting Xvfb"
start_xvfb
say "Xvfb on $DISPLAY"

# 2. The example: one window per player, side by side (mpv's geometry +40+40 and +400+40).
say "running $example --window"
"$example" --window >"$work/example.out" 2>"$work/example.err" &
example_pid=$!

# Both players showed their first frame, and both windows are mapped (viewable).
both_playing() { [ "$(grep -c ' firstFrame$' "$work/example.out" || true)" -ge 2 ]; }
wait_for "both players' first frame" both_playing
windows() { xwininfo -root -tree | sed -n 's/^ *\(0x[0-9a-f]*\) ".* - mpv": .*/\1/p'; }
both_mapped() {
    local ids count=0
    ids=$(windows)
    for id in $ids; do
        xwininfo -id "$id" | grep -q 'Map State: IsViewable' && count=$((count + 1))
    done
    [ "$count" -ge 2 ]
}
wait_for "both mpv windows to be mapped" both_mapped
# A short settle, so the frames on screen are well into the clips (they are 4 s long).
sleep 1

# 3. The windows' bounding box (root coordinates, from xwininfo), then the grab, converted by
#    python3 (no image tools needed): cropped to the box plus a margin, and checked to show
#    video (not black) in every window. Retried (every 0.2 s) until the windows have drawn.
boxes=$(for id in $(windows); do
    xwininfo -id "$id" | awk '/Absolute upper-left X/ {x=$NF} /Absolute upper-left Y/ {y=$NF}
        /^ *Width:/ {w=$NF} /^ *Height:/ {h=$NF} END {print x "," y "," w "," h}'
done)
say "windows at $(echo $boxes | tr ' ' ';') (x,y,width,height)"
mkdir -p "$(dirname "$output")"
grab() {
    kill -0 "$example_pid" 2>/dev/null || fail "the example exited before the screenshot"
    xwd -root -silent >"$work/root.xwd"
    python3 - "$work/root.xwd" "$work/examples.png" $boxes <<'EOF'
import struct
import sys
import zlib

source, target, boxes = sys.argv[1], sys.argv[2], [tuple(map(int, b.split(","))) for b in sys.argv[3:]]
with open(source, "rb") as file:
    data = file.read()
# XWDFileHeader: 25 big-endian CARD32s, then the window name, the colormap, the pixels.
header = struct.unpack(">25I", data[:100])
header_size, pixmap_format, width, height, byte_order = header[0], header[2], header[4], header[5], header[7]
bits_per_pixel, bytes_per_line, visual_class, masks, ncolors = header[11], header[12], header[13], header[14:17], header[19]
if pixmap_format != 2 or visual_class not in (4, 5) or bits_per_pixel not in (24, 32):
    sys.exit(f"unexpected xwd dump: format {pixmap_format}, class {visual_class}, {bits_per_pixel} bits per pixel")
pixel = bits_per_pixel // 8
offsets = []  # the byte of each pixel that holds red, green, blue
for mask in masks:
    shift = (mask & -mask).bit_length() - 1
    if mask >> shift != 0xFF or shift % 8:
        sys.exit(f"unexpected channel mask {mask:#x}")
    offsets.append(shift // 8 if byte_order == 0 else pixel - 1 - shift // 8)
pixels = data[header_size + ncolors * 12:]

def rgb(x0, y0, x1):
    line = pixels[y0 * bytes_per_line + x0 * pixel:y0 * bytes_per_line + x1 * pixel]
    out = bytearray(len(line) // pixel * 3)
    for channel, offset in enumerate(offsets):
        out[channel::3] = line[offset::pixel]
    return bytes(out)

# Every window must show video: a window not yet drawn is (almost) all black.
for x, y, w, h in boxes:
    dark = total = 0
    for row in range(y, y + h, 4):
        line = rgb(x, row, x + w)
        for i in range(0, len(line), 12):
            total += 1
            dark += line[i] < 24 and line[i + 1] < 24 and line[i + 2] < 24
    if dark > 0.6 * total:
        print(f"window at +{x}+{y}: {100 * dark // total}% black", file=sys.stderr)
        sys.exit(3)

margin = 16
left = max(0, min(x for x, _, _, _ in boxes) - margin)
top = max(0, min(y for _, y, _, _ in boxes) - margin)
right = min(width, max(x + w for x, _, w, _ in boxes) + margin)
bottom = min(height, max(y + h for _, y, _, h in boxes) + margin)
raw = b"".join(b"\x00" + rgb(left, row, right) for row in range(top, bottom))

def chunk(kind, body):
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

with open(target, "wb") as file:
    file.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", right - left, bottom - top, 8, 2, 0, 0, 0))
               + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b""))
print(f"{right - left}x{bottom - top}")
EOF
}
deadline=$((SECONDS + 5))
until size=$(grab 2>"$work/grab.err"); do
    status=$?
    [ "$status" -eq 3 ] || fail "converting the grab failed: $(cat "$work/grab.err")"
    [ "$SECONDS" -lt "$deadline" ] || fail "the windows show no video: $(cat "$work/grab.err")"
    sleep 0.2
done
mv "$work/examples.png" "$output"
say "wrote $output ($size, $(wc -c <"$output") bytes)"

# 4. Ctrl-C for the example, then Xvfb (the EXIT trap).
status=0
stop_example || status=$?
[ "$status" -eq 0 ] || [ "$status" -eq 130 ] || fail "the example exited with status $status"
say "done"
