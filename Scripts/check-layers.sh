#!/usr/bin/env bash
# Checks the layering rules of Documentation/Architecture.md that the compiler does not check by
# itself (`make test` also builds with --explicit-target-dependency-import-check error, so a
# module importing a module it does not depend on fails the build). Run by `make test`.
set -euo pipefail
cd "$(dirname "$0")/.."
problems=0
fail() { echo "layering: $*" >&2; problems=$((problems + 1)); }

# Only the engine imports CMPV.
while IFS= read -r file; do
  case "$file" in Sources/PlayerKitCore/Engine/*) ;; *) fail "$file imports CMPV (only Sources/PlayerKitCore/Engine may)";; esac
done < <(grep -rlE --include='*.swift' '^\s*(public |internal |package |private |fileprivate )?import CMPV' Sources Examples Benchmarks Tests || true)

# Only the engine imports CFFmpegLog (FFmpeg's log callback, Engine/FFmpegLog.swift), and the
# analysis's thread runner, which claims the FFmpeg lines of its threads (AnalysisThread.swift):
# nobody else touches FFmpeg's one callback.
while IFS= read -r file; do
  case "$file" in Sources/PlayerKitCore/Engine/*|Sources/PlayerKitAnalysis/AnalysisThread.swift) ;; *) fail "$file imports CFFmpegLog (only Sources/PlayerKitCore/Engine and Sources/PlayerKitAnalysis/AnalysisThread.swift may)";; esac
done < <(grep -rlE --include='*.swift' '^\s*(public |internal |package |private |fileprivate )?import CFFmpegLog' Sources Examples Benchmarks Tests || true)

# Package access only in PlayerKitSupport: its helpers (locks, weak references, a gate, statistics)
# are shared by PlayerKit's modules without being public API. Anything else another module needs is
# public API, with one exception, the test kit's seam (2.0, issue 67): the core's event emitter and
# state machine, which PlayerKitTesting's fake keeps so that it orders events and derives states
# exactly as a real player does. They are `package` in the files listed here, and no module but the
# core and the test kit may use them. Examples use public API only, so they never import
# PlayerKitSupport.
seam='^Sources/PlayerKitCore/(Events/PlayerEventEmitter|Values/PlayerStateMachine)\.swift:'
if grep -rnE --include='*.swift' '^\s*(@[A-Za-z]+ )*package (func|var|let|init|final|struct|class|enum|static|subscript|protocol|typealias|import)' Sources Examples Benchmarks Tests | grep -v '^Sources/PlayerKitSupport/' | grep -vE "$seam"; then
  fail "package access (above) outside Sources/PlayerKitSupport and the test kit's seam: make it public API or keep it internal"
fi
if grep -rnE --include='*.swift' '\b(PlayerEventEmitter|PlayerStateMachine)\b' Sources Examples Benchmarks | grep -vE '^Sources/(PlayerKitCore|PlayerKitTesting)/'; then
  fail "the test kit's seam (above) used outside PlayerKitCore and PlayerKitTesting: it is not API"
fi
if grep -rnE --include='*.swift' '^\s*(@_exported )?import PlayerKitSupport' Examples; then
  fail "an example imports PlayerKitSupport (above): examples use public API only"
fi

# No @testable outside the core's own test target.
if grep -rnE --include='*.swift' '^\s*@testable import' Sources Examples Benchmarks Tests/CustomFeatureTests; then
  fail "@testable import (above) outside Tests/PlayerKitTests"
fi

# Support is a leaf; features import the core's public API (and Support), nothing else of PlayerKit
# but Feed, which builds on Resources (and precaches through the core's MediaPrecaching, not the
# cache module), and Rooms, which uses Sync's drift corrector.
check_imports() {
  local folder=$1 allowed=$2 line file module
  while IFS= read -r line; do
    file=${line%%:*}
    module=$(sed -E 's/.*import ([A-Za-z0-9_]+).*/\1/' <<<"$line")
    [[ " $allowed " == *" $module "* ]] || fail "$file imports $module (allowed: $allowed)"
  done < <(grep -rnE --include='*.swift' '^\s*(@_exported |public |internal )?import [A-Za-z]+' "$folder" || true)
}
system="Foundation Dispatch Glibc Synchronization DequeModule Logging"
check_imports Sources/PlayerKitSupport "Foundation Dispatch Glibc Darwin Synchronization"
for feature in Display Resources Sync Sequencer Posters; do
  check_imports "Sources/PlayerKit$feature" "$system PlayerKitCore PlayerKitSupport"
