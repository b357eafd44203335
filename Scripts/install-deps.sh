#!/usr/bin/env bash
# Installs what a make target needs, and nothing more, when it is missing.
#
#   Scripts/install-deps.sh [demo|test|bench|peers|loaded|fuzz ...]     (default: demo)
#
#   demo     building the players and the in-process features, and running the examples
#            headless: libmpv's headers and library. That is all (Swift itself is expected at
#            /opt/swift or on PATH: https://www.swift.org/install/linux/).
#   test     make test: demo's, plus the media cache's SQLite and libcurl, rooms' OpenSSL, python3
#            (the corrupted-media corpus), Xvfb with xwininfo and xwd (real X11 windows), SDL2,
#            EGL, OpenGL and Mesa's software drivers (frames and OpenGL drawn by the app), GTK 4
#            and pkg-config (the GTK example, playerkit-compare), weston (its Wayland test), ffmpeg
#            (reading screenshots and posters), sd-bus's headers (MPRIS), a D-Bus daemon and the
#            desktop's D-Bus clients playerctl, gdbus and dbus-send (the MPRIS tests), the
#            PulseAudio daemon and pactl (the audio-device tests start a private server with
#            null sinks), Debian's syncplay-server (rooms) and Syncplay's own client with mpv (the
#            interoperability test).
#   bench    the benchmarks: a C compiler, ffmpeg (the 720p clip), python3's venv (python-mpv), libmpv's library,
#            mpv and its MPRIS plugin (make bench-mpris), stress-ng (make bench-health).
#   peers    make bench-peers: GStreamer's and libVLC's headers and libraries, and the plugins
#            that play the benchmark's clip headless (GStreamer's base, good and libav plugins;
#            libVLC's base plugins).
#   loaded   make test-loaded: stress-ng.
#   fuzz     make fuzz: demo's, plus the headers of the libraries the fuzzed modules link (SQLite,
#            libcurl, OpenSSL, sd-bus) and python3; libFuzzer and AddressSanitizer come with Swift.
#
# It checks for what is needed (a header, a library, a command), never for a distribution's
# package names, so a machine that has it all (however it got there) never calls a package
# manager. What is missing is printed, with the command that installs it, before root is asked
# for. apt (Debian, Ubuntu), dnf (Fedora; libmpv from RPM Fusion) and pacman (Arch) install it;
# elsewhere the script names what to install and fails.
set -euo pipefail

targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(demo)
for target in "${targets[@]}"; do
  case "$target" in demo|test|bench|peers|loaded|fuzz) ;; *) echo "install-deps: unknown target '$target' (demo, test, bench, peers, loaded, fuzz)" >&2; exit 2 ;; esac
done
wants() { local target; for target in "${targets[@]}"; do [ "$target" = "$1" ] && return 0; done; return 1; }

have_file() { local pattern; for pattern in "$@"; do compgen -G "$pattern" >/dev/null && return 0; done; return 1; }
have_command() { command -v "$1" >/dev/null 2>&1; }

# The package manager, and each need's package in it.
if have_command apt-get; then manager=apt
elif have_command dnf; then manager=dnf
elif have_command pacman; then manager=pacman
else manager=none; fi

# need WHAT CHECK... -- APT DNF PACMAN: records WHAT as missing unless CHECK passes.
missing_what=()
missing_packages=()
need() {
  local what=$1 check=$2 apt=$3 dnf=$4 pacman=$5
  eval "$check" && return 0
  missing_what+=("$what")
  case "$manager" in
    apt) missing_packages+=($apt) ;;
    dnf) missing_packages+=($dnf) ;;
    pacman) missing_packages+=($pacman) ;;
  esac
}

lib=/usr/lib/*
# demo: the players (and every example that needs nothing else).
need "libmpv's headers and library" "have_file /usr/include/mpv/client.h" libmpv-dev mpv-libs-devel mpv

if wants test || wants fuzz; then
  need "SQLite's headers (the media cache's index)" "have_file /usr/include/sqlite3.h" libsqlite3-dev sqlite-devel sqlite
  need "libcurl's headers (the media cache's HTTP)" "have_file '/usr/include/*/curl/curl.h' /usr/include/curl/curl.h" libcurl4-openssl-dev libcurl-devel curl
  need "OpenSSL's headers (rooms' TLS)" "have_file /usr/include/openssl/ssl.h" libssl-dev openssl-devel openssl
  need "python3" "have_command python3" python3 python3 python
  need "sd-bus's headers (MPRIS)" "have_file /usr/include/systemd/sd-bus.h" libsystemd-dev systemd-devel systemd-libs
  need "FFmpeg's headers (comparisons: PlayerKitAnalysis)" "have_file '/usr/include/*/libavformat/avformat.h' /usr/include/libavformat/avformat.h && have_file '/usr/include/*/libswscale/swscale.h' /usr/include/libswscale/swscale.h && have_file '/usr/include/*/libswresample/swresample.h' /usr/include/libswresample/swresample.h" \
    "libavformat-dev libavcodec-dev libswscale-dev libswresample-dev" "ffmpeg-free-devel" ffmpeg
