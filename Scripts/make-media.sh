#!/usr/bin/env bash
# Regenerates PlayerKit's shipped media and test fixtures with ffmpeg.
# The outputs are committed; run this only to change them. Needs ffmpeg (Debian: apt-get install ffmpeg).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
media="$root/Media"
fixtures="$root/Tests/Fixtures"
mkdir -p "$media" "$fixtures"
ff() { ffmpeg -nostdin -hide_banner -loglevel error -y "$@"; }

# Two different 4-second clips, 320x240 at 30 fps, H.264 + AAC, moov at the front.
# testsrc2 draws a running frame counter, which makes seeks and sync checkable by eye.
ff -f lavfi -i testsrc2=size=320x240:rate=30:duration=4 \
   -f lavfi -i sine=frequency=440:duration=4 \
   -c:v libx264 -preset veryfast -crf 32 -pix_fmt yuv420p -g 30 \
   -c:a aac -b:a 48k -movflags +faststart -metadata title="PlayerKit clip A" "$media/clip-a.mp4"
ff -f lavfi -i smptehdbars=size=320x240:rate=30:duration=4 \
   -f lavfi -i sine=frequency=660:duration=4 \
   -vf "drawbox=x='mod(t*80,320)':y=100:w=40:h=40:color=white:t=fill" \
   -c:v libx264 -preset veryfast -crf 32 -pix_fmt yuv420p -g 30 \
   -c:a aac -b:a 48k -movflags +faststart -metadata title="PlayerKit clip B" "$media/clip-b.mp4"

# Three 1.5-second background clips (30 fps, video only) for the background-loop example.
ff -f lavfi -i "gradients=size=320x240:rate=30:duration=1.5:speed=0.05" \
   -c:v libx264 -preset veryfast -crf 32 -pix_fmt yuv420p -g 45 -movflags +faststart "$media/background-1.mp4"
ff -f lavfi -i "mandelbrot=size=320x240:rate=30" -t 1.5 \
   -c:v libx264 -preset veryfast -crf 32 -pix_fmt yuv420p -g 45 -movflags +faststart "$media/background-2.mp4"
ff -f lavfi -i "testsrc=size=320x240:rate=30:duration=1.5" \
   -c:v libx264 -preset veryfast -crf 32 -pix_fmt yuv420p -g 45 -movflags +faststart "$media/background-3.mp4"

# Two 1-second clips (30 fps, video only) for the loop tests, so three wrap-arounds take seconds.
ff -f lavfi -i testsrc2=size=160x120:rate=30:duration=1 \
   -c:v libx264 -preset veryfast -crf 34 -pix_fmt yuv420p -g 30 -movflags +faststart "$fixtures/short-a.mp4"
ff -f lavfi -i smptebars=size=160x120:rate=30:duration=1 \
   -c:v libx264 -preset veryfast -crf 34 -pix_fmt yuv420p -g 30 -movflags +faststart "$fixtures/short-b.mp4"

# The media cache's network tests: 20 seconds at a steady ~600 kbit/s (about 1.5 MB), a keyframe
# every second, header first, so a throttled loopback server takes seconds to send it and a seek
# near the end needs a range of its own.
ff -f lavfi -i testsrc2=size=320x240:rate=30:duration=20 -f lavfi -i sine=frequency=330:duration=20 \
   -c:v libx264 -preset veryfast -b:v 560k -maxrate 600k -bufsize 600k -pix_fmt yuv420p -g 30 \
   -c:a aac -b:a 32k -movflags +faststart "$fixtures/long.mp4"

# Frames the app draws. A 4-second pattern with a colour per quadrant (red top-left, green
# top-right, blue bottom-left, white bottom-right), intra-only so it also plays backward cheaply:
# the software-frame tests check pixels and mirroring against it.
ff -f lavfi -i "color=c=red:s=80x60:r=30:d=4" -f lavfi -i "color=c=lime:s=80x60:r=30:d=4" \
   -f lavfi -i "color=c=blue:s=80x60:r=30:d=4" -f lavfi -i "color=c=white:s=80x60:r=30:d=4" \
   -filter_complex "[0][1][2][3]xstack=inputs=4:layout=0_0|w0_0|0_h0|w0_h0" \
   -c:v libx264 -preset veryfast -crf 18 -pix_fmt yuv420p -g 1 -movflags +faststart "$fixtures/quadrants.mp4"

