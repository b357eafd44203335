#!/usr/bin/env bash
# `make test`, after its installs: the layering check, the docs' facts and figures
# (Scripts/check-doc-facts.py, Scripts/check-figures.py), the build (warnings are errors; a module
# may import only what it depends on), then the test bundle in its passes (Scripts/test-suite.sh).
#
# The two checks that build or read what apps see run where they cost the least wall time, at
# the lowest priority (nice 19), never next to the timing-sensitive pass:
# - README's consumer check (Scripts/check-consumer.sh: README's manifest lines and "Using it"
#   snippet, built in a folder of their own as an app's package and run) and the docs check
#   (Scripts/check-docs.sh: the DocC catalogs and every public symbol's documentation, no DocC
#   warning; it needs the build's modules) run next to the parallel test pass. The consumer
#   check used to start next to the build, on the CPU the build seemed to leave: it is 54 s of
#   CPU, and the build took 238 s beside it and the media against 175 s alone (2026-11-27).
# - the API baseline check (Scripts/check-api.py: no public symbol of
#   Documentation/API/baseline.txt removed or changed incompatibly, unless CHANGELOG's major
#   version moved past the baseline's; then its self-test, which shows the check fails on a
#   removed symbol, a removed conformance and a new protocol requirement) runs on the symbol
#   graphs the docs check extracted, right after it.
# - the multi-view tests' live media (Scripts/prepare-live-media.sh: ffmpeg, a few seconds of
#   CPU) is encoded next to the build too.
# Any of them failing counts as one failure in the suite's last line.
#   SWIFT=swift Scripts/make-test.sh
set -uo pipefail
cd "$(dirname "$0")/.."
export SWIFT=${SWIFT:-swift}

Scripts/check-layers.sh || exit 1
Scripts/count-public.sh || exit 1
python3 Scripts/check-snippets.py || exit 1
python3 Scripts/check-doc-facts.py || exit 1
# The docs' figures are the measurements' (issue 67): generated tables as their records make
# them, prose figures as their tables say; the self-test first, which shows the check fails on a
# disagreeing figure.
python3 Scripts/check-figures.py --self-test || exit 1
python3 Scripts/check-figures.py || exit 1

consumer=$(mktemp -d "${TMPDIR:-/tmp}/playerkit-consumer-check.XXXXXX")
consumer_pid=
# Whatever ends make test ends the consumer check too, should it still run (a failed build).
kill_tree() {
  local child
  for child in $(pgrep -P "$1"); do kill_tree "$child"; done
  kill "$1" 2>/dev/null
}
media_pid=
trap '[ -z "$consumer_pid" ] || kill_tree "$consumer_pid"; [ -z "$media_pid" ] || kill_tree "$media_pid"; rm -rf "$consumer"' EXIT

# The multi-view tests' live media, encoded next to the build at the lowest priority.
media_log=$(mktemp "${TMPDIR:-/tmp}/playerkit-live-media.XXXXXX")
nice -n 19 Scripts/prepare-live-media.sh >"$media_log" 2>&1 &
media_pid=$!

# No index store: only XCTest's test discovery on Linux reads it, and every test here is a Swift
# Testing test, run through the package's own entry point (Tests/LinuxMain.swift). Writing the
# store cost about 46 s of a 221 s clean build on 2 cores.
if ! "$SWIFT" build --build-tests --explicit-target-dependency-import-check error --disable-index-store; then
  echo "make test: the build failed (above)" >&2
  exit 1
fi

# The rules the compiler enforces on apps (async code cannot create a player with the blocking
# initializer): a few seconds of typechecking against the modules just built.
Scripts/check-compile-rules.sh || exit 1

# Should it still run, the tests wait for it rather than encode beside it.
if ! wait "$media_pid"; then
  echo "make test: encoding the live origin's media failed (the tests that need it will say so):" >&2
  cat "$media_log" >&2
fi
rm -f "$media_log"

(
  nice -n 19 Scripts/check-consumer.sh >"$consumer/log" 2>&1
  echo $? >"$consumer/status"
) &
consumer_pid=$!

ALONGSIDE="nice -n 19 Scripts/check-docs.sh; docs=\$?; [ \$docs -eq 0 ] && python3 Scripts/check-api.py && python3 Scripts/check-api.py --self-test; api=\$?; Scripts/await-result.sh '$consumer' 'README consumer check' 900; consumer=\$?; [ \$docs -eq 0 ] && [ \$api -eq 0 ] && [ \$consumer -eq 0 ]" \
  Scripts/test-suite.sh
