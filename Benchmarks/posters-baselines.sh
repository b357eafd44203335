#!/usr/bin/env bash
# The command-line baselines of the poster benchmark (Benchmarks/c/compare.c `posters`): one
# poster (the frame at TIME seconds, as a PNG) of every clip in DIR, one process per clip, run
# one after the other. Prints one JSON object per tool:
#   {"tool": "ffmpeg", "clips": N, "seconds": S, "posters_per_second": P, "failures": F}
#   {"tool": "mpv-cli", ...}
#   Benchmarks/posters-baselines.sh DIR TIME OUTDIR
# ffmpeg:  ffmpeg -nostdin -loglevel error -ss TIME -i CLIP -frames:v 1 -y OUTDIR/ffmpeg/N.png
# mpv-cli: mpv --no-config --really-quiet --vo=image --vo-image-format=png
#              --vo-image-outdir=OUTDIR/mpv-cli/N --frames=1 --start=TIME --ao=null --no-audio CLIP
#          (vo=image names its file 00000001.png in the directory it is given; one per clip)
# A poster counts only when its PNG exists and is not empty afterwards (checked after the timing).
# Clips: DIR/*.mp4, in name order; N = 1, 2, ... in that order.
set -euo pipefail

if [ $# -ne 3 ]; then
    echo "usage: $0 DIR TIME OUTDIR" >&2
    exit 2
fi
dir=$1 time=$2 outdir=$3
shopt -s nullglob
clips=("$dir"/*.mp4)
count=${#clips[@]}
if [ "$count" -eq 0 ]; then
    echo "no .mp4 clips in $dir" >&2
    exit 1
fi
for tool in ffmpeg mpv; do
    command -v "$tool" >/dev/null || { echo "$tool is not installed" >&2; exit 1; }
done

# report TOOL CLIPS START END FAILURES (START, END: date +%s.%N)
report() {
    python3 -c 'import json, sys
tool, clips, failures = sys.argv[1], int(sys.argv[2]), int(sys.argv[5])
seconds = float(sys.argv[4]) - float(sys.argv[3])
print(json.dumps({"tool": tool, "clips": clips, "seconds": round(seconds, 3),
                  "posters_per_second": round((clips - failures) / seconds, 2), "failures": failures}))' "$@"
}

status=0

# ffmpeg, one process per clip.
rm -rf "$outdir/ffmpeg" && mkdir -p "$outdir/ffmpeg"
start=$(date +%s.%N)
n=0
for clip in "${clips[@]}"; do
    n=$((n + 1))
    ffmpeg -nostdin -loglevel error -ss "$time" -i "$clip" -frames:v 1 -y "$outdir/ffmpeg/$n.png" || true
done
end=$(date +%s.%N)
failures=0
for n in $(seq 1 "$count"); do
    if [ ! -s "$outdir/ffmpeg/$n.png" ]; then
        echo "ffmpeg: no poster for ${clips[$((n - 1))]}" >&2
        failures=$((failures + 1))
    fi
done
[ "$failures" -eq 0 ] || status=1
report ffmpeg "$count" "$start" "$end" "$failures"

# mpv from the command line, one process per clip.
rm -rf "$outdir/mpv-cli" && mkdir -p "$outdir/mpv-cli"
start=$(date +%s.%N)
n=0
for clip in "${clips[@]}"; do
    n=$((n + 1))
    mpv --no-config --really-quiet --vo=image --vo-image-format=png --vo-image-outdir="$outdir/mpv-cli/$n" \
        --frames=1 --start="$time" --ao=null --no-audio "$clip" </dev/null || true
done
end=$(date +%s.%N)
failures=0
for n in $(seq 1 "$count"); do
    if [ ! -s "$outdir/mpv-cli/$n/00000001.png" ]; then
        echo "mpv-cli: no poster for ${clips[$((n - 1))]}" >&2
        failures=$((failures + 1))
    fi
done
[ "$failures" -eq 0 ] || status=1
report mpv-cli "$count" "$start" "$end" "$failures"
exit $status
