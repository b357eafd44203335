# PlayerKit: `make demo` runs the main example, `make test` runs the whole test suite.
# Each installs first what it needs and is missing, nothing more (Scripts/install-deps.sh): the
# demo only libmpv; the tests their tools.
export PATH := $(PATH):/opt/swift/usr/bin
SWIFT ?= swift
# The project's own builds treat warnings as errors (Package.swift reads this); an app that
# depends on PlayerKit never does.
export PLAYERKIT_WARNINGS_AS_ERRORS := 1

.PHONY: live-outage deps test-deps bench-deps build demo docs test test-long test-loaded test-tsan test-asan soak bench bench-quick bench-chart bench-rooms bench-mpris bench-health bench-compare media clean check-layers room-demo screenshots multiview-demo bench-multiview bench-peers fuzz fuzz-seeds docs-figures

deps:
	@Scripts/install-deps.sh demo

test-deps:
	@Scripts/install-deps.sh test

build: deps
	$(SWIFT) build

## Runs the playerkit-two-players example with the shipped media, headless, until both clips end.
demo: deps
	$(SWIFT) run playerkit-two-players

## Checks the layering, builds everything (warnings are errors; a module may import only what it
## depends on), then runs every test against the real libmpv.
test: test-deps
	# The layering check, the build, then the passes (everything that does not measure time, in
	# parallel; the heavy ones together; the live-origin tests judged by their events, together;
	# then the timing-sensitive tests one at a time, beside the waits on loopback servers one at
	# a time), ending with one line "N passed, M
	# failed". At the lowest priority: README's manifest lines and "Using it" snippet, built
	# (PlayerKitCore only, in a folder of its own) and run as a consumer package, next to the
	# build; the DocC catalogs and every public symbol's documentation (no DocC warning), next to
	# the parallel pass.
	SWIFT=$(SWIFT) Scripts/make-test.sh

## make test with the long measurement windows: drift over 20 s of play (make test: 6 s), a
## 60 s soak (make test: 20 s) and the cache model's 10,000 seeded runs (make test: 3,000).
test-long: test-deps
	PLAYERKIT_LONG_WINDOWS=1 $(MAKE) test

## make test with stress-ng loading every core (4 CPU workers on top of the 2 cores) for the whole
## run: a suite that passes only on an idle machine is broken.
test-loaded: test-deps
	@Scripts/install-deps.sh test loaded
	Scripts/with-load.sh $(MAKE) test

## Three playerkit-room processes in one room on the real syncplay-server for 60 s (SECONDS=…):
## prints the drift between them; fails when the p99 is above 33 ms (LIMIT_MS=…).
room-demo: test-deps build
	Scripts/room-demo.sh

## README's screenshots under Xvfb: the two-players example's real windows -> Documentation/images/examples.png,
## the GTK 4 app playerkit-compare -> Documentation/images/compare.png, and playerkit-multiview on
## four live angles -> Documentation/images/multiview.png.
screenshots: test-deps build
	Scripts/screenshot.sh
	Scripts/screenshot-compare.sh
	Scripts/screenshot-multiview.sh

## A live HLS origin on loopback (four angles of one scene, encoded once with ffmpeg) and
## playerkit-multiview on it; headless for 20 s (DEMO_SECONDS) when there is no display.
multiview-demo: test-deps
	SWIFT=$(SWIFT) Scripts/multiview-demo.sh

## Live cameras through an outage of their origin (Scripts/live-outage.py): the live origin on
## loopback is killed once they play and started again on its port DOWN seconds later (default
## 8); prints when each camera started waiting and when it played again (Reliability.md).
live-outage: test-deps build
	Scripts/live-outage.py $(if $(DOWN),--down $(DOWN),) $(if $(PLAY),--play $(PLAY),) $(if $(CAMERAS),--cameras $(CAMERAS),)

## Random operations on up to 32 players for MINUTES minutes (default 30), invariants checked
## throughout; prints its seed (replay a failure with SEED=...). Arenas bounded as documented.
MINUTES ?= 30
soak: deps
	$(SWIFT) build --product SoakProbe
	.build/debug/SoakProbe --seconds $$(( $(MINUTES) * 60 )) $(if $(SEED),--seed $(SEED),)

