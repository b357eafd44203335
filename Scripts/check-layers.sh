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

# Package access only in PlayerKitSupport: its helpers (locks, weak references, a gate, statistics)
# are shared by PlayerKit's modules without being public API, the one place `package` is allowed.
# Anything else another module needs is public API. Examples use public API only, so they never
# import PlayerKitSupport.
if grep -rnE --include='*.swift' '^\s*(@[A-Za-z]+ )*package (func|var|let|init|final|struct|class|enum|static|subscript|protocol|typealias|import)' Sources Examples Benchmarks Tests | grep -v '^Sources/PlayerKitSupport/'; then
  fail "package access (above) outside Sources/PlayerKitSupport: make it public API or keep it internal"
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

# mpv's names for the player's operations are spelled only in the engine.
if grep -rnE --include='*.swift' '"(loop-file|play-dir|hwdec|fullscreen|mute|loadfile|playlist-(next|prev|clear)|screenshot-to-file|time-pos|track-list|audio-device(-list)?|sub-add|demuxer-seekable-cache|volume-max|demux-[wh])"' \
    Sources --exclude-dir=Engine | grep -vE '^[^:]+:[0-9]+:\s*//'; then
  fail "mpv property or command names outside Sources/PlayerKitCore/Engine (above)"
fi

if [ "$problems" -gt 0 ]; then
  echo "layering: $problems problem(s)" >&2
  exit 1
fi
echo "layering: ok (CMPV only in the engine; package access only in PlayerKitSupport; no @testable access; features on the core's public API)"
