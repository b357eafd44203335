#!/bin/sh
# Builds and runs Examples/Consumer as an app's package would use PlayerKit: from a directory
# next to a checkout named PlayerKit (a symlink to this one), with exactly the manifest and code
# README.md shows. Fails when README's snippets differ from those files, when the consumer does
# not build, or when its two players do not play.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
swift=${SWIFT:-swift}

# 1. README shows the files verbatim: each "<!-- snippet: PATH -->" is followed by a code block
#    that must equal PATH.
for path in $(sed -n 's/^<!-- snippet: \(.*\) -->$/\1/p' "$root/README.md"); do
    awk -v marker="<!-- snippet: $path -->" '
        $0 == marker { found = 1; next }
        found == 1 && /^```/ { found = 2; next }
        found == 2 && /^```$/ { exit }
        found == 2 { print }
    ' "$root/README.md" > "${TMPDIR:-/tmp}/playerkit-snippet.$$"
    if ! cmp -s "${TMPDIR:-/tmp}/playerkit-snippet.$$" "$root/$path"; then
        echo "check-consumer: README.md's snippet of $path differs from the file:" >&2
        diff "${TMPDIR:-/tmp}/playerkit-snippet.$$" "$root/$path" >&2 || true
        rm -f "${TMPDIR:-/tmp}/playerkit-snippet.$$"
        exit 1
    fi
    echo "check-consumer: README.md shows $path as it is"
done
rm -f "${TMPDIR:-/tmp}/playerkit-snippet.$$"

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
# As an app builds it: without the project's warnings-as-errors (Makefile's export).
(cd "$work/Consumer" && env -u PLAYERKIT_WARNINGS_AS_ERRORS "$swift" build 2>&1) | grep -v "^\[[0-9]*/[0-9]*\] \(Compiling\|Emitting\|Write\|Linking\)" || true

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
