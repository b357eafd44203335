#!/usr/bin/env bash
# The rules the compiler enforces on apps, checked against the build's modules: each file in
# Scripts/compile-rules/ is typechecked as app code (Swift 6 language mode) and must fail with the
# text of its `// expect-error:` line, or compile when it says `// expect-ok` (and then print the
# text of each of its `// expect-warning:` lines: 1.0's deprecated names still compile, warned).
#   SWIFT=swift Scripts/check-compile-rules.sh      (after swift build)
set -uo pipefail
cd "$(dirname "$0")/.."
swift=${SWIFT:-swift}
modules="$("$swift" build --show-bin-path)/Modules"
swiftc="$(dirname "$(command -v "$swift")")/swiftc"
maps=()
for map in Sources/C*/module.modulemap Sources/C*/include/module.modulemap; do maps+=(-Xcc "-fmodule-map-file=$map"); done
failed=0
for file in Scripts/compile-rules/*.swift; do
  output=$("$swiftc" -typecheck -swift-version 6 -I "$modules" "${maps[@]}" "$file" 2>&1)
  status=$?
  expected=$(sed -n 's#^// expect-error: ##p' "$file" | head -1)
  if [ -n "$expected" ]; then
    if [ $status -eq 0 ] || ! grep -qF -- "$expected" <<<"$output"; then
      echo "check-compile-rules: $file compiled, or failed without \"$expected\":" >&2
      echo "$output" >&2
      failed=1
    fi
  elif [ $status -ne 0 ]; then
    echo "check-compile-rules: $file should compile:" >&2
    echo "$output" >&2
    failed=1
  else
    while IFS= read -r warning; do
      if ! grep -qF -- "$warning" <<<"$output"; then
        echo "check-compile-rules: $file compiled without the warning \"$warning\":" >&2
        echo "$output" >&2
        failed=1
      fi
    done < <(sed -n 's#^// expect-warning: ##p' "$file")
  fi
done
[ $failed -eq 0 ] && echo "check-compile-rules: $(ls Scripts/compile-rules/*.swift | wc -l) rules hold"
exit $failed