done
check_imports Sources/PlayerKitCache "$system PlayerKitCore PlayerKitSupport CSQLite CCurl"
check_imports Sources/PlayerKitRooms "$system PlayerKitCore PlayerKitSupport PlayerKitSync COpenSSL"
check_imports Sources/PlayerKitFeed "$system PlayerKitCore PlayerKitSupport PlayerKitResources"
check_imports Sources/PlayerKitHLS "$system PlayerKitCore PlayerKitSupport PlayerKitSync CCurl"
check_imports Sources/PlayerKitMPRIS "$system PlayerKitCore PlayerKitSupport CSDBus"
# Analysis measures files with FFmpeg's libraries, and puts a sync group's members where their
# recordings meet (through Sync's public API, as an app would).
check_imports Sources/PlayerKitAnalysis "$system PlayerKitCore PlayerKitSupport PlayerKitSync CFFmpeg CFFmpegLog"

# mpv's names for the player's operations are spelled only in the engine.
if grep -rnE --include='*.swift' '"(loop-file|play-dir|hwdec|fullscreen|mute|loadfile|playlist-(next|prev|clear)|screenshot-to-file|time-pos|track-list|audio-device(-list)?|sub-add|demuxer-seekable-cache|volume-max|demux-[wh])"' \
    Sources --exclude-dir=Engine | grep -vE '^[^:]+:[0-9]+:\s*//'; then
  fail "mpv property or command names outside Sources/PlayerKitCore/Engine (above)"
fi

# Features are written against the core's public API, as an app's own would be: no feature casts
# a player to the core's `Player` (it would behave differently on a FakePlayer), and none quotes
# any of mpv's names (every property, option and command of the installed libmpv, listed in
# Scripts/mpv-names.txt by Scripts/list-mpv-names.py): what a feature needs of mpv becomes typed
# core API. A few of mpv's names are also plain words that features use as keys of their own
# protocols, allowed here: Syncplay's JSON (name, version, duration), D-Bus type signatures and
# MPRIS (o, v, {, volume as an argument's name in errors), the cache's log metadata and event
# kind (cache, index), the operation a fake player names in the core's own error (seek).
if ! python3 - <<'PYTHON'
import pathlib, re, sys
root = pathlib.Path(".")
names = set((root / "Scripts/mpv-names.txt").read_text().split())
allowed = {"name", "version", "duration", "o", "v", "{", "volume", "cache", "index", "seek"}
cast = re.compile(r"\b(as[?!]?|is)\s+Player\b")
literal = re.compile(r'"((?:[^"\\]|\\.)*)"')
problems = 0
for path in sorted(root.glob("Sources/*/**/*.swift")):
    if path.parts[1] == "PlayerKitCore":
        continue
    for number, line in enumerate(path.read_text().splitlines(), 1):
        code = line.split("//")[0] if not line.lstrip().startswith("///") else ""
        if cast.search(code):
            print(f"{path}:{number}: casts to Player: {line.strip()}")
            problems += 1
        for match in literal.finditer(code):
            if match.group(1) in names and match.group(1) not in allowed:
                print(f'{path}:{number}: quotes mpv\'s "{match.group(1)}": {line.strip()}')
                problems += 1
sys.exit(1 if problems else 0)
PYTHON
then
  fail "a feature reaches past the core's public API (above): add what it needs to the core's typed API"
fi

if [ "$problems" -gt 0 ]; then
  echo "layering: $problems problem(s)" >&2
  exit 1
fi
echo "layering: ok (CMPV only in the engine; package access only in PlayerKitSupport and the test kit's seam; no @testable access; features on the core's public API: no cast to Player, no mpv name)"