fi

if wants test; then
  need "Xvfb" "have_command Xvfb" xvfb xorg-x11-server-Xvfb xorg-server-xvfb
  need "xwininfo" "have_command xwininfo" x11-utils xwininfo xorg-xwininfo
  need "xwd" "have_command xwd" x11-apps xwd xorg-xwd
  need "xdotool (real clicks in the GTK example's tests)" "have_command xdotool" xdotool xdotool xdotool
  need "gdb (the threads' stacks of a test pass that hangs)" "have_command gdb" gdb gdb gdb
  need "SDL2's headers" "have_file /usr/include/SDL2/SDL.h" libsdl2-dev SDL2-devel sdl2
  need "EGL's headers" "have_file /usr/include/EGL/egl.h" libegl-dev mesa-libEGL-devel mesa
  need "OpenGL's headers" "have_file /usr/include/GL/glext.h" libgl-dev mesa-libGL-devel mesa
  need "libOpenGL" "have_file '$lib/libOpenGL.so' '/usr/lib/libOpenGL.so' '/usr/lib64/libOpenGL.so'" libopengl-dev libglvnd-devel libglvnd
  need "Mesa's software rasterizer" "have_file '$lib/dri/swrast_dri.so' '/usr/lib/dri/swrast_dri.so' '/usr/lib64/dri/swrast_dri.so' '$lib/dri/llvmpipe_dri.so'" libgl1-mesa-dri mesa-dri-drivers mesa
  need "Mesa's EGL" "have_file '$lib/libEGL_mesa.so.0' '/usr/lib/libEGL_mesa.so.0' '/usr/lib64/libEGL_mesa.so.0'" libegl-mesa0 mesa-libEGL mesa
  need "Mesa's GLX" "have_file '$lib/libGLX_mesa.so.0' '/usr/lib/libGLX_mesa.so.0' '/usr/lib64/libGLX_mesa.so.0'" libglx-mesa0 mesa-libGL mesa
  need "pkg-config" "have_command pkg-config" pkg-config pkgconf pkgconf
  need "weston (a headless Wayland compositor for the GTK example's Wayland test)" "have_command weston && have_command weston-screenshooter" weston weston weston
  need "ffmpeg and ffprobe (reading screenshots and posters in tests)" "have_command ffmpeg && have_command ffprobe" ffmpeg ffmpeg ffmpeg
  need "GTK 4's headers (the playerkit-compare example)" "have_file /usr/include/gtk-4.0/gtk/gtk.h" libgtk-4-dev gtk4-devel gtk4
  need "sd-bus's headers (MPRIS)" "have_file /usr/include/systemd/sd-bus.h" libsystemd-dev systemd-devel systemd-libs
  need "dbus-daemon (the MPRIS tests' private session bus)" "have_command dbus-daemon" dbus-daemon dbus-daemon dbus
  need "dbus-send (an MPRIS test client)" "have_command dbus-send" dbus-bin dbus-tools dbus
  need "gdbus (an MPRIS test client)" "have_command gdbus" libglib2.0-bin glib2 glib2
  need "curl (a metrics scrape of the metrics example)" "have_command curl" curl curl curl
  need "playerctl (the desktop's MPRIS client)" "have_command playerctl && have_command playerctld" playerctl playerctl playerctl
  need "pactl" "have_command pactl" pulseaudio-utils pulseaudio-utils libpulse
  if ! have_command pulseaudio; then
    if have_command pipewire-pulse; then
      # A PipeWire desktop has a sound server already; the tests start a private PulseAudio
      # daemon of their own (null sinks, no hardware), and installing PulseAudio beside
      # pipewire-pulse may replace the desktop's. Not done behind the user's back.
      echo "install-deps: this machine's sound server is PipeWire (pipewire-pulse). The audio-device tests start a private PulseAudio daemon with null sinks, which needs the 'pulseaudio' program; your package manager may replace pipewire-pulse with it, so install it yourself if you accept that, or run the tests on another machine." >&2
      missing_what+=("the pulseaudio daemon (for the tests' private sound server)")
    else
      need "the pulseaudio daemon (for the tests' private sound server)" "false" pulseaudio pulseaudio pulseaudio
    fi
  fi
  need "syncplay-server" "have_command syncplay-server" syncplay-server syncplay syncplay
  need "Syncplay's client" "have_command syncplay" syncplay syncplay syncplay
  need "mpv (the player Syncplay's client drives)" "have_command mpv" mpv mpv mpv
