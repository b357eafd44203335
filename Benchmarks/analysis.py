#!/usr/bin/env python3
"""Issue 52's benchmarks (`make bench-compare`): PlayerKitAnalysis against the truth and against
what people use instead, in one run, on this machine.

  Benchmarks/analysis.py            runs everything, prints Markdown tables
  Benchmarks/analysis.py --write    also records them (Documentation/Figures/analysis.json) and renders
                                    them into Documentation/Performance.md (between its "ANALYSIS
                                    START" and "ANALYSIS END" markers)

Alignment accuracy. A test set made here, none of it shipped: an "event" of 12 minutes, speech
(espeak-ng, sentences drawn from a word list with a fixed seed) over a music bed (plucked notes of a
random melody, synthesized here, seeded), 48 kHz mono; copies of it as other devices would record
it, each with noise of its own, another gain, filtering, room echo (sox `reverb`, ffmpeg `aecho`) and
a codec (AAC, Opus, MP3), cut at known offsets from 40 ms to 9 minutes; one copy resampled as a
recorder whose clock ran 100 ppm fast (sox `speed`); speech-only and music-only pairs; and one pair
that shares no sound (other sentences, another melody). Each aligned by
`playerkit-quality --align sound --align-only --json` (release build). Every offset must be within
1 ms of the truth, the drift within 10 ppm, the unrelated pair refused.

Alignment time. Two one-hour recordings (pink noise in bursts, 3.21 s apart, AAC), aligned by
playerkit-quality and by the usual way: ffmpeg decoding both to raw 8 kHz mono samples, then
numpy's FFT cross-correlation (Benchmarks/python/align_numpy.py), twice each, alternating.

Metric throughput. A 1080p pair, 10 s at 30 fps (testsrc2; reference x264 crf 12, rendition crf
32), scored with PSNR and SSIM by playerkit-quality and by FFmpeg's psnr and ssim filters in one
ffmpeg run, five times each, alternating (this machine's speed moves by a fifth from run to run).

Picture alignment. A 20 s recording at 25 fps with no sound (ffmpeg's `life` source, random
cells), a copy at 30 fps cut 1.5 s in and encoded smaller, and one at 25 fps starting 0.52 s later
(black before), aligned by `--align picture`: within one frame.
"""
import argparse
import json
import os
import platform
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PERFORMANCE = os.path.join(ROOT, "Documentation", "Performance.md")
START, END = "<!-- ANALYSIS START -->", "<!-- ANALYSIS END -->"
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchkit import write_figures  # noqa: E402
RATE = 48000


def log(message):
    print("analysis: " + message, file=sys.stderr, flush=True)


def run(arguments, **kwargs):
    return subprocess.run(arguments, check=True, **kwargs)


def ffmpeg(*arguments):
    run(["ffmpeg", "-v", "error", "-y", *arguments])


