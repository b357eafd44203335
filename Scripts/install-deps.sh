#!/usr/bin/env bash
# Installs what building and testing PlayerKit needs on a fresh Debian or Ubuntu machine:
# libmpv-dev (headers and library), libsqlite3-dev and libcurl4-openssl-dev (the media cache's
# index and HTTP), libssl-dev (rooms' TLS), python3 (the corrupted-media corpus), Xvfb with x11-utils and x11-apps (xwd)
# for the window tests, SDL2, EGL,
# OpenGL and Mesa's software drivers for the OpenGL examples and tests, and PulseAudio with pactl
# for the audio-device tests, when missing. It names each package as apt sets it up. Swift
# itself is expected at /opt/swift or on PATH (https://www.swift.org/install/linux/).
set -euo pipefail

as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else
    echo "install-deps: need root (or sudo) to run: $*" >&2; exit 1; fi
}

missing=()
[ -f /usr/include/mpv/client.h ] || missing+=(libmpv-dev)
command -v pkg-config >/dev/null || missing+=(pkg-config)
# The media cache's index: the system's SQLite, through its C API (Sources/CSQLite).
[ -f /usr/include/sqlite3.h ] || missing+=(libsqlite3-dev)
# Rooms' TLS: the system's OpenSSL (Sources/COpenSSL).
[ -f /usr/include/openssl/ssl.h ] || missing+=(libssl-dev)
# The media cache's HTTP: the system's libcurl (Sources/CCurl).
[ -n "$(ls /usr/include/*/curl/curl.h /usr/include/curl/curl.h 2>/dev/null)" ] || missing+=(libcurl4-openssl-dev)
# The corrupted-media corpus (Scripts/make-corpus.py) and the benchmark runner.
command -v python3 >/dev/null || missing+=(python3)
# Real X11 windows for the window tests: a virtual X server and xwininfo.
command -v Xvfb >/dev/null || missing+=(xvfb)
command -v xwininfo >/dev/null || missing+=(x11-utils)
command -v xwd >/dev/null || missing+=(x11-apps)
# Frames the app draws: the mosaic example's host (SDL2 window or EGL offscreen) and real
# OpenGL from Mesa (llvmpipe) under Xvfb or without any display.
[ -f /usr/include/SDL2/SDL.h ] || missing+=(libsdl2-dev)
[ -f /usr/include/EGL/egl.h ] || missing+=(libegl-dev)
[ -f /usr/include/GL/glext.h ] || missing+=(libgl-dev)
ls /usr/lib/*/libOpenGL.so >/dev/null 2>&1 || missing+=(libopengl-dev)
ls /usr/lib/*/dri/swrast_dri.so >/dev/null 2>&1 || missing+=(libgl1-mesa-dri)
ls /usr/lib/*/libEGL_mesa.so.0 >/dev/null 2>&1 || missing+=(libegl-mesa0)
ls /usr/lib/*/libGLX_mesa.so.0 >/dev/null 2>&1 || missing+=(libglx-mesa0)
# A real sound server for the audio-device tests: PulseAudio with null sinks, and pactl.
command -v pulseaudio >/dev/null || missing+=(pulseaudio)
command -v pactl >/dev/null || missing+=(pulseaudio-utils)
# Rooms across processes: the real Syncplay server (Debian's 1.6.9) the room tests join.
command -v syncplay-server >/dev/null || missing+=(syncplay-server)
# ...and Syncplay's own client with the mpv it drives, for the interoperability test.
command -v syncplay >/dev/null || missing+=(syncplay)
command -v mpv >/dev/null || missing+=(mpv)
# For the benchmarks (--bench): a C compiler, ffmpeg for the 720p clip, and venv for python-mpv.
if [ "${1:-}" = "--bench" ]; then
  command -v cc >/dev/null || missing+=(gcc)
  command -v ffmpeg >/dev/null || missing+=(ffmpeg)
  python3 -c 'import venv, ensurepip' 2>/dev/null || missing+=(python3-venv)
  [ -e /usr/lib/x86_64-linux-gnu/libmpv.so.2 ] || [ -e /usr/lib/aarch64-linux-gnu/libmpv.so.2 ] || missing+=(libmpv2)
fi
# For make test-loaded (--loaded): stress-ng loads the CPU beside the suite.
if [ "${1:-}" = "--loaded" ]; then
  command -v stress-ng >/dev/null || missing+=(stress-ng)
fi
if [ ${#missing[@]} -gt 0 ]; then
  echo "install-deps: missing ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  echo "install-deps: apt-get update" >&2
  as_root apt-get update -qq
  # What apt will install with them (their dependencies too), then each as it is set up.
  count=$(apt-get install -s --no-install-recommends "${missing[@]}" 2>/dev/null | grep -c '^Inst ' || true)
  echo "install-deps: installing $count Debian packages (${missing[*]} and their dependencies)" >&2
  as_root apt-get install -y -q --no-install-recommends -o Dpkg::Progress-Fancy=0 "${missing[@]}" 2>&1 \
    | sed -n 's/^Setting up \([^ ]*\).*/install-deps:   \1/p' >&2
  echo "install-deps: done" >&2
fi

if ! command -v swift >/dev/null && [ ! -x /opt/swift/usr/bin/swift ]; then
  echo "install-deps: Swift 6 not found on PATH or at /opt/swift (https://www.swift.org/install/linux/)" >&2
  exit 1
fi