fi
if wants bench; then
  need "a C compiler" "have_command cc" gcc gcc gcc
  need "ffmpeg" "have_command ffmpeg" ffmpeg ffmpeg ffmpeg
  need "python3's venv" "python3 -c 'import venv, ensurepip' 2>/dev/null" python3-venv python3 python
  need "libmpv's shared library" "have_file '$lib/libmpv.so.2' /usr/lib/libmpv.so.2 /usr/lib64/libmpv.so.2" libmpv2 mpv-libs mpv
  need "mpv's MPRIS plugin (make bench-mpris)" "have_file /usr/lib/mpv-mpris/mpris.so" mpv-mpris mpv-mpris mpv-mpris
  need "mpv (make bench-mpris)" "have_command mpv" mpv mpv mpv
  need "espeak-ng (make bench-compare's speech)" "have_command espeak-ng" espeak-ng espeak-ng espeak-ng
  need "sox (make bench-compare's rooms and devices)" "have_command sox && have_command soxi" sox sox sox
  need "numpy (make bench-compare's music, and the usual way to align)" "python3 -c 'import numpy' 2>/dev/null" python3-numpy python3-numpy python-numpy
  need "stress-ng (make bench-health starves a player's core)" "have_command stress-ng" stress-ng stress-ng stress-ng
fi
if wants peers; then
  need "pkg-config" "have_command pkg-config" pkg-config pkgconf pkgconf
  need "GStreamer's headers" "have_file /usr/include/gstreamer-1.0/gst/gst.h" libgstreamer1.0-dev gstreamer1-devel gstreamer
  need "GStreamer's playbin (base plugins)" "have_file '$lib/gstreamer-1.0/libgstplayback.so' /usr/lib64/gstreamer-1.0/libgstplayback.so /usr/lib/gstreamer-1.0/libgstplayback.so" \
    "gstreamer1.0-plugins-base libgstreamer-plugins-base1.0-dev" gstreamer1-plugins-base gst-plugins-base
  need "GStreamer's MP4 demuxer (good plugins)" "have_file '$lib/gstreamer-1.0/libgstisomp4.so' /usr/lib64/gstreamer-1.0/libgstisomp4.so /usr/lib/gstreamer-1.0/libgstisomp4.so" \
    gstreamer1.0-plugins-good gstreamer1-plugins-good gst-plugins-good
  need "GStreamer's FFmpeg decoders (libav plugin)" "have_file '$lib/gstreamer-1.0/libgstlibav.so' /usr/lib64/gstreamer-1.0/libgstlibav.so /usr/lib/gstreamer-1.0/libgstlibav.so" \
    gstreamer1.0-libav gstreamer1-plugin-libav gst-libav
  need "libVLC's headers" "have_file /usr/include/vlc/vlc.h" libvlc-dev vlc-devel vlc
  need "libVLC's base plugins" "have_file '$lib/vlc/plugins/codec/libavcodec_plugin.so' /usr/lib64/vlc/plugins/codec/libavcodec_plugin.so /usr/lib/vlc/plugins/codec/libavcodec_plugin.so" \
    vlc-plugin-base vlc-plugins-base vlc
fi
if wants loaded; then
  need "stress-ng" "have_command stress-ng" stress-ng stress-ng stress-ng
fi

if ! have_command swift && [ ! -x /opt/swift/usr/bin/swift ]; then
  echo "install-deps: Swift 6.3 or newer is not on PATH or at /opt/swift (https://www.swift.org/install/linux/)" >&2
  exit 1
fi

[ ${#missing_what[@]} -eq 0 ] && exit 0
if [ -n "${PLAYERKIT_DEPS_RECHECK:-}" ]; then
  echo "install-deps: still missing after installing:" >&2
  for what in "${missing_what[@]}"; do echo "install-deps:   $what" >&2; done
  exit 1
fi

# Deduplicated, in order.
packages=()
for package in "${missing_packages[@]}"; do
  [[ " ${packages[*]} " == *" $package "* ]] || packages+=("$package")
done
echo "install-deps: missing for ${targets[*]}:" >&2
for what in "${missing_what[@]}"; do echo "install-deps:   $what" >&2; done
case "$manager" in
  apt) command=(apt-get install -y -q --no-install-recommends "${packages[@]}") ;;
  dnf) command=(dnf install -y "${packages[@]}") ;;
  pacman) command=(pacman -S --needed --noconfirm "${packages[@]}") ;;
  none)
    echo "install-deps: no apt-get, dnf or pacman here: install the above with your package manager, then run this again." >&2
    exit 1 ;;
esac
if [ ${#packages[@]} -eq 0 ]; then exit 1; fi
echo "install-deps: installing with $manager: ${packages[*]}" >&2

as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"; elif have_command sudo; then sudo "$@"; else
    echo "install-deps: need root (or sudo) to run: $*" >&2; exit 1; fi
}
if [ "$manager" = apt ]; then
  export DEBIAN_FRONTEND=noninteractive
  as_root apt-get update -qq
  count=$(apt-get install -s --no-install-recommends "${packages[@]}" 2>/dev/null | grep -c '^Inst ' || true)
  echo "install-deps: $count Debian packages in all (with their dependencies)" >&2
  as_root "${command[@]}" -o Dpkg::Progress-Fancy=0 2>&1 | sed -n 's/^Setting up \([^ ]*\).*/install-deps:   \1/p' >&2
else
  as_root "${command[@]}" >&2
fi
# What was asked for must now be there (a partial install is not success).
PLAYERKIT_DEPS_RECHECK=1 exec "$0" "${targets[@]}"
