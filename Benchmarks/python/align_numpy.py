#!/usr/bin/env python3
"""The usual way to find the offset between two recordings' sound, as the scripts people share do
it (easy scripts over ffmpeg and numpy): ffmpeg decodes each to raw mono samples at 8 kHz, numpy
cross-correlates them through one FFT of both whole signals, and the peak is the offset.

    align_numpy.py REFERENCE OTHER    prints {"offset": S}: how much later OTHER plays a moment
"""
import json
import subprocess
import sys

import numpy

RATE = 8000


def samples(path):
    raw = subprocess.run(["ffmpeg", "-v", "error", "-i", path, "-ac", "1", "-ar", str(RATE), "-f", "f32le", "-"],
                         check=True, capture_output=True).stdout
    return numpy.frombuffer(raw, dtype=numpy.float32)


def main():
    reference, other = samples(sys.argv[1]), samples(sys.argv[2])
    size = 1
    while size < len(reference) + len(other):
        size *= 2
    spectrum = numpy.fft.rfft(other, size) * numpy.conj(numpy.fft.rfft(reference, size))
    correlation = numpy.fft.irfft(spectrum, size)
    lag = int(numpy.argmax(correlation))
    if lag > size // 2:
        lag -= size
    # other[n + lag] matches reference[n]: a moment the reference plays at t, the other plays at t + lag.
    print(json.dumps({"offset": lag / RATE}))


if __name__ == "__main__":
    main()
