#!/bin/sh
# Builds and runs Examples/Consumer as an app's package would use PlayerKit: from a directory
# next to a checkout named PlayerKit (a symlink to this one), with exactly the manifest and code
# README.md shows (check-snippets.py checks README shows them as they are). Fails when the
# consumer does not build, or when its two players do not play.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
swift=${SWIFT:-swift}

# 1. README shows the files verbatim: Scripts/check-snippets.py (run by make test before the
#    build) checks every marked block of README.md, these two files' included.
# 2. Build it next to "PlayerKit" (outside the checkout: a link to the checkout inside it would
#    be a loop for tools that walk the tree). One directory per checkout, kept between runs.
work="${TMPDIR:-/tmp}/playerkit-consumer-$(printf '%s' "$root" | cksum | cut -d' ' -f1)"
mkdir -p "$work/Consumer"
ln -sfn "$root" "$work/PlayerKit"
rm -rf "$work/Consumer/Sources"
cp -R "$root/Examples/Consumer/Package.swift" "$root/Examples/Consumer/Sources" "$work/Consumer/"
binary="$work/Consumer/.build/debug/Consumer"
rm -f "$binary"
echo "check-consumer: building the consumer package in $work/Consumer (PlayerKit and its dependencies, from source)"
# As an app builds it: without the project's warnings-as-errors (Makefile's export). No index store
# (it changes nothing the compiler checks, and writing it costs a fifth of a clean build).
(cd "$work/Consumer" && env -u PLAYERKIT_WARNINGS_AS_ERRORS "$swift" build --disable-index-store 2>&1) | grep -v "^\[[0-9]*/[0-9]*\] \(Compiling\|Emitting\|Write\|Linking\)" || true

[ -x "$binary" ] || { echo "check-consumer: the consumer did not build" >&2; exit 1; }

# 3. Run it from the checkout (its snippet plays Media/clip-a.mp4) and check what it printed.
output=$(cd "$root" && timeout 120 "$binary")
echo "$output" | sed 's/^/consumer: /'
for expected in "main: loading -> playing" "the stream saw main end: itemEnded(finished)"; do
    case "$output" in
        *"$expected"*) ;;
        *) echo "check-consumer: the consumer's output lacks \"$expected\"" >&2; exit 1 ;;
    esac
done
echo "check-consumer: the README's consumer builds and plays"