# Frame numbers as grey levels: frame N of this 3-second, 30 fps clip is all luma 20 + 2N (losslessly
# coded, intra-only), so a test can tell from a frame's pixels which frame it is.
ff -f lavfi -i "color=c=gray:s=64x48:r=30:d=3" -vf "geq=lum='20+2*N':cb=128:cr=128" \
   -c:v libx264 -preset veryfast -qp 0 -pix_fmt yuv420p -g 1 -movflags +faststart "$fixtures/frame-numbers.mp4"

# Faults written into the media for the alarm tests: 8 seconds of testsrc2 (160x120, 25 fps,
# intra-only so a repeated picture is coded the same each time) and a 440 Hz tone, with the
# picture frozen from 0.96 s to 3 s (frames 25-74 repeat frame 24), black from 4 s to 5.52 s,
# and the sound muted from 6 s to 7 s.
ff -f lavfi -i testsrc2=size=160x120:rate=25:duration=8 -f lavfi -i sine=frequency=440:duration=8 \
   -filter_complex "[0:v]split[a][b];[a][b]freezeframes=first=25:last=74:replace=24,drawbox=c=black:t=fill:enable='between(t,4,5.49)'[v];[1:a]volume=enable='between(t,6,7)':volume=0[au]" \
   -map "[v]" -map "[au]" -c:v libx264 -preset veryfast -crf 30 -pix_fmt yuv420p -g 1 -c:a aac -b:a 48k -movflags +faststart "$fixtures/faults.mp4"

# Four 4-second tiles for the mosaic example, each mostly one colour (red, green, blue, yellow)
# with a moving white box, so a screenshot shows which player is in which quadrant.
i=1
for colour in red lime blue yellow; do
  ff -f lavfi -i "color=c=$colour:s=320x240:r=30:d=4" \
     -vf "drawbox=x='mod(t*80,280)':y=20:w=40:h=40:color=white:t=fill" \
     -c:v libx264 -preset veryfast -crf 28 -pix_fmt yuv420p -g 30 -movflags +faststart "$media/tile-$i.mp4"
  i=$((i + 1))
done

# The sequencer's shipped timeline: three 2-second clips and a still, each with its own colour
# (orange, cyan|magenta halves so a flip shows, purple) and a box moving left to right so
# direction is visible; intra every 5 frames so reverse playback is cheap.
ff -f lavfi -i "color=c=orange:s=320x240:r=30:d=2" -vf "drawbox=x='t*140':y=100:w=40:h=40:color=black:t=fill" \
   -c:v libx264 -preset veryfast -crf 28 -pix_fmt yuv420p -g 5 -movflags +faststart "$media/sequence-1.mp4"
ff -f lavfi -i "color=c=cyan:s=160x240:r=30:d=2" -f lavfi -i "color=c=magenta:s=160x240:r=30:d=2" \
   -filter_complex "[0][1]hstack,drawbox=x='t*140':y=100:w=40:h=40:color=black:t=fill" \
   -c:v libx264 -preset veryfast -crf 28 -pix_fmt yuv420p -g 5 -movflags +faststart "$media/sequence-2.mp4"
ff -f lavfi -i "color=c=purple:s=320x240:r=30:d=2" -vf "drawbox=x='t*140':y=100:w=40:h=40:color=white:t=fill" \
   -c:v libx264 -preset veryfast -crf 28 -pix_fmt yuv420p -g 5 -movflags +faststart "$media/sequence-3.mp4"
ff -f lavfi -i "color=c=gray:s=320x240" -vf "drawbox=x=0:y=0:w=160:h=240:color=black:t=fill" -frames:v 1 "$media/sequence-still.png"

