#!/usr/bin/env bash
# make fuzz: builds the fuzz package (Fuzz/, release, AddressSanitizer, libFuzzer's coverage,
# testable imports) and runs each target for FUZZ_SECONDS (default 300) on a working copy of its
# corpus, with libFuzzer's bounds on each input: -timeout=1 (a second), -rss_limit_mb=512,
# -malloc_limit_mb=512. Reports per target: executions, coverage (edges, features), corpus size
# and findings; a finding (crash-, timeout-, oom-, leak- file) is kept in
# Fuzz/Findings/<target>/ and makes the run fail. Fix the bug, then move the input to
# Fuzz/Corpus/<target>/ as regression-<what> so make test replays it.
#   FUZZ_SECONDS=900 FUZZ_TARGETS="hls-playlist cache-http" Scripts/fuzz.sh
#   FUZZ_JOBS=2: two targets at once (default 1).
set -uo pipefail
cd "$(dirname "$0")/.."
swift=${SWIFT:-swift}
seconds=${FUZZ_SECONDS:-300}
jobs=${FUZZ_JOBS:-1}
all="hls-playlist segment-timestamps cache-http mp4-header syncplay-wire mpris-request"
targets=${FUZZ_TARGETS:-$all}
work=${FUZZ_WORK:-Fuzz/.build/work}

# libFuzzer without its main (SwiftPM links an executable's main itself; the targets call
# LLVMFuzzerRunDriver), from the toolchain's own clang resources.
resource=$("$swift" -print-target-info 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["paths"]["runtimeResourcePath"])')
fuzzer_lib=$(ls "$resource"/../clang/*/lib/linux/libclang_rt.fuzzer_no_main-x86_64.a "$resource"/clang/lib/linux/libclang_rt.fuzzer_no_main-x86_64.a 2>/dev/null | head -1)
[ -n "$fuzzer_lib" ] || { echo "fuzz: no libclang_rt.fuzzer_no_main in the toolchain ($resource)" >&2; exit 1; }

echo "== building the fuzz targets (Fuzz/, release, AddressSanitizer + libFuzzer coverage)"
# The project's warnings-as-errors gate is make test's; the sanitizer build is not a gate of it.
if ! (cd Fuzz && PLAYERKIT_WARNINGS_AS_ERRORS= "$swift" build -c release \
      -Xswiftc -sanitize=address -Xswiftc -sanitize-coverage=edge,trace-cmp,inline-8bit-counters,pc-table \
      -Xswiftc -parse-as-library -Xswiftc -enable-testing \
      -Xlinker --whole-archive -Xlinker "$fuzzer_lib" -Xlinker --no-whole-archive -Xlinker -lstdc++ 2>&1 \
      | grep -v "Cannot export local symbol"); then
  echo "fuzz: the build failed (above)" >&2
  exit 1
fi
bin=$(cd Fuzz && "$swift" build -c release --show-bin-path)

binary_of() {
  case $1 in
    hls-playlist) echo FuzzHLSPlaylist ;; segment-timestamps) echo FuzzSegmentTimestamps ;; cache-http) echo FuzzCacheHTTP ;;
    mp4-header) echo FuzzMP4Header ;; syncplay-wire) echo FuzzSyncplayWire ;; mpris-request) echo FuzzMPRISRequest ;;
    *) echo "fuzz: no target $1 (targets: $all)" >&2; return 1 ;;
  esac
}

run_one() {
  local target=$1 binary
  binary=$(binary_of "$target") || return 1
  local corpus="$work/$target" findings="Fuzz/Findings/$target" log="$work/$target.log"
  mkdir -p "$corpus" "$findings"
  local started=$SECONDS
  local dict=()
  [ -f "Fuzz/Dictionaries/$target.dict" ] && dict=(-dict="Fuzz/Dictionaries/$target.dict")
  # Swift's own crash backtracer is off: AddressSanitizer and libFuzzer report the crash.
  # AddressSanitizer's quarantine of freed memory is 64 MB, not its 256: with 256 it alone grew
  # a target's resident memory past the 512 MB bound over 2 million inputs (it levels off at
  # 176 MB with 16), which says nothing about the parser.
  SWIFT_BACKTRACE=enable=no ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1:quarantine_size_mb=64 "$bin/$binary" "$corpus" "Fuzz/Corpus/$target" \
    -max_total_time="$seconds" -timeout=1 -rss_limit_mb=512 -malloc_limit_mb=512 -max_len=262144 \
    -print_final_stats=1 -artifact_prefix="$findings/" "${dict[@]}" > "$log" 2>&1
  local status=$?
  local runs cov ft corpus_size found slowest peak
  runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1)
  slowest=$(grep -o 'stat::slowest_unit_time_sec: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1)
  peak=$(grep -o 'stat::peak_rss_mb: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1)
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | grep -o '[0-9]*')
  ft=$(grep -o 'ft: [0-9]*' "$log" | tail -1 | grep -o '[0-9]*')
  corpus_size=$(find "$corpus" -type f | wc -l)
  found=$(find "$findings" -type f | wc -l)
  echo "$target: ${runs:-0} executions in $((SECONDS - started)) s, coverage ${cov:-?} edges / ${ft:-?} features, working corpus ${corpus_size}, slowest input ${slowest:-?} s, peak RSS ${peak:-?} MB, findings ${found}, exit $status"
  if [ "$status" -ne 0 ] || [ "$found" -gt 0 ]; then
    grep -E "ERROR|Fatal error|SUMMARY|deadly|timeout|out-of-memory" "$log" | head -5 | sed 's/^/  /'
    echo "  log: $log; findings: $findings"
    return 1
  fi
}

echo "== fuzzing: ${seconds} s per target, $jobs at a time ($(nproc) cores, $(uname -m)); working corpora in $work"
failed=0
running=0
pids=()
for target in $targets; do
  run_one "$target" &
  pids+=($!)
  running=$((running + 1))
  if [ "$running" -ge "$jobs" ]; then
    wait -n || failed=$((failed + 1))
    running=$((running - 1))
  fi
done
while [ "$running" -gt 0 ]; do
  wait -n || failed=$((failed + 1))
  running=$((running - 1))
done
echo "== fuzz: $failed target(s) with findings"
[ "$failed" -eq 0 ]