def build():
    log("building playerkit-quality (release)")
    env = dict(os.environ, PLAYERKIT_WARNINGS_AS_ERRORS="1")
    run(["swift", "build", "-c", "release", "--product", "playerkit-quality"], cwd=ROOT, env=env, stdout=subprocess.DEVNULL)
    path = run(["swift", "build", "-c", "release", "--show-bin-path"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    return os.path.join(path, "playerkit-quality")


# MARK: The test set

SYLLABLES = [c + v for c in "b d f g k l m n p r s t v z".split() + ["sh", "ch", "th"] for v in ["a", "e", "i", "o", "u", "ai", "ou"]]


def sentence(generator):
    """Words made of random syllables: no word comes back (espeak-ng says a word the same way each
    time, and a small vocabulary made synthetic speech repeat itself, which no real voice does)."""
    words = ["".join(generator.choice(SYLLABLES) for _ in range(generator.randint(1, 3))) for _ in range(generator.randint(5, 14))]
    return " ".join(words) + "."


def speech(path, seconds, seed, folder):
    """`seconds` of speech by espeak-ng (English, a few speeds and pitches), 48 kHz mono."""
    generator = random.Random(seed)
    parts, total, index = [], 0.0, 0
    while total < seconds:
        part = os.path.join(folder, "speech-%d-%d.wav" % (seed, index))
        voice = "en+" + generator.choice(["m1", "m2", "m3", "m4", "f1", "f2", "f3", "f4"])
        run(["espeak-ng", "-w", part, "-v", voice, "-s", str(generator.randint(140, 190)), "-p", str(generator.randint(30, 70)),
             sentence(generator)], stdout=subprocess.DEVNULL)
        resampled = part + ".48k.wav"
        run(["sox", "-V1", part, "-r", str(RATE), "-c", "1", resampled, "gain", "-3", "pad", "0", "%.2f" % generator.uniform(0.1, 0.6)])
        total += float(run(["soxi", "-D", resampled], capture_output=True, text=True).stdout)
        parts.append(resampled)
        index += 1
    run(["sox", "-V1", *parts, path, "trim", "0", str(seconds)])
    for part in parts:
        os.remove(part)
        os.remove(part[:-len(".48k.wav")])


def music(path, seconds, seed):
    """`seconds` of plucked notes of a random melody over a slow chord, 48 kHz mono (numpy)."""
    import numpy
    generator = numpy.random.default_rng(seed)
    samples = numpy.zeros(int(seconds * RATE), dtype=numpy.float32)
    scale = [0, 2, 4, 5, 7, 9, 11, 12]
    position = 0
    while position < len(samples):
        length = int(RATE * generator.choice([0.125, 0.25, 0.25, 0.5]))
        note = 57 + generator.choice(scale) + 12 * generator.integers(0, 2)
        frequency = 440.0 * 2 ** ((note - 69) / 12)
        t = numpy.arange(min(length * 3, len(samples) - position)) / RATE
        tone = (numpy.sin(2 * numpy.pi * frequency * t) + 0.4 * numpy.sin(4 * numpy.pi * frequency * t)) * numpy.exp(-t * 6)
        samples[position:position + len(tone)] += 0.25 * tone.astype(numpy.float32)
        position += length
    samples /= max(1.0, float(numpy.max(numpy.abs(samples))) / 0.9)
    import wave
    with wave.open(path, "wb") as output:
        output.setnchannels(1)
        output.setsampwidth(2)
        output.setframerate(RATE)
        output.writeframes((samples * 32767).astype("<i2").tobytes())


def mix(speech_path, music_path, path):
    run(["sox", "-V1", "-m", "-v", "0.8", speech_path, "-v", "0.3", music_path, path])


def copy(source, path, codec, start=0.0, delay=0.0, length=None, gain=0.0, sox_effects=(), noise=0.02, seed=1,
         speed=None):
    """A device's recording of `source`: from `start` s into it (or starting `delay` s before
    it: silence first), through sox's `sox_effects`, with white noise of its own at `noise`, gain
    `gain` dB, encoded with `codec` (ffmpeg's arguments)."""
    raw = path + ".wav"
    effects = ["trim", str(start)] + ([str(length)] if length is not None else [])
    if speed:
        effects += ["speed", repr(speed), "rate", str(RATE)]
    if delay:
        effects += ["pad", str(delay), "0"]
    effects += list(sox_effects) + ["gain", str(gain)]
    run(["sox", "-V1", source, "-r", str(RATE), raw] + effects)
    duration = float(run(["soxi", "-D", raw], capture_output=True, text=True).stdout)
    ffmpeg("-i", raw, "-f", "lavfi", "-i", "anoisesrc=d=%.3f:c=white:r=%d:a=%s:seed=%d" % (duration, RATE, noise, seed),
           "-filter_complex", "[0:a][1:a]amix=inputs=2:duration=first:normalize=0", *codec, path)
    os.remove(raw)
    return path


AAC = ["-c:a", "aac", "-b:a", "96k"]
OPUS = ["-c:a", "libopus", "-b:a", "48k"]
MP3 = ["-c:a", "libmp3lame", "-b:a", "128k"]


def test_set(folder):
    """Returns [(name, reference, other, truth offset, truth drift or None)]; truth None: no
    common sound."""
    event_seconds = 720
    log("making the test set: 12 minutes of speech and music, copies as other devices recorded them")
    speech(os.path.join(folder, "speech.wav"), event_seconds, 1, folder)
    music(os.path.join(folder, "music.wav"), event_seconds, 2)
    mix(os.path.join(folder, "speech.wav"), os.path.join(folder, "music.wav"), os.path.join(folder, "event.wav"))
    speech(os.path.join(folder, "speech-other.wav"), 120, 3, folder)
    music(os.path.join(folder, "music-other.wav"), 120, 4)
    mix(os.path.join(folder, "speech-other.wav"), os.path.join(folder, "music-other.wav"), os.path.join(folder, "other-event.wav"))
    event = os.path.join(folder, "event.wav")
    speech_only = os.path.join(folder, "speech.wav")
    music_only = os.path.join(folder, "music.wav")

    def at(name):
        return os.path.join(folder, name)

    reference = copy(event, at("camera-a.m4a"), AAC, gain=-2, sox_effects=("highpass", "120"), seed=10)
    cases = [
        ("speech and music, 40 ms later, AAC, low-pass 4 kHz, -6 dB", reference,
         copy(event, at("b-40ms.m4a"), AAC, delay=0.040, gain=-6, sox_effects=("lowpass", "4000"), seed=11), 0.040, None),
        ("speech, 1.5 s cut off its start, Opus, echo, high-pass 300 Hz", copy(speech_only, at("speech-a.m4a"), AAC, length=240, seed=12),
         copy(speech_only, at("b-speech.opus"), OPUS, start=1.5, length=200, sox_effects=("highpass", "300", "echo", "0.8", "0.7", "40", "0.3"),
              seed=13), -1.5, None),
        ("music, 12.345 s later, MP3, room reverb, +3 dB", copy(music_only, at("music-a.m4a"), AAC, length=240, seed=14),
         copy(music_only, at("b-music.mp3"), MP3, delay=12.345, length=200, gain=3, sox_effects=("reverb", "40"), seed=15), 12.345, None),
        ("speech and music, 37.25 s later, Opus, band-pass, echo", reference,
         copy(event, at("b-37s.opus"), OPUS, delay=37.25, length=300, sox_effects=("sinc", "200-5000", "echo", "0.8", "0.6", "25", "0.25"),
              seed=16), 37.25, None),
        ("speech and music, 9 min cut off its start (3 min overlap), AAC", reference,
         copy(event, at("b-9min.m4a"), AAC, start=540, gain=-3, seed=17), -540.0, None),
        ("speech and music, 2 s later, clock 100 ppm fast, 12 min, AAC", reference,
         copy(event, at("b-drift.m4a"), AAC, delay=2.0, speed=1 / 1.0001, sox_effects=("lowpass", "6000"), seed=18), 2.0, 100.0),
        ("another event (no common sound)", reference, copy(at("other-event.wav"), at("b-unrelated.m4a"), AAC, seed=19), None, None),
    ]
    return cases


def folder_of(path):
    return os.path.dirname(path)


def align(quality, reference, other, method="sound"):
    started = time.monotonic()
    result = subprocess.run([quality, "--align", method, "--align-only", "--json", reference, other], capture_output=True, text=True)
    elapsed = time.monotonic() - started
    if result.returncode != 0:
        # The tool's own last line (FFmpeg's warnings may come before it).
        lines = [line for line in result.stderr.strip().split("\n") if line.startswith("playerkit-quality: ")] or [result.stderr.strip()]
        return None, lines[-1].replace("playerkit-quality: ", "").replace(folder_of(reference) + "/", ""), elapsed
    return json.loads(result.stdout), None, elapsed


def accuracy(quality, folder):
    rows, ok = [], True
    for name, reference, other, truth, drift in test_set(folder):
        found, error, elapsed = align(quality, reference, other)
        if truth is None:
            passed = found is None and "shares nothing" in (error or "")
            rows.append([name, "refused", "refused: %s" % ("yes" if found is None else "no, %.4f s" % found["offset"]), "", "", "",
                         "%.1f" % elapsed, "yes" if passed else "**no**"])
        elif found is None:
            passed = False
            rows.append([name, "%.3f s" % truth, "error: %s" % error, "", "", "", "%.1f" % elapsed, "**no**"])
        else:
            difference = abs(found["offset"] - truth) * 1000
            drift_found = found.get("driftPPM")
            drift_ok = drift is None or (drift_found is not None and abs(drift_found - drift) <= 10)
            passed = difference <= 1 and drift_ok
            rows.append([name, "%.3f s" % truth, "%.4f s" % found["offset"], "%.3f ms" % difference,
                         "" if drift is None else "%+.0f / %s" % (drift, "none" if drift_found is None else "%+.1f" % drift_found),
                         "%.1f" % found["confidence"], "%.1f" % elapsed, "yes" if passed else "**no**"])
        ok = ok and passed
        log("%s: %s" % (name, rows[-1][2:]))
    return rows, ok


# MARK: Time for one hour

def hour_pair(folder):
    a, b = os.path.join(folder, "hour-a.m4a"), os.path.join(folder, "hour-b.m4a")
    if os.path.exists(a) and os.path.exists(b):  # made by an earlier run with --keep
        return a, b, -3.21
    log("making two one-hour recordings")
    bursts = "volume='if(lt(mod(t*1.37,1),0.6),1,0.15)':eval=frame"
    ffmpeg("-f", "lavfi", "-i", "anoisesrc=d=3610:c=pink:r=48000:a=0.4:seed=21", "-af", bursts + ",atrim=start=0:end=3600", *AAC, a)
    ffmpeg("-f", "lavfi", "-i", "anoisesrc=d=3610:c=pink:r=48000:a=0.4:seed=21", "-f", "lavfi", "-i", "anoisesrc=d=3610:c=white:r=48000:a=0.1:seed=22",
           "-filter_complex", "[0:a]" + bursts + ",atrim=start=3.21:end=3603.21,asetpts=PTS-STARTPTS,lowpass=f=5000[s];[s][1:a]amix=inputs=2:duration=first:normalize=0",
           *AAC, b)
    return a, b, -3.21


def timed(arguments):
    started = time.monotonic()
    before = os.times()
    result = subprocess.run(arguments, capture_output=True, text=True)
    after = os.times()
    elapsed = time.monotonic() - started
    cpu = (after.children_user - before.children_user) + (after.children_system - before.children_system)
    return result, elapsed, cpu


def hour(quality, folder, rounds):
    a, b, truth = hour_pair(folder)
    numpy_script = os.path.join(ROOT, "Benchmarks", "python", "align_numpy.py")
    ours, theirs = [], []
    for round in range(rounds):
        log("one hour, round %d" % (round + 1))
        result, elapsed, cpu = timed([quality, "--align", "sound", "--align-only", "--json", a, b])
        found = json.loads(result.stdout)["offset"] if result.returncode == 0 else float("nan")
        ours.append((elapsed, cpu, found))
        result, elapsed, cpu = timed([sys.executable, numpy_script, a, b])
        found = json.loads(result.stdout)["offset"] if result.returncode == 0 else float("nan")
        theirs.append((elapsed, cpu, found))
    rows = []
    for name, runs in (("PlayerKit (`playerkit-quality --align sound --align-only`)", ours),
                       ("ffmpeg to raw 8 kHz samples + numpy FFT cross-correlation", theirs)):
        rows.append([name, ", ".join("%.1f" % r[0] for r in runs), ", ".join("%.1f" % r[1] for r in runs),
                     "%.2f ms" % (abs(runs[-1][2] - truth) * 1000)])
    ratio = statistics.median(r[0] for r in ours) / statistics.median(r[0] for r in theirs)
    return rows, ratio


# MARK: Metric throughput

def throughput(quality, folder, rounds):
    reference, rendition = os.path.join(folder, "ref-1080p.mp4"), os.path.join(folder, "enc-1080p.mp4")
    if not (os.path.exists(reference) and os.path.exists(rendition)):
        log("making the 1080p pair")
        ffmpeg("-f", "lavfi", "-i", "testsrc2=s=1920x1080:r=30:d=10", "-c:v", "libx264", "-preset", "veryfast", "-crf", "12", "-pix_fmt", "yuv420p", reference)
        ffmpeg("-i", reference, "-c:v", "libx264", "-preset", "veryfast", "-crf", "32", "-pix_fmt", "yuv420p", rendition)
    ours, theirs = [], []
    graph = "[0:v]split[a0][a1];[1:v]split[b0][b1];[a0][b0]psnr;[a1][b1]ssim"
    for round in range(rounds):
        log("1080p metrics, round %d" % (round + 1))
        _, elapsed, cpu = timed([quality, reference, rendition, "--worst", "0"])
        ours.append((elapsed, cpu))
        _, elapsed, cpu = timed(["ffmpeg", "-v", "error", "-i", reference, "-i", rendition, "-lavfi", graph, "-f", "null", "-"])
        theirs.append((elapsed, cpu))
    rows = [["PlayerKit (`playerkit-quality ref enc --worst 0`)", ", ".join("%.2f" % r[0] for r in ours), ", ".join("%.2f" % r[1] for r in ours),
             "%.0f" % (300 / statistics.median(r[0] for r in ours))],
            ["ffmpeg's psnr and ssim filters, one run", ", ".join("%.2f" % r[0] for r in theirs), ", ".join("%.2f" % r[1] for r in theirs),
             "%.0f" % (300 / statistics.median(r[0] for r in theirs))]]
    # Each round runs both back to back, on the machine as it is then: the median of the rounds'
    # ratios (this machine's speed moves by a fifth between rounds), and the ratio of the medians.
    ratio = statistics.median(t[0] / o[0] for o, t in zip(ours, theirs))
    of_medians = statistics.median(r[0] for r in theirs) / statistics.median(r[0] for r in ours)
    return rows, (ratio, of_medians)


# MARK: Picture alignment

def pictures(quality, folder):
    log("making the picture test set")
    source = os.path.join(folder, "screen.mp4")
    ffmpeg("-f", "lavfi", "-i", "life=s=320x240:r=25:ratio=0.2:seed=5:mold=8:life_color=#30e050:death_color=#202080:mold_color=#a06020",
           "-t", "20", "-c:v", "libx264", "-preset", "veryfast", "-crf", "14", "-pix_fmt", "yuv420p", source)
    faster = os.path.join(folder, "screen-30fps.mp4")
    ffmpeg("-ss", "1.5", "-i", source, "-vf", "fps=30,scale=240:180", "-c:v", "libx264", "-preset", "veryfast", "-crf", "28", "-pix_fmt", "yuv420p", faster)
    later = os.path.join(folder, "screen-later.mp4")
    ffmpeg("-i", source, "-vf", "tpad=start_duration=0.52:color=black", "-c:v", "libx264", "-preset", "veryfast", "-crf", "26", "-pix_fmt", "yuv420p", later)
    rows, ok = [], True
    for name, other, truth, frame in (("30 fps copy cut 1.5 s in, 240x180, crf 28", faster, -1.5, 1 / 30),
                                      ("25 fps copy 0.52 s later (black first), crf 26", later, 0.52, 1 / 25)):
        found, error, elapsed = align(quality, source, other, method="picture")
        passed = found is not None and abs(found["offset"] - truth) <= frame
        ok = ok and passed
        rows.append([name, "%.3f s" % truth, error or "%.4f s" % found["offset"],
                     "" if found is None else "%.1f ms" % (abs(found["offset"] - truth) * 1000), "%.1f ms" % (frame * 1000),
                     "yes" if passed else "**no**"])
        log("%s: %s" % (name, rows[-1][2:]))
    return rows, ok


def table(header, rows):
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def machine():
    cpu = "?"
    try:
        with open("/proc/cpuinfo") as info:
            cpu = next(line.split(":", 1)[1].strip() for line in info if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    ffmpeg_version = run(["ffmpeg", "-version"], capture_output=True, text=True).stdout.split("\n")[0].split()[2]
    return "%d vCPU %s, Linux %s, FFmpeg %s" % (os.cpu_count(), cpu, platform.release(), ffmpeg_version)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--write", action="store_true", help="put the tables into Documentation/Performance.md")
    parser.add_argument("--keep", help="make (or reuse) the test media in this folder and keep it")
    arguments = parser.parse_args()
    for tool in ("ffmpeg", "sox", "soxi", "espeak-ng"):
        if shutil.which(tool) is None:
            sys.exit("analysis: %s not found (make bench-deps installs it)" % tool)
    quality = build()
    folder = arguments.keep or tempfile.mkdtemp(prefix="playerkit-analysis-")
    os.makedirs(folder, exist_ok=True)
    try:
        accuracy_rows, accuracy_ok = accuracy(quality, folder)
        picture_rows, picture_ok = pictures(quality, folder)
        hour_rows, hour_ratio = hour(quality, folder, rounds=2)
        metric_rows, metric_ratio = throughput(quality, folder, rounds=5)
    finally:
        if not arguments.keep:
            shutil.rmtree(folder, ignore_errors=True)
    date, machine_text = time.strftime("%Y-%m-%d"), machine()
    text = "\n\n".join([
        table(["sound", "truth", "found", "error", "drift ppm (truth / found)", "confidence", "s", "within 1 ms (10 ppm)"], accuracy_rows),
        table(["picture", "truth", "found", "error", "one frame", "within a frame"], picture_rows),
        table(["two one-hour recordings, 3.21 s apart", "wall s", "CPU s", "error"], hour_rows)
        + "\n\nPlayerKit's time against the usual way's: **%.2fx** (median wall time; the issue asks for at most 1.0x)." % hour_ratio,
        table(["1080p pair, 300 frames, PSNR and SSIM", "wall s", "CPU s", "frames/s"], metric_rows)
        + "\n\nPlayerKit's throughput against FFmpeg's filters: **%.2fx**, the median of the rounds' ratios (the ratio of the "
          "medians: %.2fx; the issue asks for at least 1.0x)." % metric_ratio,
        "Every sound offset within 1 ms and the drift within 10 ppm, the unrelated pair refused: **%s**. "
        "Every picture offset within a frame: **%s**." % ("yes" if accuracy_ok else "no", "yes" if picture_ok else "no"),
        "Command: `make bench-compare` (%s). Machine: %s." % (date, machine_text),
    ])
    print(text)
    if arguments.write:
        try:
            record = write_figures("analysis", text, markers=(START, END), command="make bench-compare", machine=machine_text,
                                   date=date, results={"sound": accuracy_rows, "sound_ok": accuracy_ok, "picture": picture_rows,
                                                       "picture_ok": picture_ok, "hour": hour_rows, "hour_ratio": hour_ratio,
                                                       "throughput": metric_rows, "throughput_ratios": metric_ratio})
        except (OSError, ValueError) as error:
            sys.exit("analysis: writing the tables: %s" % error)
        log("wrote %s and the analysis part of Documentation/Performance.md" % os.path.relpath(record, ROOT))


if __name__ == "__main__":
    main()