# A 4-second clip with two audio tracks (English at 440 Hz, French at 880 Hz, tagged) and one
# embedded subtitle track, plus a SubRip file for the track-selection tests (named apart from
# the clip: mpv would load "two-languages.en.srt" with it by itself).
cat > "$media/subtitles-en.srt" <<'SRT'
1
00:00:00,000 --> 00:00:02,000
First subtitle line

2
00:00:02,000 --> 00:00:04,000
Second subtitle line
SRT
cat > "$media/two-languages.embedded.srt.tmp" <<'SRT'
1
00:00:00,000 --> 00:00:04,000
Embedded subtitle
SRT
ff -f lavfi -i testsrc2=size=320x240:rate=30:duration=4 \
   -f lavfi -i sine=frequency=440:duration=4 -f lavfi -i sine=frequency=880:duration=4 \
   -i "$media/two-languages.embedded.srt.tmp" \
   -map 0:v -map 1:a -map 2:a -map 3:s \
   -c:v libx264 -preset veryfast -crf 32 -pix_fmt yuv420p -g 30 -c:a aac -b:a 32k -c:s mov_text \
   -metadata:s:a:0 language=eng -metadata:s:a:0 title="English (440 Hz)" \
   -metadata:s:a:1 language=fra -metadata:s:a:1 title="French (880 Hz)" \
   -metadata:s:s:0 language=eng -metadata:s:s:0 title="Embedded" \
   -disposition:a:0 default -disposition:a:1 0 \
   -movflags +faststart -metadata title="PlayerKit two languages" "$media/two-languages.mp4"
rm -f "$media/two-languages.embedded.srt.tmp"
# For the compare app (issue 28): two 4-second 30 fps clips whose top half is one colour (A red,
# B blue) and whose bottom half shows the frame number in binary, eight 40-pixel blocks, least
# significant bit on the left (white = 1), so a screenshot tells which clip and which frame.
for clip in "a 220 40 40" "b 40 60 220"; do
    set -- $clip
    code="255*mod(floor(N/pow(2,floor(X/40))),2)"
    ff -f lavfi -i "color=c=black:s=320x240:r=30:d=4,format=rgb24,geq=r='if(lt(Y,120),$2,$code)':g='if(lt(Y,120),$3,$code)':b='if(lt(Y,120),$4,$code)'" \
       -c:v libx264 -preset veryfast -crf 12 -pix_fmt yuv420p -g 30 -movflags +faststart \
       -metadata title="PlayerKit compare $1" "$media/compare-$1.mp4"
done

# For posters (issue 28): ten black frames, then red, 16:9 (320x180), 2 s at 30 fps, no audio.
ff -f lavfi -i "color=c=black:s=320x180:r=30:d=0.3333333" -f lavfi -i "color=c=0xDC2828:s=320x180:r=30:d=1.6666667" \
   -filter_complex "[0][1]concat=n=2:v=1[v]" -map "[v]" -frames:v 60 \
   -c:v libx264 -preset veryfast -crf 20 -pix_fmt yuv420p -g 30 -movflags +faststart "$fixtures/black-leader.mp4"
# Bad inputs for the error tests.
: > "$fixtures/empty.mp4"
# Random bytes with an .mp4 name (fixed seed, so the file is reproducible).
python3 - "$fixtures/random-bytes.mp4" <<'PY'
import random, sys
random.seed(20261121)
open(sys.argv[1], "wb").write(bytes(random.getrandbits(8) for _ in range(8192)))
PY
# A truncated mp4: moov at the end (no faststart), cut to its first 20%, so the index is gone.
ff -f lavfi -i testsrc2=size=320x240:rate=30:duration=2 -c:v libx264 -preset veryfast -crf 34 \
   -pix_fmt yuv420p "$fixtures/whole.tmp.mp4"
size=$(stat -c %s "$fixtures/whole.tmp.mp4")
head -c $((size / 5)) "$fixtures/whole.tmp.mp4" > "$fixtures/truncated.mp4"
rm -f "$fixtures/whole.tmp.mp4"
ls -l "$media" "$fixtures"
