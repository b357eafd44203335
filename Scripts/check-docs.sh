#!/usr/bin/env bash
# Builds the DocC documentation of every library module (one combined archive, each module
# linking to the ones it depends on) and fails on any DocC warning: an unresolved symbol link, an
# undocumented parameter, an ambiguous reference. Run by `make test`; `make docs` runs it alone.
#
# Output: .build/plugins/Swift-DocC/outputs/PlayerKit.doccarchive, the combined archive (serve it
# with any static web server, or `swift package --disable-sandbox preview-documentation --target M`).
set -euo pipefail
cd "$(dirname "$0")/.."
SWIFT=${SWIFT:-swift}
modules=(PlayerKitCore PlayerKitSupport PlayerKitDisplay PlayerKitResources PlayerKitSync PlayerKitSequencer PlayerKitCache PlayerKitFeed PlayerKitRooms PlayerKitTesting)
targets=()
for module in "${modules[@]}"; do targets+=(--target "$module"); done
log=$(mktemp)
trap 'rm -f "$log"' EXIT
echo "docs: building the documentation of ${#modules[@]} modules"
if ! "$SWIFT" package generate-documentation --enable-experimental-combined-documentation "${targets[@]}" \
    --warnings-as-errors >"$log" 2>&1; then
  cat "$log" >&2
  echo "docs: generation failed (above)" >&2
  exit 1
fi
# DocC's own warnings (SwiftPM's warnings about dependencies' manifests are not ours).
if grep -E "^(warning|error):" "$log" | grep -v "found 1 file(s) which are unhandled" >&2; then
  echo "docs: DocC reported the problems above" >&2
  exit 1
fi
echo "docs: ok, no warnings (.build/plugins/Swift-DocC/outputs/PlayerKit.doccarchive)"
