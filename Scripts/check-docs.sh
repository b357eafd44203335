#!/usr/bin/env bash
# Builds the DocC documentation of every library module (one combined archive, each module
# linking to the ones it depends on) and fails on any DocC warning: an unresolved symbol link, an
# undocumented parameter, an ambiguous reference. Run by `make test` after its build; `make docs`
# builds and runs it alone.
#
# It does what `swift package generate-documentation --enable-experimental-combined-documentation
# --warnings-as-errors` (swift-docc-plugin) does, with the same options, but from the modules the
# debug build already made: swift-symbolgraph-extract on .build/debug/Modules (public symbols,
# inherited docs, synthesized members, extension blocks, no SPI: the plugin's options), then
# `docc convert` per module with its catalog and the archives of the modules it depends on, then
# `docc merge`. The plugin asks SwiftPM for every module's symbols, and each ask is a build of its
# own: 80-90 s on 2 cores where this takes about 20.
#
# Output: .build/docs/PlayerKit.doccarchive, the combined archive (serve it with any static web
# server).
set -euo pipefail
cd "$(dirname "$0")/.."
SWIFT=${SWIFT:-swift}
modules=(PlayerKitCore PlayerKitDisplay PlayerKitResources PlayerKitSync PlayerKitSequencer PlayerKitPosters PlayerKitCache PlayerKitFeed PlayerKitRooms PlayerKitHLS PlayerKitMPRIS PlayerKitTesting PlayerKitAnalysis PlayerKitMetrics)
bin=$("$SWIFT" build --show-bin-path)
toolchain_bin=$(dirname "$(command -v "$SWIFT")")
extract="$toolchain_bin/swift-symbolgraph-extract"
docc="$toolchain_bin/docc"
for tool in "$extract" "$docc"; do
  [ -x "$tool" ] || { echo "docs: $tool is missing (a Swift toolchain ships it)" >&2; exit 1; }
done
for module in "${modules[@]}"; do
  [ -f "$bin/Modules/$module.swiftmodule" ] || { echo "docs: $bin/Modules/$module.swiftmodule is missing: build first (swift build)" >&2; exit 1; }
done

out=.build/docs
rm -rf "$out"
mkdir -p "$out/symbols" "$out/archives"
log=$(mktemp)
trap 'rm -f "$log"' EXIT

# Each module's direct dependencies among the documented modules, from the manifest (the plugin
# links a module's archive to these).
declare -A depends_on
while read -r module deps; do depends_on[$module]=$deps; done < <(
  "$SWIFT" package dump-package 2>/dev/null | python3 -c '
import json, sys
documented = set(sys.argv[1:])
for target in json.load(sys.stdin)["targets"]:
    if target["name"] in documented:
        deps = [list(d.values())[0][0] for d in target["dependencies"]]
        print(target["name"], " ".join(d for d in deps if d in documented))
' "${modules[@]}")

# The C modules the Swift modules import: our system libraries, the dependencies' C targets with
# maps of their own, and the maps SwiftPM generated for the others.
clang_maps=()
for map in Sources/*/module.modulemap Sources/*/include/module.modulemap .build/checkouts/*/Sources/*/include/module.modulemap "$bin"/*.build/module.modulemap; do
  [ -f "$map" ] && clang_maps+=(-Xcc "-fmodule-map-file=$map")
done
triple=$("$SWIFT" -print-target-info 2>/dev/null | python3 -c 'import json, sys; print(json.load(sys.stdin)["target"]["triple"])')

# The catalogs, with the guides' links made DocC links. A guide is written for the forge, where
# `[Frames](Frames.md)` links the file next to it; in the archive it is an article, linked as
# `<doc:Frames>` in its own module and by its path in the combined archive
# (`/documentation/playerkitcache/caching`) from another.
catalogs="$out/catalogs"
mkdir -p "$catalogs"
for module in "${modules[@]}"; do cp -RL "Sources/$module/$module.docc" "$catalogs/"; done
python3 - "$catalogs" "${modules[@]}" <<'PYTHON'
import os, re, sys
catalogs, modules = sys.argv[1], sys.argv[2:]
# Documentation/X.md -> (module, article) for every guide a catalog links to.
articles = {}
for module in modules:
    folder = os.path.join("Sources", module, module + ".docc")
    for name in os.listdir(folder):
        path = os.path.join(folder, name)
        if name.endswith(".md") and os.path.islink(path):
            articles[os.path.basename(os.readlink(path))] = (module, name[:-3])
link = re.compile(r"\]\(([A-Za-z]+\.md)(#[a-z0-9-]+)?\)")
for module in modules:
    folder = os.path.join(catalogs, module + ".docc")
    for name in os.listdir(folder):
        if not name.endswith(".md"):
            continue
        path = os.path.join(folder, name)
        text = open(path).read()
        def rewrite(match):
            target = articles.get(match.group(1))
            if target is None:
                return match.group(0)
            if target[0] == module:
                # The article, without the forge's section anchor: DocC names a section by its
                # heading as written ("Latest-run"), the forge by its lowercase slug
                # ("latest-run"), and a DocC link to a section it cannot find is an error.
                return "](<doc:%s>)" % target[1]
            # Another module's article: a module links only the archives it depends on, so this is
            # the article's path in the combined archive.
            return "](/documentation/%s/%s)" % (target[0].lower(), target[1].lower())
        open(path, "w").write(link.sub(rewrite, text))
PYTHON

echo "docs: building the documentation of ${#modules[@]} modules"
archives=()
for module in "${modules[@]}"; do
  symbols="$out/symbols/$module"
  mkdir -p "$symbols"
  if ! "$extract" -module-name "$module" -target "$triple" -I "$bin/Modules" "${clang_maps[@]}" \
      -minimum-access-level public -emit-extension-block-symbols -output-dir "$symbols" >"$log" 2>&1; then
    cat "$log" >&2
    echo "docs: extracting the symbols of $module failed (above)" >&2
    exit 1
  fi
  dependencies=()
  for dependency in ${depends_on[$module]:-}; do
    dependencies+=(--dependency "$out/archives/$dependency.doccarchive")
  done
  archive="$out/archives/$module.doccarchive"
  if ! "$docc" convert "$catalogs/$module.docc" --warnings-as-errors --emit-lmdb-index \
      --fallback-display-name "$module" --fallback-bundle-identifier "$module" \
      --additional-symbol-graph-dir "$symbols" --output-path "$archive" \
      --enable-experimental-external-link-support "${dependencies[@]}" >"$log" 2>&1 \
      || grep -E "^(warning|error):" "$log" >/dev/null; then
    cat "$log" >&2
    echo "docs: DocC reported the problems above in $module" >&2
    exit 1
  fi
  archives+=("$archive")
done
if ! "$docc" merge "${archives[@]}" --output-path "$out/PlayerKit.doccarchive" \
    --synthesized-landing-page-name PlayerKit --synthesized-landing-page-kind Package >"$log" 2>&1; then
  cat "$log" >&2
  echo "docs: merging the archives failed (above)" >&2
  exit 1
fi
echo "docs: ok, no warnings ($out/PlayerKit.doccarchive)"
