#!/usr/bin/env bash
# Makes the 50 short clips of the poster benchmark (Benchmarks/c/compare.c `posters`,
# Benchmarks/posters-baselines.sh): each 2 s, 320x240, 30 fps, H.264 yuv420p, no audio.
# Every clip is 10 black frames followed by 50 frames of testsrc2 with its own hue (and every
# other one negated), so posters differ from clip to clip and a "first non-black frame" search
# has work to do. One key frame per clip (x264's default interval is longer than a clip): a
# poster at 1.0 s decodes from frame 0.
#   Benchmarks/make-poster-clips.sh [DIR]     DIR defaults to .build-bench/posters-clips
# Clips that exist are kept. Prints only the final count, on standard error.
set -euo pipefail

dir=${1:-.build-bench/posters-clips}
mkdir -p "$dir"
for i in $(seq -w 1 50); do
    out="$dir/clip-$i.mp4"
    [ -s "$out" ] && continue
    n=$((10#$i))
    hue=$(( (n * 360 / 50) % 360 ))
    extra=""
    [ $((n % 2)) -eq 0 ] && extra=",negate"
    graph="color=c=black:s=320x240:r=30,trim=end_frame=10,format=yuv420p,setsar=1[b];"
    graph+="testsrc2=s=320x240:r=30,trim=end_frame=50,setpts=PTS-STARTPTS,hue=h=$hue$extra,format=yuv420p,setsar=1[t];"
    graph+="[b][t]concat=n=2:v=1:a=0[v]"
    ffmpeg -nostdin -loglevel error -y -filter_complex "$graph" -map "[v]" \
        -c:v libx264 -preset veryfast -pix_fmt yuv420p -r 30 -movflags +faststart "$out.tmp.mp4"
    mv "$out.tmp.mp4" "$out"
done
echo "$(ls "$dir"/clip-*.mp4 | wc -l) clips in $dir" >&2