## Every parser of bytes from outside the process under libFuzzer and AddressSanitizer (the fuzz
## package Fuzz/, release build): FUZZ_SECONDS per target (default 300), FUZZ_TARGETS to choose,
## FUZZ_JOBS targets at once (default 1); reports executions, coverage and findings per target and
## fails on any finding (kept in Fuzz/Findings/). make test replays every corpus in Fuzz/Corpus.
fuzz:
	@Scripts/install-deps.sh fuzz
	SWIFT=$(SWIFT) Scripts/fuzz.sh

## Rewrites the fuzz targets' seeds (Fuzz/Corpus/*/seed-*; needs ffmpeg; the results are committed).
fuzz-seeds:
	Scripts/make-fuzz-seeds.py

## The test suite under ThreadSanitizer.
TSAN_BUNDLE = $$($(SWIFT) build --sanitize=thread --scratch-path .build-tsan --show-bin-path)/PlayerKitPackageTests.xctest
TSAN_REPORTS = $(CURDIR)/.build-tsan/child-reports
TSAN_ENV = PLAYERKIT_SANITIZER=thread PLAYERKIT_SANITIZER_REPORTS=$(TSAN_REPORTS) SWT_SWIFT_ERROR_BACKTRACING_ENABLED=0 NO_COLOR=1
test-tsan: test-deps
	$(SWIFT) build --build-tests --sanitize=thread --scratch-path .build-tsan --explicit-target-dependency-import-check error --disable-index-store
	# The bundle is run directly, as Scripts/test-suite.sh runs it: `swift test` first lists the
	# tests with --dump-tests-json, which crashed (signal 11) in a TSan build, and then ran every
	# test at once. One test at a time: under the sanitizer, 2 cores running every test at once
	# starve the tests that wait on real playback (the race detection does not need them in
	# parallel). The soak is left out (32 players churning for minutes under TSan), and the
	# timing tests run last, on their own.
	# The examples the tests start write their reports into TSAN_REPORTS (their standard error
	# is discarded); both passes run, then any report is printed and fails the target.
	rm -rf $(TSAN_REPORTS) && mkdir -p $(TSAN_REPORTS)
	status=0; \
	$(TSAN_ENV) $(TSAN_BUNDLE) --testing-library swift-testing --no-parallel --skip '\.(TimingTests|SoakTests)/' || status=1; \
	$(TSAN_ENV) $(TSAN_BUNDLE) --testing-library swift-testing --no-parallel --filter '\.TimingTests/' || status=1; \
	for report in $(TSAN_REPORTS)/*; do [ -e "$$report" ] || continue; echo "== $$report"; cat "$$report"; status=1; done; \
	exit $$status

## The test suite under AddressSanitizer with leak detection (LeakSanitizer). Leaks inside
## libraries PlayerKit does not own (fontconfig, Mesa, libmpv's one-time globals) are listed in
## Scripts/lsan-suppressions.txt, each with the reason.
ASAN_ENV = ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:halt_on_error=1:detect_stack_use_after_return=0 \
	LSAN_OPTIONS=suppressions=$(CURDIR)/Scripts/lsan-suppressions.txt:print_suppressions=0
test-asan: test-deps
	$(SWIFT) build --build-tests --sanitize=address --scratch-path .build-asan --explicit-target-dependency-import-check error
	# One test at a time, as under ThreadSanitizer: an AddressSanitizer build is 2-3 times slower,
	# and 2 cores running every test at once starve the tests that wait on real playback.
	$(ASAN_ENV) $(SWIFT) test --skip-build --sanitize=address --scratch-path .build-asan --skip TimingTests --skip SoakTests --no-parallel
	$(ASAN_ENV) $(SWIFT) test --skip-build --sanitize=address --scratch-path .build-asan --filter TimingTests

bench-deps: test-deps
	@Scripts/install-deps.sh test bench

## Benchmarks against plain C and python-mpv (release build, a few minutes); records the run in
## Documentation/Figures/benchmark.json and renders its table into Documentation/Performance.md.
bench: bench-deps
	Benchmarks/run.py --write

## Drift between two processes: PlayerKit's rooms, the naive way and Syncplay's own client, side
## by side (about four minutes); records the rooms table (Documentation/Figures/rooms.json) and
## renders it into Documentation/Performance.md.
bench-rooms: test-deps
	Benchmarks/rooms.py --write

## Live camera angles in lockstep: PlayerKit's MultiView, N uncorrected mpv cores and RaceControl's
## autosync side by side (4 live 360p angles joined 0-3 s apart, a missing segment, a 4 s stall),
## and the most angles kept in sync (about ten minutes); records the multi-view tables
## (Documentation/Figures/multiview.json) and renders them into Documentation/Performance.md.
bench-multiview: bench-deps
	Benchmarks/multiview.py --write

## First frame and player churn against the peers an app would use instead: the plain C client,
## PlayerKit, GStreamer's playbin and playbin3, libVLC (about two minutes once built); records the
## peers table (Documentation/Figures/peers.json) and renders it into Documentation/Performance.md.
bench-peers: bench-deps
	@Scripts/install-deps.sh peers
	Benchmarks/peers.py --write

## Comparisons by the numbers (issue 52): recordings aligned by sound against the truth (speech and
## music made with espeak-ng, sox and numpy, offsets from 40 ms to 9 minutes, a clock 100 ppm
## fast, an unrelated pair), two one-hour recordings against ffmpeg + numpy, PSNR and SSIM on a
## 1080p pair against FFmpeg's filters, offsets from the picture (about fifteen minutes);
## records the analysis tables (Documentation/Figures/analysis.json) and renders them into
## Documentation/Performance.md.
bench-compare: bench-deps
	Benchmarks/analysis.py --write

## A player on the desktop (MPRIS) from a desktop client's side, next to mpv with its MPRIS plugin
## (about a minute once built); records the MPRIS table (Documentation/Figures/mpris.json) and
## renders it into Documentation/Performance.md.
bench-mpris: bench-deps
	Benchmarks/mpris.py --write

## Health you can see (issue 68): alarms raised and cleared against faults written into the media,
## no false alarm over 10 minutes of ordinary content, loudness against ffmpeg's ebur128, and the
## CPU that statistics, alarms and loudness cost next to the plain C client with the same filters
## (about six minutes once built); records the health tables (Documentation/Figures/health.json)
## and renders them into Documentation/Performance.md.
bench-health: bench-deps
	Benchmarks/health.py --write

## Redraws Documentation/performance.svg (and its embed) from the recorded table (Documentation/Figures/benchmark.json); runs nothing.
bench-chart:
	Benchmarks/run.py --chart-only

## Renders the docs' generated tables from their records, and runs nothing else: every benchmark
## table of Documentation/Performance.md from Documentation/Figures/*.json (which each benchmark
## writes with --write), Architecture.md's table of layers from Package.swift.
docs-figures:
	Scripts/docs-figures.py

## The short benchmark suite (about 6 minutes once built, the cache items made); prints one JSON object.
## BASELINE=REV adds PlayerKit as of git revision REV (built in a worktree), interleaved: each
## figure gains playerkit_over_baseline, a regression check side by side in one run; its output
## saved to a file, `Benchmarks/run.py --record-comparison FILE --baseline REV` records it
## (Documentation/Figures/baseline.json) and renders its table into Performance.md.
bench-quick: bench-deps
	@Benchmarks/run.py --quick $(if $(BASELINE),--baseline $(BASELINE))

## The DocC documentation of every library module, as one combined archive; fails on any warning.
docs: test-deps
	$(SWIFT) build
	SWIFT=$(SWIFT) Scripts/check-docs.sh

## The layering rules the compiler does not check by itself (also run by `make test`).
check-layers:
	Scripts/check-layers.sh

## Regenerates Media/ and Tests/Fixtures/ (needs ffmpeg; the results are committed).
media:
	Scripts/make-media.sh

clean:
	rm -rf .build .build-tsan .build-asan .build-bench
